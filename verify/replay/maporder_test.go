package replay

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
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
// replayed over the log) a denial's message of several keys is indeterminate (map-order), an
// Audit binding's decided, the message not claimed (the verdict is the same in every order),
// and one of a single key decided.
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
					_, failuresClaimed := rec.AuditAnnotations[ValidationFailureAnnotation]
					switch {
					case several && v.deny != "" && (rec.Decision != DecisionIndeterminate || rec.Reason != ReasonMapOrder):
						t.Errorf("%s: the server's messages %q list several keys, which the log does not show in the replayed policy's: %s %s, want indeterminate (map-order)", v.desc, msgs, rec.Decision, rec.Indeterminate)
					case several && v.deny == "" && (rec.Decision != DecisionAdmit || rec.Certainty != CertaintyCertain || failuresClaimed ||
						slices.ContainsFunc(rec.Results, func(r RecordResult) bool { return strings.Contains(r.Message, ", ") })):
						// Only an Audit binding's messages list them: admitted in every order,
						// the messages not claimed.
						t.Errorf("%s: the server's Audit messages %q list several keys, which the log does not show in the replayed policy's: %s %s %s (validation_failure claimed %v, results %+v), want admit certain, the messages not claimed", v.desc, msgs, rec.Decision, rec.Certainty, rec.Indeterminate, failuresClaimed, rec.Results)
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

// TestMapOrderOtherRefusal: a cut of a random parity run (seed 1332) where nodes are refused by
// several policies, bindings and params at once, one of them (rnd-p06-b1, a param selector) with
// a messageExpression that lists the node's labels in the order CEL iterates the map. The server
// answered with another refusal, or with one param's of that binding: the others' messages are
// in no response, and the replay decides each request as the server did, its message the log's
// when it checks the log and among its refusals when it does not; never indeterminate
// (map-order) for messages the server did not show.
func TestMapOrderOtherRefusal(t *testing.T) {
	dir := filepath.Join("testdata", "cut", "map-order-other-refusal")
	log, policies := filepath.Join(dir, "audit.log.gz"), filepath.Join(dir, "policies.yaml")
	verdicts := recordedVerdicts(t, log, []string{"rnd-p04", "rnd-p06", "rnd-p07"})
	for _, check := range []bool{false, true} {
		t.Run(fmt.Sprintf("check %v", check), func(t *testing.T) {
			t.Parallel()
			recs := replayRecording(t, policies, log, WithCheckRecorded(check), WithMapOrder(mapOrderOf(t, policies)))
			denied := 0
			for id, v := range verdicts {
				if v.deny == "" {
					continue
				}
				denied++
				rec := recs[id]
				switch {
				case rec == nil:
					t.Errorf("%s: no record", v.desc)
				case rec.Decision != DecisionDeny:
					t.Errorf("%s: the server denied (%q), the replay: %s %s", v.desc, v.deny, rec.Decision, rec.Indeterminate)
				case check && !strings.HasSuffix(rec.Message, "denied request: "+v.deny):
					t.Errorf("%s: the server's message %q, the replay's %q", v.desc, v.deny, rec.Message)
				case !strings.HasSuffix(rec.Message, "denied request: "+v.deny) && !slices.ContainsFunc(rec.Alternatives, func(a Alternative) bool {
					return strings.HasSuffix(a.Message, "denied request: "+v.deny)
				}):
					t.Errorf("%s: the server's message %q is none of the replay's refusals (%q)", v.desc, v.deny, rec.Message)
				}
			}
			if denied < 10 {
				t.Errorf("%d requests the policies denied, want the cut's 10 at least", denied)
			}
		})
	}
}

// TestMapOrderTwoBindings: a cut of a random parity run (seed r:1442) where a policy's two Deny
// and Audit bindings refuse nodes with a messageExpression that lists the node's labels in the
// order CEL iterates the map, each binding in an order of its own: the response names one of
// them, or a policy the replay is not given, and the validation_failure annotation holds both
// messages. The replay decides each request as the server did, certain, its message and its
// annotation's entries the log's: the other binding's denial is in no response, and the
// annotation shows the message of a denial the response does not (not map-order).
func TestMapOrderTwoBindings(t *testing.T) {
	dir := filepath.Join("testdata", "cut", "map-order-two-bindings")
	log, policies := filepath.Join(dir, "audit.log.gz"), filepath.Join(dir, "policies.yaml")
	verdicts := recordedVerdicts(t, log, []string{"rnd-p04"})
	for _, check := range []bool{false, true} {
		t.Run(fmt.Sprintf("check %v", check), func(t *testing.T) {
			t.Parallel()
			recs := replayRecording(t, policies, log, WithCheckRecorded(check), WithMapOrder(mapOrderOf(t, policies)), WithAdmissionPlugins(withoutServiceAccount(t)))
			refused, several := 0, 0
			for id, v := range verdicts {
				if len(v.fails) == 0 {
					continue
				}
				refused++
				if slices.ContainsFunc(v.fails, func(f string) bool { return strings.Contains(f, ",") }) {
					several++
				}
				rec := recs[id]
				if rec == nil {
					t.Errorf("%s: no record", v.desc)
					continue
				}
				if rec.Decision != DecisionDeny || rec.Certainty != CertaintyCertain {
					t.Errorf("%s: the server refused (%q), the replay: %s %s %s", v.desc, v.fails, rec.Decision, rec.Certainty, rec.Indeterminate)
					continue
				}
				var fails []string
				var logged []validationFailure
				if err := json.Unmarshal([]byte(rec.AuditAnnotations[ValidationFailureAnnotation]), &logged); err != nil {
					t.Errorf("%s: the record's %s: %v", v.desc, ValidationFailureAnnotation, err)
				}
				for _, f := range logged {
					fails = append(fails, f.Policy+"/"+f.Binding+"/"+f.Message)
				}
				slices.Sort(fails)
				switch {
				case !cmp.Equal(fails, v.fails):
					t.Errorf("%s: validation_failure entries (-log +replay):\n%s", v.desc, cmp.Diff(v.fails, fails))
				case v.deny != "" && !strings.HasSuffix(rec.Message, "denied request: "+v.deny):
					t.Errorf("%s: the server's message %q, the replay's %q", v.desc, v.deny, rec.Message)
				}
			}
			if refused < 16 || several < 5 {
				t.Errorf("%d requests the policy refused, %d of them listing several labels: want the cut's 16 and 5 at least", refused, several)
			}
		})
	}
}

// TestMapOrderWarnings: a Warn binding's failure whose messageExpression lists a map's keys in
// the order CEL iterates the map warns in an order no log holds (random parity seed c:662): the
// record leaves that warning out, with a note, and keeps the others.
func TestMapOrderWarnings(t *testing.T) {
	t.Parallel()
	policies := filepath.Join(t.TempDir(), "policies.yaml")
	doc := func(name, message string) string { return messagePolicy(name, message, "[Warn]") }
	if err := os.WriteFile(policies, []byte(doc("keys", "'keys ' + object.data.filter(k, true).join(',')")+"---\n"+doc("fixed", "'fixed'")), 0o644); err != nil {
		t.Fatal(err)
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c1", "namespace": "ns1", "uid": "u1", "resourceVersion": "5"},
		"data": map[string]any{"a": "1", "b": "2", "c": "3"}}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(log, []byte(levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c1", 201, "", cm, cm)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := replayRecording(t, policies, log)["1"]
	if rec == nil {
		t.Fatal("no record")
	}
	if diff := cmp.Diff([]string{verify.WarningPrefix("fixed", "fixed") + "fixed"}, rec.Warnings); diff != "" || !slices.Contains(rec.Notes, MapOrderWarningsNote) {
		t.Errorf("%s: warnings (-want +got):\n%s notes %q", describeRecord(rec), diff, rec.Notes)
	}
}

// TestOutcomeDiffMapOrder: two decisions that differ only in the order CEL listed a map's keys
// in a message (the response's, a warning, validation_failure's) are the same outcome (two
// evaluations of one request, or two patch types the log does not tell apart, word it in the
// orders each took: seed r:1432 decided a request likely or certain from run to run); other
// keys, or other values, are another. So are two that differ only in the refusals, other than
// the response, of a binding whose policy's outcome follows a map's order (seed r:1485: a
// patch's two types each evaluated once, the third binding of the policy refusing at its first
// validation in one and at its second in the other, the request patch-type indeterminate in
// five runs of eight), and two answered by different bindings where one may answer with the
// other's (the server answers with the first refusal in its informers' order).
func TestOutcomeDiffMapOrder(t *testing.T) {
	t.Parallel()
	idx := 0
	audit := func(msg string) *verify.Decision {
		return &verify.Decision{Allowed: true, Code: 200,
			Results:          []verify.Result{{Policy: "p", Binding: "b", Result: "deny", Actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}, ExpressionIndex: &idx, Message: msg, MessageByChance: true}},
			AuditAnnotations: map[string]string{ValidationFailureAnnotation: `[{"message":"` + msg + `","policy":"p","binding":"b","expressionIndex":0,"validationActions":["Audit"]}]`}}
	}
	deny := func(msg string) *verify.Decision {
		return &verify.Decision{Code: 422, Reason: "Invalid", Message: "denied request: " + msg,
			Results: []verify.Result{{Policy: "p", Binding: "b", Result: "deny", Actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, ExpressionIndex: &idx, Message: msg, MessageByChance: true}}}
	}
	warn := func(msg string) *verify.Decision {
		return &verify.Decision{Allowed: true, Code: 200, Warnings: []string{verify.WarningPrefix("p", "b") + msg},
			Results: []verify.Result{{Policy: "p", Binding: "b", Result: "deny", Actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}, ExpressionIndex: &idx, Message: msg, MessageByChance: true}}}
	}
	// denied by b0, another binding's refusal among those the server may answer with: of a
	// policy whose outcome follows a map's order (byChance), or not.
	other := func(msg string, byChance bool) *verify.Decision {
		d := &verify.Decision{Code: 422, Reason: "Invalid", Message: "p b0 denied request: keys"}
		d.Denials = []verify.Refusal{{Code: 422, Reason: "Invalid", Message: d.Message, OutcomeByChance: byChance}, {Code: 422, Reason: "Invalid", Message: "p b2 denied request: " + msg, OutcomeByChance: byChance}}
		return d
	}
	// denied by one binding only, of a policy whose outcome follows a map's order.
	byChanceOnly := func(msg string) *verify.Decision {
		return &verify.Decision{Code: 422, Reason: "Invalid", Message: msg,
			Results: []verify.Result{{Policy: "p", Binding: "b", Result: "deny", Actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, ExpressionIndex: &idx, Message: "keys", OutcomeByChance: true}}}
	}
	// denied by b1 with its reason RequestEntityTooLarge, by chance, and by b0 (other's).
	tooLarge := func() *verify.Decision {
		d := &verify.Decision{Code: 413, Reason: "RequestEntityTooLarge", Message: "p b1 denied request: keys"}
		d.Denials = []verify.Refusal{{Code: 413, Reason: "RequestEntityTooLarge", Message: d.Message, OutcomeByChance: true}, {Code: 422, Reason: "Invalid", Message: "p b0 denied request: keys"}}
		return d
	}
	tests := []struct {
		name string
		a, b *verify.Decision
		want string
	}{
		{"another binding's refusal, by chance", other("keys", true), other("expression 1 resulted in error", true), ""},
		{"another binding's refusal, by chance in one", other("keys", true), byChanceOnly("p b0 denied request: keys"), ""},
		{"another binding's refusal, not by chance", other("keys", false), other("expression 1 resulted in error", false), "the refusals"},
		{"answered by another binding, by chance", byChanceOnly("p b2 denied request: keys"), other("keys", true), ""},
		{"answered by another binding", &verify.Decision{Code: 422, Reason: "Invalid", Message: "p b2 denied request: keys"}, other("keys", false), "the refusals"},
		{"answered by a binding the other's cannot", byChanceOnly("p b3 denied request: keys"), other("keys", true), "the response"},
		// Random parity seed r:1492: a by-chance binding's refusal (its reason
		// RequestEntityTooLarge, 413) answered one evaluation, another binding's (422) both.
		{"answered by a by-chance binding with another code", tooLarge(), &verify.Decision{Code: 422, Reason: "Invalid", Message: "p b0 denied request: keys"}, ""},
		{"answered with another code, no refusal shared", tooLarge(), byChanceOnly("p b3 denied request: keys"), "the response"},
		{"validation_failure, keys in another order", audit("labels limit=6,set=x"), audit("labels set=x,limit=6"), ""},
		{"validation_failure, other keys", audit("labels limit=6,set=x"), audit("labels limit=10,mode=on,set=x"), "the audit annotations"},
		{"validation_failure, another value", audit("labels limit=6,set=x"), audit("labels limit=7,set=x"), "the audit annotations"},
		{"the response, keys in another order", deny(`keys "a","b"`), deny(`keys "b","a"`), ""},
		{"the response, other keys", deny(`keys "a","b"`), deny(`keys "a","c"`), "the response"},
		{"a warning, keys in another order", warn("a=1,b=2"), warn("b=2,a=1"), ""},
		{"a warning, another value", warn("a=1,b=2"), warn("a=1,b=3"), "the warnings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := outcomeDiff(tt.a, tt.b); got != tt.want {
				t.Errorf("outcomeDiff = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMapOrderOutcomeAudited: a Deny and Audit binding whose validation's outcome follows the
// order CEL iterates a map (the first of a ConfigMap's keys) where the response is another
// policy's denial, which the replay is not given: the event's validation_failure entries show
// the binding's outcome, and the replay decides the request with the order the server took
// (failed, with the entry's message: deny; passed, where the log shows the policy ran and no
// entry of it: admit by it), certain, where before it was indeterminate (map-order).
func TestMapOrderOutcomeAudited(t *testing.T) {
	policies := chancePolicy(t, `  - expression: "object.data.map(k, k)[0] != 'a'"
    message: first is a`, "[Deny, Audit]")
	const other = `configmaps "%s" is forbidden: ValidatingAdmissionPolicy 'other' with binding 'other' denied request: no`
	failed := map[string]string{ValidationFailureAnnotation: `[{"message":"first is a","policy":"chance","binding":"chance","expressionIndex":0,"validationActions":["Deny","Audit"]}]`}
	// The first shows the policy ran (its entry); the rest alternate.
	log := chanceLog(t, 6, []string{"a", "b", "c", "d", "e"}, 422, func(name string) string { return fmt.Sprintf(other, name) }, func(i int) map[string]string {
		if i%2 == 0 {
			return failed
		}
		return nil
	})
	for _, check := range []bool{false, true} {
		recs := replayRecording(t, policies, log, WithCheckRecorded(check), WithMapOrder(mapOrderOf(t, policies)))
		got := map[string]string{}
		for id, rec := range recs {
			got[id] = fmt.Sprintf("%s %s", rec.Decision, rec.Certainty)
			if rec.Decision == DecisionDeny {
				got[id] += " " + rec.AuditAnnotations[ValidationFailureAnnotation]
			}
		}
		want := map[string]string{}
		for id, a := range map[string]map[string]string{"c0": failed, "c2": failed, "c4": failed} {
			want[id] = "deny certain " + a[ValidationFailureAnnotation]
		}
		for _, id := range []string{"c1", "c3", "c5"} {
			want[id] = "admit certain"
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("check %v: decisions (-want +got):\n%s", check, diff)
		}
	}
}

// TestMapOrderQuietOutcome: a binding without the Deny action whose validation's outcome
// follows map order, where the log does not show its failures (no validation_failure entry,
// no sign the server ran the policy): the verdict is the same in every order, so the request is
// decided, its warnings and validation_failure entries not claimed (random parity seed r:1462:
// a Warn and Audit binding created moments before; indeterminate, map-order, before).
func TestMapOrderQuietOutcome(t *testing.T) {
	for _, actions := range []string{"[Warn, Audit]", "[Warn]", "[Audit]"} {
		t.Run(actions, func(t *testing.T) {
			policies := chancePolicy(t, `  - expression: "object.data.map(k, k)[0] != 'a'"
    message: first is a`, actions)
			log := chanceLog(t, 4, []string{"a", "b", "c", "d", "e"}, 201, nil, func(int) map[string]string { return nil })
			for _, check := range []bool{false, true} {
				recs := replayRecording(t, policies, log, WithCheckRecorded(check))
				got, want := map[string]string{}, map[string]string{}
				for id, rec := range recs {
					_, claimed := rec.AuditAnnotations[ValidationFailureAnnotation]
					got[id] = fmt.Sprintf("%s %s, warnings %d (not known %v), validation_failure claimed %v, noted %v", rec.Decision, rec.Certainty, len(rec.Warnings),
						slices.Contains(rec.Notes, MapOrderWarningsNote), claimed,
						slices.ContainsFunc(rec.Notes, func(n string) bool { return strings.HasPrefix(n, "the verdict is the same in every order") }))
					want[id] = fmt.Sprintf("admit certain, warnings 0 (not known %v), validation_failure claimed false, noted true", strings.Contains(actions, "Warn"))
				}
				if len(recs) != 4 {
					t.Errorf("check %v: %d records, want 4", check, len(recs))
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("check %v: decisions (-want +got):\n%s", check, diff)
				}
			}
		})
	}
}

// TestMapOrderWarnOnlyRan: a Warn binding whose validation's outcome follows map order, where
// the log shows the policy ran (its audit annotation) and the request succeeded: the success
// shows only that no Deny binding refused, and no log holds a warning, so its warnings are not
// claimed, the request decided (random parity seed c:761: no warning claimed where the server
// warned, the success and the log's annotations taken for the server's order).
func TestMapOrderWarnOnlyRan(t *testing.T) {
	policies := chancePolicy(t, `  - expression: "object.data.map(k, k)[0] != 'a'"
    message: first is a
  auditAnnotations:
  - {key: seen, valueExpression: "'yes'"}`, "[Warn]")
	log := chanceLog(t, 4, []string{"a", "b", "c", "d", "e"}, 201, nil, func(int) map[string]string { return map[string]string{"chance/seen": "yes"} })
	for _, check := range []bool{false, true} {
		recs := replayRecording(t, policies, log, WithCheckRecorded(check), WithMapOrder(mapOrderOf(t, policies)))
		got, want := map[string]string{}, map[string]string{}
		for id, rec := range recs {
			got[id] = fmt.Sprintf("%s %s, warnings %q (not known %v)", rec.Decision, rec.Certainty, rec.Warnings, slices.Contains(rec.Notes, MapOrderWarningsNote))
			want[id] = "admit certain, warnings [] (not known true)"
		}
		if len(recs) != 4 {
			t.Errorf("check %v: %d records, want 4", check, len(recs))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("check %v: decisions (-want +got):\n%s", check, diff)
		}
	}
}

// TestMapOrderQuietMessage: a binding without the Deny action whose failure's message lists a
// map's keys in map order, where the log does not show its failures: the verdict is the same
// in every order, so the request is decided, the message, its warnings and validation_failure
// entries not claimed (indeterminate, map-order, before).
func TestMapOrderQuietMessage(t *testing.T) {
	for _, actions := range []string{"[Warn, Audit]", "[Audit]"} {
		t.Run(actions, func(t *testing.T) {
			policies := chancePolicy(t, `  - expression: "false"
    messageExpression: "object.data.map(k, k).join(',')"`, actions)
			log := chanceLog(t, 3, []string{"a", "b", "c"}, 201, nil, func(int) map[string]string { return nil })
			for _, check := range []bool{false, true} {
				recs := replayRecording(t, policies, log, WithCheckRecorded(check))
				got, want := map[string]string{}, map[string]string{}
				for id, rec := range recs {
					_, claimed := rec.AuditAnnotations[ValidationFailureAnnotation]
					var messages []string
					for _, res := range rec.Results {
						messages = append(messages, res.Message)
					}
					got[id] = fmt.Sprintf("%s %s, messages %q, warnings %d (not known %v), validation_failure claimed %v, noted %v", rec.Decision, rec.Certainty, messages, len(rec.Warnings),
						slices.Contains(rec.Notes, MapOrderWarningsNote), claimed,
						slices.ContainsFunc(rec.Notes, func(n string) bool { return strings.HasPrefix(n, "the verdict is the same in every order") }))
					want[id] = fmt.Sprintf(`admit certain, messages [""], warnings 0 (not known %v), validation_failure claimed false, noted true`, strings.Contains(actions, "Warn"))
				}
				if len(recs) != 3 {
					t.Errorf("check %v: %d records, want 3", check, len(recs))
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("check %v: decisions (-want +got):\n%s", check, diff)
				}
			}
		})
	}
}

// chancePolicy writes a policy "chance" on ConfigMap creates with the validation given (YAML
// lines, indented as a validations item) and a binding "chance" with the validationActions
// given, and returns its file.
func chancePolicy(t *testing.T, validation, actions string) string {
	t.Helper()
	policies := filepath.Join(t.TempDir(), "policies.yaml")
	if err := os.WriteFile(policies, []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: chance}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations:
`+validation+`
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: chance}
spec: {policyName: chance, validationActions: `+actions+`}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return policies
}

// messagePolicy is a policy of ConfigMap creates and its binding with the actions given, each
// named name, whose one validation fails with the messageExpression's message.
func messagePolicy(name, messageExpression, actions string) string {
	return `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ` + name + `}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations:
  - expression: "false"
    messageExpression: "` + messageExpression + `"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ` + name + `}
spec: {policyName: ` + name + `, validationActions: ` + actions + `}
`
}

// chanceLog writes a log of n ConfigMap creates c0, c1, ... in namespace ns1 with the data
// keys given, each answered with code (a created ConfigMap's object logged) or a refusal's
// message, and the audit annotations annotations gives it, and returns its file.
func chanceLog(t *testing.T, n int, keys []string, code int32, message func(name string) string, annotations func(i int) map[string]string) string {
	t.Helper()
	var lines []string
	for i := range n {
		name := fmt.Sprintf("c%d", i)
		data := map[string]any{}
		for k, key := range keys {
			data[key] = strconv.Itoa(k + 1)
		}
		cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns1"}, "data": data}
		var resp map[string]any
		msg := ""
		if code < 300 {
			resp = cm
		} else {
			msg = message(name)
		}
		line := levelEvent(t, name, auditlog.LevelRequestResponse, "create", "configmaps", "ns1", name, code, msg, cm, resp)
		lines = append(lines, timedEvent(t, line, fmt.Sprintf("%02d.000000", 10+2*i), fmt.Sprintf("%02d.010000", 10+2*i), annotations(i)))
	}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return log
}

// TestMapOrderMatchConditionError: a policy whose validation's outcome follows map order, and
// whose matchCondition fails with an error under failurePolicy Fail: the dispatcher's one
// decision is that error, which an Audit binding lists in validation_failure at index 0 as the
// server does, and so does the binding's result (verify's row of that decision). Beside it an
// Audit binding's message lists a map's keys, which the log shows: the order search compares
// each binding's failures with the log's entries and finds the server's order (random parity
// seed r:1473: the result without an index, no order agreed, "no order gives the server's
// verdicts", before).
func TestMapOrderMatchConditionError(t *testing.T) {
	policies := chancePolicy(t, `  - expression: "object.data.map(k, k)[0] != 'a'"
    message: first is a
  matchConditions:
  - name: mc
    expression: "int(object.data['missing']) != 7"
---
`+messagePolicy("keys", "object.data.map(k, k).join(',')", "[Audit]"), "[Warn, Audit]")
	entries := func(keys string) string {
		return `[{"message":"expression 'int(object.data['missing']) != 7' resulted in error: no such key: missing","policy":"chance","binding":"chance","expressionIndex":0,"validationActions":["Warn","Audit"]},` +
			`{"message":"` + keys + `","policy":"keys","binding":"keys","expressionIndex":0,"validationActions":["Audit"]}]`
	}
	orders := []string{"a,b,c", "c,a,b", "b,c,a"}
	log := chanceLog(t, 3, []string{"a", "b", "c"}, 201, nil, func(i int) map[string]string {
		return map[string]string{ValidationFailureAnnotation: entries(orders[i])}
	})
	recs := replayRecording(t, policies, log, WithCheckRecorded(true))
	got, want := map[string]string{}, map[string]string{}
	for id, rec := range recs {
		// The matchCondition's error is entry 0 of the binding's, as the server lists it.
		index := "none"
		for _, res := range rec.Results {
			if res.Policy == "chance" && res.ExpressionIndex != nil {
				index = strconv.Itoa(*res.ExpressionIndex)
			}
		}
		got[id] = fmt.Sprintf("%s %s, disagreements %q, the error's index %s", rec.Decision, rec.Certainty, rec.Disagreements, index)
		want[id] = "admit certain, disagreements [], the error's index 0"
	}
	if len(recs) != 3 {
		t.Errorf("%d records, want 3", len(recs))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

// TestMessageOrderDenyOnlyBindings: two Deny bindings of a policy whose outcome follows map
// order, the response naming the first, the log showing no validation_failure entry (neither
// binding audits) nor the policy installed: an evaluation where the first refuses is known to
// be the server's order, the second binding not made unknown by entries it cannot have (random parity
// seed r:1485: every evaluation's order unknown, the search took the first, whose response was
// the second binding's).
func TestMessageOrderDenyOnlyBindings(t *testing.T) {
	t.Parallel()
	message := func(binding string) string {
		return `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'p' with binding '` + binding + `' denied request: no`
	}
	ev := &Event{Verb: "create", Stage: auditlog.StageResponseComplete, ObjectRef: &ObjectRef{Resource: "configmaps", Namespace: "ns", Name: "c"},
		ResponseStatus: &Status{Code: 422, Status: "Failure", Reason: "Invalid", Message: message("b0")}}
	j := &job{ev: ev, rec: recording{outcome: RecordedDeny, policy: "p", binding: "b0", vapRan: true}}
	idx := 0
	result := func(binding string, denies bool) verify.Result {
		r := verify.Result{Policy: "p", Binding: binding, Result: verify.ResultAdmit, OutcomeByChance: true}
		if denies {
			r.Result, r.Actions, r.ExpressionIndex, r.Message = "deny", []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, &idx, "no"
		}
		return r
	}
	refusal := func(binding string) verify.Refusal {
		return verify.Refusal{Code: 422, Reason: "Invalid", Message: message(binding), OutcomeByChance: true}
	}
	both := &verify.Decision{Code: 422, Reason: "Invalid", Message: message("b0"), Results: []verify.Result{result("b0", true), result("b2", true)},
		Denials: []verify.Refusal{refusal("b0"), refusal("b2")}}
	second := &verify.Decision{Code: 422, Reason: "Invalid", Message: message("b2"), Results: []verify.Result{result("b0", false), result("b2", true)}}
	for _, tc := range []struct {
		name string
		dec  *verify.Decision
		want verify.OrderAgreement
	}{
		{"both refuse", both, verify.OrderAgreement{Known: true, Agrees: true, Verdicts: true}},
		// The response's binding admits: not the server's order (the second's outcome, which
		// the response does not show, is not known).
		{"only the second refuses", second, verify.OrderAgreement{}},
	} {
		if got := j.messageOrder(tc.dec); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
