package replay

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify"
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
		{"validation_failure recorded, predicted none", failedAudit(), &verify.Decision{Allowed: true, Code: 200}, 1},
		{"validation_failure recorded, not known", failedAudit(), &verify.Decision{Allowed: true, Code: 200, UnknownAnnotations: map[string]string{ValidationFailureAnnotation: "authorizer"}}, 0},
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

// failedAudit is an admitted request whose event records that policy p's binding a, which
// audits, failed.
func failedAudit() *Event {
	return &Event{ResponseStatus: &Status{Code: 201}, Annotations: map[string]string{
		ValidationFailureAnnotation: `[{"message":"no","policy":"p","binding":"a","expressionIndex":0,"validationActions":["Audit"]}]`,
	}}
}

// TestJoinedAnnotationNote: an audit annotation that joins the values of several params of a
// policy is in an order no log records, and the record says so; one value is not.
func TestJoinedAnnotationNote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		values []string
		note   bool
	}{
		{name: "one param", values: []string{"pa"}},
		{name: "three params", values: []string{"pa", "pb", "pc"}, note: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := &verify.Decision{Allowed: true, AuditAnnotations: map[string]string{"guard/seen": strings.Join(tc.values, ", ")}}
			for _, v := range tc.values {
				dec.Results = append(dec.Results, verify.Result{Policy: "guard", Binding: "guard", Result: verify.ResultAdmit, AuditAnnotations: map[string]string{"seen": v}})
			}
			var r Record
			r.fill(dec)
			got := slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "audit annotation guard/seen joins the values of 3") })
			if got != tc.note {
				t.Errorf("notes %q: a note of the order %v, want %v", r.Notes, got, tc.note)
			}
		})
	}
}
