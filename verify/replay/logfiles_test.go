package replay

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLogFiles: a folder is the regular files under it, at any depth, folder by folder by
// name, hidden names passed over, links followed (to a folder too: a link back up the tree
// read once); a file, "-" and a path that is not there are as given (the CLI says what is
// wrong with the last); a file given twice is read once; a folder of no file, a link to
// nothing are errors, never left out unsaid.
func TestLogFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := func(p string) string { return filepath.Join(dir, p) }
	for _, p := range []string{"b/h=09/PT1H.json", "b/h=08/PT1H.json", "a.log", ".state", "b/.cache/x", "empty/.keep", "other/s2/0.gz"} {
		if err := os.MkdirAll(filepath.Dir(j(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(j(p), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	broken := t.TempDir()
	if err := os.Symlink("nowhere.log", filepath.Join(broken, "x.log")); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"b/s2": "../other/s2", "b/up": "..", "linked": "b"} {
		if err := os.MkdirAll(filepath.Dir(j(link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, j(link)); err != nil {
			t.Fatal(err)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, j("a.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		paths []string
		want  []string
		err   string
	}{
		{name: "files, stdin, a folder", paths: []string{"-", j("b"), j("gone"), j("a.log")},
			// b/up is the folder above, whose a.log is read there once
			want: []string{"-", j("b/h=08/PT1H.json"), j("b/h=09/PT1H.json"), j("b/s2/0.gz"), j("b/up/a.log"), j("gone")}},
		{name: "a folder through a link", paths: []string{j("linked")},
			want: []string{j("linked/h=08/PT1H.json"), j("linked/h=09/PT1H.json"), j("linked/s2/0.gz"), j("linked/up/a.log")}},
		{name: "each file once", paths: []string{j("a.log"), j("other"), j("b"), j("b/h=08/PT1H.json")},
			want: []string{j("a.log"), j("other/s2/0.gz"), j("b/h=08/PT1H.json"), j("b/h=09/PT1H.json")}},
		{name: "a file by a relative path, in a folder given", paths: []string{rel, dir},
			want: []string{rel, j("b/h=08/PT1H.json"), j("b/h=09/PT1H.json"), j("b/s2/0.gz")}},
		{name: "a folder whose files were given before it", paths: []string{j("other/s2/0.gz"), j("other")},
			want: []string{j("other/s2/0.gz")}},
		{name: "a folder of no file", paths: []string{j("empty")}, err: "walk " + j("empty") + ": a folder that holds no file"},
		{name: "a link to nothing", paths: []string{broken}, err: "read " + filepath.Join(broken, "x.log") + ": a link to nowhere.log, which is not there"},
	} {
		got, err := LogFiles(tc.paths)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestFilesText: the text summary names a few files each, and of many (a folder's) how many,
// the first two and the last.
func TestFilesText(t *testing.T) {
	t.Parallel()
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
