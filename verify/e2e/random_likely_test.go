package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/vapc-dev/vapc/verify/replay"
)

// checkLikely replays the random scenario's log again without --check-recorded: once with no
// verdict of the log choosing among the states kube-apiserver could have been in
// (WithLogEvidence(false)): a request received moments after a write to a param or a namespace
// (settle sends them 10 to 300 ms after) is decided on the state the log's order gives, as
// likely; and once as `vapc replay` does by default, where the verdicts of the policies the
// log shows created word for word choose. Every decision, likely or certain, must be the
// server's; those the checked replay (byID) decided must be the same. But where racing says the
// request raced writes the scenario did not settle (the racing requests it sends, and the
// requests of the cluster's own components, componentUser, which it does not time): a likely decision
// may be the other side of its race, which it must then name among its alternatives (default
// seed c:2 once: a ReplicaSet controller's event create, decided on the namespace the log's
// order gives, where the server's informer already held a write logged after the request and
// received before it completed).
func checkLikely(t *testing.T, log string, set policySet, byID map[string]*replay.Record, from int, racing func(*replay.Record) bool) {
	t.Helper()
	for _, evidence := range []bool{false, true} {
		name := "without --check-recorded"
		if !evidence {
			name += ", without the log's verdicts"
		}
		r, err := replay.New(set.policies, set.bindings, replay.WithLogEvidence(evidence), replay.WithMutatingPolicies(set.mutating, set.mutatingBindings), replay.WithMapOrder(set.mapOrder(t)))
		if err != nil {
			t.Fatal(err)
		}
		likely, certain, otherSide := 0, 0, 0
		if _, err := r.Run(context.Background(), []replay.Source{{Name: log}}, func(rec *replay.Record) error {
			if rec.Line < from || rec.Decision == replay.DecisionIndeterminate {
				return nil
			}
			checked := byID[rec.AuditID]
			server := rec.Recorded
			if checked != nil && checked.Decision != replay.DecisionIndeterminate {
				server = string(checked.Decision)
			}
			switch {
			case (rec.Changed || string(rec.Decision) != server) && rec.Certainty == replay.CertaintyLikely && racing(rec) &&
				slices.ContainsFunc(rec.Alternatives, func(a replay.Alternative) bool { return string(a.Decision) == server }):
				otherSide++
				t.Logf("%s: %s: recorded %s, predicted %s (likely), the server's an alternative: %v", name, describeRecord(rec), rec.Recorded, rec.Decision, rec.Alternatives)
			case rec.Changed:
				errorf(t, "%s: %s: recorded %s, predicted %s (%s), alternatives %v", name, describeRecord(rec), rec.Recorded, rec.Decision, rec.Certainty, rec.Alternatives)
			case checked != nil && checked.Decision != replay.DecisionIndeterminate && (checked.Decision != rec.Decision || !sameRefusal(checked, rec)):
				errorf(t, "%s: %s (%s), with it: %s", name, describeRecord(rec), rec.Certainty, describeRecord(checked))
			}
			if rec.Certainty == replay.CertaintyLikely {
				likely++
			} else {
				certain++
			}
			return nil
		}); err != nil {
			t.Fatalf("replay %s: %v", name, err)
		}
		t.Logf("%s: %d decisions likely, %d certain, every one the server's (%d likely the other side of a race the scenario did not settle)", name, likely, certain, otherSide)
	}
}

// sameRefusal says whether rec answers as checked does, or, when several policies deny, has
// checked's refusal among its alternatives: kube-apiserver answers with the first refusal in
// an order no log records, and --check-recorded picks the one the log holds.
func sameRefusal(checked, rec *replay.Record) bool {
	if checked.Code == rec.Code && checked.Message == rec.Message {
		return true
	}
	return slices.ContainsFunc(rec.Alternatives, func(a replay.Alternative) bool {
		return a.Decision == replay.DecisionDeny && a.Code == checked.Code && a.Message == checked.Message
	})
}

// componentUser says whether the user is one of the cluster's own components the controllers'
// runs start or play (kube-controller-manager's service accounts, kube-scheduler, a kubelet),
// whose requests race the scenario's writes without the scenario settling them.
func componentUser(user string) bool {
	return strings.HasPrefix(user, "system:serviceaccount:kube-system:") || strings.HasPrefix(user, "system:kube-") || strings.HasPrefix(user, "system:node:")
}
