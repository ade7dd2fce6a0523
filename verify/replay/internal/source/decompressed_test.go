package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// copiesIn are the decompressed copies in the directory.
func copiesIn(t *testing.T, dir string) []string {
	t.Helper()
	got, err := filepath.Glob(filepath.Join(dir, "vapc-decompressed-*"))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestAheadDecompressedOnce: Ahead searches a compressed export's file on its own, before
// any reader asks, and the search keeps what it decompressed: the replay's reading after it
// reads the copy (the file's bytes here overwritten since, its size and time kept: read from
// the copy, the same events), its bytes counted as the compressed file's, once; release
// removes the copy. A file changed since (its size) is read itself.
func TestAheadDecompressedOnce(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var log []string
	for i := range 50 {
		log = append(log, event(string(rune('a'+i%26))+strings.Repeat("x", i), i%60))
	}
	wrapped, err := exporttest.Wrap(export.Firehose, []byte(strings.Join(log, "\n")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "firehose-1-2026-11-22-10-00-00-abc")
	if err := os.WriteFile(path, wrapped, 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(srcs []Source) ([]string, int64) {
		var n atomic.Int64
		for i := range srcs {
			srcs[i].Read = &n
		}
		return readIDs(t, srcs), n.Load()
	}
	want, _ := read([]Source{{Name: path}})

	srcs, release := Ahead(context.Background(), []Source{{Name: path}}, []byte("missionpolic"))
	defer release()
	sr := srcs[0].shared.searches
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		sr.mu.Lock()
		_, searched := sr.done[path]
		sr.mu.Unlock()
		if searched {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Ahead did not search the file")
		}
	}
	if got := copiesIn(t, tmp); len(got) != 1 {
		t.Fatalf("decompressed copies %v; want one", got)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, len(wrapped)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	got, counted := read(srcs)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events read from the copy (-want +got):\n%s", diff)
	}
	if counted != int64(len(wrapped)) {
		t.Errorf("counted %d bytes of the compressed file's %d", counted, len(wrapped))
	}

	// Changed: read itself (zeros, no event).
	if err := os.WriteFile(path, make([]byte, len(wrapped)+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, _ := srcs[0].openCopy(); f != nil {
		f.Close()
		t.Error("the copy of a file changed since is read")
	}
	release()
	if got := copiesIn(t, tmp); len(got) != 0 {
		t.Errorf("copies left after release: %v", got)
	}
}

// TestCopyBudget: a copy that would take more than the copies' budget is given up and
// removed; one within it is kept, and what it took is taken from the budget.
func TestCopyBudget(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	fi, err := os.Stat(tmp)
	if err != nil {
		t.Fatal(err)
	}
	c := copies{of: map[string]decompressedCopy{}, budget: 10}
	w := c.start("big", fi)
	if w == nil {
		t.Fatal("no copy started")
	}
	if w.write([]byte("0123456")) != true || w.write([]byte("789ab")) != false {
		t.Error("a copy past the budget is not given up")
	}
	if got := copiesIn(t, tmp); len(got) != 0 {
		t.Errorf("a copy given up is left: %v", got)
	}
	w = c.start("small", fi)
	if !w.write([]byte("0123")) {
		t.Fatal("a copy within the budget is given up")
	}
	w.finish()
	if d, ok := c.find("small", fi); !ok || d.size != 4 || c.budget != 6 {
		t.Errorf("kept %+v, %v, budget %d; want 4 bytes kept, budget 6", d, ok, c.budget)
	}
	c.remove()
	if got := copiesIn(t, tmp); len(got) != 0 || c.start("after", fi) != nil {
		t.Errorf("copies after remove: %v", got)
	}
}

// TestAheadManyFiles: Ahead searches the files of a day's compressed export (a file given
// twice too) and keeps one copy of each; the replay's reading after it reads the copies, the same events as the files.
func TestAheadManyFiles(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	var given []Source
	for f := range 6 {
		var log []string
		for i := range 20 {
			log = append(log, event(fmt.Sprintf("%d-%02d", f, i), f*10+i%10))
		}
		wrapped, err := exporttest.Wrap(export.Firehose, []byte(strings.Join(log, "\n")+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("firehose-%d", f))
		if err := os.WriteFile(path, wrapped, 0o644); err != nil {
			t.Fatal(err)
		}
		given = append(given, Source{Name: path})
	}
	given = append(given, given[2])
	want := readIDs(t, given)

	srcs, release := Ahead(context.Background(), given, []byte("missionpolic"))
	defer release()
	sr := srcs[0].shared.searches
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		sr.mu.Lock()
		searched := len(sr.done)
		sr.mu.Unlock()
		if searched == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ahead searched %d files of 6", searched)
		}
	}
	if got := copiesIn(t, tmp); len(got) != 6 {
		t.Errorf("decompressed copies %v; want six", got)
	}
	for _, src := range srcs {
		if f, _ := src.openCopy(); f == nil {
			t.Errorf("%s: no copy read", src.Name)
		} else {
			f.Close()
		}
	}
	if diff := cmp.Diff(want, readIDs(t, srcs)); diff != "" {
		t.Errorf("events read from the copies (-want +got):\n%s", diff)
	}
}
