package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay"
)

// cancelingReader is a log on stdin that stays open, as `tail -f` leaves it: once its first
// part is read, the next read cancels vapc's context, as Ctrl-C does, and blocks.
type cancelingReader struct {
	ctx    context.Context
	first  []byte
	cancel func()
}

func (c *cancelingReader) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	c.cancel()
	<-c.ctx.Done()
	select {}
}

func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return plain
}

// TestReplayGate: a replay gate fails (exit 1) on a truncated or corrupt log, an empty log, a
// log that is not an audit log, malformed lines, a disagreement and the predictions --fail-on
// refuses; it is a usage error (exit 2) on a wrong path; it is interrupted (exit 130) by
// Ctrl-C; it passes only on a clean run (an event read twice, as an export that delivers at
// least once hands it over, is clean; another event under its audit ID is not). Whatever the
// output, text, jsonl or junit, the output states the verdict the exit code follows, damaged
// input first.
func TestReplayGate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	basicLog := auditData + "kosmos-basic/audit.log.gz"
	whole, err := os.ReadFile(basicLog)
	if err != nil {
		t.Fatal(err)
	}
	plain := gunzip(t, basicLog)
	corrupt := append([]byte(nil), whole...)
	for i := len(corrupt) / 2; i < len(corrupt)/2+64; i++ {
		corrupt[i] ^= 0x55
	}
	truncated := write("truncated.log.gz", whole[:len(whole)/2])
	corrupted := write("corrupt.log.gz", corrupt)
	empty := write("empty.log", nil)
	notALog := write("notes.log", []byte("this is not an audit log\n"))
	malformed := write("malformed.log", append(append([]byte(nil), plain...), "{oops\n"...))
	noPolicy := write("configmap.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"))
	// An export that delivers at least once may hand the same event over twice: a final
	// record read again is a duplicate, not replayed again; another event under its audit ID
	// is a malformed line.
	lines := strings.SplitAfter(string(plain), "\n")
	final := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"stage":"ResponseComplete"`) })
	_, id, _ := strings.Cut(lines[final], `"auditID":"`)
	id, _, _ = strings.Cut(id, `"`)
	withAfter := func(extra string) []byte {
		return []byte(strings.Join(lines[:final+1], "") + extra + strings.Join(lines[final+1:], ""))
	}
	duplicate := write("duplicate.log", withAfter(lines[final]))
	another := write("another.log", withAfter(strings.Replace(lines[final], `"userAgent":"`, `"userAgent":"another `, 1)))

	// A folder is the files under it, in the order of their paths: the basic log in two
	// hours' folders, as AKS's blobs are downloaded, beside a tool's hidden state; an empty
	// folder (but for its hidden files) is a usage error.
	tree, noFiles := filepath.Join(dir, "tree"), filepath.Join(dir, "tree", ".cache")
	half := len(lines) / 2
	for _, f := range []struct {
		path string
		data string
	}{
		{filepath.Join(tree, "h=08", "PT1H.json"), strings.Join(lines[:half], "")},
		{filepath.Join(tree, "h=09", "PT1H.json"), strings.Join(lines[half:], "")},
		{filepath.Join(tree, ".state"), "not a log\n"},
		{filepath.Join(noFiles, "sub", ".hidden"), "not a log\n"},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	basic := []string{"--policies", auditData + "kosmos-basic/policy.yaml"}
	flapping := []string{"--policies", auditData + "kosmos-flapping/policy.yaml", "--snapshot", auditData + "kosmos-flapping/snapshot.yaml"}
	flappingLog := auditData + "kosmos-flapping/audit.jsonl"
	// The log of kosmos-denied-variants shows its policy installed: its verdicts are evidence.
	variants := []string{"--policies", auditData + "kosmos-denied-variants/policy.yaml", "--snapshot", auditData + "kosmos-denied-variants/snapshot.yaml"}
	variantsLog := auditData + "kosmos-denied-variants/audit.jsonl"
	args := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name      string
		args      []string
		interrupt bool // stdin is the basic log, and Ctrl-C comes half way
		code      int
		// failures are the verdict's reasons, damaged input first; stderr the last line of
		// stderr.
		failures []replay.Reason
		stderr   string
	}{
		{name: "clean", args: args(basic, []string{"--check-recorded", "--fail-on", "any-change", basicLog}), code: exitOK},
		{name: "clean, denials not gated", args: args(basic, []string{"--check-recorded", basicLog}), code: exitOK},
		{name: "truncated gzip", args: args(basic, []string{"--check-recorded", "--fail-on", "any-change", truncated}), code: exitFindings,
			failures: []replay.Reason{replay.ReasonUnreadable}, stderr: "vapc: replay: FAIL: " + truncated + ":475: compressed stream truncated: reading stopped (last line of 1437 bytes incomplete): the log is cut short or damaged: copy it again, or leave it out"},
		{name: "corrupt gzip", args: args(basic, []string{"--max-malformed", "100000", corrupted}), code: exitFindings,
			failures: []replay.Reason{replay.ReasonUnreadable}},
		{name: "empty log", args: args(basic, []string{"--check-recorded", empty}), code: exitFindings,
			failures: []replay.Reason{replay.ReasonNoEvents}, stderr: "vapc: replay: FAIL: no audit events in " + empty + " (0 lines): nothing was replayed: give the files kube-apiserver's --audit-log-path writes, or the export of its audit log from EKS, AKS, GKE or the webhook backend (README: Where your audit log is)"},
		{name: "not an audit log", args: args(basic, []string{"--max-malformed", "1", notALog}), code: exitFindings,
			failures: []replay.Reason{replay.ReasonNoEvents}},
		{name: "malformed line", args: args(basic, []string{malformed}), code: exitFindings,
			failures: []replay.Reason{replay.ReasonMalformed}, stderr: "vapc: replay: FAIL: 1 malformed line, more than --max-malformed 0: the first is " + malformed + ":1085: not JSON: invalid character 'o' looking for beginning of object key string: repair the log, or allow them with --max-malformed"},
		{name: "malformed line tolerated", args: args(basic, []string{"--max-malformed", "1", malformed}), code: exitOK},
		{name: "a final record read twice", args: args(basic, []string{"--check-recorded", "--fail-on", "any-change", duplicate}), code: exitOK},
		{name: "another event under an audit ID", args: args(basic, []string{another}), code: exitFindings,
			failures: []replay.Reason{replay.ReasonMalformed}, stderr: fmt.Sprintf("vapc: replay: FAIL: 1 malformed line, more than --max-malformed 0: the first is %s:%d: duplicate: the final record of audit ID %s was read at %s:%d already, another event: repair the log, or allow them with --max-malformed", another, final+2, id, another, final+1)},
		{name: "disagreement", args: args(variants, []string{"--check-recorded", variantsLog}), code: exitFindings,
			failures: []replay.Reason{replay.ReasonDisagreement}, stderr: "vapc: replay: FAIL: 2 disagreements with the verdicts the log records"},
		// The log's cluster did not run the policy: it records no verdict of it to contradict.
		{name: "no disagreement with a policy not installed", args: args(flapping, []string{"--check-recorded", flappingLog}), code: exitOK},
		{name: "fail on deny", args: args(flapping, []string{"--fail-on", "deny", flappingLog}), code: exitFindings,
			failures: []replay.Reason{replay.ReasonDeny}, stderr: "vapc: replay: FAIL: 2 requests would be denied (--fail-on deny)"},
		{name: "fail on any change", args: args(flapping, []string{"--fail-on", "any-change", flappingLog}), code: exitFindings,
			failures: []replay.Reason{replay.ReasonChanged}, stderr: "vapc: replay: FAIL: 2 requests would be decided otherwise than the log records (--fail-on any-change)"},
		{name: "denials without --fail-on", args: args(flapping, []string{flappingLog}), code: exitOK},
		{name: "damage comes first", args: args(variants, []string{"--check-recorded", "--fail-on", "deny", variantsLog, empty}), code: exitFindings,
			failures: []replay.Reason{replay.ReasonDisagreement, replay.ReasonDeny}},
		{name: "damage and a denial", args: args(flapping, []string{"--fail-on", "deny", flappingLog, truncated}), code: exitFindings,
			failures: []replay.Reason{replay.ReasonUnreadable, replay.ReasonDeny}},
		{name: "interrupted", args: args(basic, []string{"--check-recorded", "--fail-on", "any-change", "-"}), interrupt: true, code: exitInterrupted,
			failures: []replay.Reason{replay.ReasonInterrupted}, stderr: "vapc: replay: interrupted after 600 lines: the outputs are partial"},
		{name: "wrong path", args: args(basic, []string{"--check-recorded", filepath.Join(dir, "audit.log")}), code: exitUsage,
			stderr: "vapc: replay: " + filepath.Join(dir, "audit.log") + ": no such file or directory"},
		{name: "a folder", args: args(basic, []string{"--check-recorded", "--fail-on", "any-change", tree}), code: exitOK},
		{name: "a folder of no file", args: args(basic, []string{noFiles}), code: exitUsage,
			stderr: "vapc: replay: " + noFiles + ": a folder that holds no file"},
		{name: "no policy", args: []string{"--policies", noPolicy, basicLog}, code: exitFindings,
			stderr: "vapc: replay: --policies " + noPolicy + " holds no ValidatingAdmissionPolicy or MutatingAdmissionPolicy: nothing to replay. --policies reads " + cel.PolicyKinds + "; cluster objects go in --snapshot"},
	}
	for _, tc := range tests {
		for _, output := range []string{"text", "jsonl", "junit"} {
			t.Run(tc.name+"/"+output, func(t *testing.T) {
				t.Parallel()
				argv := append([]string{"replay", "--output", output}, tc.args...)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var stdin io.Reader = strings.NewReader("")
				if tc.interrupt {
					lines := strings.SplitAfter(string(plain), "\n")
					stdin = &cancelingReader{ctx: ctx, first: []byte(strings.Join(lines[:600], "")), cancel: cancel}
				}
				var stdout, stderr bytes.Buffer
				err := Run(ctx, argv, stdin, &stdout, &stderr)
				if err != nil {
					fmt.Fprintln(&stderr, "vapc:", err)
				}
				if got := ExitCode(err); got != tc.code {
					t.Fatalf("vapc %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), got, tc.code, stdout.String(), stderr.String())
				}
				lastErr := strings.TrimSuffix(stderr.String(), "\n")
				lastErr = lastErr[strings.LastIndex(lastErr, "\n")+1:]
				if tc.stderr != "" && lastErr != tc.stderr {
					t.Errorf("stderr ends %q, want %q", lastErr, tc.stderr)
				}
				if tc.code == exitUsage || (tc.code == exitFindings && tc.failures == nil) {
					if stdout.Len() > 0 {
						t.Errorf("stdout of a replay that did not run:\n%s", stdout.String())
					}
					return
				}
				gotFailures := verdictOf(t, output, stdout.String())
				if diff := cmp.Diff(tc.failures, gotFailures); diff != "" {
					t.Errorf("--output %s states the failures (-want +got):\n%s\n%s", output, diff, stdout.String())
				}
			})
		}
	}
}

// verdictOf reads the verdict each output states: the reasons of the text summary's first
// lines, of the final JSON line, of the JUnit failures and errors. It fails the test when an
// output contradicts itself.
func verdictOf(t *testing.T, output, stdout string) []replay.Reason {
	t.Helper()
	var reasons []replay.Reason
	switch output {
	case "text":
		head, _, _ := strings.Cut(stdout, "\n")
		pass := strings.HasPrefix(head, "PASS: ")
		if !pass && !strings.HasPrefix(head, "FAIL: ") && !strings.HasPrefix(head, "INTERRUPTED: ") {
			t.Fatalf("the text summary does not begin with its verdict:\n%s", stdout)
		}
		for _, l := range strings.Split(stdout, "\n")[1:] {
			r, _, ok := strings.Cut(strings.TrimPrefix(l, "  "), ": ")
			if l == "" || !ok || !strings.HasPrefix(l, "  ") {
				break
			}
			reasons = append(reasons, replay.Reason(r))
		}
		if pass != (len(reasons) == 0) {
			t.Errorf("the text summary says %q with reasons %v", head, reasons)
		}
	case "jsonl":
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		var end replay.End
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil || end.Verdict == nil {
			t.Fatalf("the last JSON line is not the end record (%v):\n%s", err, lines[len(lines)-1])
		}
		for _, f := range end.Verdict.Failures {
			reasons = append(reasons, f.Reason)
		}
		if end.Verdict.Pass != (len(reasons) == 0) || end.Partial != end.Verdict.Partial {
			t.Errorf("the end record says pass %v, partial %v (verdict partial %v), with reasons %v", end.Verdict.Pass, end.Partial, end.Verdict.Partial, reasons)
		}
	case "junit":
		var suites struct {
			Suites []struct {
				Failures int `xml:"failures,attr"`
				Errors   int `xml:"errors,attr"`
				Cases    []struct {
					Name    string `xml:"name,attr"`
					Failure *struct {
						Message string `xml:"message,attr"`
					} `xml:"failure"`
					Error *struct {
						Type string `xml:"type,attr"`
					} `xml:"error"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal([]byte(stdout), &suites); err != nil {
			t.Fatalf("JUnit does not parse: %v\n%s", err, stdout)
		}
		s := suites.Suites[0]
		failed, errored := 0, 0
		for _, c := range s.Cases {
			if c.Error != nil {
				errored++
				reasons = append(reasons, replay.Reason(c.Error.Type))
			}
			if c.Failure == nil {
				continue
			}
			failed++
			if strings.Contains(c.Name, "/") {
				continue // a binding's case: its reason is the fail-on case's
			}
			for _, part := range strings.Split(c.Failure.Message, ", ") {
				r, _, _ := strings.Cut(part, ": ")
				reasons = append(reasons, replay.Reason(r))
			}
		}
		if failed != s.Failures || errored != s.Errors {
			t.Errorf("JUnit counts %d failures and %d errors, its cases %d and %d", s.Failures, s.Errors, failed, errored)
		}
	}
	return reasons
}
