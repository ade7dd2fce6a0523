package source

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestSplit cuts logs whose clock goes back into their parts, which Lines reads as one log in
// the time order of their events, each line at its number in the file.
func TestSplit(t *testing.T) {
	dir := t.TempDir()
	long := strings.Replace(event("L", 21), `"verb":"list"`, `"verb":"list","userAgent":"`+strings.Repeat("x", 3000)+`"`, 1)
	for _, tc := range []struct {
		name  string
		file  string // the file's name, when not the test's
		gz    bool
		lines []string
		// want are the audit IDs Lines gives and the lines they are at; jumps the lines
		// where a part begins.
		want  []string
		jumps []int
	}{
		{name: "in order", lines: []string{event("a", 1), event("b", 2), event("c", 3)},
			want: []string{"a:1", "b:2", "c:3"}},
		{name: "jitter of milliseconds", lines: []string{event("a", 1), event("b", 2), strings.Replace(event("c", 1), ":01.000000Z", ":01.995000Z", 1), event("d", 3)},
			want: []string{"a:1", "b:2", "c:3", "d:4"}},
		// Within a second, but further than kube-apiserver's log backend goes back: read in
		// the order of the events' stage times (export.InStageOrder).
		{name: "out of order by half a second", lines: []string{event("a", 1), event("b", 2), strings.Replace(event("c", 1), ":01.000000Z", ":01.500000Z", 1), event("d", 3)},
			want: []string{"a:1", "c:3", "b:2", "d:4"}},
		{name: "parts out of order within", lines: []string{event("m", 20), strings.Replace(event("n", 19), ":19.000000Z", ":19.500000Z", 1), event("a", 10), strings.Replace(event("b", 9), ":09.000000Z", ":09.700000Z", 1), event("c", 11)},
			want: []string{"b:4", "a:3", "c:5", "n:2", "m:1"}, jumps: []int{3}},
		{name: "rotated logs concatenated newest first", lines: []string{event("c", 20), event("d", 21), event("a", 10), event("b", 11)},
			want: []string{"a:3", "b:4", "c:1", "d:2"}, jumps: []int{3}},
		{name: "three parts, interleaved", lines: []string{event("m", 20), event("n", 30), event("a", 10), event("o", 25), event("x", 5), event("y", 40)},
			want: []string{"x:5", "a:3", "m:1", "o:4", "n:2", "y:6"}, jumps: []int{3, 5}},
		{name: "lines longer than kept, and not events", lines: []string{event("c", 20), "not json", long, event("a", 10), long},
			want: []string{"a:4", "!:5", "c:1", "?:2", "!:3"}, jumps: []int{4}},
		// A part whose first line the reader gives with no time (longer than it keeps, or an
		// event without a stage time) goes as it went when every part was open from the start:
		// that line at once.
		{name: "a part begins with a line longer than kept", lines: []string{event("a", 10), event("b", 11), strings.Replace(long, ":21.000000Z", ":05.000000Z", 1), event("d", 6), event("e", 1), event("f", 2)},
			want: []string{"!:3", "e:5", "f:6", "d:4", "a:1", "b:2"}, jumps: []int{3, 5}},
		{name: "the first part begins with an event without a time", lines: []string{strings.Replace(event("u", 0), `,"stageTimestamp":"2026-11-22T10:00:00.000000Z"`, "", 1), event("a", 10), event("e", 1), event("f", 2)},
			want: []string{"u:1", "e:3", "f:4", "a:2"}, jumps: []int{3}},
		{name: "compressed: read as it is", gz: true, lines: []string{event("c", 20), event("a", 10)},
			want: []string{"c:1", "a:2"}},
		// The messages Firehose extracted from a subscription (an object named as Firehose
		// names them): not cut in parts, but put back in order by their export's reader,
		// which skips the other streams' messages ("-"), a trace's line of kube-apiserver's
		// own log here.
		{name: "Firehose's extracted messages", file: "vapc-audit-1-2026-11-22-10-00-00-8c7a1f3e-25ea-4c64-9b75-44b73ddc6b3b",
			lines: []string{event("c", 20), `Trace[7816759]: ---"limitedReadBody succeeded" len:629048 11ms (10:00:20.211)`, event("a", 10), event("b", 11)},
			want:  []string{"a:3", "b:4", "c:1", "-:2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-") + ".log"
			if tc.file != "" {
				name = tc.file
			}
			path := write(t, dir, name, tc.gz, tc.lines...)
			const maxLine = 2048
			sources, jumps := Split([]Source{{Name: path}}, maxLine)
			var got []string
			if err := Lines(context.Background(), sources, maxLine, func(l auditlog.Line) bool {
				id := "!"
				switch {
				case l.Skip != "":
					id = "-"
				case l.Err == nil:
					id = "?"
					if ev, err := auditlog.Decode(l.Data); err == nil {
						id = ev.AuditID
					}
				}
				got = append(got, fmt.Sprintf("%s:%d", id, l.Num))
				return true
			}); err != nil {
				t.Fatal(err)
			}
			var jumpLines []int
			for _, j := range jumps {
				if j.File != path || !j.At.Before(j.Latest) {
					t.Errorf("jump %+v", j)
				}
				jumpLines = append(jumpLines, j.Line)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.jumps, jumpLines); diff != "" {
				t.Errorf("jumps (-want +got):\n%s", diff)
			}
			if len(sources) != len(tc.jumps)+1 {
				t.Errorf("%d sources, want %d", len(sources), len(tc.jumps)+1)
			}
		})
	}
}

// TestSampledBack: a large log is read whole only when the times at its 64ths go back.
func TestSampledBack(t *testing.T) {
	dir := t.TempDir()
	var ordered, back []string
	for i := range 600 {
		ordered = append(ordered, event(fmt.Sprint(i), i/20))
	}
	back = append(back, ordered[300:]...)
	back = append(back, ordered[:300]...)
	for _, tc := range []struct {
		name  string
		lines []string
		want  bool
	}{
		{"in order", ordered, false},
		{"halves swapped", back, true},
		{"the last lines earlier", append(append([]string{}, ordered[20:]...), ordered[:5]...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Open(write(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".log", false, tc.lines...))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			info, _ := f.Stat()
			if got := sampledBack(f, info.Size(), 1<<20); got != tc.want {
				t.Errorf("sampledBack = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUTCStamp: the stamps whose text orders as their times do, among stamps of one length.
func TestUTCStamp(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"2026-11-28T10:00:00Z":             true,
		"2026-11-28T10:00:00.5Z":           true,
		"2026-11-28T10:00:00.123456Z":      true,
		"2026-11-28T10:00:00.123456+01:00": false,
		"2026-11-28T1X:00:00.123456Z":      false,
		"2026-11-28T10:00:00.Z":            false,
		"2026-11-28T10:00:00,5Z":           false,
		"2026-11-28 10:00:00.5Z":           false,
		"":                                 false,
	} {
		if got := utcStamp(s); got != want {
			t.Errorf("utcStamp(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestClock: a line more than ClockBack before the latest above it begins a part, and what
// follows is measured against that part; jitter under ClockBack is not a jump. NoteStamp, which
// orders the stamps of one layout by their text, finds the jumps Note finds.
func TestClock(t *testing.T) {
	base := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name  string
		times []int // milliseconds after base
		jumps []int // the indices of the lines that begin a part
	}{
		{name: "in order", times: []int{0, 10, 10, 2000, 5000}},
		{name: "jitter", times: []int{0, 900, 100, 950, 1000, 50}},
		{name: "the latest of a second, not its first", times: []int{100, 900, 500, -150}, jumps: []int{3}},
		{name: "back, then on", times: []int{0, 5000, 6000, 1000, 2000, 7000}, jumps: []int{3}},
		{name: "measured against the part it begins", times: []int{10000, 0, 9500, 100, -2000}, jumps: []int{1, 3, 4}},
		{name: "just ClockBack back", times: []int{1000, 0, 2001, 1000}, jumps: []int{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, how := range []string{"Note", "NoteStamp"} {
				var c Clock
				var jumps []int
				for i, ms := range tc.times {
					var latest time.Time
					var back bool
					if how == "Note" {
						latest, back = c.Note(at(ms))
					} else {
						// The layouts a log's stamps come in, one after another.
						layout := []string{"2006-01-02T15:04:05.000000Z07:00", time.RFC3339Nano, time.RFC3339}[i%3]
						stamp := at(ms).Format(layout)
						if layout == time.RFC3339 && at(ms).Nanosecond() != 0 {
							stamp = at(ms).Format("2006-01-02T15:04:05.000Z07:00")
						}
						latest, back = c.NoteStamp(stamp)
					}
					if back {
						jumps = append(jumps, i)
						if !latest.After(at(ms).Add(ClockBack)) {
							t.Errorf("%s: line %d: latest %s is not more than ClockBack after %s", how, i, latest, at(ms))
						}
					}
				}
				if diff := cmp.Diff(tc.jumps, jumps); diff != "" {
					t.Errorf("%s: jumps (-want +got):\n%s", how, diff)
				}
			}
		})
	}
}

// TestPlainLogsOutOfOrder: a plain log out of the order a log backend writes is not taken as one
// server's log (PlainLogs), as one whose clock goes back is not; one within the jitter is.
func TestPlainLogsOutOfOrder(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		back  string // the third event's stage time, after one at 2 s
		plain bool
	}{
		{"jitter", ":01.995000Z", true},
		{"half a second", ":01.500000Z", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".log", false, event("a", 1), event("b", 2), strings.Replace(event("c", 1), ":01.000000Z", tc.back, 1))
			sources, _ := Split([]Source{{Name: path}}, 2048)
			if got := PlainLogs(sources)[path]; got != tc.plain {
				t.Errorf("PlainLogs = %v, want %v", got, tc.plain)
			}
		})
	}
}

// TestManyParts reads a log that goes back every few seconds (a Firehose stream's batches,
// each written before the one that came before it) as one log in the time order of its
// events, with a few of its parts open at a time: Lines opens each once the merge reaches
// its first line's time, less ClockBack, and closes it at its end. Opened from the start, each
// of the parts held the file open, and a reader's buffers and window.
func TestManyParts(t *testing.T) {
	const batches, each = 200, 30 // batches of three seconds, an event every 100 ms
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	at := func(b, i int) time.Time {
		return base.Add(time.Duration(b)*3*time.Second + time.Duration(i)*100*time.Millisecond)
	}
	var lines, want []string
	for b := 0; b < batches; b += 2 {
		for _, batch := range []int{b + 1, b} {
			for i := range each {
				id := fmt.Sprintf("%d-%d", batch, i)
				lines = append(lines, strings.Replace(event(id, 0), "2026-11-22T10:00:00.000000Z", at(batch, i).Format("2006-01-02T15:04:05.000000Z"), 1))
			}
		}
	}
	for b := range batches {
		for i := range each {
			want = append(want, fmt.Sprintf("%d-%d", b, i))
		}
	}
	path := write(t, t.TempDir(), "firehose.log", false, lines...)
	const maxLine = 4096
	sources, jumps := Split([]Source{{Name: path}}, maxLine)
	if len(jumps) < batches/2-1 {
		t.Fatalf("%d jumps, want %d", len(jumps), batches/2-1)
	}
	most := 0
	got := readIDsWith(t, sources, maxLine, func() { most = max(most, opened(t, path)) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	// A part is open from a second before its first event to its end: two or three at a time.
	if most > 4 {
		t.Errorf("the log was open %d times at once, want at most 4 (of %d parts)", most, len(sources))
	}
	if opened(t, path) != 0 {
		t.Errorf("the log is still open after Lines returned")
	}
}

// opened is how many times the process has the file open (Linux's /proc/self/fd).
func opened(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("counting open files: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && target == path {
			n++
		}
	}
	return n
}
