package replay

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/decide"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// The log records a request when its response completes. A write received before another
// request to its object completed, and logged after it, ran concurrently with it: the earlier
// logged request may have read the object as that write left it, which the State does not hold
// yet when the request is evaluated (a DELETE by the garbage collector logged just before the
// job controller's patch it raced with). The replay keeps the jobs that read a stored object
// for lookahead of log time after they completed before it accounts for them, and evaluates
// one again, without the old object, when such a write shows up (reviseConcurrent).
const lookahead = time.Second

// maxHeld bounds the jobs held for lookahead: beyond it (more requests in a second of log time)
// the oldest is accounted for early, and the summary says how many were (lookaheadCut).
const maxHeld = 4096

// track registers a job whose evaluation read what the State knew of a stored object (its old
// object, or a deletecollection's list), for reviseConcurrent.
func (e *evaluation) track(j *job) {
	// A write to an object the State does not know may be followed by its create, which the
	// log records after it.
	revisable := j.listed.list != nil || (j.ev.Verb != "deletecollection" && j.prior.Found && (j.prior.Raw != nil || j.prior.Asked != 0)) ||
		(j.ev.Verb != "deletecollection" && !j.prior.Found && j.prior.Kept && writtenVersion(j.d, j.ev, j.t) > 0)
	if j.revise.completed.IsZero() || !revisable {
		return
	}
	if e.byKey == nil {
		e.byKey = map[state.ReplacedKey][]*job{}
	}
	e.byKey[j.revise.key] = append(e.byKey[j.revise.key], j)
	j.revise.tracked = true
}

// untrack forgets a job as it is accounted for.
func (e *evaluation) untrack(j *job) {
	if !j.revise.tracked {
		return
	}
	js := slices.DeleteFunc(e.byKey[j.revise.key], func(o *job) bool { return o == j })
	if len(js) == 0 {
		delete(e.byKey, j.revise.key)
	} else {
		e.byKey[j.revise.key] = js
	}
}

// holds says whether the job must wait before it is accounted for: a write logged up to a
// lookahead of log time later may yet turn out to have run concurrently with it, to its
// object or to the params and namespaces its evaluation read.
func (e *evaluation) holds(j *job, logTime time.Time) bool {
	return (j.revise.tracked || j.readsTyped()) && !j.revise.completed.IsZero() && logTime.Sub(j.revise.completed) < lookahead
}

// readsTyped says whether the job, evaluated, read params or namespaces for an outcome a write
// logged after it may change (see Replayer.reviseAhead): decided, or not where the log's
// verdicts contradict every state of the informers the writes so far give.
func (j *job) readsTyped() bool {
	if !j.isDone() || j.result.skip != "" || (j.result.out != nil && j.result.out.Decision == DecisionIndeterminate && !j.lag.contradicted) {
		return false
	}
	return slices.ContainsFunc(j.lag.readBy, func(v *state.StateView) bool { return len(v.Gets) > 0 || len(v.Lists) > 0 })
}

// held counts the queued jobs still held at logTime.
func (e *evaluation) held(logTime time.Time) int {
	n := 0
	for _, j := range e.queue {
		if e.holds(j, logTime) {
			n++
		}
	}
	return n
}

// reviseConcurrent evaluates again, without what they read of the State, the requests waiting
// to be accounted for that the successful write of ev (at d) ran concurrently with: received
// before they completed, logged after them, less than lookahead later. A write to one object
// concerns the requests that read it and the deletecollections of its namespace; a
// deletecollection (or a create whose name the server generated) every request of the
// resource in its namespace that read the State.
func (r *Replayer) reviseConcurrent(d decoded, ev *Event, t target) {
	e := r.running
	if len(e.byKey) == 0 || t.connect || isDryRun(ev) || ev.Code() < 200 || ev.Code() >= 300 {
		return
	}
	received, completed := ev.Received(), auditlog.ParseTime(ev.StageTimestamp)
	if received.IsZero() || completed.IsZero() {
		return
	}
	gr := state.StorageOf(t.gvr.GroupResource()) // the jobs' keys are their storage's
	// A create matters to what a deletecollection listed only: an object a request read existed.
	create := t.op == admission.Create && t.sub == ""
	var js []*job
	if t.name == "" {
		for k, kjs := range e.byKey {
			if k.GR == gr && (t.namespace == "" || k.Obj.Namespace == t.namespace) {
				js = append(js, kjs...)
			}
		}
	} else {
		for _, k := range []state.ReplacedKey{{GR: gr, Obj: state.ObjectKey{Namespace: t.namespace, Name: t.name}}, {GR: gr, Obj: state.ObjectKey{Namespace: t.namespace}}, {GR: gr}} {
			js = append(js, e.byKey[k]...)
		}
	}
	if len(js) == 0 {
		return // decoding the write's response for its version is the most of this
	}
	// A write that changed nothing returns the version it found: a request that read that
	// version read it either way.
	unchanged := storedVersion(d, ev, t)
	marked := ev.Verb == "delete" && unchanged > 0
	// The version the write stored (or found), a create's too.
	stored := unchanged
	if create {
		if w := writtenObject(ev, t); w.isMain && w.raw != nil {
			stored = state.ResourceVersion(w.resp.GetResourceVersion())
		}
	}
	for _, j := range js {
		collection := j.ev.Verb == "deletecollection"
		if !received.Before(j.revise.completed) || completed.Sub(j.revise.completed) >= lookahead {
			continue
		}
		// The two writes' results order them: a request whose result is older than the
		// write's read the object before the write was committed; one whose result is newer
		// last read what the write stored, or a later version (its first attempt may have
		// read the version before).
		var result uint64
		if !collection {
			result = resultVersion(j.d, j.ev, j.t)
		}
		if stored > 0 && result > 0 && stored > result {
			continue
		}
		committedFirst := stored > 0 && result > stored
		switch {
		case create && !collection && !(committedFirst && !j.prior.Found):
			// A create matters to what a deletecollection listed (an object a request read
			// existed), and to a write to an object the State did not know, committed after it.
			continue
		case j.revise.revised && !(committedFirst && j.revise.concurrent != nil && j.revise.concurrent.committedFirst != "" && stored > j.prior.RV):
			// Evaluated again once; again only on a write committed after the version it was
			// evaluated on and before its own: it last read that one.
			continue
		}
		if unchanged > 0 && !collection && j.prior.RV == unchanged && j.prior.Raw != nil {
			// The write found the version the request read (and its first attempt what the
			// prior says it may have): it changed nothing, and was not committed first.
			continue
		}
		<-j.done
		r.forgetReached(j, d)
		j.revise.concurrent = &concurrentWrite{by: d.ref().String(), out: j.result.out, skip: j.result.skip, notMatched: j.result.notMatched, dec: j.result.dec,
			withinSecond: ev.Loss.Lost.Has(auditlog.LostStageTime)}
		j.again()
		j.revise.revised = true
		what := "which version of the object this request read"
		if collection {
			what = "which objects this request listed"
		}
		why := fmt.Sprintf("the write at %s, which the log records after this request, was received before this request completed (%s, %s): they ran concurrently, and the log does not say %s",
			d.ref(), received.UTC().Format(time.RFC3339Nano), j.revise.completed.UTC().Format(time.RFC3339Nano), what)
		switch w := writtenObject(ev, t); {
		case collection:
			j.listed.list, j.listed.listUnknowns, j.listed.listUnknown = nil, nil, why
		case w.isMain && w.raw != nil && (ev.Verb != "delete" || marked):
			if committedFirst {
				j.revise.concurrent.committedFirst = fmt.Sprintf("resourceVersion %d, this request's %d", stored, result)
			}
			j.readWhatItStored(w)
		default:
			j.prior.Raw, j.prior.Unknowns, j.prior.Stale, j.prior.StaleUnknown, j.prior.Unknown = nil, nil, nil, "", why
		}
		j.askedFor()
		e.jobs <- j
	}
}

// readWhatItStored gives the job, revised on a write logged after it that ran concurrently with
// it (w, which the log holds), the alternative that it read what that write stored: committed
// first, it is what the request last read, and the version the State gave it, or an older one,
// what its first attempt may have read (from the watch cache, or before the write was
// committed: its update conflicted, the store ran admission again on what the write stored,
// and the audit event keeps the first attempt's annotations). The version the request asked
// for, which the State did not hold, is what it read.
func (j *job) readWhatItStored(w *written) {
	rv := state.ResourceVersion(w.resp.GetResourceVersion())
	if asked := j.prior.Asked; asked != 0 && asked == rv {
		j.revise.concurrent.asked = asked
	}
	var stale []state.Prior
	if j.prior.Raw != nil {
		first := j.prior
		first.Stale, first.StaleUnknown, first.RacedBy, first.RacedFrom = nil, "", "", nil
		stale = append([]state.Prior{first}, j.prior.Stale...)
	}
	j.prior.Found, j.prior.Raw, j.prior.RV, j.prior.Unknowns, j.prior.Stale, j.prior.StaleUnknown, j.prior.Unknown = true, w.raw, rv, nil, stale, "", ""
	j.prior.RacedBy, j.prior.RacedFrom = "", nil
	j.prior.Source = "the write at " + j.revise.concurrent.by + ", which the log records after this request"
}

// reachedOnlyAhead settles a job whose request, on the state the log's order gives, reaches no
// policy (none matches it, or the store completes it without admission: c), and, on what the
// write logged after it stored, does. The log's order is the likely state: the log showing
// none of the verdicts the other gives, it is the one; showing one, the other is; else the
// request is not decided (the record of a request no policy reaches has no alternatives to
// give).
func (j *job) reachedOnlyAhead(c *concurrentWrite) {
	logOrder := func() {
		j.result.out, j.result.dec, j.result.skip, j.result.notMatched = c.out, c.dec, c.skip, c.notMatched
	}
	dec := j.result.dec
	if dec != nil && dec.Allowed && len(dec.Results) == 0 && len(dec.AuditAnnotations) == 0 && len(dec.Warnings) == 0 && j.result.out.Decision == DecisionAdmit {
		logOrder() // no policy says anything on the other either
		return
	}
	var shown, silent bool
	if dec != nil {
		shown, silent = j.verdictsShown(dec)
	}
	switch {
	case silent:
		logOrder()
	case shown:
		j.result.out.Notes = append(j.result.out.Notes, "decided on the version the write at "+c.by+" stored, which the log records after this request: the verdicts the log records are those of that version")
	case j.result.out.Decision != DecisionIndeterminate:
		what := "no policy matches it"
		if c.skip != "" {
			what = "it does not reach validating admission (" + string(c.skip) + ")"
		}
		j.result.out.Alternatives = nil
		j.result.out.indeterminate(because(ReasonOldObjectUnknown, "the write at "+c.by+", which the log records after this request, was received before this request completed: on the version the State gives, as the log's order has it, "+what+"; on the version that write stored, policies decide it, and the log does not say which the request read"))
	}
}

// resultVersion is the resourceVersion of a successful request's result: what an update or
// a patch stored (or found, having changed nothing), what a delete removed (etcd's revision of
// the deletion) or marked deleted; 0 when the log does not show it.
func resultVersion(d decoded, ev *Event, t target) uint64 {
	if v := writtenVersion(d, ev, t); v > 0 || ev.Verb != "delete" || isDryRun(ev) {
		return v
	}
	return responseVersion(ev, t)
}

// concurrentWrite is a write the log records after a request it ran concurrently with (see
// reviseConcurrent), and the request's outcome on the State as the log's order gives it, before
// it was evaluated again without what it read of the object.
type concurrentWrite struct {
	by         string
	out        *Record
	dec        *verify.Decision
	skip       Reason
	notMatched bool
	// committedFirst, when set, says the write's result is older than the request's (both
	// resourceVersions): the request last read what the write stored, and the log's order is
	// not a state it was decided in.
	committedFirst string
	// withinSecond says the export gives when the write completed only within the second
	// before its time (auditlog.LostStageTime): the log's order of the two is not likely.
	withinSecond bool
	// asked, when set, is the resourceVersion the request asked for and reached admission on,
	// which the write stored: the request read what it stored.
	asked uint64
}

// likelyOutcome settles the outcome of a job evaluated again for a write the log records
// after it that ran concurrently with it, on what that write stored (or without what it read
// when the log does not hold it). The log's order is likely: both completed, the write last,
// and the request read the object when it began. The request is certain when both decide
// alike, or when, checking against the log, the verdicts the log records for the policies it
// shows installed are those of one of them; otherwise the other is an alternative.
func (j *job) likelyOutcome() {
	c := j.revise.concurrent
	if c != nil && c.asked != 0 {
		if j.result.out != nil {
			j.result.out.Notes = append(j.result.out.Notes, fmt.Sprintf("decided on the version the write at %s stored, which the log records after this request: it is the one this request asked for (resourceVersion %d), which the store checks before admission", c.by, c.asked))
		}
		return
	}
	if c != nil && c.committedFirst != "" {
		if j.result.out != nil {
			j.result.out.Notes = append(j.result.out.Notes, "decided on the version the write at "+c.by+" stored, which the log records after this request: that write's result is older ("+c.committedFirst+"), so it was committed first, and this request last read what it stored")
		}
		return
	}
	if c != nil && c.out != nil && (c.skip != "" || c.notMatched) && j.result.skip == "" && !j.result.notMatched && j.result.out != nil {
		j.reachedOnlyAhead(c)
		return
	}
	if c == nil || c.out == nil || c.skip != "" || c.notMatched {
		return // nothing decided on the log's order to fall back on
	}
	if c.out.Decision == DecisionIndeterminate {
		// The log's order, the likely state, decides nothing: neither does the other.
		j.result.out, j.result.dec, j.result.skip, j.result.skipNote, j.result.notMatched = c.out, c.dec, "", "", false
		return
	}
	if j.result.skip == SkipPendingDeletion && c.dec != nil {
		switch shown, silent := j.verdictsShown(c.dec); {
		case silent:
			// On what the write stored, the store completes the request without admission,
			// and the log shows none of the verdicts the log's order gives: it did.
			j.result.skipNote = "on the version the write at " + c.by + " stored, which the log records after this request: the log shows none of the verdicts its order gives"
			return
		case shown:
			// The log shows a verdict: admission ran, as the log's order has it.
			j.result.out, j.result.dec, j.result.skip, j.result.skipNote, j.result.notMatched = c.out, c.dec, "", "", false
			return
		}
	}
	worlds := []world{
		{Likely: true, Outcome: c.dec, Decided: c.dec != nil},
		{If: "the write at " + c.by + ", which the log records after this request but which was received before this request completed, was committed before this request read the object"},
	}
	switch w := &worlds[1]; {
	case j.result.skip != "" || j.result.notMatched || j.result.out == nil:
		reason := ReasonOldObjectUnknown
		if j.result.skip != "" {
			reason = j.result.skip // why the store completes it without admission
		}
		w.Undecided = &indeterminateError{because(reason, "the request does not reach validating admission on what that write stored")}
	case j.result.out.Decision == DecisionIndeterminate:
		w.Undecided = &indeterminateError{because(j.result.out.Reason, strings.TrimPrefix(j.result.out.Indeterminate, string(j.result.out.Reason)+": "))}
	default:
		w.Outcome, w.Decided = j.result.dec, j.result.dec != nil
	}
	if j.byAnnotations() && worlds[0].Decided && worlds[1].Decided {
		for i := range worlds {
			worlds[i].Evidence = decide.Disagrees
			if len(check(j.ev, j.rec, worlds[i].Outcome, j.evidenced)) == 0 {
				worlds[i].Evidence = decide.Agrees
			}
		}
	}
	alike := worlds[0].Decided && worlds[1].Decided && sameOutcome(worlds[0].Outcome, worlds[1].Outcome)
	chosen := worlds[0].Evidence != decide.NoEvidence && worlds[0].Evidence != worlds[1].Evidence
	if c.withinSecond && !alike && !chosen {
		// The write may have completed up to a second before the log's order has it: which
		// came first is not known, unless both decide alike or the log's verdicts say.
		worlds[0].Likely, worlds[0].If = false, "the write at "+c.by+" completed after this request read the object, as the log's order has it"
		worlds = append(worlds, world{Likely: true, Undecided: &indeterminateError{because(ReasonOldObjectUnknown,
			"whether the write at "+c.by+", which the log records after this request, completed before this request read the object: its export gives when it completed only within the second before the time it gives")}})
	}
	res := decide.Resolve(worlds, sameOutcome)
	if res.Chosen == &worlds[1] {
		// The log's verdicts are those of the version the write stored.
		j.result.out.Notes = append(j.result.out.Notes, "decided on the version the write at "+c.by+" stored, which the log records after this request: the verdicts the log records are those of that version")
		return
	}
	// The log's order: certain when both versions decide alike or the log's verdicts say so,
	// likely otherwise; not known when the log's order is not the likely one.
	_, alts, why := settled(res)
	if res.Certainty == decide.Indeterminate {
		c.out.indeterminate(why)
		c.out.Alternatives = alts
		j.result.out, j.result.dec, j.result.skip, j.result.skipNote, j.result.notMatched = c.out, nil, "", "", false
		return
	}
	c.out.likely(alts...)
	j.result.out, j.result.dec, j.result.skip, j.result.skipNote, j.result.notMatched = c.out, c.dec, "", "", false
}

// reviseAhead evaluates again the requests waiting to be accounted for that read params or
// namespaces the successful write of ev (at d, just applied to the State) wrote, when it ran
// concurrently with them: received before they completed, logged after them, less than
// lookahead later. Such a write may have been committed, and held by kube-apiserver's
// informers, before their admission ran: each is evaluated on the states the informers may
// have held with it (see Replayer.informerLag).
func (r *Replayer) reviseAhead(d decoded, ev *Event) {
	e := r.running
	if len(e.queue) == 0 || !r.state.WroteTyped() {
		return // most requests write no param or namespace
	}
	received, completed := ev.Received(), auditlog.ParseTime(ev.StageTimestamp)
	if received.IsZero() || completed.IsZero() {
		return
	}
	by := d.ref().String()
	ws, unknown := r.state.AheadWrites(by, completed, ev.Loss.Lost.Has(auditlog.LostStageTime))
	// The log holds requests in the order they completed, but for a moment of slack: the
	// newest are last.
	for i := len(e.queue) - 1; i >= 0; i-- {
		j := e.queue[i]
		if j.revise.completed.IsZero() {
			continue // not held (see holds); its time does not order the queue
		}
		if j.revise.completed.Add(time.Second).Before(received) {
			break
		}
		if j.ev == ev || !received.Before(j.revise.completed) || completed.Sub(j.revise.completed) >= lookahead {
			continue
		}
		<-j.done
		if !j.readsTyped() {
			continue
		}
		// Every write is kept, read or not: a state a later write gives may read it
		// (informerLag's rounds).
		j.lag.typedWrites = append(j.lag.typedWrites, ws...)
		for _, gr := range unknown {
			j.lag.aheadUnknown = append(j.lag.aheadUnknown, aheadUnknown{gr, by})
		}
		read := slices.ContainsFunc(ws, func(tw state.TypedWrite) bool {
			return slices.ContainsFunc(j.lag.readBy, func(v *state.StateView) bool { return v.Read(&tw) })
		}) || slices.ContainsFunc(unknown, func(gr schema.GroupResource) bool {
			return slices.ContainsFunc(j.lag.readBy, func(v *state.StateView) bool { return v.Reads(gr) })
		})
		if read {
			r.forgetReached(j, d)
			j.again()
			e.jobs <- j
		}
	}
}

// noteLogTime advances the log's clock to the completion of ev; it is read, and parsed, only
// while a job waits (currentLogTime). A line whose clock goes back more than source.ClockBack
// is noted: source.Split cut the plain log files whose clock does into parts, not standard
// input or a compressed log.
func (r *Replayer) noteLogTime(d decoded, ev *Event) {
	s := ev.StageTimestamp
	if s == "" {
		return
	}
	r.logStamp = s
	if latest, back := r.clock.NoteStamp(s); back {
		r.output.sum.clockJump(ClockJump{File: d.file, Line: d.num, Latest: latest, At: auditlog.ParseTime(s)})
		r.lifecycle.clockBack(d.file)
	}
}

// currentLogTime is the log's clock: the latest completion it records so far.
func (r *Replayer) currentLogTime() time.Time {
	if r.logStamp != r.logTimeOf {
		if t := auditlog.ParseTime(r.logStamp); t.After(r.logTime) {
			r.logTime = t
		}
		r.logTimeOf = r.logStamp
	}
	return r.logTime
}

// verdictsShown says, for a request that reaches validating admission in one state and not in
// another, what the log shows: a verdict of a policy it shows installed (a denial, a
// validation failure, an audit annotation: admission ran), or none where dec, the outcome of
// the state where admission runs, gives one the log would hold (it did not). Neither when the
// replay does not check the log, or an export lost the annotations.
func (j *job) verdictsShown(dec *verify.Decision) (shown, silent bool) {
	if len(j.evidenced) == 0 || j.ev.Loss.Lost.Has(auditlog.LostAnnotations) {
		return false, false
	}
	if recordedVerdictOf(j.ev, j.evidenced) != "" {
		return true, false
	}
	if !dec.Allowed && deniedBy(dec, j.evidenced) {
		return false, true
	}
	for k := range dec.AuditAnnotations {
		if k == ValidationFailureAnnotation {
			if fs, _ := failures(dec.AuditAnnotations[k], j.evidenced); len(fs) > 0 {
				return false, true
			}
			continue
		}
		if policy, _, ok := strings.Cut(k, "/"); ok && j.evidenced[policy] {
			return false, true
		}
	}
	return false, false
}

// forgetReached makes unknown again what the follow stage took a refused deletecollection or
// pod DELETE (j) to have deleted or marked on the state the log's order gives, when a write
// logged later (at d) ran concurrently with it: on another state it may have stopped at
// another item, so any item it listed (the deletecollection's message names none), or the
// pod, may have been written.
func (r *Replayer) forgetReached(j *job, d decoded) {
	if !j.result.reachedApplied {
		return
	}
	j.result.reachedApplied = false
	gr := j.t.gvr.GroupResource()
	why := fmt.Sprintf("written by the refused %s at %s, which ran concurrently with the write at %s: what it left is not known", j.ev.Verb, j.d.ref(), d.ref())
	// As the refused request: the concurrent write's own result, which may have been stored
	// before what it left, does not make its objects known (State.keptUnknown).
	r.state.As(j.d.ref().String(), auditlog.ParseTime(j.ev.StageTimestamp), func() {
		if j.ev.Verb == "deletecollection" {
			r.state.ForgetAll(gr, j.t.namespace, why)
			if j.result.reached != nil {
				// What it removed too: the State holds nothing of those for ForgetAll.
				for k := range j.result.reached.keys {
					r.state.Forget(gr, j.t.mainKind, k.Namespace, k.Name, why)
				}
			}
			return
		}
		r.state.Forget(gr, j.t.mainKind, j.t.namespace, j.t.name, why)
	})
}
