// vapc replay report: draws the data of #report-data (package verify/report) in SVG.
// Every string of the data comes from an audit log: it is set as textContent or as an
// attribute, never parsed as markup.
(function () {
  'use strict';

  var SVGNS = 'http://www.w3.org/2000/svg';
  var GUTTER = 250, RIGHT = 28;
  var OUTCOMES = ['deny', 'indeterminate', 'warn', 'audit', 'error', 'admit', 'none'];
  var OUTCOME_WORD = { deny: 'denied', indeterminate: 'indeterminate', warn: 'warned', audit: 'audited', error: 'errors', admit: 'admitted', none: 'no policy matched' };
  var GROUP_WORD = {
    'node-controller': 'node controller', 'taint-eviction': 'taint eviction', drainer: 'drainer',
    kubelet: 'kubelet', controllers: 'controllers', users: 'users'
  };
  var KIND_WORD = { 'delete': 'pod deletions', evict: 'pod evictions', write: 'node writes' };
  var READY_WORD = { True: 'Ready', False: 'NotReady', Unknown: 'Ready Unknown' };

  var D = null;
  var app = document.getElementById('app');
  var startAbs = 0;
  // spansDays says whether the logs span more than one day (UTC): times then carry the date.
  var spansDays = false;
  var state = {
    view: [0, 1000], laneLimit: 25, laneText: '', labelKey: '', labelValue: '',
    filter: { text: '', outcome: '', binding: '', node: null, group: '', from: null, to: null },
    sort: { key: 't', asc: true }, page: 0, pageSize: 100
  };
  var cursors = [];

  // ---- helpers -------------------------------------------------------------------------
  function h(tag, attrs) {
    var e = document.createElement(tag);
    setAttrs(e, attrs);
    for (var i = 2; i < arguments.length; i++) append(e, arguments[i]);
    return e;
  }
  function s(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    for (var i = 2; i < arguments.length; i++) append(e, arguments[i]);
    return e;
  }
  function setAttrs(e, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === 'text') e.textContent = String(v);
      else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, String(v));
    });
  }
  function append(e, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { append(e, x); }); return; }
    if (typeof c === 'string' || typeof c === 'number') { e.appendChild(document.createTextNode(String(c))); return; }
    e.appendChild(c);
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  function pad(n, w) { n = String(n); while (n.length < (w || 2)) n = '0' + n; return n; }
  function abs(t) { return new Date(startAbs + t); }
  function fmtClock(t, withMs) {
    var d = abs(t);
    var out = pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes()) + ':' + pad(d.getUTCSeconds());
    if (withMs) out += '.' + pad(d.getUTCMilliseconds(), 3);
    return out;
  }
  function fmtDate(t) { var d = abs(t); return d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1) + '-' + pad(d.getUTCDate()); }
  function fmtFull(t) { return fmtDate(t) + ' ' + fmtClock(t) + ' UTC'; }
  // fmtTime is a time of the logs: the clock, and the date too when the logs span days.
  function fmtTime(t, withMs) { return (spansDays ? fmtDate(t) + ' ' : '') + fmtClock(t, withMs); }
  function fmtDur(ms) {
    if (ms < 1000) return ms + ' ms';
    var sec = Math.round(ms / 1000);
    if (sec < 60) return sec + ' s';
    var m = Math.floor(sec / 60), r = sec % 60;
    if (m < 60) return m + ' min' + (r ? ' ' + r + ' s' : '');
    var hh = Math.floor(m / 60); m = m % 60;
    if (hh < 48) return hh + ' h' + (m ? ' ' + m + ' min' : '');
    return Math.round(hh / 24) + ' days';
  }
  function num(n) { return Number(n || 0).toLocaleString('en-US'); }
  // logsText names the logs read: each of a few, and of many (a folder of an export's hourly
  // objects) how many, the first two and the last, as the text summary does.
  function logsText(logs) {
    if (logs.length <= 6) return logs.join(', ');
    return logs.length + ' files: ' + logs[0] + ', ' + logs[1] + ', ... ' + logs[logs.length - 1];
  }
  // fit shortens a text to a width with an ellipsis.
  function fit(str, width, px, weight) {
    if (textWidth(str, px, weight) <= width) return str;
    var lo = 0, hi = str.length;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (textWidth(str.slice(0, mid) + '\u2026', px, weight) <= width) lo = mid; else hi = mid - 1; }
    return str.slice(0, lo) + '\u2026';
  }
  // breakable lets a name wrap after its separators (sa:kube-system:node-controller).
  function breakable(str) {
    var out = [];
    str.replace(/([:\/.])/g, '$1\n').split('\n').forEach(function (part, i) { if (i) out.push(h('wbr')); if (part) out.push(part); });
    return out;
  }
  function shortUser(u) { return u.replace(/^system:serviceaccount:/, 'sa:'); }
  function plural(n, one, many) { return num(n) + ' ' + (n === 1 ? one : (many || one + 's')); }
  function strongest(n) {
    for (var i = 0; i < OUTCOMES.length; i++) if (n[OUTCOMES[i]]) return OUTCOMES[i];
    return 'none';
  }
  function total(n) { var t = 0; Object.keys(n).forEach(function (k) { t += n[k]; }); return t; }
  function color(o) { return 'var(--' + o + ')'; }
  var FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif';
  var measureCtx = null;
  // textWidth measures a text as the SVG draws it.
  function textWidth(str, px, weight) {
    if (!measureCtx) measureCtx = document.createElement('canvas').getContext('2d');
    measureCtx.font = (weight || 400) + ' ' + (px || 11) + 'px ' + FONT;
    return measureCtx.measureText(str).width;
  }

  // ---- tooltip -------------------------------------------------------------------------
  var tip = h('div', { id: 'tip' });
  function showTip(ev, lines) {
    clear(tip);
    lines.forEach(function (l, i) {
      var row = h('div');
      if (typeof l === 'string') row.textContent = l;
      else { append(row, h('b', { text: l[0] })); if (l[1] !== undefined) append(row, h('span', { 'class': 'tl', text: ' ' + l[1] })); }
      if (i === 0) row.style.marginBottom = '3px';
      tip.appendChild(row);
    });
    tip.style.display = 'block';
    moveTip(ev);
  }
  function moveTip(ev) {
    var x = ev.clientX + 14, y = ev.clientY + 14;
    var w = tip.offsetWidth, hh = tip.offsetHeight;
    if (x + w > window.innerWidth - 8) x = ev.clientX - w - 14;
    if (y + hh > window.innerHeight - 8) y = ev.clientY - hh - 14;
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  }
  function hideTip() { tip.style.display = 'none'; }
  function tipOn(e, lines) {
    e.addEventListener('mouseenter', function (ev) { showTip(ev, typeof lines === 'function' ? lines() : lines); });
    e.addEventListener('mousemove', moveTip);
    e.addEventListener('mouseleave', hideTip);
  }

  // ---- time scale ----------------------------------------------------------------------
  var STEPS = [1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5];
  function plotWidth(container) { return Math.max(300, container.clientWidth - GUTTER - RIGHT); }
  function xOf(t, w) { return GUTTER + (t - state.view[0]) / (state.view[1] - state.view[0]) * w; }
  function tOf(x, w) { return state.view[0] + (x - GUTTER) / w * (state.view[1] - state.view[0]); }
  function ticks(w) {
    var span = state.view[1] - state.view[0];
    var step = STEPS[STEPS.length - 1];
    for (var i = 0; i < STEPS.length; i++) if (span / STEPS[i] <= w / 95) { step = STEPS[i]; break; }
    var out = [];
    var a0 = startAbs + state.view[0];
    for (var a = Math.ceil(a0 / step) * step; a <= startAbs + state.view[1]; a += step) out.push({ t: a - startAbs, step: step });
    return out;
  }
  function tickLabel(tk) {
    var d = abs(tk.t);
    // A day's first tick, when the logs span days, is its date.
    if (tk.step >= 864e5 || (spansDays && (startAbs + tk.t) % 864e5 === 0)) return fmtDate(tk.t);
    var l = pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes());
    if (tk.step < 6e4) l += ':' + pad(d.getUTCSeconds());
    return l;
  }
  function drawAxis(svg, w, height, y) {
    var g = s('g', { 'class': 'axis' });
    ticks(w).forEach(function (tk) {
      var x = xOf(tk.t, w);
      g.appendChild(s('line', { 'class': 'grid', x1: x, x2: x, y1: y + 6, y2: height }));
      g.appendChild(s('text', { x: x, y: y, 'text-anchor': 'middle', text: tickLabel(tk) }));
    });
    g.appendChild(s('text', { x: GUTTER - 10, y: y, 'text-anchor': 'end', text: 'UTC' }));
    svg.appendChild(g);
  }
  function clipRect(svg, id, w, height) {
    var defs = s('defs');
    var cp = s('clipPath', { id: id });
    cp.appendChild(s('rect', { x: GUTTER, y: 0, width: w, height: height }));
    defs.appendChild(cp);
    svg.appendChild(defs);
  }
  // interactive adds the shared cursor and drag-to-zoom to a chart's svg.
  function interactive(svg, container, top, height) {
    var w = plotWidth(container);
    var cur = s('line', { 'class': 'cursor', x1: -10, x2: -10, y1: top, y2: height });
    svg.appendChild(cur);
    cursors.push(cur);
    var brush = null, x0 = 0;
    function px(ev) { var r = svg.getBoundingClientRect(); return ev.clientX - r.left; }
    function release(ev) {
      if (!brush) return;
      var x = px(ev);
      svg.removeChild(brush);
      brush = null;
      var a = Math.max(GUTTER, Math.min(x0, x)), b = Math.min(GUTTER + w, Math.max(x0, x));
      if (b - a < 6) return;
      zoomTo(tOf(a, w), tOf(b, w));
    }
    svg.addEventListener('mousemove', function (ev) {
      var x = px(ev);
      cursors.forEach(function (c) {
        var on = x >= GUTTER && x <= GUTTER + w;
        c.setAttribute('x1', on ? x : -10); c.setAttribute('x2', on ? x : -10);
      });
      if (brush) {
        var a = Math.max(GUTTER, Math.min(x0, x)), b = Math.min(GUTTER + w, Math.max(x0, x));
        brush.setAttribute('x', a); brush.setAttribute('width', Math.max(0, b - a));
      }
    });
    svg.addEventListener('mouseleave', function () {
      cursors.forEach(function (c) { c.setAttribute('x1', -10); c.setAttribute('x2', -10); });
    });
    svg.addEventListener('mousedown', function (ev) {
      if (ev.button !== 0) return;
      var x = px(ev);
      if (x < GUTTER || x > GUTTER + w) return;
      if (ev.target.closest && ev.target.closest('.marker')) return;
      x0 = x;
      brush = s('rect', { 'class': 'brush', x: x, y: top, width: 0, height: height - top });
      svg.appendChild(brush);
      releaseBrush = release;
      ev.preventDefault();
    });
  }
  // releaseBrush ends the drag of the chart being dragged, wherever the mouse is released.
  var releaseBrush = null;
  window.addEventListener('mouseup', function (ev) {
    var r = releaseBrush;
    releaseBrush = null;
    if (r) r(ev);
  });
  function zoomTo(a, b) {
    var min = Math.min(5000, D.span.ms || 1000);
    if (b - a < min) { var c = (a + b) / 2; a = c - min / 2; b = c + min / 2; }
    state.view = [Math.max(fullView()[0], a), Math.min(fullView()[1], b)];
    drawCharts();
  }
  function fullView() {
    var ms = Math.max(D.span.ms, 1000);
    var padMs = Math.max(ms * 0.015, 500);
    return [-padMs, ms + padMs];
  }
  function zoomOut() {
    var c = (state.view[0] + state.view[1]) / 2, hw = (state.view[1] - state.view[0]);
    var f = fullView();
    state.view = [Math.max(f[0], c - hw), Math.min(f[1], c + hw)];
    drawCharts();
  }
  function zoomReset() { state.view = fullView(); drawCharts(); }
  function zoomLabel() {
    var f = fullView();
    if (state.view[0] <= f[0] && state.view[1] >= f[1]) return 'the whole log (' + fmtDur(D.span.ms) + ')';
    return fmtTime(Math.max(0, state.view[0])) + ' to ' + fmtTime(Math.min(D.span.ms, state.view[1])) + ' (' + fmtDur(Math.round(state.view[1] - state.view[0])) + ')';
  }

  // ---- header --------------------------------------------------------------------------
  // verdictBanner states the verdict the exit code, the text summary and JUnit state, in words
  // that say what it is about: the replay's gate (was the input read whole, do the gates asked
  // for hold), damaged input first; and, apart, what the policies would deny, which fails the
  // replay only when --fail-on asks for it.
  function verdictBanner(v, t) {
    var failOn = [].concat(v.gate.failOn || []);
    var gatesDenials = failOn.indexOf('deny') >= 0 || failOn.indexOf('warn') >= 0;
    var word = v.partial ? 'INTERRUPTED' : v.pass ? 'PASS' : 'FAIL';
    var code = v.partial ? 130 : v.pass ? 0 : 1;
    var read = plural(t.lines, 'line') + ', ' + (t.malformed ? plural(t.malformed, 'malformed line') + ' (--max-malformed ' + v.gate.maxMalformed + ' allows ' + (t.malformed === 1 ? 'it' : 'them') + ')' : 'none malformed');
    var box = h('div', { 'class': 'verdict ' + word.toLowerCase(), id: 'verdict' }, h('b', { text: 'Replay gate: ' + word }), ' ');
    if ((v.failures || []).length) {
      append(box, h('span', { text: (v.partial ? 'the input was not read whole: the counts are of what was read' : 'the replay fails') + ' (exit code ' + code + '):' }));
      append(box, h('ul', null, v.failures.map(function (f) { return h('li', null, h('span', { 'class': 'chip', text: f.reason }), ' ', f.detail); })));
    } else {
      var holds = ['the input was read whole (' + read + ')'];
      if (v.gate.checkRecorded) holds.push('the predictions agree with the verdicts the log records (--check-recorded)');
      if (failOn.length) holds.push('--fail-on ' + failOn.join(',') + ' holds');
      append(box, h('span', { text: holds.join('; ') + ' (exit code 0).' }));
    }
    // What the policies would deny: a fact of the replay, not of its gate.
    var denies = t.deny ? 'The policies would deny ' + plural(t.deny, 'request') + ' of ' + num(t.evaluated) + ' evaluated' : 'The policies would deny no request of ' + num(t.evaluated) + ' evaluated';
    if (t.deny && !gatesDenials) denies += ': reported, not failed (the replay fails on them with --fail-on deny)';
    append(box, h('div', { 'class': 'denials' + (t.deny ? ' some' : ''), id: 'verdict-denials', text: denies + '.' }));
    return box;
  }

  function header() {
    var t = D.totals;
    var top = h('header', { 'class': 'top' },
      h('h1', null, h('span', { 'class': 'brand', text: 'vapc' }), ' replay'),
      h('span', { 'class': 'span', text: D.span.start ? fmtFull(0) + '  \u2192  ' + fmtFull(D.span.ms) + '  (' + fmtDur(D.span.ms) + ')' : 'no request in the logs' }));
    var verdict = D.verdict ? verdictBanner(D.verdict, t) : null;
    var cards = h('div', { 'class': 'cards' });
    function card(cls, n, label, detail, onclick) {
      var c = h('div', { 'class': 'card ' + cls + (onclick ? ' link' : ''), 'data-card': cls },
        h('div', { 'class': 'l', text: label }), h('div', { 'class': 'n', text: num(n) }), detail ? h('div', { 'class': 'd', text: detail }) : null);
      if (onclick) c.addEventListener('click', onclick);
      return c;
    }
    cards.appendChild(card('requests', t.requests, 'requests', num(t.evaluated) + ' evaluated \u00b7 ' + num(t.notMatched) + ' not matched \u00b7 ' + num(t.skipped) + ' skipped'));
    cards.appendChild(card('deny', t.deny, 'would be denied', 'of ' + num(t.evaluated) + ' evaluated', function () { showRows({ outcome: 'deny' }); }));
    cards.appendChild(card('changed', t.changed, 'changed', 'decided otherwise than recorded', function () { showRows({ outcome: 'changed' }); }));
    cards.appendChild(card('warn', t.warn, 'warned', 'requests with a Warn action', function () { showRows({ outcome: 'warn' }); }));
    cards.appendChild(card('audit', t.audit, 'audited', 'requests with an Audit action', function () { showRows({ outcome: 'audit' }); }));
    var ind = Object.keys(t.indeterminateBy || {}).map(function (k) { return k + ' ' + t.indeterminateBy[k]; }).join(', ');
    cards.appendChild(card('indeterminate', t.indeterminate, 'indeterminate', ind || 'none: every request decided', function () { showRows({ outcome: 'indeterminate' }); }));
    cards.appendChild(card('lines', t.lines, 'log lines', num(t.malformed) + ' malformed \u00b7 ' + num(t.intermediateStages) + ' intermediate', function () { document.getElementById('lines').scrollIntoView({ behavior: 'smooth' }); }));

    var pol = h('section', { 'class': 'panel', id: 'policies' });
    pol.appendChild(h('div', { 'class': 'panel-head' }, h('h2', { text: 'Policies and bindings' }),
      h('span', { 'class': 'hint', text: 'counts as the replay summary gives them; a count opens its requests below' })));
    var tbl = h('table', { 'class': 'policies' });
    var cols = ['admit', 'deny', 'warn', 'audit', 'error', 'indeterminate', 'changed'];
    tbl.appendChild(h('thead', null, h('tr', null, h('th', { text: 'policy' }), h('th', { text: 'binding' }), h('th', { text: 'stage (validationActions)' }), h('th', { text: 'params' }),
      cols.map(function (c) { return h('th', { 'class': 'num', text: c }); }))));
    var tb = h('tbody');
    D.policies.forEach(function (p) {
      var bs = p.bindings.length ? p.bindings : [null];
      bs.forEach(function (b, i) {
        var tr = h('tr', { 'data-binding': b ? p.name + '/' + b.name : p.name });
        tr.appendChild(h('td', null, i === 0 ? h('b', { text: p.name }) : null, i === 0 && p.paramKind ? h('div', { 'class': 'hint', text: 'paramKind ' + p.paramKind }) : null));
        if (!b) { tr.appendChild(h('td', { colspan: 2 + 1 + cols.length, 'class': 'hint', text: 'no binding: it decides nothing' })); tb.appendChild(tr); return; }
        tr.appendChild(h('td', { 'class': 'mono', text: b.name }));
        tr.appendChild(h('td', null, b.actions.map(function (a) { return h('span', { 'class': 'chip ' + a, text: a }); })));
        tr.appendChild(h('td', { 'class': 'hint', text: b.param || '\u2014' }));
        cols.forEach(function (c) {
          var n = b[c] || 0;
          var td = h('td', { 'class': 'num' + (n ? '' : ' zero') });
          if (n && c !== 'admit') {
            td.appendChild(h('a', { 'data-count': c, text: num(n), onclick: function () { showRows({ outcome: c, binding: p.name + '/' + b.name }); } }));
          } else td.textContent = num(n);
          tr.appendChild(td);
        });
        tb.appendChild(tr);
      });
    });
    tbl.appendChild(tb);
    pol.appendChild(h('div', { 'class': 'table-wrap' }, tbl));
    var inp = h('dl', { 'class': 'inputs' });
    function kv(k, v) { inp.appendChild(h('dt', { text: k })); inp.appendChild(h('dd', { 'class': 'mono', text: v })); }
    kv('logs', logsText(D.inputs.logs || []) + '  (' + num(D.inputs.bytes) + ' bytes, ' + num(t.lines) + ' lines)');
    if (D.inputs.policies && D.inputs.policies.length) kv('policies', D.inputs.policies.join(', '));
    kv('snapshot', D.inputs.snapshots && D.inputs.snapshots.length ? D.inputs.snapshots.join(', ') : 'none: what the log does not show is unknown');
    kv('redacted', (D.inputs.redacted || []).join(', ') + ': values replaced by their sizes');
    (D.notes || []).forEach(function (n) { kv('note', n); });
    pol.appendChild(inp);
    return [top, verdict, cards, pol];
  }

  // ---- node timeline -------------------------------------------------------------------
  var timelineBox, decisionsBox, zoomText;
  function lanesFiltered() {
    var txt = state.laneText.toLowerCase();
    return D.nodes.lanes.filter(function (l) {
      if (txt && (l.node || 'node not known').toLowerCase().indexOf(txt) < 0) return false;
      if (state.labelKey) {
        var v = (l.labels || {})[state.labelKey];
        if (v === undefined) return false;
        if (state.labelValue && v !== state.labelValue) return false;
      }
      return true;
    });
  }
  function laneChip(l) {
    var labels = l.labels || {};
    if (state.labelKey && labels[state.labelKey] !== undefined) return state.labelKey + '=' + labels[state.labelKey];
    var keys = Object.keys(labels).sort().filter(function (k) {
      return !/^(kubernetes\.io|beta\.kubernetes\.io|node\.kubernetes\.io|topology\.kubernetes\.io|node-role\.kubernetes\.io)\//.test(k);
    });
    return keys.length ? keys[0] + '=' + labels[keys[0]] : '';
  }
  function timelinePanel() {
    var sec = h('section', { 'class': 'panel', id: 'nodes' });
    var keys = D.nodes.labelKeys;
    var keySel = h('select', { id: 'label-key' }, h('option', { value: '', text: 'any label' }), keys.map(function (k) { return h('option', { value: k, text: k }); }));
    var valSel = h('select', { id: 'label-value' }, h('option', { value: '', text: 'any value' }));
    function fillValues() {
      clear(valSel);
      valSel.appendChild(h('option', { value: '', text: 'any value' }));
      if (!state.labelKey) return;
      var vals = {};
      D.nodes.lanes.forEach(function (l) { var v = (l.labels || {})[state.labelKey]; if (v !== undefined) vals[v] = true; });
      Object.keys(vals).sort().forEach(function (v) { valSel.appendChild(h('option', { value: v, text: v === '' ? '(empty)' : v })); });
    }
    keySel.addEventListener('change', function () { state.labelKey = keySel.value; state.labelValue = ''; fillValues(); drawTimeline(); });
    valSel.addEventListener('change', function () { state.labelValue = valSel.value; drawTimeline(); });
    var search = h('input', { type: 'search', placeholder: 'node name', id: 'node-search' });
    search.addEventListener('input', function () { state.laneText = search.value; drawTimeline(); });
    zoomText = h('span', { 'class': 'hint' });
    sec.appendChild(h('div', { 'class': 'panel-head' },
      h('h2', { text: 'Nodes' }),
      h('span', { 'class': 'hint', text: 'lanes by activity \u00b7 drag across a chart to zoom \u00b7 click a marker for its requests' }),
      h('span', { 'class': 'grow' }),
      h('div', { 'class': 'controls' }, h('label', null, 'node', search), h('label', null, 'label', keySel, valSel),
        h('button', { text: 'zoom out', onclick: zoomOut }), h('button', { text: 'whole log', onclick: zoomReset }))));
    var legend = h('div', { 'class': 'legend' });
    function sw(c, label, round) { legend.appendChild(h('span', null, h('span', { 'class': 'sw' + (round ? ' round' : ''), style: 'background:' + c }), label)); }
    sw('var(--ready-true)', 'Ready'); sw('var(--ready-unknown)', 'Ready Unknown'); sw('var(--ready-false)', 'NotReady');
    sw('var(--taint)', 'NoExecute taint'); sw('var(--cordon)', 'cordoned'); sw('var(--cond)', 'condition True');
    legend.appendChild(h('span', { 'class': 'sep' }));
    ['deny', 'indeterminate', 'warn', 'audit', 'admit', 'none'].forEach(function (o) { sw(o === 'admit' ? 'var(--admit-marker)' : color(o), o === 'none' ? 'no policy matched' : o, true); });
    legend.appendChild(h('span', { 'class': 'sep' }));
    legend.appendChild(h('span', { text: '\u25cf deletion  \u25c6 eviction  \u25a0 node write' }));
    sec.appendChild(legend);
    sec.appendChild(h('div', { 'class': 'hint', style: 'margin-bottom:4px' }, 'showing ', zoomText));
    timelineBox = h('div', { 'class': 'chart', id: 'timeline' });
    sec.appendChild(timelineBox);
    return sec;
  }
  // laneRows lays a lane out: the Ready row, a row per taint, cordon and condition, a row per
  // requester group of its markers.
  function laneRows(l) {
    var rows = [{ kind: 'ready', h: laneChip(l) ? 31 : 20 }];
    function distinct(list) { var m = {}; list.forEach(function (x) { m[x.v] = true; }); return Object.keys(m).sort(); }
    distinct(l.taints).forEach(function (v) { rows.push({ kind: 'taint', v: v, h: 11 }); });
    if (l.cordons.length) rows.push({ kind: 'cordon', v: 'cordoned', h: 11 });
    distinct(l.conditions).forEach(function (v) { rows.push({ kind: 'cond', v: v, h: 11 }); });
    var groups = {};
    l.markers.forEach(function (m) { groups[m.g] = true; });
    D.nodes.groups.forEach(function (g) { if (groups[g]) rows.push({ kind: 'markers', v: g, h: 22 }); });
    return rows;
  }
  function shortTaint(k) { return k.replace(/^node\.kubernetes\.io\//, '') + ':NoExecute'; }
  function drawTimeline() {
    clear(timelineBox);
    var lanes = lanesFiltered();
    var shown = lanes.slice(0, state.laneLimit);
    var w = plotWidth(timelineBox);
    var layout = [], y = 26;
    shown.forEach(function (l) { var rows = laneRows(l); var hh = 8; rows.forEach(function (r) { hh += r.h + 3; }); layout.push({ l: l, rows: rows, y: y, h: hh }); y += hh; });
    var height = Math.max(y + 6, 60);
    var svg = s('svg', { width: '100%', height: height, 'class': 'timeline-svg' });
    clipRect(svg, 'clip-tl', w, height);
    drawAxis(svg, w, height, 14);
    var body = s('g');
    svg.appendChild(body);
    if (!shown.length) {
      svg.appendChild(s('text', { 'class': 'empty', x: GUTTER + 10, y: 46, text: D.nodes.lanes.length ? 'no node matches the filter' : 'the logs changed no node and deleted or evicted no pod' }));
    }
    var bucket = D.span.bucket;
    layout.forEach(function (it, idx) {
      var l = it.l;
      var g = s('g', { 'class': 'lane', 'data-node': l.node, 'data-activity': l.activity });
      g.appendChild(s('rect', { 'class': 'lane-bg' + (idx % 2 ? ' alt' : ''), x: 0, y: it.y, width: GUTTER + w + RIGHT, height: it.h }));
      g.appendChild(s('line', { x1: 0, x2: GUTTER + w + RIGHT, y1: it.y, y2: it.y, stroke: '#e3e7ed' }));
      var plot = s('g', { 'clip-path': 'url(#clip-tl)' });
      var ry = it.y + 5;
      it.rows.forEach(function (r) {
        if (r.kind === 'ready') {
          var name = s('text', { 'class': 'lane-name', x: 12, y: ry + 14, text: l.node || 'node not known' });
          name.addEventListener('click', function () { showRows({ node: l.node || '' }); });
          tipOn(name, function () {
            var lines = [[l.node || 'node not known', 'activity ' + l.activity]];
            var labels = l.labels || {};
            Object.keys(labels).sort().forEach(function (k) { lines.push(k + '=' + labels[k]); });
            if (!l.node) lines.push('pods the log deleted or evicted without saying on which node');
            lines.push('click: its requests in the table');
            return lines;
          });
          g.appendChild(name);
          var chip = laneChip(l);
          if (chip) g.appendChild(s('text', { 'class': 'lane-chip', x: 12, y: ry + 27, text: fit(chip, GUTTER - 24, 10) }));
          if (l.known > 0 || l.known < 0) {
            var kx = l.known < 0 ? D.span.ms : l.known;
            plot.appendChild(s('rect', { x: xOf(0, w), y: ry + 3, width: Math.max(0, xOf(kx, w) - xOf(0, w)), height: 14, fill: '#eef1f5', 'class': 'span unknown' }));
          }
          l.ready.forEach(function (sp) {
            var x0 = xOf(sp.from, w), x1 = xOf(sp.to, w);
            var rect = s('rect', { 'class': 'span ready', 'data-v': sp.v, x: x0, y: ry + 1, width: Math.max(1.5, x1 - x0), height: 18, rx: 2, fill: sp.v === 'True' ? 'var(--ready-true)' : sp.v === 'False' ? 'var(--ready-false)' : 'var(--ready-unknown)' });
            tipOn(rect, [[READY_WORD[sp.v] || sp.v, l.node], fmtTime(sp.from) + ' \u2192 ' + fmtTime(sp.to) + '  (' + fmtDur(sp.to - sp.from) + ')']);
            plot.appendChild(rect);
            if (sp.v !== 'True' && x1 - x0 > 70) plot.appendChild(s('text', { 'class': 'span-label', x: x0 + 5, y: ry + 14, text: READY_WORD[sp.v] || sp.v }));
          });
          if (l.deleted >= 0) {
            var dx = xOf(l.deleted, w);
            plot.appendChild(s('line', { x1: dx, x2: dx, y1: ry - 2, y2: ry + 22, stroke: '#1d2430', 'stroke-width': 2, 'class': 'deleted' }));
          }
        } else if (r.kind === 'taint' || r.kind === 'cordon' || r.kind === 'cond') {
          var list = r.kind === 'taint' ? l.taints : r.kind === 'cordon' ? l.cordons : l.conditions;
          var label = r.kind === 'taint' ? shortTaint(r.v) : r.v;
          g.appendChild(s('text', { 'class': 'row-label', x: GUTTER - 10, y: ry + 9, 'text-anchor': 'end', text: label }));
          var fill = r.kind === 'taint' ? 'var(--taint)' : r.kind === 'cordon' ? 'var(--cordon)' : 'var(--cond)';
          list.forEach(function (sp) {
            if (r.kind !== 'cordon' && sp.v !== r.v) return;
            var x0 = xOf(sp.from, w), x1 = xOf(sp.to, w);
            var rect = s('rect', { 'class': 'span ' + r.kind, 'data-v': sp.v, x: x0, y: ry + 1, width: Math.max(1.5, x1 - x0), height: 9, rx: 2, fill: fill });
            tipOn(rect, [[r.kind === 'taint' ? r.v + ':NoExecute' : r.kind === 'cordon' ? 'cordoned (spec.unschedulable)' : r.v + '=True', l.node], fmtTime(sp.from) + ' \u2192 ' + fmtTime(sp.to) + '  (' + fmtDur(sp.to - sp.from) + ')']);
            plot.appendChild(rect);
          });
        } else if (r.kind === 'markers') {
          g.appendChild(s('text', { 'class': 'row-label', x: GUTTER - 10, y: ry + 15, 'text-anchor': 'end', text: GROUP_WORD[r.v] || r.v }));
          drawMarkers(plot, l, r.v, ry + 11, w, bucket);
        }
        ry += r.h + 3;
      });
      g.appendChild(plot);
      body.appendChild(g);
    });
    interactive(svg, timelineBox, 20, height);
    timelineBox.appendChild(svg);
    if (lanes.length > shown.length) {
      timelineBox.appendChild(h('div', { 'class': 'pager' },
        h('span', { text: 'showing ' + shown.length + ' of ' + lanes.length + ' nodes' }),
        h('button', { text: 'show ' + Math.min(50, lanes.length - shown.length) + ' more', onclick: function () { state.laneLimit += 50; drawTimeline(); } }),
        h('button', { text: 'show all', onclick: function () { state.laneLimit = lanes.length; drawTimeline(); } })));
    }
    var notes = [];
    if (D.nodes.quiet) notes.push(plural(D.nodes.quiet, 'node') + ' written without any change drawn here (heartbeats) not shown');
    if (D.nodes.leftOut) notes.push(plural(D.nodes.leftOut, 'less active node') + ' left out of the report');
    if (notes.length) timelineBox.appendChild(h('div', { 'class': 'hint', style: 'margin-top:6px', text: notes.join(' \u00b7 ') }));
  }
  // drawMarkers draws the markers of one group of a lane, merged when closer than a few pixels.
  function drawMarkers(plot, l, group, cy, w, bucket) {
    var ms = l.markers.filter(function (m) { return m.g === group && m.t + bucket >= state.view[0] && m.t <= state.view[1]; });
    var clusters = [];
    ms.forEach(function (m) {
      var x = xOf(m.t + bucket / 2, w);
      var last = clusters[clusters.length - 1];
      if (last && x - last.x < 16 && last.kind === m.k) {
        OUTCOMES.forEach(function (o) { if (m.n[o]) last.n[o] = (last.n[o] || 0) + m.n[o]; });
        last.to = m.t + bucket;
        return;
      }
      var n = {};
      OUTCOMES.forEach(function (o) { if (m.n[o]) n[o] = m.n[o]; });
      clusters.push({ x: x, from: m.t, to: m.t + bucket, n: n, kind: m.k });
    });
    clusters.forEach(function (c, i) {
      var n = total(c.n), top = strongest(c.n);
      var r = Math.min(9, 4 + 1.5 * Math.log2(n));
      var attrs = {
        'class': 'marker', 'data-group': group, 'data-kind': c.kind, 'data-total': n, 'data-outcome': top,
        'data-deny': c.n.deny || 0, 'data-t': c.from
      };
      var m = s('g', attrs);
      var fill = top === 'admit' ? 'var(--admit-marker)' : color(top);
      if (c.kind === 'evict') m.appendChild(s('rect', { x: c.x - r, y: cy - r, width: 2 * r, height: 2 * r, fill: fill, stroke: '#fff', 'stroke-width': 1.5, transform: 'rotate(45 ' + c.x + ' ' + cy + ')' }));
      else if (c.kind === 'write') m.appendChild(s('rect', { x: c.x - r, y: cy - r, width: 2 * r, height: 2 * r, rx: 2, fill: fill, stroke: '#fff', 'stroke-width': 1.5 }));
      else m.appendChild(s('circle', { cx: c.x, cy: cy, r: r, fill: fill, stroke: '#fff', 'stroke-width': 1.5 }));
      var mixed = OUTCOMES.filter(function (o) { return c.n[o]; });
      if (mixed.length > 1) {
        // a ring in the colour of the second outcome says the bucket is mixed
        m.appendChild(s('circle', { cx: c.x, cy: cy, r: r + 2.5, fill: 'none', stroke: color(mixed[1]), 'stroke-width': 1.5 }));
      }
      var label = n > 1 ? String(n) : '';
      if (c.n.deny) label = c.n.deny === n ? n + ' denied' : n + ' \u00b7 ' + c.n.deny + ' denied';
      else if (top !== 'admit' && top !== 'none' && n > 1) label = n + ' \u00b7 ' + c.n[top] + ' ' + OUTCOME_WORD[top];
      var next = clusters[i + 1];
      var room = next ? next.x - c.x - r - 10 : 1e9;
      if (label && textWidth(label, 10.5, 600) > room) label = n > 1 ? String(n) : '';
      if (label && textWidth(label, 10.5, 600) <= room) m.appendChild(s('text', { 'class': 'marker-label' + (c.n.deny ? ' deny' : ''), x: c.x + r + 4, y: cy + 4, text: label }));
      tipOn(m, function () {
        var lines = [[plural(n, KIND_WORD[c.kind].replace(/s$/, ''), KIND_WORD[c.kind]), 'by ' + (GROUP_WORD[group] || group) + ' on ' + (l.node || 'a node not known')]];
        lines.push(fmtTime(c.from) + ' \u2192 ' + fmtTime(Math.min(c.to, D.span.ms)));
        OUTCOMES.forEach(function (o) { if (c.n[o]) lines.push([num(c.n[o]), OUTCOME_WORD[o]]); });
        lines.push('click: these requests in the table');
        return lines;
      });
      m.addEventListener('click', function () {
        showRows({ node: l.node || '', group: group, from: c.from, to: c.to });
      });
      plot.appendChild(m);
    });
  }

  // ---- decisions over time -------------------------------------------------------------
  var SERIES_OUT = ['deny', 'warn', 'audit', 'error', 'indeterminate'];
  function decisionsPanel() {
    var sec = h('section', { 'class': 'panel', id: 'decisions' });
    sec.appendChild(h('div', { 'class': 'panel-head' }, h('h2', { text: 'Decisions over time' }),
      h('span', { 'class': 'hint', text: 'per binding, each request counted once by its strongest outcome \u00b7 same time axis as the nodes' })));
    var legend = h('div', { 'class': 'legend' });
    SERIES_OUT.concat(['admit']).forEach(function (o) { legend.appendChild(h('span', null, h('span', { 'class': 'sw', style: 'background:' + color(o) }), o)); });
    sec.appendChild(legend);
    decisionsBox = h('div', { 'class': 'chart', id: 'decisions-chart' });
    sec.appendChild(decisionsBox);
    return sec;
  }
  function binned(points, fields, w) {
    var base = D.decisions.bucket;
    var pxPer = w * base / (state.view[1] - state.view[0]);
    var k = Math.max(1, Math.ceil(6 / pxPer));
    var size = base * k;
    var bins = {};
    points.forEach(function (p) {
      if (p[0] + base < state.view[0] || p[0] > state.view[1]) return;
      var b = Math.floor(p[0] / size) * size;
      var o = bins[b] || (bins[b] = { t: b, v: fields.map(function () { return 0; }) });
      for (var i = 0; i < fields.length; i++) o.v[i] += p[i + 1];
    });
    return { size: size, bins: Object.keys(bins).map(function (b) { return bins[b]; }) };
  }
  function drawDecisions() {
    clear(decisionsBox);
    var w = plotWidth(decisionsBox);
    var rows = [{ label: 'all evaluated requests', sub: 'admit \u00b7 deny \u00b7 indeterminate', points: D.decisions.all, fields: ['admit', 'deny', 'indeterminate'] }];
    D.decisions.series.forEach(function (sr) {
      rows.push({ label: sr.policy, sub: 'binding ' + sr.binding, points: sr.points, fields: SERIES_OUT, binding: sr.policy + '/' + sr.binding });
    });
    var RH = 62, y0 = 26;
    var height = y0 + rows.length * (RH + 10) + 4;
    var svg = s('svg', { width: '100%', height: height });
    clipRect(svg, 'clip-dc', w, height);
    drawAxis(svg, w, height, 14);
    rows.forEach(function (r, i) {
      var y = y0 + i * (RH + 10);
      var g = s('g', { 'class': 'series', 'data-binding': r.binding || 'all' });
      g.appendChild(s('line', { x1: 0, x2: GUTTER + w + RIGHT, y1: y, y2: y, stroke: '#e3e7ed' }));
      g.appendChild(s('text', { 'class': 'series-label', x: 12, y: y + 18, text: fit(r.label, GUTTER - 24, 12, 600) }));
      g.appendChild(s('text', { 'class': 'series-sub', x: 12, y: y + 33, text: fit(r.sub, GUTTER - 24, 10.5) }));
      var b = binned(r.points, r.fields, w);
      var max = 1;
      b.bins.forEach(function (bin) { var t = 0; bin.v.forEach(function (x) { t += x; }); if (t > max) max = t; });
      g.appendChild(s('text', { 'class': 'series-sub', x: 12, y: y + 50, text: 'scale: ' + num(max) + ' per ' + fmtDur(b.size) }));
      g.appendChild(s('line', { x1: GUTTER, x2: GUTTER + w, y1: y + 8, y2: y + 8, stroke: '#edf0f4', 'stroke-dasharray': '2 3' }));
      var base = y + RH;
      g.appendChild(s('line', { x1: GUTTER, x2: GUTTER + w, y1: base, y2: base, stroke: '#cfd6df' }));
      var plot = s('g', { 'clip-path': 'url(#clip-dc)' });
      if (!b.bins.length) plot.appendChild(s('text', { 'class': 'empty', x: GUTTER + 8, y: y + RH / 2 + 6, text: 'nothing in this range' }));
      b.bins.forEach(function (bin) {
        var x0 = xOf(bin.t, w), x1 = xOf(bin.t + b.size, w);
        var bw = Math.max(1, x1 - x0 - (x1 - x0 > 4 ? 1 : 0));
        var acc = 0;
        r.fields.forEach(function (f, fi) {
          var v = bin.v[fi];
          if (!v) return;
          var hh = v / max * (RH - 8);
          var rect = s('rect', { 'class': 'bar', 'data-outcome': f, 'data-n': v, x: x0, y: base - acc - hh, width: bw, height: hh, fill: color(f), 'fill-opacity': f === 'admit' ? 0.45 : 0.95 });
          acc += hh;
          plot.appendChild(rect);
        });
        var hit = s('rect', { x: x0, y: y + 4, width: Math.max(bw, 3), height: RH - 4, fill: 'transparent' });
        tipOn(hit, function () {
          var lines = [[r.label, fmtTime(bin.t) + ' \u2192 ' + fmtTime(bin.t + b.size)]];
          r.fields.forEach(function (f, fi) { if (bin.v[fi]) lines.push([num(bin.v[fi]), f]); });
          if (r.binding) lines.push('click: these requests in the table');
          return lines;
        });
        if (r.binding) hit.addEventListener('click', function () { showRows({ binding: r.binding, from: bin.t, to: bin.t + b.size }); });
        plot.appendChild(hit);
      });
      g.appendChild(plot);
      svg.appendChild(g);
    });
    interactive(svg, decisionsBox, 20, height);
    decisionsBox.appendChild(svg);
  }
  function drawCharts() {
    cursors = [];
    if (zoomText) zoomText.textContent = zoomLabel();
    drawTimeline();
    drawDecisions();
  }

  // ---- requests ------------------------------------------------------------------------
  var tableBox, pagerBox, filterBox, countText, inputs = {};
  // The columns fit a 1600 px window: the long texts wrap (names, users, policies) or are
  // clamped to a few lines (messages, the recorded refusal), with the whole text as a title.
  var COLUMNS = [
    { key: 't', label: 'time', cell: function (r) { return h('td', { 'class': 'nowrap mono', title: r.time }, spansDays ? [h('div', { text: fmtDate(r.t) }), h('div', { text: fmtClock(r.t, true) })] : fmtClock(r.t, true)); } },
    { key: 'outcome', label: 'outcome', cell: function (r) {
      // A likely decision: its outcome's colour, marked likely, the alternatives on hover.
      var likely = r.certainty === 'likely';
      return h('td', { 'class': 'chips', title: likely ? 'likely: ' + (r.alternatives || []).join('\n') : null },
        h('span', { 'class': 'chip ' + r.outcome + (likely ? ' likely' : ''), text: likely ? 'likely ' + r.outcome : r.outcome }),
        r.changed ? h('span', { 'class': 'chip changed', text: 'changed' }) : null);
    } },
    { key: 'recorded', label: 'recorded', cell: function (r) { return h('td', { 'class': 'rec' }, h('div', { text: r.recorded }), r.recordedBy ? h('div', { 'class': 'hint clamp', title: r.recordedBy, text: 'by ' + r.recordedBy.replace(/^(?:Validating|Mutating)AdmissionPolicy '([^']+)'(?: with binding '[^']+')?$/, '$1') }) : null); } },
    { key: 'user', label: 'user', cell: function (r) { return h('td', { 'class': 'mono wrap', title: r.user }, breakable(shortUser(r.user))); } },
    { key: 'request', label: 'request', cell: function (r) { return h('td', { 'class': 'nowrap' }, h('div', { text: r.verb }), h('div', { 'class': 'hint', text: r.resource })); } },
    { key: 'name', label: 'namespace/name', cell: function (r) { return h('td', { 'class': 'mono wrap' }, breakable((r.namespace ? r.namespace + '/' : '') + (r.name || ''))); } },
    { key: 'node', label: 'node', cell: function (r) { return h('td', { 'class': 'mono wrap', text: r.node || '' }); } },
    { key: 'policy', label: 'policy / binding / param', cell: function (r) {
      var first = r.results[0] || r.bindings[0];
      if (!first) return h('td', { 'class': 'hint', text: '\u2014' });
      var more = Math.max(r.results.length, r.bindings.length) - 1;
      var sub = first.binding + (first.param ? ' \u00b7 ' + first.param : '') + (more > 0 ? '  +' + more : '');
      // The policy's name on one line, unless it is longer than most (a name may have 63).
      return h('td', { 'class': 'policy', title: first.policy + '\n' + sub }, h('div', { 'class': 'mono' + (first.policy.length > 40 ? '' : ' nowrap'), text: first.policy }), h('div', { 'class': 'hint mono', text: sub }));
    } },
    { key: 'message', label: 'message', cell: function (r) { var m = r.results.length && r.results[0].message ? r.results[0].message : (r.indeterminate || r.message || ''); return h('td', { 'class': 'msg' }, h('div', { 'class': 'clamp', title: m, text: m })); } },
    { key: 'source', label: 'objects from', cell: function (r) {
      var n = (r.notes || []).length;
      return h('td', { 'class': 'hint src' }, [r.objectSource, r.oldObjectSource].filter(Boolean).join(' / '), n ? h('div', { title: r.notes.join('\n'), text: plural(n, 'note') }) : null);
    } },
    { key: 'reason', label: 'reason', cell: function (r) { return h('td', { 'class': 'nowrap', text: r.reason || '' }); } }
  ];
  function sortValue(r, key) {
    switch (key) {
      case 't': return r.t;
      case 'outcome': return OUTCOMES.indexOf(r.outcome);
      case 'request': return r.verb + ' ' + r.resource;
      case 'name': return (r.namespace || '') + '/' + (r.name || '');
      case 'policy': var f = r.results[0] || r.bindings[0]; return f ? f.policy + '/' + f.binding : '';
      case 'message': return r.results.length ? r.results[0].message || '' : r.message || '';
      case 'source': return (r.objectSource || '') + (r.oldObjectSource || '');
      default: return r[key] || '';
    }
  }
  function rowMatches(r) {
    var f = state.filter;
    if (f.outcome) {
      if (f.outcome === 'changed') { if (!r.changed) return false; }
      else if (r.outcome !== f.outcome && !r.bindings.some(function (b) { return b.outcomes.indexOf(f.outcome) >= 0 && (!f.binding || b.policy + '/' + b.binding === f.binding); })) return false;
    }
    if (f.binding) {
      var hit = r.bindings.some(function (b) { return b.policy + '/' + b.binding === f.binding && (!f.outcome || f.outcome === 'changed' || b.outcomes.indexOf(f.outcome) >= 0 || r.outcome === f.outcome); });
      if (!hit) return false;
    }
    if (f.node !== null && (r.node || '') !== f.node) return false;
    if (f.group && r.group !== f.group) return false;
    if (f.from !== null && (r.t < f.from || r.t >= f.to)) return false;
    if (f.text) {
      var hay = [r.user, r.verb, r.resource, r.namespace, r.name, r.node, r.message, r.indeterminate, r.reason, r.auditID]
        .concat(r.results.map(function (x) { return x.policy + ' ' + x.binding + ' ' + x.param + ' ' + x.message; })).join(' ').toLowerCase();
      if (hay.indexOf(f.text.toLowerCase()) < 0) return false;
    }
    return true;
  }
  function requestsPanel() {
    var sec = h('section', { 'class': 'panel', id: 'requests' });
    var rq = D.requests;
    sec.appendChild(h('div', { 'class': 'panel-head' }, h('h2', { text: 'Requests' }),
      h('span', { 'class': 'hint', text: 'every request a binding did not admit, or decided otherwise than recorded \u00b7 click a row for its objects' })));
    if (rq.leftOut) {
      var by = Object.keys(rq.leftOutBy || {}).map(function (k) { return k + ' ' + num(rq.leftOutBy[k]); }).join(', ');
      sec.appendChild(h('div', { 'class': 'note', text: 'The report keeps the first ' + num(rq.rows.length) + ' of ' + num(rq.total) + ' requests: ' + num(rq.leftOut) + ' left out (' + by + '). vapc replay --output jsonl lists them all.' }));
    }
    if (rq.objectsLeftOut) sec.appendChild(h('div', { 'class': 'note', text: num(rq.objectsLeftOut) + ' rows are without their objects: the report\u2019s budget for objects was spent.' }));
    filterBox = h('div', { 'class': 'controls', style: 'margin-bottom:8px' });
    inputs.text = h('input', { type: 'search', placeholder: 'search user, name, message\u2026', id: 'row-search' });
    inputs.text.addEventListener('input', function () { state.filter.text = inputs.text.value; state.page = 0; drawTable(); });
    inputs.outcome = h('select', { id: 'row-outcome' }, h('option', { value: '', text: 'any outcome' }),
      ['deny', 'indeterminate', 'warn', 'audit', 'error', 'changed'].map(function (o) { return h('option', { value: o, text: o }); }));
    inputs.outcome.addEventListener('change', function () { state.filter.outcome = inputs.outcome.value; state.page = 0; drawTable(); });
    inputs.binding = h('select', { id: 'row-binding' }, h('option', { value: '', text: 'any binding' }));
    D.policies.forEach(function (p) { p.bindings.forEach(function (b) { inputs.binding.appendChild(h('option', { value: p.name + '/' + b.name, text: p.name + ' / ' + b.name })); }); });
    inputs.binding.addEventListener('change', function () { state.filter.binding = inputs.binding.value; state.page = 0; drawTable(); });
    inputs.group = h('select', { id: 'row-group' }, h('option', { value: '', text: 'any requester' }), Object.keys(GROUP_WORD).map(function (g) { return h('option', { value: g, text: GROUP_WORD[g] }); }));
    inputs.group.addEventListener('change', function () { state.filter.group = inputs.group.value; state.page = 0; drawTable(); });
    countText = h('span', { 'class': 'hint' });
    var extra = h('span', { 'class': 'hint', id: 'row-scope' });
    inputs.scope = extra;
    filterBox.appendChild(h('label', null, inputs.text));
    filterBox.appendChild(inputs.outcome);
    filterBox.appendChild(inputs.binding);
    filterBox.appendChild(inputs.group);
    filterBox.appendChild(h('button', { text: 'clear filters', onclick: function () { showRows({}); } }));
    filterBox.appendChild(extra);
    filterBox.appendChild(countText);
    sec.appendChild(filterBox);
    tableBox = h('div', { 'class': 'table-wrap' });
    sec.appendChild(tableBox);
    pagerBox = h('div', { 'class': 'pager' });
    sec.appendChild(pagerBox);
    return sec;
  }
  // showRows sets the table's filter and brings the table into view.
  function showRows(f) {
    state.filter = { text: '', outcome: f.outcome || '', binding: f.binding || '', node: f.node === undefined ? null : f.node, group: f.group || '', from: f.from === undefined ? null : f.from, to: f.to === undefined ? null : f.to };
    inputs.text.value = ''; inputs.outcome.value = state.filter.outcome; inputs.binding.value = state.filter.binding; inputs.group.value = state.filter.group;
    state.page = 0;
    drawTable();
    if (Object.keys(f).length) document.getElementById('requests').scrollIntoView({ behavior: 'smooth', block: 'start' });
  }
  function drawTable() {
    var f = state.filter;
    var scope = [];
    if (f.node !== null && f.node !== undefined) scope.push('node ' + (f.node || '(not known)'));
    if (f.from !== null) scope.push(fmtTime(f.from) + '\u2013' + fmtTime(f.to));
    inputs.scope.textContent = scope.length ? 'only ' + scope.join(', ') : '';
    var rows = D.requests.rows.filter(rowMatches);
    var key = state.sort.key, asc = state.sort.asc;
    rows = rows.map(function (r, i) { return { r: r, i: i }; }).sort(function (a, b) {
      var x = sortValue(a.r, key), y = sortValue(b.r, key);
      if (x < y) return asc ? -1 : 1;
      if (x > y) return asc ? 1 : -1;
      return a.i - b.i;
    }).map(function (x) { return x.r; });
    countText.textContent = num(rows.length) + ' of ' + num(D.requests.rows.length) + ' requests';
    clear(tableBox);
    var tbl = h('table', { 'class': 'req' });
    var trh = h('tr');
    COLUMNS.forEach(function (c) {
      var th = h('th', { 'class': (state.sort.key === c.key ? 'sorted' + (asc ? ' asc' : '') : ''), 'data-key': c.key, text: c.label });
      th.addEventListener('click', function () {
        if (state.sort.key === c.key) state.sort.asc = !state.sort.asc; else { state.sort.key = c.key; state.sort.asc = true; }
        drawTable();
      });
      trh.appendChild(th);
    });
    tbl.appendChild(h('thead', null, trh));
    var tb = h('tbody');
    var pages = Math.max(1, Math.ceil(rows.length / state.pageSize));
    if (state.page >= pages) state.page = pages - 1;
    rows.slice(state.page * state.pageSize, (state.page + 1) * state.pageSize).forEach(function (r) {
      var tr = h('tr', { 'class': 'row', 'data-outcome': r.outcome, 'data-node': r.node || '' });
      COLUMNS.forEach(function (c) { tr.appendChild(c.cell(r)); });
      tr.addEventListener('click', function () { openDetail(r); });
      tb.appendChild(tr);
    });
    if (!rows.length) tb.appendChild(h('tr', null, h('td', { colspan: COLUMNS.length, 'class': 'hint', text: D.requests.rows.length ? 'no request matches the filters' : 'every request was admitted as recorded' })));
    tbl.appendChild(tb);
    tableBox.appendChild(tbl);
    clear(pagerBox);
    if (pages > 1) {
      pagerBox.appendChild(h('button', { text: '\u2190 previous', disabled: state.page === 0 ? 'disabled' : null, onclick: function () { state.page--; drawTable(); } }));
      pagerBox.appendChild(h('span', { text: 'page ' + (state.page + 1) + ' of ' + pages }));
      pagerBox.appendChild(h('button', { text: 'next \u2192', disabled: state.page >= pages - 1 ? 'disabled' : null, onclick: function () { state.page++; drawTable(); } }));
    }
  }

  // ---- detail --------------------------------------------------------------------------
  var drawer = null, overlay = null;
  function closeDetail() {
    if (drawer) { document.body.removeChild(drawer); document.body.removeChild(overlay); drawer = overlay = null; }
  }
  function jsonBlock(v) {
    var pre = h('pre', { 'class': 'json' });
    if (v === undefined || v === null) { pre.textContent = 'none'; return pre; }
    var text = JSON.stringify(v, null, 2);
    var re = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;
    var last = 0, m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) pre.appendChild(document.createTextNode(text.slice(last, m.index)));
      var cls = m[1] ? (m[2] ? 'k' : (/^"<redacted/.test(m[1]) ? 'r' : 's')) : m[3] ? 'b' : 'n';
      pre.appendChild(h('span', { 'class': cls, text: m[1] || m[0] }));
      if (m[2]) pre.appendChild(document.createTextNode(m[2]));
      last = re.lastIndex;
    }
    if (last < text.length) pre.appendChild(document.createTextNode(text.slice(last)));
    return pre;
  }
  function openDetail(r) {
    closeDetail();
    overlay = h('div', { 'class': 'overlay', onclick: closeDetail });
    drawer = h('div', { 'class': 'drawer', id: 'detail' });
    var res = r.resource + ' ' + (r.namespace ? r.namespace + '/' : '') + (r.name || '');
    drawer.appendChild(h('header', null, h('span', { 'class': 'chip ' + r.outcome, text: r.outcome }), r.changed ? h('span', { 'class': 'chip changed', text: 'changed' }) : null,
      h('h3', { text: r.verb + ' ' + res }), h('button', { text: 'close', onclick: closeDetail })));
    var body = h('div', { 'class': 'body' });
    var kv = h('dl', { 'class': 'kv' });
    function item(k, v) { if (v === undefined || v === null || v === '') return; kv.appendChild(h('dt', { text: k })); kv.appendChild(h('dd', { text: String(v) })); }
    item('time', r.time);
    item('where', r.file + ':' + r.line + '  (audit ID ' + r.auditID + ')');
    item('user', r.user + '  (' + (GROUP_WORD[r.group] || r.group) + ')');
    item('node', r.node);
    item('decision', r.decision + (r.code ? ' ' + r.code : '') + (r.certainty === 'likely' ? ' (likely: decided on the state the log\u2019s order gives; a lag of kube-apiserver\u2019s informers or watch cache gives the alternatives below)' : ''));
    item('recorded', r.recorded + (r.recordedBy ? ' by ' + r.recordedBy : ''));
    item('message', r.message);
    item('indeterminate', r.indeterminate);
    item('objects from', [r.objectSource && 'object: ' + r.objectSource, r.oldObjectSource && 'oldObject: ' + r.oldObjectSource].filter(Boolean).join(', '));
    (r.warnings || []).forEach(function (w) { item('warning', w); });
    Object.keys(r.auditAnnotations || {}).sort().forEach(function (k) { item('annotation', k + ': ' + r.auditAnnotations[k]); });
    item('annotations of', r.annotationsSource);
    (r.alternatives || []).forEach(function (a) { item(r.certainty === 'likely' ? 'alternative' : 'or the server may say', a); });
    (r.notes || []).forEach(function (n) { item('note', n); });
    (r.disagreements || []).forEach(function (d) { item('disagreement', d); });
    body.appendChild(kv);
    if (r.results.length) {
      var ul = h('ul', { 'class': 'results' });
      r.results.forEach(function (x) {
        var o = x.actions && x.actions.indexOf('Deny') >= 0 ? 'deny' : x.actions && x.actions.indexOf('Warn') >= 0 ? 'warn' : x.actions && x.actions.indexOf('Audit') >= 0 ? 'audit' : 'error';
        ul.appendChild(h('li', { 'class': o }, h('div', null, h('b', { 'class': 'mono', text: x.policy + ' / ' + x.binding }), x.param ? h('span', { 'class': 'hint mono', text: '  param ' + x.param }) : null, '  ',
          (x.actions || []).map(function (a) { return h('span', { 'class': 'chip ' + a, text: a }); }), h('span', { 'class': 'hint', text: x.result + (x.reason ? ' \u00b7 ' + x.reason : '') })),
          x.message ? h('div', { text: x.message }) : null));
      });
      body.appendChild(ul);
    }
    if (r.redacted) body.appendChild(h('div', { 'class': 'note' }, h('span', { 'class': 'chip redacted', text: 'redacted' }), ' a sensitive object: its values are replaced by their sizes and removed from the texts above.'));
    if (r.objectsLeftOut) body.appendChild(h('div', { 'class': 'note', text: 'The objects of this request are not in the report: its budget for objects was spent.' }));
    else if (r.object && r.oldObject) body.appendChild(h('div', { 'class': 'objects' },
      h('div', null, h('h4', { text: 'object (rebuilt)' }), jsonBlock(r.object)),
      h('div', null, h('h4', { text: 'oldObject (rebuilt)' }), jsonBlock(r.oldObject))));
    else if (r.object || r.oldObject) body.appendChild(h('div', null,
      h('h4', null, r.object ? 'object (rebuilt)' : 'oldObject (rebuilt)', h('span', { 'class': 'hint', text: r.object ? '  \u00b7 no oldObject' : '  \u00b7 no object' })),
      jsonBlock(r.object || r.oldObject)));
    else body.appendChild(h('div', { 'class': 'hint', text: 'The request has no object the replay could rebuild' + (r.indeterminate ? ': ' + r.indeterminate : '.') }));
    drawer.appendChild(body);
    document.body.appendChild(overlay);
    document.body.appendChild(drawer);
  }

  // ---- lines ---------------------------------------------------------------------------
  function linesPanel() {
    var sec = h('section', { 'class': 'panel', id: 'lines' });
    var t = D.totals;
    sec.appendChild(h('div', { 'class': 'panel-head' }, h('h2', { text: 'Skipped requests and malformed lines' }),
      h('span', { 'class': 'hint', text: num(t.lines) + ' lines = ' + num(t.requests) + ' requests + ' + num(t.intermediateStages) + ' intermediate stages + ' + num(t.malformed) + ' malformed' + (t.blank ? ' + ' + num(t.blank) + ' blank' : '') + (t.duplicates ? ' + ' + num(t.duplicates) + ' duplicates (the same events read again)' : '') })));
    var grid = h('div', { style: 'display:grid;grid-template-columns:1fr 1fr;gap:16px' });
    var sk = h('table', null, h('thead', null, h('tr', null, h('th', { text: 'skipped: never reached validating admission' }), h('th', { 'class': 'num', text: 'requests' }))));
    var skb = h('tbody');
    D.lines.skipped.forEach(function (c) { skb.appendChild(h('tr', null, h('td', { text: c.reason }), h('td', { 'class': 'num', text: num(c.n) }))); });
    (D.lines.incomplete || []).forEach(function (c) { skb.appendChild(h('tr', null, h('td', { text: 'incomplete ' + c.reason + ' (no final stage)' }), h('td', { 'class': 'num', text: num(c.n) }))); });
    if (!D.lines.skipped.length) skb.appendChild(h('tr', null, h('td', { 'class': 'hint', colspan: 2, text: 'none' })));
    sk.appendChild(skb);
    var ml = h('table', { id: 'malformed' }, h('thead', null, h('tr', null, h('th', { text: 'malformed line' }), h('th', { text: 'why' }))));
    var mlb = h('tbody');
    D.lines.malformed.forEach(function (m) { mlb.appendChild(h('tr', null, h('td', { 'class': 'mono nowrap', text: m.file + ':' + m.line }), h('td', { text: m.reason }))); });
    if (!D.lines.malformed.length) mlb.appendChild(h('tr', null, h('td', { 'class': 'hint', colspan: 2, text: 'none' })));
    if (t.malformed > D.lines.malformed.length) mlb.appendChild(h('tr', null, h('td', { 'class': 'hint', colspan: 2, text: num(t.malformed - D.lines.malformed.length) + ' more not listed' })));
    ml.appendChild(mlb);
    grid.appendChild(sk); grid.appendChild(ml);
    sec.appendChild(grid);
    return sec;
  }

  // ---- main ----------------------------------------------------------------------------
  function main() {
    var raw = document.getElementById('report-data');
    D = JSON.parse(raw.textContent);
    if (D.version !== 1) throw new Error('this page draws report data of version 1, not ' + D.version);
    startAbs = D.span.start ? Date.parse(D.span.start) : 0;
    spansDays = !!D.span.start && fmtDate(0) !== fmtDate(D.span.ms);
    state.view = fullView();
    document.body.appendChild(tip);
    append(app, header());
    app.appendChild(timelinePanel());
    app.appendChild(decisionsPanel());
    app.appendChild(requestsPanel());
    app.appendChild(linesPanel());
    app.appendChild(h('footer', { text: 'Written by vapc replay --report. Self-contained: this file makes no network request. Times in UTC.' }));
    drawCharts();
    drawTable();
    var resizeTimer = null;
    window.addEventListener('resize', function () { clearTimeout(resizeTimer); resizeTimer = setTimeout(drawCharts, 120); });
    document.addEventListener('keydown', function (ev) { if (ev.key === 'Escape') closeDetail(); });
    document.body.setAttribute('data-ready', 'true');
  }
  try {
    main();
  } catch (err) {
    app.insertBefore(h('div', { 'class': 'error-banner', text: 'The report could not be drawn: ' + (err && err.message ? err.message : String(err)) }), app.firstChild);
    throw err;
  }
})();
