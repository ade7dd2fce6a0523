package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayReport drives `vapc replay --report` through Run: the report is written beside the
// text output, with the exit code of the replay, and its flags are checked.
func TestReplayReport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "replay.html")
	flapping := []string{"--policies", auditData + "kosmos-flapping/policy.yaml", "--snapshot", auditData + "kosmos-flapping/snapshot.yaml", auditData + "kosmos-flapping/audit.jsonl"}
	stdout, stderr, code := runVapc(t, "", append([]string{"replay", "--fail-on", "deny", "--report", out, "--report-redact", "configmaps", "--report-redact", "example.com/credentials"}, flapping...)...)
	if code != exitFindings || !strings.Contains(stdout, "deny 2") {
		t.Fatalf("exit %d, want %d with the text output\nstdout:\n%s\nstderr:\n%s", code, exitFindings, stdout, stderr)
	}
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The report states the verdict the exit code follows.
	for _, want := range []string{`<script type="application/json" id="report-data">`, `"node":"kosmos-member1"`, `"redacted":["configmaps","example.com/credentials","secrets"]`, "Content-Security-Policy",
		`"verdict":{"pass":false,"failures":[{"reason":"deny","count":2,"detail":"2 requests would be denied (--fail-on deny)"}],"gate":{"failOn":["deny"],"maxMalformed":0}}`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the report does not hold %s", want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the report's folder holds %d files, want the report alone (no temporary file left)", len(entries))
	}

	for _, tc := range []struct {
		name     string
		args     []string
		contains string
	}{
		{"redact without report", []string{"--report-redact", "secrets"}, "--report-redact needs --report"},
		{"bad resource", []string{"--report", out, "--report-redact", "a/b/c"}, "is not GROUP/RESOURCE"},
		{"report into no folder", []string{"--report", filepath.Join(dir, "none", "r.html")}, "no folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runVapc(t, "", append(append([]string{"replay"}, tc.args...), flapping...)...)
			want := exitUsage
			if code != want || !strings.Contains(stderr, tc.contains) {
				t.Errorf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, want, tc.contains, stdout, stderr)
			}
		})
	}
}
