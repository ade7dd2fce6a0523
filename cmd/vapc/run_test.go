package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMissingInputs: a file or folder that is not there is a usage error (exit 2) of every
// verb, named with the verb (and flag) that read it, without the system call that failed.
func TestMissingInputs(t *testing.T) {
	t.Parallel()
	policy := "../../testdata/audit/kosmos-basic/policy.yaml"
	log := "../../testdata/audit/kosmos-basic/audit.log.gz"
	tests := []struct {
		name string
		args []string
		want string // stderr
	}{
		{"check", []string{"check", "nope.yaml"}, "vapc: check: nope.yaml: no such file or directory\n"},
		{"check, two", []string{"check", "nope.yaml", policy, "nope/"}, "vapc: check: nope.yaml: no such file or directory; nope/: no such file or directory\n"},
		{"check --crd", []string{"check", "--crd", "nope.yaml", policy}, "vapc: check: --crd: nope.yaml: no such file or directory\n"},
		{"test", []string{"test", "nope.suite.yaml"}, "vapc: test: nope.suite.yaml: no such file or directory\n"},
		{"replay log", []string{"replay", "--policies", policy, "nope.log"}, "vapc: replay: nope.log: no such file or directory\n"},
		{"replay --policies", []string{"replay", "--policies", "nope.yaml", log}, "vapc: replay: --policies: nope.yaml: no such file or directory\n"},
		{"replay --snapshot", []string{"replay", "--policies", policy, "--snapshot", "nope.yaml", log}, "vapc: replay: --snapshot: nope.yaml: no such file or directory\n"},
		{"replay --crd", []string{"replay", "--policies", policy, "--crd", "nope.yaml", log}, "vapc: replay: --crd: nope.yaml: no such file or directory\n"},
		{"emit --settings", []string{"emit", "--settings", "nope.yaml", "--check"}, "vapc: emit: --settings: nope.yaml: no such file or directory\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, stderr, code := runVapc(t, "", tc.args...)
			if code != exitUsage {
				t.Errorf("vapc %v exit code = %d, want %d", tc.args, code, exitUsage)
			}
			if diff := cmp.Diff(tc.want, stderr); diff != "" {
				t.Errorf("vapc %v stderr mismatch (-want +got):\n%s", tc.args, diff)
			}
		})
	}
}
