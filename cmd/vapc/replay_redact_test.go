package main

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestReplayRedactsSecrets holds every output of a replay (JSON lines, text, JUnit, with and
// without --check-recorded, from the log and from the envelopes) to leaving out the values of
// the Secrets it decides, which the policies of verify/report/testdata/secrets quote in their
// messages, warnings and audit annotations; what the record shows anyway (the Secret's name,
// which one of its values holds) stays, and so do the values of other resources.
func TestReplayRedactsSecrets(t *testing.T) {
	dir := "../../verify/report/testdata/secrets/"
	// Secret data and stringData the log writes (see verify/report's TestRedact).
	values := []string{"hunter2-s3cr3t-pass", "hunter3-NEWVALUE-pass", "tok-ABCDEF123456", "patched-TOKEN-777", "sk-live-STRINGDATA-999"}
	forms := func(v string) []string { return []string{v, base64.StdEncoding.EncodeToString([]byte(v))} }
	for _, log := range []string{"audit.jsonl", "gke-sink.json", "eks-filter-log-events.json"} {
		for _, out := range []string{"jsonl", "text", "junit"} {
			for _, check := range []bool{false, true} {
				args := []string{"replay", "--policies", dir + "policy.yaml", "--output", out}
				if check {
					args = append(args, "--check-recorded")
				}
				stdout, stderr, _ := runVapc(t, "", append(args, dir+log)...)
				all := stdout + stderr
				for _, v := range values {
					for _, f := range forms(v) {
						if strings.Contains(all, f) {
							t.Errorf("%s --output %s (check-recorded %v) holds the value %q (as %q)", log, out, check, v, f)
						}
					}
				}
				if out == "jsonl" && !strings.Contains(stdout, "<redacted>") {
					t.Errorf("%s --output jsonl (check-recorded %v): nothing redacted: the policies quote the values, the test proves nothing", log, check)
				}
				if out == "jsonl" && !check && !strings.Contains(stdout, "mode plain-visible-value") {
					t.Errorf("%s --output jsonl: the pod's message is not there: only Secrets are redacted", log)
				}
			}
		}
	}
}
