package main

import (
	"os"
	"strings"
	"testing"
)

const auditData = "../../testdata/audit/"

// TestReplayExitCodes drives `vapc replay` through Run and checks each exit code.
func TestReplayExitCodes(t *testing.T) {
	basic := []string{"--policies", auditData + "kosmos-basic/policy.yaml"}
	basicLog := auditData + "kosmos-basic/audit.log.gz"
	flapping := []string{"--policies", auditData + "kosmos-flapping/policy.yaml", "--snapshot", auditData + "kosmos-flapping/snapshot.yaml", auditData + "kosmos-flapping/audit.jsonl"}
	for _, tc := range []struct {
		name     string
		args     []string
		stdin    string
		want     int
		contains string // in stdout, or stderr for errors
	}{
		{"recorded log agrees with itself", append(append([]string{"replay", "--check-recorded"}, basic...), basicLog), "", exitOK, "3 requests, 0 disagreements"},
		{"fail on deny", append(append([]string{"replay", "--fail-on", "deny"}, basic...), basicLog), "", exitFindings, "deny 1"},
		{"fail on any change: none", append(append([]string{"replay", "--fail-on", "any-change"}, basic...), basicLog), "", exitOK, "changed:       0"},
		{"fail on any change", append([]string{"replay", "--fail-on", "any-change"}, flapping...), "", exitFindings, "changed:       2"},
		{"jsonl", append(append([]string{"replay", "--output", "jsonl"}, basic...), basicLog), "", exitOK, `"decision":"deny","recorded":"deny"`},
		{"junit", append(append([]string{"replay", "--output", "junit", "--fail-on", "deny"}, basic...), basicLog), "", exitFindings, `<testcase name="kosmos-node-not-ready/kosmos-node-not-ready"`},
		{"stdin", append(append([]string{"replay"}, basic...), "-"), "{oops\n", exitOK, "malformed lines:     1"},
		{"no policies", []string{"replay", basicLog}, "", exitUsage, "--policies is required"},
		{"no logs", append([]string{"replay"}, basic...), "", exitUsage, "no audit logs given"},
		{"bad output", append(append([]string{"replay", "--output", "xml"}, basic...), basicLog), "", exitUsage, "--output must be"},
		{"bad fail-on", append(append([]string{"replay", "--fail-on", "maybe"}, basic...), basicLog), "", exitUsage, "--fail-on must be"},
		{"bad snapshot", append(append([]string{"replay", "--snapshot", "/nonexistent"}, basic...), basicLog), "", exitUsage, "snapshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runVapc(t, tc.stdin, tc.args...)
			if code != tc.want {
				t.Errorf("vapc %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.want, stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, tc.contains) {
				t.Errorf("vapc %s: output does not contain %q\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), tc.contains, stdout, stderr)
			}
		})
	}
}

// TestReplayReadsStdinLog replays the recorded log from stdin.
func TestReplayReadsStdinLog(t *testing.T) {
	data, err := os.ReadFile(auditData + "kosmos-basic/audit.log.gz")
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runVapc(t, string(data), "replay", "--check-recorded", "--policies", auditData+"kosmos-basic/policy.yaml", "-")
	if code != exitOK || !strings.Contains(stdout, "evaluated:     3 (admit 2, deny 1") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
