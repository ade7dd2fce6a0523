package source

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRotationGaps: the files of a rotated log, as lumberjack names them, given whole, in any
// order, have no gap; one missing from the middle leaves one between the files around it.
func TestRotationGaps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	event := func(at string) string {
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + at + `","stage":"ResponseComplete","verb":"get","requestURI":"/api","stageTimestamp":"2026-12-01T17:16:` + at + `Z"}` + "\n"
	}
	files := map[string]string{
		"audit-2026-12-01T17-16-10.195.log": event("05.000000") + event("10.190000"),
		"audit-2026-12-01T17-16-14.158.log": event("10.194000") + event("14.150000"), // the one to leave out
		"audit-2026-12-01T17-16-20.000.log": event("14.157000") + event("19.990000"),
		"audit.log":                         event("20.001000"),
		"other.log":                         event("30.000000"), // another log, not rotated
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// gaps is what RotationGaps finds among the files given, in the order InTimeOrder puts
	// them; with the times it read, or reading them itself.
	gaps := func(read bool, names ...string) []Gap {
		var srcs []Source
		for _, n := range names {
			srcs = append(srcs, Source{Name: filepath.Join(dir, n)})
		}
		ordered, first, _ := InTimeOrder(srcs, 1<<20)
		if read {
			first = nil
		}
		return RotationGaps(ordered, first, 1<<20)
	}
	at := func(s string) time.Time {
		t, _ := time.Parse(time.RFC3339Nano, "2026-12-01T17:16:"+s+"Z")
		return t
	}
	for _, read := range []bool{false, true} {
		if got := gaps(read, "audit.log", "audit-2026-12-01T17-16-20.000.log", "audit-2026-12-01T17-16-14.158.log", "audit-2026-12-01T17-16-10.195.log", "other.log"); len(got) != 0 {
			t.Errorf("every file given: gaps %v", got)
		}
		got := gaps(read, "audit-2026-12-01T17-16-10.195.log", "audit-2026-12-01T17-16-20.000.log", "audit.log")
		want := []Gap{{After: filepath.Join(dir, "audit-2026-12-01T17-16-10.195.log"), Before: filepath.Join(dir, "audit-2026-12-01T17-16-20.000.log"), Rotated: at("10.195"), Resumed: at("14.157")}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("a file left out, times read again %v (-want +got):\n%s", read, d)
		}
	}
}
