package replay

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLogFiles: a folder is the regular files under it, at any depth, in the order of their
// paths, hidden names passed over; a file, "-" and a path that is not there are as given (the
// CLI says what is wrong with the last); a folder of no file is an error. The text summary
// names a few files each, and of many the first two and the last.
func TestLogFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, p := range []string{"b/h=09/PT1H.json", "b/h=08/PT1H.json", "a.log", ".state", "b/.cache/x", "empty/.keep"} {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := LogFiles([]string{"-", filepath.Join(dir, "b"), filepath.Join(dir, "gone"), dir})
	if err != nil {
		t.Fatal(err)
	}
	j := func(p string) string { return filepath.Join(dir, p) }
	want := []string{"-", j("b/h=08/PT1H.json"), j("b/h=09/PT1H.json"), j("gone"), j("a.log"), j("b/h=08/PT1H.json"), j("b/h=09/PT1H.json")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LogFiles (-want +got):\n%s", diff)
	}
	if _, err := LogFiles([]string{j("empty")}); err == nil || err.Error() != "walk "+j("empty")+": a folder that holds no file" {
		t.Errorf("a folder of no file: %v", err)
	}
	for _, tc := range []struct {
		files []string
		want  string
	}{
		{[]string{"a"}, "a"},
		{[]string{"a", "b", "c", "d", "e", "f"}, "a, b, c, d, e, f"},
		{[]string{"a", "b", "c", "d", "e", "f", "g"}, "7 files: a, b, ... g"},
	} {
		if got := filesText(tc.files); got != tc.want {
			t.Errorf("filesText(%q) = %q, want %q", tc.files, got, tc.want)
		}
	}
}
