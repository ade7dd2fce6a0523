package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// decisions are the decisions of the JSON lines of a replay, by audit ID.
func decisions(t *testing.T, jsonl string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(jsonl), "\n") {
		var r struct {
			AuditID, Decision, Reason string
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if r.AuditID != "" {
			out[r.AuditID] = r.Decision + " " + r.Reason
		}
	}
	return out
}

// TestReplayExports replays the log of kosmos-denied-variants as each export hands it over
// (testdata/audit/exports), detected from the files: each decides as the log does, GKE's and
// Log Analytics' where what they lost does not decide (its requests are then indeterminate); a malformed envelope
// exits 1 and says where, an unknown --input-format exits 2.
func TestReplayExports(t *testing.T) {
	dir := auditData + "kosmos-denied-variants/"
	args := []string{"replay", "--policies", dir + "policy.yaml", "--snapshot", dir + "snapshot.yaml", "--output", "jsonl"}
	plainOut, _, plainCode := runVapc(t, "", append(args, dir+"audit.jsonl")...)
	plain := decisions(t, plainOut)
	files, err := filepath.Glob(auditData + "exports/*")
	if err != nil || len(files) < 8 {
		t.Fatalf("exports: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			stdout, stderr, code := runVapc(t, "", append(args, f)...)
			if code != plainCode {
				t.Fatalf("exit %d, the log's %d\n%s", code, plainCode, stderr)
			}
			got := decisions(t, stdout)
			// GKE's entries, and AKS's Log Analytics rows (no column for the impersonated
			// user), lose what the policy's match on the user reads.
			lossy := strings.HasPrefix(filepath.Base(f), "gke-") || strings.HasPrefix(filepath.Base(f), "aks-loganalytics")
			for id, want := range plain {
				if got[id] != want && !(lossy && strings.HasPrefix(got[id], "indeterminate ")) {
					t.Errorf("%s: %q, the log's %q", id, got[id], want)
				}
			}
		})
	}

	bad := filepath.Join(t.TempDir(), "events.json")
	if err := os.WriteFile(bad, []byte("{\"events\": [\n  {\"logStreamName\": \"kube-apiserver-audit-1\", \"timestamp\": 1}\n]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		want     int
		contains string
	}{
		{"a malformed envelope", append(args[:len(args)-2:len(args)-2], bad), exitFindings, bad + ":2: document 1: events[0].message: missing"},
		{"a format forced on another's file", append(args[:len(args)-2:len(args)-2], "--input-format", "gke", dir+"audit.jsonl"), exitFindings, "protoPayload: missing: not a Cloud Audit Logs entry"},
		{"an unknown format", append(args[:len(args)-2:len(args)-2], "--input-format", "splunk", dir+"audit.jsonl"), exitUsage, `unknown input format "splunk"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runVapc(t, "", tc.args...)
			if code != tc.want || !strings.Contains(stdout+stderr, tc.contains) {
				t.Errorf("vapc %s: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.want, tc.contains, stdout, stderr)
			}
		})
	}
}
