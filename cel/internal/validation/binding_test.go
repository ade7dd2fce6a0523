package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vapc-dev/vapc/cel/defaults"
)

func TestValidateBinding(t *testing.T) {
	t.Parallel()
	withParamRef := func(pr admissionregistrationv1.ParamRef) func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		return func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Spec.ParamRef = &pr }
	}
	withActions := func(va ...admissionregistrationv1.ValidationAction) func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		return func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Spec.ValidationActions = va }
	}
	deny := ptr(admissionregistrationv1.DenyAction)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	tests := []struct {
		name   string
		mutate func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		want   []fieldErr
	}{{
		name: "valid",
	}, {
		name:   "name must be a DNS subdomain",
		mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Name = "!!!!" },
		want:   []fieldErr{invalid("metadata.name").withDetail("a lowercase RFC 1123 subdomain")},
	}, {
		name:   "static suffix is reserved",
		mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Name = "b.static.k8s.io" },
		want:   []fieldErr{invalid("metadata.name").withDetail(`names ending with ".static.k8s.io" are reserved`)},
	}, {
		// The handwritten error is replaced by the declarative one, which has no detail
		// and comes last.
		name: "policyName is required",
		mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.PolicyName = ""
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{"Bogus"}
		},
		want: []fieldErr{notSupported("spec.validationActions[0]"), required("spec.policyName")},
	}, {
		name:   "policyName must be a DNS subdomain",
		mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Spec.PolicyName = "Bad_Name" },
		want:   []fieldErr{invalid("spec.policyName").withDetail("a lowercase RFC 1123 subdomain")},
	}, {
		name:   "paramRef by name",
		mutate: withParamRef(admissionregistrationv1.ParamRef{Name: "p", Namespace: "ns", ParameterNotFoundAction: deny}),
	}, {
		name:   "paramRef by selector",
		mutate: withParamRef(admissionregistrationv1.ParamRef{Selector: selector, ParameterNotFoundAction: ptr(admissionregistrationv1.AllowAction)}),
	}, {
		name:   "paramRef by empty selector",
		mutate: withParamRef(admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: deny}),
	}, {
		name:   "paramRef name and selector are mutually exclusive",
		mutate: withParamRef(admissionregistrationv1.ParamRef{Name: "p", Selector: selector, ParameterNotFoundAction: deny}),
		want: []fieldErr{
			forbidden("spec.paramRef.name").withDetail("name and selector are mutually exclusive"),
			forbidden("spec.paramRef.selector").withDetail("name and selector are mutually exclusive"),
		},
	}, {
		name:   "paramRef needs name or selector",
		mutate: withParamRef(admissionregistrationv1.ParamRef{Namespace: "ns", ParameterNotFoundAction: deny}),
		want:   []fieldErr{required("spec.paramRef").withDetail("one of name or selector must be specified")},
	}, {
		name:   "paramRef name must be a path segment",
		mutate: withParamRef(admissionregistrationv1.ParamRef{Name: "a/b", ParameterNotFoundAction: deny}),
		want:   []fieldErr{invalid("spec.paramRef.name").withDetail("may not contain '/'")},
	}, {
		name: "paramRef selector is validated",
		mutate: withParamRef(admissionregistrationv1.ParamRef{
			Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}},
			ParameterNotFoundAction: deny,
		}),
		want: []fieldErr{invalid("spec.paramRef.selector.matchLabels")},
	}, {
		name:   "paramRef parameterNotFoundAction is required",
		mutate: withParamRef(admissionregistrationv1.ParamRef{Name: "p"}),
		want:   []fieldErr{required("spec.paramRef.parameterNotFoundAction")},
	}, {
		name:   "paramRef parameterNotFoundAction must not be empty",
		mutate: withParamRef(admissionregistrationv1.ParamRef{Name: "p", ParameterNotFoundAction: ptr(admissionregistrationv1.ParameterNotFoundActionType(""))}),
		want:   []fieldErr{required("spec.paramRef.parameterNotFoundAction")},
	}, {
		name:   "paramRef parameterNotFoundAction must be Allow or Deny",
		mutate: withParamRef(admissionregistrationv1.ParamRef{Name: "p", ParameterNotFoundAction: ptr(admissionregistrationv1.ParameterNotFoundActionType("Ignore"))}),
		want:   []fieldErr{notSupported("spec.paramRef.parameterNotFoundAction").withDetail(`supported values: "Deny", "Allow"`)},
	}, {
		name:   "validationActions are required",
		mutate: withActions(),
		// Declarative validation replaces "at least one validation action is required".
		want: []fieldErr{required("spec.validationActions").withDetail("")},
	}, {
		name:   "validationActions: Warn and Audit",
		mutate: withActions(admissionregistrationv1.Warn, admissionregistrationv1.Audit),
	}, {
		name:   "validationActions: Deny and Warn",
		mutate: withActions(admissionregistrationv1.Deny, admissionregistrationv1.Warn),
		want:   []fieldErr{invalid("spec.validationActions").withDetail("must not contain both Deny and Warn")},
	}, {
		name:   "validationActions: duplicates",
		mutate: withActions(admissionregistrationv1.Deny, admissionregistrationv1.Deny),
		want:   []fieldErr{duplicate("spec.validationActions[1]")},
	}, {
		name:   "validationActions: unsupported",
		mutate: withActions("deny"),
		want:   []fieldErr{notSupported("spec.validationActions[0]").withDetail(`supported values: "Audit", "Deny", "Warn"`)},
	}, {
		name: "matchResources is optional but validated",
		mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			r := namedRule("apps", "v1", "deployments")
			r.Operations = []admissionregistrationv1.OperationType{"PATCH"}
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{
				ResourceRules:        []admissionregistrationv1.NamedRuleWithOperations{r},
				ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{namedRule("apps", "v1", "*/*", "x")},
			}
			defaults.SetBindingDefaults(b)
		},
		want: []fieldErr{
			notSupported("spec.matchResources.resourceRules[0].operations[0]"),
			invalid("spec.matchResources.excludeResourceRules[0].resources"),
		},
	}, {
		name: "matchResources without resourceRules is fine on a binding",
		mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: selector}
			defaults.SetBindingDefaults(b)
		},
	}, {
		name: "matchResources not defaulted",
		mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{}
		},
		want: []fieldErr{
			required("spec.matchResources.matchPolicy"),
			required("spec.matchResources.namespaceSelector"),
			required("spec.matchResources.objectSelector"),
		},
	}, {
		name: "empty spec",
		mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec = admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{}
		},
		want: []fieldErr{required("spec.policyName"), required("spec.validationActions")},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := validBinding()
			if tc.mutate != nil {
				tc.mutate(b)
			}
			got := ValidateBinding(b)
			if diff := cmp.Diff(tc.want, summarize(got, tc.want)); diff != "" {
				t.Errorf("ValidateBinding() mismatch (-want +got):\n%s\nerrors: %v", diff, got)
			}
		})
	}
}

func TestValidateBindingErrorStrings(t *testing.T) {
	t.Parallel()
	b := validBinding()
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "p", ParameterNotFoundAction: ptr(admissionregistrationv1.ParameterNotFoundActionType("Ignore"))}
	b.Spec.ValidationActions = nil
	got := ValidateBinding(b).ToAggregate().Error()
	want := `[spec.paramRef.parameterNotFoundAction: Unsupported value: "Ignore": supported values: "Deny", "Allow", spec.validationActions: Required value]`
	if got != want {
		t.Errorf("ValidateBinding().ToAggregate().Error() = %q, want %q", got, want)
	}
}

func TestValidateBindingNil(t *testing.T) {
	t.Parallel()
	got := ValidateBinding(nil)
	want := []fieldErr{{Type: field.ErrorTypeInternal, Field: "<nil>"}}
	if diff := cmp.Diff(want, summarize(got, want)); diff != "" {
		t.Errorf("ValidateBinding(nil) mismatch (-want +got):\n%s", diff)
	}
}
