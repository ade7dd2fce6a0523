package cel

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/cel/manifest"
)

func TestParseIssues(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []celIssue
	}{
		{
			name: "one",
			text: "ERROR: <input>:1:19: undefined field 'nodeNmae'\n | a.b\n | ..^",
			want: []celIssue{{line: 1, col: 18, msg: "undefined field 'nodeNmae'"}},
		},
		{
			name: "behind a prefix, two errors",
			text: "compilation failed: ERROR: <input>:2:3: a\n | x\n | ^\nERROR: <input>:1:1: b\n | y\n | ^",
			want: []celIssue{{line: 2, col: 2, msg: "a"}, {line: 1, col: 0, msg: "b"}},
		},
		{
			name: "negative position",
			text: "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds limit: size: 708886, limit 100000",
			want: []celIssue{{msg: "expression code point size exceeds limit: size: 708886, limit 100000"}},
		},
		{
			name: "no position",
			text: "  program instantiation failed  ",
			want: []celIssue{{msg: "program instantiation failed"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseIssues(tc.text)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(celIssue{})); diff != "" {
				t.Errorf("parseIssues mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiagnosticString(t *testing.T) {
	d := Diagnostic{
		Pos:        manifest.Position{File: "p.yaml", Line: 3, Col: 9},
		Field:      "spec.validations[0].expression",
		Severity:   Error,
		Message:    "undefined field 'x'",
		Expression: "\tobject.x",
		Column:     8,
	}
	want := "p.yaml:3:9: spec.validations[0].expression: undefined field 'x'\n | \tobject.x\n | \t......^"
	if got := d.String(); got != want {
		t.Errorf("String() mismatch (-want +got):\n%s", cmp.Diff(want, got))
	}
	d.Severity, d.Expression = Warning, ""
	want = "p.yaml:3:9: spec.validations[0].expression: warning: undefined field 'x'"
	if got := d.String(); got != want {
		t.Errorf("String() mismatch (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// TestReadPathsMissing: a path that is not there is named, without the system call, and the
// diagnostic does not start with an empty position.
func TestReadPathsMissing(t *testing.T) {
	_, diags := ReadPaths(nil, "nope.yaml")
	var got []string
	for _, d := range diags {
		got = append(got, d.String())
	}
	want := []string{"nope.yaml: no such file or directory"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadPaths(nope.yaml) mismatch (-want +got):\n%s", diff)
	}
	d := Diagnostic{Severity: Error, Message: "m"}
	if got := d.String(); got != "m" {
		t.Errorf("String() without a position = %q, want %q", got, "m")
	}
}
