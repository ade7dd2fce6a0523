package source

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestSpool copies what can be read once and reads the copy as the source, as often as asked;
// what cannot be copied is read once, whole; an interrupt keeps what was read.
func TestSpool(t *testing.T) {
	log := event("a", 1) + "\n" + event("b", 2) + "\n" + event("c", 3) + "\n"
	errBroken := errors.New("broken pipe")
	for _, tc := range []struct {
		name string
		src  Source
		dir  string // "" a folder of the test's
		// lines is what Lines reads of the source; twice, whether a second read reads it
		// again; notes, what Spooled says.
		lines       []string
		twice       bool
		interrupted bool
		notes       []string
	}{{
		name:  "standard input",
		src:   Source{Name: "-", Reader: strings.NewReader(log)},
		lines: []string{"-:1", "-:2", "-:3"},
		twice: true,
	}, {
		name:  "a file is left as it is",
		src:   Source{Name: "FILE"},
		lines: []string{"FILE:1", "FILE:2", "FILE:3"},
		twice: true,
	}, {
		name:  "not copied: its folder is not there",
		src:   Source{Name: "-", Reader: strings.NewReader(log)},
		dir:   "absent",
		lines: []string{"-:1", "-:2", "-:3"},
		notes: []string{"- could not be copied to a file in ABSENT to read it again (no such file or directory): it is read once, as it comes (the notes say what that leaves unchecked)"},
	}, {
		name:  "the input stops being readable: its copy, then the error",
		src:   Source{Name: "-", Reader: io.MultiReader(strings.NewReader(event("a", 1)+"\n"), errReader{errBroken})},
		lines: []string{"-:1", "-:2 unreadable"},
	}, {
		name:        "interrupted: what was read",
		src:         Source{Name: "-", Reader: strings.NewReader(log)},
		lines:       []string{"-:1", "-:2", "-:3"},
		twice:       true,
		interrupted: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := tc.src
			if src.Name == "FILE" {
				src.Name = filepath.Join(dir, "audit.log")
				if err := os.WriteFile(src.Name, []byte(log), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			spoolDir := t.TempDir()
			if tc.dir != "" {
				spoolDir = filepath.Join(dir, tc.dir)
			}
			c := context.Background()
			if tc.interrupted {
				// Canceled once the reader has given its bytes, as it waits for more.
				var cancel func()
				c, cancel = context.WithCancel(c)
				defer cancel()
				src.Reader = io.MultiReader(src.Reader, cancelAndBlock{c, cancel})
			}
			out, sp := Spool(c, []Source{src}, spoolDir, false)
			defer sp.Remove()
			name := filepath.Join(dir, "audit.log")
			read := func() []string {
				got := linesOf(t, out)
				for i := range got {
					got[i] = strings.Replace(got[i], name, "FILE", 1)
				}
				return got
			}
			got := read()
			if diff := cmp.Diff(tc.lines, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if again := read(); tc.twice && !cmp.Equal(got, again) {
				t.Errorf("read again: %v, want %v", again, got)
			}
			if copied := strings.HasPrefix(out[0].File(), spoolDir); copied != (tc.twice && tc.src.Name == "-") {
				t.Errorf("read from %q", out[0].File())
			}
			var notes []string
			for _, n := range sp.Notes {
				notes = append(notes, strings.ReplaceAll(n, spoolDir, "ABSENT"))
			}
			if diff := cmp.Diff(tc.notes, notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			if sp.Interrupted != tc.interrupted {
				t.Errorf("interrupted %v, want %v", sp.Interrupted, tc.interrupted)
			}
			files := sp.files
			sp.Remove()
			for _, f := range files {
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					t.Errorf("%s left behind: %v", f, err)
				}
			}
		})
	}
}

// cancelAndBlock cancels the context and blocks until it is done: standard input with no more
// data when Ctrl-C comes.
type cancelAndBlock struct {
	ctx    context.Context
	cancel func()
}

func (c cancelAndBlock) Read([]byte) (int, error) {
	c.cancel()
	<-c.ctx.Done()
	select {}
}

// linesOf reads the sources: each line's file and number, and whether it was unreadable.
func linesOf(t *testing.T, srcs []Source) []string {
	t.Helper()
	var got []string
	if err := Lines(context.Background(), srcs, 1<<20, func(l auditlog.Line) bool {
		s := l.File + ":" + strconv.Itoa(l.Num)
		if l.Err != nil {
			s += " unreadable"
		}
		got = append(got, s)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return got
}
