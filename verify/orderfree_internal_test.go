package verify

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
)

// TestOrderFree: a mutating policy's hook runs or not alike in every order only when nothing
// that selects it reads the object the hooks before it changed: its matchConditions, its
// policy's or its binding's objectSelector (the dispatcher matches each hook on the object as
// the hooks before it left it).
func TestOrderFree(t *testing.T) {
	labelled := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	for _, tc := range []struct {
		name               string
		conditionsReadObj  bool
		policySel, bindSel *metav1.LabelSelector
		want               bool
	}{
		{name: "request only", want: true},
		{name: "empty selectors", policySel: &metav1.LabelSelector{}, bindSel: &metav1.LabelSelector{}, want: true},
		{name: "conditions read the object", conditionsReadObj: true},
		{name: "the policy's objectSelector", policySel: labelled},
		{name: "the binding's objectSelector", bindSel: labelled},
	} {
		p := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: &admissionregistrationv1.MatchResources{ObjectSelector: tc.policySel}}}
		b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "p", MatchResources: &admissionregistrationv1.MatchResources{ObjectSelector: tc.bindSel}}}
		e := &Evaluator{mpolicies: map[string]mutatingInfo{"p": {conditionsReadObject: tc.conditionsReadObj}}}
		if got := e.orderFree(mutating.PolicyHook{Policy: p, Bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}}); got != tc.want {
			t.Errorf("%s: orderFree %v, want %v", tc.name, got, tc.want)
		}
	}
}
