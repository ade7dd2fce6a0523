package replay

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestAuthorizerChecks: the log does not answer a policy's authorizer checks, except for a
// member of system:masters, whom kube-apiserver's privileged-group authorizer allows before any
// configured one. A request of a system:masters user is decided; another user's is
// indeterminate, whether a validating or a mutating policy asked.
func TestAuthorizerChecks(t *testing.T) {
	t.Parallel()
	rules := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}}}
	const reader = "authorizer.group('').resource('secrets').namespace('app').check('get').allowed()"
	deny := func(name, expr string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchConstraints: rules,
					Validations: []admissionregistrationv1.Validation{{Expression: expr, Message: "refused"}}}},
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	}
	mutating := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "label-readers"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: rules,
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "reader", Expression: reader}},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "Object{metadata: Object.metadata{labels: {'reader': 'true'}}}"}}}}}
	mutatingBinding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "label-readers"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "label-readers"}}
	cm := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "app"}}
	}
	created := func(name string) map[string]any {
		o := cm(name)
		o["metadata"].(map[string]any)["uid"] = "u-" + name
		o["metadata"].(map[string]any)["resourceVersion"] = "10"
		o["metadata"].(map[string]any)["creationTimestamp"] = "2026-03-02T09:00:00Z"
		return o
	}
	readerLabel := func(o map[string]any) map[string]any {
		o["metadata"].(map[string]any)["labels"] = map[string]any{"reader": "true"}
		return o
	}
	for _, tc := range []struct {
		name     string
		mutating bool
		groups   []any
		// A created configmap with the reader label, as the MAP writes it for a reader.
		labelled   bool
		decision   string
		reason     Reason
		reasonText string
	}{
		{name: "validating, system:masters", groups: []any{"system:masters", "system:authenticated"}, decision: DecisionAdmit},
		{name: "validating, another user", groups: []any{"system:authenticated"}, decision: DecisionIndeterminate, reason: ReasonAuthorizer, reasonText: `user "u" get secrets in app`},
		{name: "mutating, system:masters", mutating: true, groups: []any{"system:masters"}, labelled: true, decision: DecisionAdmit},
		{name: "mutating, another user", mutating: true, groups: []any{"system:authenticated"}, labelled: true, decision: DecisionIndeterminate,
			reason: ReasonMutationUnknown, reasonText: "a MutatingAdmissionPolicy made 1 authorizer checks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []Option
			p, b := deny("readers-only", reader)
			if tc.mutating {
				p, b = deny("readers-only", "has(object.metadata.labels) && object.metadata.labels['reader'] == 'true'")
				opts = append(opts, WithMutatingPolicies([]*admissionregistrationv1.MutatingAdmissionPolicy{mutating}, []*admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding}))
			}
			r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			resp := created("c")
			if tc.labelled {
				resp = readerLabel(resp)
			}
			line := event{id: "c", verb: "create", version: "v1", resource: "configmaps", ns: "app", name: "c", code: 201, received: at(t, 1),
				user: "u", groups: tc.groups, req: cm("c"), resp: resp}.line(t)
			rec := replayLine(t, r, line, "c")
			if rec == nil || rec.Decision != tc.decision || rec.Reason != tc.reason || !strings.Contains(rec.Indeterminate, tc.reasonText) {
				t.Errorf("record = %s, want %s %s %q", describeRecord(rec), tc.decision, tc.reason, tc.reasonText)
			}
		})
	}
}

// TestAuthorizerChecksOfPatchVariants: a patch the log does not give the content type of is
// served as each type it may have been sent as; where the variants ask the authorizer the same
// checks, the server answers them alike, and whether those answers matter is the decision's,
// as for any request (a policy that refuses whatever the authorizer answers refuses). The
// variants were told apart for their authorizer checks alone before: a refusal the same in
// both was indeterminate, patch-type (random parity seed r:1532, a FlowSchema's patch).
func TestAuthorizerChecksOfPatchVariants(t *testing.T) {
	t.Parallel()
	const allowed = "authorizer.group('').resource('secrets').namespace('ns1').check('get').allowed()"
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "ns1", "resourceVersion": "10", "uid": "u1"},
		"spec":   map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}},
		"status": map[string]any{"phase": "Pending", "conditions": []any{map[string]any{"type": "PodScheduled", "status": "True"}}}}
	// One condition as a merge patch, two as a strategic merge patch.
	patch := map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}}
	for _, tc := range []struct {
		name, expr string
		want       string
		reasons    []Reason
	}{
		{name: "refused whatever it answers", expr: allowed + " && false", want: DecisionDeny},
		{name: "admitted whatever it answers", expr: allowed + " || true", want: DecisionAdmit},
		{name: "refused as it answers", expr: "!" + allowed, want: DecisionIndeterminate, reasons: []Reason{ReasonAuthorizer}},
		// Alike when it allows both checks and when it allows neither: refused when it allows
		// one and not the other, as RBAC that grants get and not delete does.
		{name: "refused as it answers each", expr: "!(" + allowed + " && !" + strings.Replace(allowed, "check('get')", "check('delete')", 1) + ")", want: DecisionIndeterminate,
			reasons: []Reason{ReasonAuthorizer}},
		// Two checks that differ in their label selector alone, which RBAC ignores and a
		// webhook authorizer may answer by.
		{name: "refused as it answers each selector", expr: "!(" + strings.Replace(allowed, ".check(", ".labelSelector('tier=a').check(", 1) + " && !" + strings.Replace(allowed, ".check(", ".labelSelector('tier=b').check(", 1) + ")",
			want: DecisionIndeterminate, reasons: []Reason{ReasonAuthorizer}},
		{name: "as it answers and as the patch was sent", expr: "!" + allowed + " || size(object.status.conditions) == 1", want: DecisionIndeterminate,
			reasons: []Reason{ReasonAuthorizer, ReasonPatchType}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := levelPolicy("conds", "pods/status", admissionregistrationv1.Update, nil, tc.expr)
			code, message := int32(200), ""
			if tc.want == DecisionDeny {
				code, message = 422, `pods "web" is forbidden: ValidatingAdmissionPolicy 'conds' with binding 'conds' denied request: denied by conds`
			}
			patched := levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "pods", "ns1", "web", code, message, patch, nil)
			patched = replaceOnce(t, patched, `/pods/web"`, `/pods/web/status"`)
			patched = replaceOnce(t, patched, `"resource":"pods"`, `"resource":"pods","subresource":"status"`)
			patched = replaceOnce(t, patched, `"groups":["system:masters"]`, `"groups":["system:authenticated"]`)
			recs := replayChecked(t, p, b, false,
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), "01.000000", "01.001000", nil),
				timedEvent(t, patched, "02.000000", "02.001000", nil))
			rec := recs["2"]
			if rec == nil || rec.Decision != tc.want || (tc.want == DecisionIndeterminate) != slices.Contains(tc.reasons, rec.Reason) {
				t.Fatalf("request 2: %s, want %s %v", describeRecord(rec), tc.want, tc.reasons)
			}
		})
	}
}

// answering is an answeringEvaluator whose runs call answer for each check they ask.
type answering struct {
	answer func(verify.AuthorizerCheck) authorizer.Decision
}

func (a *answering) AnsweringChecks(answer func(verify.AuthorizerCheck) authorizer.Decision, f func()) {
	prev := a.answer
	a.answer = answer
	defer func() { a.answer = prev }()
	f()
}

// TestAnswerWorlds: answerWorlds tries every way the checks a decision asks may be answered,
// each on its own (the ways a policy tells apart that every check allowed and none allowed do
// not: get allowed and delete not), the checks a way asks that another does not as well, and
// gives up past maxAnswerWorlds runs.
func TestAnswerWorlds(t *testing.T) {
	t.Parallel()
	check := func(verb string) verify.AuthorizerCheck {
		return verify.AuthorizerCheck{User: "u", Verb: verb, Resource: "secrets"}
	}
	for _, tc := range []struct {
		name string
		// decide asks checks through ask and gives the outcome.
		decide func(ask func(string) bool) bool
		alike  bool // the outcome the same in every way
		tried  bool // every way tried
	}{
		{name: "one check", decide: func(ask func(string) bool) bool { return ask("get") }, tried: true},
		{name: "alike when all or none are allowed", decide: func(ask func(string) bool) bool { return !(ask("get") && !ask("delete")) }, tried: true},
		{name: "asked only where another is allowed", decide: func(ask func(string) bool) bool {
			return !ask("get") || !ask("list") || ask("delete")
		}, tried: true},
		{name: "refused whatever it answers", decide: func(ask func(string) bool) bool { return ask("get") && false }, alike: true, tried: true},
		{name: "six each asked", decide: func(ask func(string) bool) bool {
			n := 0
			for _, v := range []string{"a", "b", "c", "d", "e", "f"} {
				if ask(v) {
					n++
				}
			}
			return n >= 0
		}, alike: true, tried: true},
		{name: "seven each asked", decide: func(ask func(string) bool) bool {
			for _, v := range []string{"a", "b", "c", "d", "e", "f", "g"} {
				ask(v)
			}
			return true
		}, alike: true, tried: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &answering{}
			outcomes := map[bool]bool{}
			tried := answerWorlds(a, func() ([]verify.AuthorizerCheck, bool) {
				var asked []verify.AuthorizerCheck
				outcome := tc.decide(func(verb string) bool {
					c := check(verb)
					asked = append(asked, c)
					return a.answer(c) == authorizer.DecisionAllow
				})
				outcomes[outcome] = true
				return asked, true
			})
			if tried != tc.tried {
				t.Errorf("tried every way = %v, want %v", tried, tc.tried)
			}
			if tc.tried && (len(outcomes) == 1) != tc.alike {
				t.Errorf("outcomes %v, want alike %v", outcomes, tc.alike)
			}
		})
	}
}
