package report

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/vapc-dev/vapc/verify/replay"
)

var screenshots = flag.String("screenshots", "", "folder the browser test writes its screenshots to (default: a temporary folder); ../../docs/images updates the README's")

// chromiumInstall says how to get the browser the test needs.
const chromiumInstall = "the report's browser test needs Chromium: run hack/chromium.sh (as root: apt-get install -y chromium, as make test does), or set VAPC_CHROMIUM to a Chromium or Chrome binary"

// chromium finds the browser: $VAPC_CHROMIUM, or chromium (Debian's package) or Chrome on the
// PATH. Under make test and make unit (VAPC_BROWSER=1, after they install it) the test fails
// without one; go test ./... on a machine without Chromium skips it, saying how to run it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("VAPC_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("VAPC_CHROMIUM=%s: %v: %s", p, err, chromiumInstall)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("VAPC_BROWSER") == "" {
		t.Skipf("no chromium on the PATH: %s; make unit and make test install it and run this test", chromiumInstall)
	}
	t.Fatalf("no chromium on the PATH: %s", chromiumInstall)
	return ""
}

// browser is a headless Chromium and what it reported that a report must never do: console
// errors, exceptions, failed loads, requests to anything but the file itself.
type browser struct {
	ctx context.Context
	mu  sync.Mutex
	bad []string
}

func (b *browser) fail(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bad = append(b.bad, fmt.Sprintf(format, args...))
}

func (b *browser) problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.bad...)
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("disable-dev-shm-usage", true), // containers have a small /dev/shm
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelTimeout)
	b := &browser{ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // starts the browser and opens the tab
		t.Fatalf("starting %s: %v: %s", path, err, chromiumInstall)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				b.fail("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			msg := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
			b.fail("exception: %s", msg)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				b.fail("log error (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			if u := ev.Request.URL; !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
				b.fail("request to %s: a report must not use the network", u)
			}
		case *network.EventLoadingFailed:
			b.fail("failed load: %s (%s)", ev.ErrorText, ev.BlockedReason)
		}
	})
	if err == nil {
		_, err = chromedp.Call(ctx, network.Enable, network.EnableParams{})
	}
	if err == nil {
		_, err = chromedp.Call(ctx, cdplog.Enable, cdp.Empty{})
	}
	if err == nil {
		_, err = chromedp.Call(ctx, runtime.Enable, cdp.Empty{})
	}
	if err == nil {
		_, err = chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1440, Height: 1000, DeviceScaleFactor: 1})
	}
	if err != nil {
		t.Fatalf("starting %s: %v: %s", path, err, chromiumInstall)
	}
	return b
}

// open loads a report and waits until its script has drawn it.
func (b *browser) open(t *testing.T, file string) {
	t.Helper()
	t.Cleanup(func() { b.checkProblems(t) })
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(b.ctx,
		chromedp.Navigate("file://"+filepath.ToSlash(abs)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)),
	); err != nil {
		t.Fatalf("opening %s: %v (problems: %v)", file, err, b.problems())
	}
}

// count is how many elements match a CSS selector.
func (b *browser) count(t *testing.T, sel string) int {
	t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	if err != nil {
		t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

// text is the text of the first element a selector matches.
func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(function(){var e=document.querySelector(%q);return e?e.textContent:""})()`, sel)))
	if err != nil {
		t.Fatalf("text %s: %v", sel, err)
	}
	return s
}

// click dispatches a click on the first element a selector matches (SVG elements included).
func (b *browser) click(t *testing.T, sel string) {
	t.Helper()
	ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(function(){var e=document.querySelector(%q);if(!e)return false;e.dispatchEvent(new MouseEvent("click",{bubbles:true}));return true})()`, sel)))
	if err != nil || !ok {
		t.Fatalf("click %s: not found (%v)", sel, err)
	}
}

// screenshot writes a PNG of the page (full: the whole page; else the viewport).
func (b *browser) screenshot(t *testing.T, dir, name string, full bool) {
	t.Helper()
	act := chromedp.CaptureScreenshot()
	if full {
		act = chromedp.FullScreenshot(100)
	}
	png, err := chromedp.Run(b.ctx, act)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

// zoom drags the mouse across the node timeline from one fraction of its plot's width to
// another, as a user zooms.
func (b *browser) zoom(t *testing.T, from, to float64) {
	t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.ScrollIntoView(chromedp.CSS(`#timeline svg`))); err != nil {
		t.Fatal(err)
	}
	box, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]float64](`(function(){var r=document.querySelector("#timeline svg").getBoundingClientRect();return [r.left,r.top,r.width]})()`))
	if err != nil {
		t.Fatal(err)
	}
	const gutter, right = 250, 28 // page.js's GUTTER and RIGHT
	plot := box[2] - gutter - right
	y := box[1] + 40
	x0, x1 := box[0]+gutter+from*plot, box[0]+gutter+to*plot
	if err := chromedp.Do(b.ctx,
		chromedp.MouseEvent(chromedp.MouseMoved, x0, y),
		chromedp.MouseEvent(chromedp.MousePressed, x0, y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, (x0+x1)/2, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseMoved, x1, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, x1, y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, 1, 1), // away: no tooltip in the screenshots
	); err != nil {
		t.Fatal(err)
	}
}

// screenshotViewport writes a PNG of the top of the page, height pixels high.
func (b *browser) screenshotViewport(t *testing.T, dir, name string, height int64) {
	t.Helper()
	if _, err := chromedp.Call(b.ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1440, Height: height, DeviceScaleFactor: 1}); err != nil {
		t.Fatal(err)
	}
	defer chromedp.Call(b.ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1440, Height: 1000, DeviceScaleFactor: 1})
	if err := chromedp.Do(b.ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatal(err)
	}
	b.screenshot(t, dir, name, false)
}

func (b *browser) expect(t *testing.T, what, sel string, want int) {
	t.Helper()
	if got := b.count(t, sel); got != want {
		t.Errorf("%s: %d elements %s, want %d", what, got, sel, want)
	}
}

func (b *browser) expectSome(t *testing.T, what, sel string) {
	t.Helper()
	if got := b.count(t, sel); got == 0 {
		t.Errorf("%s: no element %s", what, sel)
	}
}

// TestBrowser opens the reports of the seed scenarios in headless Chromium, fails on any
// console error, exception, failed load or network request, checks that the DOM draws what
// the logs tell (a flapping Kosmos node whose pods' deletions the guard denies; a drained
// node), drives the filters, the zoom and the detail view, and writes screenshots.
func TestBrowser(t *testing.T) {
	dir := *screenshots
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	b.checkProblems(t)
	write := func(scenario, log string) string {
		d := replayReport(t, filepath.Join(auditData, scenario), log)
		f := filepath.Join(t.TempDir(), scenario+".html")
		if err := WriteFile(f, d); err != nil {
			t.Fatal(err)
		}
		return f
	}

	t.Run("verdict", func(t *testing.T) {
		// The verdict vapc replay computed (Summary.Decide) heads the page, as it heads the
		// text summary, in words that say what it is about: the replay's gate (the input read
		// whole, the gates asked for), and apart, what the policies would deny, which fails
		// the replay only with --fail-on.
		d := replayReport(t, filepath.Join(auditData, "kosmos-flapping"), "audit.jsonl")
		f := filepath.Join(t.TempDir(), "verdict.html")
		const denials = "The policies would deny 2 requests of 6 evaluated"
		for _, tc := range []struct {
			name     string
			verdict  replay.Verdict
			class    string
			text     string // of the banner, before the denials
			reasons  int
			denials  string
			gatesOut bool // the denials are said to be reported, not failed
		}{
			{"failing", replay.Verdict{Failures: []replay.Failure{{Reason: replay.ReasonDeny, Count: 2, Detail: "2 requests would be denied (--fail-on deny)"}}, Gate: replay.Gate{FailOn: []replay.FailOn{replay.FailOnDeny}}},
				"fail", "Replay gate: FAIL the replay fails (exit code 1):deny 2 requests would be denied (--fail-on deny)", 1, denials + ".", false},
			{"passing, denials not gated", replay.Verdict{Pass: true},
				"pass", "Replay gate: PASS the input was read whole (32 lines, none malformed) (exit code 0).", 0, denials + ": reported, not failed (the replay fails on them with --fail-on deny).", true},
			{"passing the gates asked for", replay.Verdict{Pass: true, Gate: replay.Gate{CheckRecorded: true, FailOn: []replay.FailOn{replay.FailOnAnyChange}}},
				"pass", "Replay gate: PASS the input was read whole (32 lines, none malformed); the predictions agree with the verdicts the log records (--check-recorded); --fail-on any-change holds (exit code 0).", 0, denials + ": reported, not failed (the replay fails on them with --fail-on deny).", true},
			{"interrupted", replay.Verdict{Partial: true, Failures: []replay.Failure{{Reason: replay.ReasonInterrupted, Count: 32, Detail: "interrupted after 32 lines: the summary is of what was read"}}},
				"interrupted", "Replay gate: INTERRUPTED the input was not read whole: the counts are of what was read (exit code 130):interrupted interrupted after 32 lines: the summary is of what was read", 1, denials + ": reported, not failed (the replay fails on them with --fail-on deny).", true},
		} {
			d.Verdict = &tc.verdict
			if err := WriteFile(f, d); err != nil {
				t.Fatal(err)
			}
			b.open(t, f)
			b.expect(t, tc.name+": the verdict", `#verdict.`+tc.class, 1)
			b.expect(t, tc.name+": its reasons", `#verdict li`, tc.reasons)
			got := b.text(t, "#verdict")
			want := tc.text + tc.denials
			if got != want {
				t.Errorf("%s: verdict = %q, want %q", tc.name, got, want)
			}
			b.expect(t, tc.name+": the denials, marked", `#verdict-denials.some`, 1)
		}
	})

	t.Run("the requests table fits 1600 px", func(t *testing.T) {
		// At 1600 px, the requests table of every scenario fits the page, and no policy's
		// name is cut.
		if _, err := chromedp.Call(b.ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1600, Height: 1000, DeviceScaleFactor: 1}); err != nil {
			t.Fatal(err)
		}
		defer chromedp.Call(b.ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1440, Height: 1000, DeviceScaleFactor: 1})
		for _, sc := range scenarios {
			b.open(t, write(sc.dir, sc.log))
			fit, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]int](`(function(){var w=document.querySelector("#requests .table-wrap");var cut=0;document.querySelectorAll("#requests td.policy div").forEach(function(e){if(e.scrollWidth>e.clientWidth+1)cut++});return [w.scrollWidth,w.clientWidth,cut]})()`))
			if err != nil {
				t.Fatal(err)
			}
			if fit[0] > fit[1] || fit[2] > 0 {
				t.Errorf("%s: the requests table is %d px wide in %d px, %d policy names cut", sc.dir, fit[0], fit[1], fit[2])
			}
		}
	})

	t.Run("times carry the date when the log spans days", func(t *testing.T) {
		d := replayReport(t, filepath.Join(auditData, "kosmos-flapping"), "audit.jsonl")
		f := filepath.Join(t.TempDir(), "days.html")
		if err := WriteFile(f, d); err != nil {
			t.Fatal(err)
		}
		b.open(t, f)
		if got := b.text(t, `#requests tr.row td`); got != "08:05:56.972" {
			t.Errorf("a log of one day: the time of a row is %q, want the clock alone", got)
		}
		d.Span.Start = "2025-03-13T23:59:00Z" // the same log, eight minutes across midnight
		if err := WriteFile(f, d); err != nil {
			t.Fatal(err)
		}
		b.open(t, f)
		if got := b.text(t, `#requests tr.row td`); got != "2025-03-1400:04:56.972" {
			t.Errorf("a log across midnight: the time of a row is %q, want the date and the clock", got)
		}
		if got := b.text(t, `#timeline .axis`); !strings.Contains(got, "2025-03-14") {
			t.Errorf("a log across midnight: the time axis %q does not name the new day", got)
		}
		b.click(t, `#requests tr.row`)
		if got := b.text(t, `#detail`); !strings.Contains(got, "2025-03-14T08:05:56.972") {
			t.Errorf("the detail view does not hold the request's time as the log records it:\n%s", got)
		}
		b.click(t, `#detail button`)
	})

	t.Run("likely decisions", func(t *testing.T) {
		// A likely decision shows in its outcome's colour, marked likely, and its row's detail
		// holds the alternatives and what each needs.
		d, _ := likelyData(t)
		f := filepath.Join(t.TempDir(), "likely.html")
		if err := WriteFile(f, d); err != nil {
			t.Fatal(err)
		}
		b.open(t, f)
		b.expect(t, "likely audit chips", `#requests span.chip.audit.likely`, 4)
		b.expect(t, "likely admit chips", `#requests span.chip.admit.likely`, 1)
		b.click(t, `#requests tr.row`)
		if got := b.text(t, `#detail`); !strings.Contains(got, "likely: decided on the state the log") || !strings.Contains(got, "alternative") || !strings.Contains(got, "the nodes informer had not yet held the write at") {
			t.Errorf("the detail of a likely decision:\n%s", got)
		}
		b.click(t, `#detail button`)
	})

	t.Run("kosmos-flapping", func(t *testing.T) {
		// With the verdict of vapc replay --report without a gate, as the README shows it.
		d := replayReport(t, filepath.Join(auditData, "kosmos-flapping"), "audit.jsonl")
		d.Verdict = &replay.Verdict{Pass: true}
		f := filepath.Join(t.TempDir(), "kosmos-flapping.html")
		if err := WriteFile(f, d); err != nil {
			t.Fatal(err)
		}
		b.open(t, f)
		lane := `g.lane[data-node="kosmos-member1"]`
		b.expect(t, "the Kosmos node's lane", lane, 1)
		b.expect(t, "Ready Unknown while the node flapped", lane+` rect.span.ready[data-v="Unknown"]`, 1)
		b.expect(t, "Ready before and after", lane+` rect.span.ready[data-v="True"]`, 2)
		b.expect(t, "the unreachable NoExecute taint", lane+` rect.span.taint[data-v="node.kubernetes.io/unreachable"]`, 1)
		ncDeletes := lane + ` g.marker[data-group="node-controller"][data-kind="delete"]`
		b.expect(t, "the node controller's deletions", ncDeletes, 1)
		b.expect(t, "the deletions the guard denies", ncDeletes+`[data-outcome="deny"][data-deny="2"][data-total="2"]`, 1)
		b.expectSome(t, "the deny bars of the guard", `g.series[data-binding="kosmos-protect-notready-node-pods/kosmos-protect-notready-node-pods-binding"] rect.bar[data-outcome="deny"]`)
		b.expect(t, "the request table", `#requests tr.row[data-outcome="deny"]`, 2)
		b.screenshot(t, dir, "report-kosmos-flapping.png", true)

		// A marker filters the table to its requests; a row opens its objects.
		b.click(t, `#requests tr.row`) // any row first: the drawer, then closed by the filter below
		b.click(t, `#detail button`)
		b.click(t, ncDeletes)
		b.expect(t, "the marker's requests", `#requests tr.row[data-node="kosmos-member1"]`, 2)
		if got := b.text(t, "#row-scope"); !strings.Contains(got, "kosmos-member1") {
			t.Errorf("table scope = %q, want the marker's node", got)
		}
		b.click(t, `#requests tr.row`)
		b.expect(t, "the detail view of a DELETE: the oldObject alone", `#detail pre.json`, 1)
		if old := b.text(t, `#detail pre.json`); !strings.Contains(old, `"nodeName": "kosmos-member1"`) {
			t.Errorf("the oldObject of the denied deletion does not show its node:\n%s", old)
		}
		if err := chromedp.Do(b.ctx, chromedp.ScrollIntoView(chromedp.CSS(`#nodes`))); err != nil {
			t.Fatal(err)
		}
		b.screenshot(t, dir, "report-kosmos-flapping-detail.png", false)
		b.click(t, `#detail button`)
		b.expect(t, "the detail view closed", `#detail`, 0)

		// The header's counts open their rows.
		b.click(t, `#policies a[data-count="deny"]`)
		b.expect(t, "the binding's denials", `#requests tr.row`, 2)

		// Dragging across the timeline zooms both charts.
		before := b.text(t, "#nodes .hint span.hint")
		b.zoom(t, 0.3, 0.6)
		if after := b.text(t, "#nodes .hint span.hint"); after == before || !strings.Contains(after, " to ") {
			t.Errorf("dragging across the timeline did not zoom: %q, then %q", before, after)
		}
		b.expectSome(t, "the lane, zoomed", lane+` rect.span.ready[data-v="Unknown"]`)
	})

	t.Run("draino", func(t *testing.T) {
		b.open(t, write("draino", "audit.jsonl"))
		lane := `g.lane[data-node="worker-3"]`
		b.expect(t, "the drained node's lane", lane, 1)
		b.expect(t, "the cordon", lane+` rect.span.cordon`, 1)
		b.expect(t, "node-problem-detector's KernelDeadlock", lane+` rect.span.cond[data-v="KernelDeadlock"]`, 1)
		b.expect(t, "Draino's DrainScheduled", lane+` rect.span.cond[data-v="DrainScheduled"]`, 1)
		b.expect(t, "the drainer's evictions, warned", lane+` g.marker[data-group="drainer"][data-kind="evict"][data-outcome="warn"][data-total="2"]`, 1)
		b.expect(t, "the drainer's cordon, admitted", lane+` g.marker[data-group="drainer"][data-kind="write"][data-outcome="admit"]`, 2)
		b.expect(t, "the kubelet's final deletions, no policy matched", lane+` g.marker[data-group="kubelet"][data-kind="delete"][data-outcome="none"]`, 1)
		b.expect(t, "the warned evictions", `#requests tr.row[data-outcome="warn"]`, 2)
		// The drain is the first minute and a half of the log: zoom to it.
		b.zoom(t, 0.005, 0.14)
		b.expect(t, "the evictions, zoomed", lane+` g.marker[data-group="drainer"][data-kind="evict"]`, 1)
		b.screenshot(t, dir, "report-draino.png", true)

		// The label filter keeps the nodes that opted in to draino.
		if err := chromedp.Do(b.ctx, chromedp.SetValue(chromedp.CSS(`#label-key`), "draino-enabled"),
			chromedp.Evaluate[chromedp.Void](`document.querySelector("#label-key").dispatchEvent(new Event("change"))`)); err != nil {
			t.Fatal(err)
		}
		b.expect(t, "the lanes with the label", `g.lane`, 1)
		if err := chromedp.Do(b.ctx, chromedp.SendKeys(chromedp.CSS(`#node-search`), "no-such-node")); err != nil {
			t.Fatal(err)
		}
		b.expect(t, "the lanes of no node", `g.lane`, 0)
	})

	t.Run("generated", func(t *testing.T) {
		// A generated log of a large cluster under the in-tree guards: the README's picture of
		// a day of traffic.
		f := filepath.Join(t.TempDir(), "generated.html")
		if err := WriteFile(f, generatedReport(t)); err != nil {
			t.Fatal(err)
		}
		b.open(t, f)
		b.expectSome(t, "flapping Kosmos nodes", `g.lane rect.span.ready[data-v="Unknown"]`)
		b.expectSome(t, "drained nodes", `g.lane rect.span.cordon`)
		b.expectSome(t, "the guards' audits", `g.series rect.bar[data-outcome="audit"]`)
		b.screenshotViewport(t, dir, "report-generated.png", 1500)
	})

	t.Run("bounded", func(t *testing.T) {
		// The largest report TestBounded makes opens in a few seconds.
		d, _ := boundedData(t)
		f := filepath.Join(t.TempDir(), "bounded.html")
		if err := WriteFile(f, d); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		b.open(t, f)
		took := time.Since(start)
		t.Logf("a report of %d lanes and %d rows drawn in %s", len(d.Nodes.Lanes), len(d.Requests.Rows), took)
		if took > 10*time.Second {
			t.Errorf("drawing the report took %s, want a few seconds", took)
		}
		b.expect(t, "the first lanes", `g.lane`, 25)
		b.expect(t, "the first page of rows", `#requests tr.row`, 100)
	})

	t.Run("empty", func(t *testing.T) {
		// A log without a request: the page says so, and draws without an error.
		d := replayReport(t, filepath.Join("testdata", "empty"), "audit.jsonl")
		f := filepath.Join(t.TempDir(), "empty.html")
		if err := WriteFile(f, d); err != nil {
			t.Fatal(err)
		}
		b.open(t, f)
		b.expect(t, "lanes", `g.lane`, 0)
		if got := b.text(t, "#timeline svg text.empty"); !strings.Contains(got, "changed no node") {
			t.Errorf("the empty timeline says %q", got)
		}
		b.expect(t, "the malformed line", `#malformed td.mono`, 1)
	})

	for _, sc := range scenarios {
		if sc.dir == "kosmos-flapping" || sc.dir == "draino" {
			continue
		}
		t.Run(sc.dir, func(t *testing.T) {
			b.open(t, write(sc.dir, sc.log))
			d := replayReport(t, filepath.Join(auditData, sc.dir), sc.log)
			want := min(len(d.Nodes.Lanes), 25)
			b.expect(t, "lanes", `g.lane`, want)
			b.expect(t, "rows", `#requests tr.row`, min(len(d.Requests.Rows), 100))
			if b.count(t, `#requests tr.row`) > 0 {
				b.click(t, `#requests tr.row`)
				b.expect(t, "the detail view", `#detail`, 1)
				b.click(t, `#detail button`)
			}
		})
	}

}

// checkProblems fails the test with what the browser reported since the last check.
func (b *browser) checkProblems(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	p := b.bad
	b.bad = nil
	b.mu.Unlock()
	if len(p) > 0 {
		t.Errorf("the browser reported %d problems:\n%s", len(p), strings.Join(p, "\n"))
	}
}
