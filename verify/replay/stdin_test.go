package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// withSpoolDir copies standard input to dir (source.Spool).
func withSpoolDir(dir string) Option {
	return func(r *Replayer) error { r.cfg.spoolDir = dir; return nil }
}

// TestReadOnceSources: a log that can be read only once (standard input, a named pipe such as
// a shell's process substitution <(zcat audit.log.gz)) is copied to a file and replayed as
// the file is, named as given, and the copy removed; with --policies-throughout, a pipe is
// streamed (read once, as it comes). A pipe given by its path lost its first lines, read to
// find the log's first event time (and its first bytes to size it), before it was copied.
func TestReadOnceSources(t *testing.T) {
	t.Parallel()
	// A real kube-apiserver's log that creates and deletes the policies it is replayed with
	// (which the replay reads the log again for) and shows their verdicts.
	dir := filepath.Join("testdata", "races", "policy-lifecycle")
	lines := gunzipLines(t, filepath.Join(dir, "audit.log.gz"))
	data := strings.Join(lines, "")
	_, ps, bs := readPolicies(t, filepath.Join(dir, "policies.yaml"))
	file := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	// outcomes are the records and the summary's counts, the file's name left out.
	outcomes := func(name string, opts []Option, src Source) []string {
		t.Helper()
		r, err := New(ps, bs, append([]Option{WithCheckRecorded(true)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		sum, err := r.Run(context.Background(), []Source{src}, func(rec *Record) error {
			out = append(out, strings.ReplaceAll(rec.String()+" "+string(rec.Decision)+" "+string(rec.Certainty)+" "+rec.Indeterminate, name+":", "LOG:"))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.ReplaceAll(strings.Join(sum.Notes, "; "), name+":", "LOG:"), itoa(sum.Lines)+" lines, "+itoa(sum.MalformedCount)+" malformed")
		return out
	}
	want := outcomes(file, nil, Source{Name: file})
	if len(want) < 10 {
		t.Fatalf("the file: %d records, want the log's", len(want))
	}
	fifo := func() string {
		p := filepath.Join(t.TempDir(), "fifo")
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		go func() {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer f.Close()
			f.WriteString(data)
		}()
		return p
	}
	spool := t.TempDir()
	for _, tc := range []struct {
		name string
		src  func() Source
		opts []Option
	}{
		{"standard input", func() Source { return Source{Name: "-", Reader: strings.NewReader(data)} }, []Option{withSpoolDir(spool)}},
		{"a named pipe", func() Source { return Source{Name: fifo()} }, []Option{withSpoolDir(spool)}},
	} {
		src := tc.src()
		if diff := cmp.Diff(want, outcomes(src.Name, tc.opts, src)); diff != "" {
			t.Errorf("%s: mismatch (-the file +%s):\n%s", tc.name, tc.name, diff)
		}
	}
	if left, _ := os.ReadDir(spool); len(left) != 0 {
		t.Errorf("copies left behind: %v", left)
	}
	// Streamed, a named pipe is read whole, once.
	want = outcomes(file, []Option{WithPoliciesThroughout()}, Source{Name: file})
	p := fifo()
	if diff := cmp.Diff(want, outcomes(p, []Option{WithPoliciesThroughout()}, Source{Name: p})); diff != "" {
		t.Errorf("a named pipe streamed: mismatch (-the file +the pipe):\n%s", diff)
	}
}

// TestEvaluationPanics: a panic while a request is evaluated (a bug of vapc's or of the
// Kubernetes code it runs) makes that request indeterminate, internal-error, named; the rest
// of the log is replayed and decided as without it.
func TestEvaluationPanics(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "races", "policy-lifecycle")
	lines := gunzipLines(t, filepath.Join(dir, "audit.log.gz"))
	_, ps, bs := readPolicies(t, filepath.Join(dir, "policies.yaml"))
	const victim = "early-2"
	decisions := func(opts ...Option) map[string]string {
		_, recs := replaySources(t, ps, bs, append([]Option{WithCheckRecorded(true)}, opts...), Source{Name: "audit.log", Reader: strings.NewReader(strings.Join(lines, ""))})
		out := map[string]string{}
		for _, rec := range recs {
			out[rec.Name+" "+rec.Verb] = string(rec.Decision) + " " + string(rec.Certainty) + " " + string(rec.Reason)
		}
		return out
	}
	want := decisions()
	if _, ok := want[victim+" create"]; !ok {
		t.Fatalf("no record of %s's create: %v", victim, want)
	}
	want[victim+" create"] = "indeterminate indeterminate internal-error"
	got := decisions(func(r *Replayer) error {
		r.cfg.evaluateHook = func(ev *Event) {
			if ev.ObjectRef != nil && ev.ObjectRef.Name == victim && ev.Verb == "create" {
				panic("a test's panic")
			}
		}
		return nil
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}
