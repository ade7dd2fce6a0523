package replay

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vapc-dev/vapc/cel"
)

// mapOrderOf is what cmd/vapc gives the replay for the policies file: the expressions the
// checker's lint names (cel.Checker.MapOrderOf).
func mapOrderOf(t *testing.T, policies string) cel.MapOrder {
	t.Helper()
	set, _, _ := readPolicies(t, policies)
	checker, err := cel.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	return checker.MapOrderOf(set, checker.Check(set))
}

// TestMapOrderMessages: a recording (cut/map-order-message) of a policy whose messageExpressions
// list a ConfigMap's data keys and labels in the order CEL iterates the map, kube-apiserver's
// chance: the server's denials and validation_failure entries name them in several orders
// (rotations of the keys). The replay decides every one as the server did, certain, its
// message the log's, checking the log or not; where the log does not
// hold the replayed policy's messages (the same policies under other names, as a new policy
// replayed over the log) a message of several keys is indeterminate (map-order) and one of a
// single key decided.
func TestMapOrderMessages(t *testing.T) {
	dir := filepath.Join("testdata", "cut", "map-order-message")
	log := filepath.Join(dir, "audit.log.gz")
	renamed := filepath.Join(t.TempDir(), "policies.yaml")
	if err := os.WriteFile(renamed, []byte(strings.ReplaceAll(readString(t, filepath.Join(dir, "policies.yaml")), "mo-keys", "mo-new")), 0o644); err != nil {
		t.Fatal(err)
	}
	verdicts := recordedVerdicts(t, log, []string{"mo-keys"})
	for _, tc := range []struct {
		name     string
		policies string
		check    bool
	}{
		{name: "plain", policies: filepath.Join(dir, "policies.yaml")},
		{name: "checked", policies: filepath.Join(dir, "policies.yaml"), check: true},
		{name: "not the server's policies", policies: renamed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			recs := replayRecording(t, tc.policies, log, WithCheckRecorded(tc.check), WithAdmissionPlugins(withoutServiceAccount(t)))
			decided, undecided := 0, 0
			for id, v := range verdicts {
				if len(v.fails) == 0 && v.deny == "" {
					continue
				}
				rec := recs[id]
				if rec == nil {
					t.Errorf("%s: no record", v.desc)
					continue
				}
				// The server's messages, and whether they list several keys.
				msgs := slices.Clone(v.fails)
				if v.deny != "" {
					msgs = append(msgs, v.deny)
				}
				several := slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, ", ") })
				if tc.policies == renamed {
					switch {
					case several && (rec.Decision != DecisionIndeterminate || rec.Reason != ReasonMapOrder):
						t.Errorf("%s: the server's messages %q list several keys, which the log does not show in the replayed policy's: %s %s, want indeterminate (map-order)", v.desc, msgs, rec.Decision, rec.Indeterminate)
					case !several && (rec.Decision == DecisionIndeterminate || rec.Certainty != CertaintyCertain):
						t.Errorf("%s: the server's messages %q list one key: %s %s %s, want it decided", v.desc, msgs, rec.Decision, rec.Certainty, rec.Indeterminate)
					}
					continue
				}
				if rec.Decision == DecisionIndeterminate {
					t.Errorf("%s: indeterminate (%s), the server's messages %q are in the log", v.desc, rec.Indeterminate, msgs)
					undecided++
					continue
				}
				var fails []string
				for _, r := range rec.Results {
					if slices.Contains(r.Actions, "Audit") && r.Result == "deny" {
						fails = append(fails, r.Policy+"/"+r.Binding+"/"+r.Message)
					}
				}
				slices.Sort(fails)
				if !slices.Equal(fails, v.fails) || (rec.Decision == DecisionDeny) != (v.deny != "") ||
					(v.deny != "" && !slices.ContainsFunc(rec.Results, func(r RecordResult) bool { return r.Message == v.deny })) {
					t.Errorf("%s: the server recorded %q (deny %q), the replay %s (%s) %q: a wrong claim", v.desc, v.fails, v.deny, rec.Decision, rec.Certainty, fails)
					continue
				}
				decided++
			}
			t.Logf("%d decided, %d indeterminate", decided, undecided)
		})
	}
}
