package defaults_test

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/cel/defaults"
)

func ExampleSetPolicyDefaults() {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{}},
			},
		},
	}
	defaults.SetPolicyDefaults(p)
	fmt.Println(*p.Spec.FailurePolicy, *p.Spec.MatchConstraints.MatchPolicy, *p.Spec.MatchConstraints.ResourceRules[0].Scope)
	// Output: Fail Equivalent *
}

func ExampleSetBindingDefaults() {
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			MatchResources: &admissionregistrationv1.MatchResources{},
		},
	}
	defaults.SetBindingDefaults(b)
	fmt.Println(*b.Spec.MatchResources.MatchPolicy, b.Spec.MatchResources.NamespaceSelector.String())
	// Output: Equivalent &LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}
}
