package replay

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestCheck covers the verdicts kube-apiserver v1.37.0 wrote in verify/e2e TestDecisionParity
// that the prediction must meet: an admitted request is contradicted by a predicted denial; when
// several refusals are possible, the one the server chose is accepted; a policy's audit
// annotation joins its bindings' values in any order.
func TestCheck(t *testing.T) {
	t.Parallel()
	loaded := map[string]bool{"p": true}
	deny := func(msgs ...string) *verify.Decision {
		d := &verify.Decision{Code: 422, Message: msgs[0], Results: []verify.Result{{Policy: "p", Binding: "a", Result: verify.ResultDeny, Actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}}
		if len(msgs) > 1 {
			for _, m := range msgs {
				d.Denials = append(d.Denials, verify.Refusal{Code: 422, Message: m})
			}
		}
		return d
	}
	denied := func(msg string) *Event {
		return &Event{ResponseStatus: &Status{Code: 422, Message: msg}}
	}
	a := "configmaps \"x\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'a' denied request: no"
	b := "configmaps \"x\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no"
	annotated := func() *verify.Decision {
		return &verify.Decision{Allowed: true, Code: 200, AuditAnnotations: map[string]string{"p/k": "1, 2"}, Results: []verify.Result{
			{Policy: "p", Binding: "a", AuditAnnotations: map[string]string{"k": "1"}},
			{Policy: "p", Binding: "b", AuditAnnotations: map[string]string{"k": "2"}},
		}}
	}
	for _, tc := range []struct {
		name string
		ev   *Event
		dec  *verify.Decision
		want int
	}{
		{"admitted, predicted admit", &Event{ResponseStatus: &Status{Code: 201}}, &verify.Decision{Allowed: true, Code: 200}, 0},
		{"admitted, predicted deny", &Event{ResponseStatus: &Status{Code: 201}}, deny(a), 1},
		{"denied by a, predicted a", denied(a), deny(a), 0},
		{"denied by b, predicted a only", denied(b), deny(a), 1},
		{"denied by b, predicted a or b", denied(b), deny(a, b), 0},
		{"denied, predicted admit", denied(a), &verify.Decision{Allowed: true, Code: 200}, 1},
		{"annotation in another order", &Event{ResponseStatus: &Status{Code: 201}, Annotations: map[string]string{"p/k": "2, 1"}}, annotated(), 0},
		{"annotation with another value", &Event{ResponseStatus: &Status{Code: 201}, Annotations: map[string]string{"p/k": "2, 3"}}, annotated(), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check(tc.ev, classify(tc.ev, false), tc.dec, loaded)
			if len(got) != tc.want {
				t.Errorf("check() = %q, want %d disagreements", got, tc.want)
			}
		})
	}
	// A policy the log does not show installed has no verdicts in the log to contradict.
	for _, tc := range []struct {
		name string
		ev   *Event
		dec  *verify.Decision
		want int
	}{
		{"admitted, predicted deny", &Event{ResponseStatus: &Status{Code: 201}}, deny(a), 0},
		{"annotation with another value", &Event{ResponseStatus: &Status{Code: 201}, Annotations: map[string]string{"p/k": "2, 3"}}, annotated(), 0},
	} {
		t.Run("not installed: "+tc.name, func(t *testing.T) {
			got := check(tc.ev, classify(tc.ev, false), tc.dec, map[string]bool{})
			if len(got) != tc.want {
				t.Errorf("check() = %q, want %d disagreements", got, tc.want)
			}
		})
	}
}

// TestBindingDeletedNoEvidence: the log deletes the binding of a replayed policy; a request two
// seconds later, which the server admitted without the policy's verdict, is no evidence
// against its deny (the replay decides with the policies it is given): checked, it does not
// disagree with the log; nor does one moments after the binding is created again, which the
// policy source may not have compiled yet.
func TestBindingDeletedNoEvidence(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("no-cm", "configmaps", admissionregistrationv1.Create, nil, "false")
	admissionreg := func(id, verb, resource, at string) string {
		l := levelEvent(t, id, auditlog.LevelMetadata, verb, resource, "", "no-cm", 201, "", nil, nil)
		l = replaceOnce(t, l, `"requestURI":"/api/v1/`, `"requestURI":"/apis/admissionregistration.k8s.io/v1/`)
		return timedEvent(t, replaceOnce(t, l, `"apiVersion":"v1","name"`, `"apiGroup":"admissionregistration.k8s.io","apiVersion":"v1","name"`), at+"000", at+"500", nil)
	}
	cm := func(id, at string, code int32, message string) string {
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": id, "namespace": "ns1"}}
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "create", "configmaps", "ns1", id, code, message, obj, nil), at+"000", at+"500", nil)
	}
	denied := func(name string) string {
		return `configmaps "` + name + `" is forbidden: ValidatingAdmissionPolicy 'no-cm' with binding 'no-cm' denied request: denied by no-cm`
	}
	_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil,
		admissionreg("vap", "create", "validatingadmissionpolicies", "00.000"),
		admissionreg("vapb", "create", "validatingadmissionpolicybindings", "00.001"),
		cm("before", "03.000", 422, denied("before")),
		admissionreg("unbind", "delete", "validatingadmissionpolicybindings", "04.000"),
		cm("gap", "06.000", 201, ""),
		admissionreg("rebind", "create", "validatingadmissionpolicybindings", "07.000"),
		cm("moments", "07.300", 201, ""),
		cm("after", "10.000", 422, denied("after")),
	)
	for _, id := range []string{"before", "gap", "moments", "after"} {
		if rec := recs[id]; rec == nil || rec.Decision != DecisionDeny || len(rec.Disagreements) > 0 {
			t.Errorf("%s: %s, want deny, and no disagreement with the log", id, describeRecord(rec))
		}
	}
}
