package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/cel/sarif"
)

var update = flag.Bool("update", false, "rewrite golden files")

// runVapc runs the CLI and returns stdout, stderr and the exit code.
func runVapc(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	if err != nil {
		fmt.Fprintln(&stderr, "vapc:", err)
	}
	return stdout.String(), stderr.String(), ExitCode(err)
}

// TestCheckGolden runs `vapc check` on each file of testdata/check and compares the output and
// exit code with the file's golden twin. Files named valid-* must be clean, and coverage-*,
// lint-* and warn-* have only warnings (exit 0); invalid-* and input-* have errors (exit 1).
func TestCheckGolden(t *testing.T) {
	files, err := filepath.Glob("../../testdata/check/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runVapc(t, "", "check", file)
			got := fmt.Sprintf("exit %d\n%s", code, stdout)
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading golden file (run go test -update): %v", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("vapc check %s mismatch (-want +got):\n%s\nstderr:\n%s", file, diff, stderr)
			}
			wantCode := exitFindings
			switch {
			case strings.HasPrefix(name, "valid-"), strings.HasPrefix(name, "coverage-"),
				strings.HasPrefix(name, "lint-"), strings.HasPrefix(name, "warn-"):
				wantCode = exitOK
			}
			if code != wantCode {
				t.Errorf("vapc check %s exit code = %d, want %d", file, code, wantCode)
			}
		})
	}
}

// TestCheckExitCodes covers the exit code contract of check.
func TestCheckExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no args", []string{"check"}, exitUsage},
		{"bad flag", []string{"check", "--nope", "x.yaml"}, exitUsage},
		{"bad version", []string{"check", "--kubernetes-version", "1.99", "../../testdata/check/valid-kosmos-guard.yaml"}, exitUsage},
		{"old version", []string{"check", "--kubernetes-version", "1.20", "../../testdata/check/valid-kosmos-guard.yaml"}, exitUsage},
		{"bad output", []string{"check", "--output", "xml", "../../testdata/check/valid-kosmos-guard.yaml"}, exitUsage},
		{"missing file", []string{"check", "does-not-exist.yaml"}, exitUsage},
		{"clean", []string{"check", "../../testdata/check/valid-kosmos-guard.yaml"}, exitOK},
		{"warnings as errors", []string{"check", "--warnings-as-errors", "../../testdata/check/lint-scale-subresource.yaml"}, exitFindings},
		{"findings", []string{"check", "../../testdata/check/invalid-params-typo.yaml"}, exitFindings},
		{"unknown verb", []string{"frobnicate"}, exitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runVapc(t, "", tc.args...)
			if code != tc.want {
				t.Errorf("vapc %v exit code = %d, want %d; stderr:\n%s", tc.args, code, tc.want, stderr)
			}
		})
	}
}

func TestCheckStdinAndJSON(t *testing.T) {
	policy, err := os.ReadFile("../../testdata/check/invalid-params-typo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stdout, _, code := runVapc(t, string(policy), "check", "--output", "json", "-")
	if code != exitFindings {
		t.Fatalf("exit code = %d, want %d", code, exitFindings)
	}
	if !strings.Contains(stdout, `"file": "<stdin>"`) || !strings.Contains(stdout, "undefined field 'condition'") {
		t.Errorf("json output lacks the stdin position or the finding:\n%s", stdout)
	}
	if !strings.Contains(stdout, `"hint": "did you mean 'conditions'?"`) {
		t.Errorf("json output lacks the finding's did you mean:\n%s", stdout)
	}
}

// TestCheckKubernetesVersion: what a server accepts on create depends on its version.
func TestCheckKubernetesVersion(t *testing.T) {
	tests := []struct {
		file, version string
		want          int
	}{
		{"valid-distinct.yaml", "1.37", exitOK},
		{"valid-distinct.yaml", "1.35", exitOK},
		{"valid-distinct.yaml", "1.34", exitFindings}, // compatibility version 1.33 lacks distinct()
		{"invalid-new-function.yaml", "1.37", exitFindings},
	}
	for _, tc := range tests {
		t.Run(tc.file+"@"+tc.version, func(t *testing.T) {
			stdout, _, code := runVapc(t, "", "check", "--kubernetes-version", tc.version, "../../testdata/check/"+tc.file)
			if code != tc.want {
				t.Errorf("vapc check --kubernetes-version %s %s exit code = %d, want %d\n%s", tc.version, tc.file, code, tc.want, stdout)
			}
		})
	}
}

// TestCheckSARIF: --output sarif writes a SARIF log whose results are the findings at their
// file, line and column, with the exit code of the text output. cel/sarif's test validates
// the log against the SARIF 2.1.0 schema.
func TestCheckSARIF(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file    string
		code    int
		results []string // ruleId level file:line:col
	}{
		{"invalid-oldobject-typo.yaml", exitFindings, []string{"VAPC003 error ../../testdata/check/invalid-oldobject-typo.yaml:18:45"}},
		{"warn-kind-guarded-branch.yaml", exitOK, []string{
			"VAPC003 warning ../../testdata/check/warn-kind-guarded-branch.yaml:22:46",
			"VAPC003 warning ../../testdata/check/warn-kind-guarded-branch.yaml:22:73",
			"VAPC003 warning ../../testdata/check/warn-kind-guarded-branch.yaml:23:59",
		}},
		{"valid-kosmos-guard.yaml", exitOK, nil},
	} {
		stdout, stderr, code := runVapc(t, "", "check", "--output", "sarif", "../../testdata/check/"+tc.file)
		if code != tc.code {
			t.Errorf("vapc check --output sarif %s: exit %d, want %d\n%s", tc.file, code, tc.code, stderr)
		}
		var log sarif.Log
		if err := json.Unmarshal([]byte(stdout), &log); err != nil {
			t.Fatalf("--output sarif is not JSON: %v\n%s", err, stdout)
		}
		var got []string
		for _, r := range log.Runs[0].Results {
			l := r.Locations[0].PhysicalLocation
			got = append(got, fmt.Sprintf("%s %s %s:%d:%d", r.RuleID, r.Level, l.ArtifactLocation.URI, l.Region.StartLine, l.Region.StartColumn))
		}
		if diff := cmp.Diff(tc.results, got); diff != "" {
			t.Errorf("vapc check --output sarif %s results mismatch (-want +got):\n%s", tc.file, diff)
		}
	}
}
