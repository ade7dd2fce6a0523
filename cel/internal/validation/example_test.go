package validation_test

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/vapc-dev/vapc/cel/defaults"
	"github.com/vapc-dev/vapc/cel/internal/validation"
)

func ExampleValidatePolicy() {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "demo"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{"apps"},
							APIVersions: []string{"v1"},
							Resources:   []string{"deployments"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "object.spec.replicas <= 5",
				MessageExpression: "object.spec.replicas > 5",
			}},
		},
	}
	defaults.SetPolicyDefaults(p)
	for _, err := range validation.ValidatePolicy(p, validation.Options{CompatibilityVersion: version.MajorMinor(1, 36)}) {
		fmt.Println(err.Field, err.Type, err.Detail)
	}
	// Output: spec.validations[0].messageExpression Invalid value must evaluate to string but got bool
}

func ExampleValidateBinding() {
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-binding"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "demo",
			ParamRef:   &admissionregistrationv1.ParamRef{Name: "limits"},
			ValidationActions: []admissionregistrationv1.ValidationAction{
				admissionregistrationv1.Deny, admissionregistrationv1.Warn,
			},
		},
	}
	defaults.SetBindingDefaults(b)
	fmt.Println(validation.ValidateBinding(b).ToAggregate())
	// Output: [spec.paramRef.parameterNotFoundAction: Required value, spec.validationActions: Invalid value: ["Deny","Warn"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)]
}
