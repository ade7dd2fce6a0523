package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileInput feeds broken and hostile input to every verb: each gets a clear error that
// names the file (and line where there is one) and a findings or usage exit code, never a panic
// or an internal error.
func TestHostileInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bomb := "apiVersion: v1\nkind: X\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
	hugeExpr := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: huge}\nspec:\n  validations:\n  - expression: \"" + strings.Repeat("1 == 1 && ", 20000) + "true\"\n"
	missingPolicy := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: orphan}\nspec:\n  policyName: nowhere\n  validationActions: [Deny]\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	log, err := os.ReadFile("../../testdata/audit/kosmos-basic/audit.log.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	zw.Write(plain)
	zw.Close()
	truncated := write("truncated.log.gz", string(gz.Bytes()[:gz.Len()/2]))
	empty := write("empty.log", "")
	snapshotWrongKind := write("wrong-kind.yaml", "apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: g}\n")
	snapshotNoName := write("no-name.yaml", "apiVersion: v1\nkind: Node\nmetadata: {labels: {a: b}}\n")
	snapshotDup := write("dup.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {a: b}}\n")
	policy := "../../testdata/audit/kosmos-basic/policy.yaml"
	basicLog := "../../testdata/audit/kosmos-basic/audit.log.gz"

	for _, tc := range []struct {
		name     string
		args     []string
		want     int
		contains string // in stdout or stderr
	}{
		{"check: YAML bomb", []string{"check", write("bomb.yaml", bomb)}, exitFindings, "bomb.yaml"},
		{"check: huge expression", []string{"check", write("huge.yaml", hugeExpr)}, exitFindings, "huge.yaml:6:"},
		{"check: binding to a missing policy", []string{"check", "--warnings-as-errors", write("orphan.yaml", missingPolicy)}, exitFindings, `policy "nowhere" is not among the checked files`},
		{"check: a folder without manifests", []string{"check", t.TempDir()}, exitFindings, "no .yaml, .yml or .json files in this folder"},
		{"check: missing file", []string{"check", filepath.Join(dir, "nope.yaml")}, exitUsage, "nope.yaml"},
		{"check: bad CRD file", []string{"check", "--crd", write("bad-crd.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: {group: ''}\n"), policy}, exitFindings, "bad-crd.yaml:1:1: "},
		{"check: CRD types the custom resource", []string{"check", "--crd", "../../testdata/crd/widgets.yaml", "../../testdata/crd/widget-policy.yaml"}, exitFindings, "widget-policy.yaml:15:29: spec.validations[0].expression: undefined field 'sise' (checked as example.com/v1/Widget)"},
		{"check: without the CRD it says what it could not type", []string{"check", "../../testdata/crd/widget-policy.yaml"}, exitOK, "unknown resource example.com/v1/widgets"},
		{"replay: truncated gzip", []string{"replay", "--policies", policy, truncated}, exitFindings, "  unreadable: " + truncated + ":475: compressed stream truncated"},
		{"replay: empty file", []string{"replay", "--policies", policy, empty}, exitFindings, "  no-events: no audit events in " + empty + " (0 lines)"},
		// A folder is its files: these, none an audit log, are malformed lines named by file and line.
		{"replay: a directory", []string{"replay", "--policies", policy, dir}, exitFindings, "malformed lines, more than --max-malformed 0: the first is " + dir + string(filepath.Separator)},
		{"replay: a directory of no file", []string{"replay", "--policies", policy, t.TempDir()}, exitUsage, "a folder that holds no file"},
		{"replay: missing file", []string{"replay", "--policies", policy, filepath.Join(dir, "nope.log")}, exitUsage, "nope.log: no such file"},
		{"replay: policies that do not parse", []string{"replay", "--policies", write("bomb2.yaml", bomb), basicLog}, exitFindings, "bomb2.yaml"},
		{"replay: snapshot of an unknown kind", []string{"replay", "--policies", policy, "--snapshot", snapshotWrongKind, basicLog}, exitFindings, "wrong-kind.yaml"},
		{"replay: snapshot of an unknown kind, what to do", []string{"replay", "--policies", policy, "--snapshot", snapshotWrongKind, basicLog}, exitFindings, "give its CustomResourceDefinition"},
		{"replay: snapshot object without a name", []string{"replay", "--policies", policy, "--snapshot", snapshotNoName, basicLog}, exitFindings, "no-name.yaml"},
		{"replay: duplicate snapshot objects", []string{"replay", "--policies", policy, "--snapshot", snapshotDup, basicLog}, exitFindings, "dup.yaml"},
		{"test: missing suite", []string{"test", filepath.Join(dir, "nope.suite.yaml")}, exitUsage, "nope.suite.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runVapc(t, "", tc.args...)
			if code != tc.want {
				t.Errorf("vapc %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.want, stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, tc.contains) {
				t.Errorf("vapc %s: output does not contain %q\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), tc.contains, stdout, stderr)
			}
		})
	}
}

// TestStdinClosedEarly: a log piped in that stops in the middle of a line (the writer died)
// is replayed up to that line, which is reported with its number, and fails the replay.
func TestStdinClosedEarly(t *testing.T) {
	data, err := os.ReadFile("../../testdata/audit/kosmos-basic/audit.log.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := plain.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	cut := plain.String()[:plain.Len()/2]
	lines := strings.Count(cut, "\n") + 1
	stdout, stderr, code := runVapc(t, cut, "replay", "--policies", "../../testdata/audit/kosmos-basic/policy.yaml", "-")
	if code != exitFindings {
		t.Errorf("exit %d, want %d: a log cut short fails the replay\nstderr:\n%s", code, exitFindings, stderr)
	}
	if want := fmt.Sprintf("FAIL: 1 reason\n  malformed: 1 malformed line, more than --max-malformed 0: the first is -:%d: truncated JSON", lines); !strings.HasPrefix(stdout, want) {
		t.Errorf("output does not begin with the verdict (%q):\n%s", want, stdout)
	}
	if want := fmt.Sprintf("-:%d: truncated JSON", lines); !strings.Contains(stdout, want) {
		t.Errorf("output does not report the cut line (%q):\n%s", want, stdout)
	}
	if want := fmt.Sprintf("Replayed %d lines", lines); !strings.Contains(stdout, want) {
		t.Errorf("output does not account for every line (%q):\n%s", want, stdout)
	}
}

// TestPanicIsInternalError: whatever goes wrong inside a verb reaches the user as exit code 3
// with a message, never as a crash.
func TestPanicIsInternalError(t *testing.T) {
	register("panic-for-test", verb{hidden: true, run: func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
		panic("boom")
	}})
	defer delete(verbs, "panic-for-test")
	_, stderr, code := runVapc(t, "", "panic-for-test")
	if code != exitInternal || !strings.Contains(stderr, "internal error: panic") {
		t.Errorf("exit %d, stderr %q; want %d and an internal error", code, stderr, exitInternal)
	}
}
