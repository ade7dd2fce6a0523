package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
)

// TestClockGoesBack replays a real log whose halves were concatenated in the wrong order (as
// `cat audit.log audit-1.log` does with rotated logs): given as a file, its parts are read in
// the time order of their events and every record is the ordered log's, and likewise on
// standard input, which is copied to a file first; streamed (standard input with
// --policies-throughout), where they cannot be, the line where the clock goes back is noted
// and no request is decided otherwise than the log records.
func TestClockGoesBack(t *testing.T) {
	t.Parallel()
	sc := exportScenarios[0]
	dir := filepath.Join(auditData, sc.dir)
	log := exporttest.ReadLog(t, filepath.Join(dir, "audit.log.gz"))
	lines := bytes.SplitAfter(log, []byte("\n"))
	const cut = 400
	swapped := bytes.Join(append(append([][]byte{}, lines[cut:]...), lines[:cut]...), nil)
	jumpLine := len(lines[cut:]) + 1
	if len(lines[len(lines)-1]) == 0 {
		jumpLine-- // the empty string after the log's last newline
	}
	path := filepath.Join(t.TempDir(), "swapped.log")
	if err := os.WriteFile(path, swapped, 0o644); err != nil {
		t.Fatal(err)
	}
	_, want := replayBytes(t, dir, "audit.log", log, sc.opts(t))

	ps, bs := loadPolicies(t, dir)
	replayed := func(src Source) (*Summary, map[string]*Record) {
		return replaySources(t, ps, bs, append(sc.opts(t), WithCheckRecorded(true)), src)
	}
	jumps := func(sum *Summary) []ClockJump {
		var js []ClockJump
		for _, j := range sum.ClockJumps {
			if !j.At.Before(j.Latest) {
				t.Errorf("a jump from %s to %s", j.Latest, j.At)
			}
			js = append(js, ClockJump{File: j.File, Line: j.Line, Parts: j.Parts})
		}
		return js
	}

	sum, got := replayed(Source{Name: path})
	if diff := cmp.Diff([]ClockJump{{File: path, Line: jumpLine, Parts: true}}, jumps(sum)); diff != "" {
		t.Errorf("the file: clock jumps (-want +got):\n%s", diff)
	}
	if len(got) != len(want) {
		t.Errorf("the file: %d records, the ordered log %d", len(got), len(want))
	}
	for id, w := range want {
		g := got[id]
		if g == nil {
			t.Errorf("the file: no record of %s", id)
			continue
		}
		// The records name the file and line they were read from, in the notes too.
		if comparable(g) != comparable(w) {
			t.Errorf("the file: %s mismatch (-ordered +parts):\n%s", id, cmp.Diff(comparable(w), comparable(g)))
		}
	}

	sum, got = replayed(Source{Name: "-", Reader: bytes.NewReader(swapped)})
	if diff := cmp.Diff([]ClockJump{{File: "-", Line: jumpLine, Parts: true}}, jumps(sum)); diff != "" {
		t.Errorf("standard input: clock jumps (-want +got):\n%s", diff)
	}
	for id, w := range want {
		if g := got[id]; g == nil || strings.ReplaceAll(comparable(g), "-:", "audit.log:") != comparable(w) {
			t.Errorf("standard input: %s: %s, the ordered log's %s", id, describeRecord(g), describeRecord(w))
		}
	}

	sum, got = replaySources(t, ps, bs, append(sc.opts(t), WithCheckRecorded(true), WithPoliciesThroughout()), Source{Name: "-", Reader: bytes.NewReader(swapped)})
	if diff := cmp.Diff([]ClockJump{{File: "-", Line: jumpLine, Parts: false}}, jumps(sum)); diff != "" {
		t.Errorf("standard input: clock jumps (-want +got):\n%s", diff)
	}
	for _, rec := range got {
		if rec.Changed || len(rec.Disagreements) > 0 {
			t.Errorf("standard input: %s: recorded %s, predicted %s %v", rec, rec.Recorded, rec.Decision, rec.Disagreements)
		}
	}
}
