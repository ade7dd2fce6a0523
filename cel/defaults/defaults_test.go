package defaults

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptr[T any](v T) *T { return &v }

// defaultedMatch is a MatchResources as the server stores it when none of its defaulted
// fields was set, with the given rules (already holding scope "*").
func defaultedMatch(rules ...admissionregistrationv1.NamedRuleWithOperations) *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{
		MatchPolicy:       ptr(admissionregistrationv1.Equivalent),
		NamespaceSelector: &metav1.LabelSelector{},
		ObjectSelector:    &metav1.LabelSelector{},
		ResourceRules:     rules,
	}
}

func rule(scope *admissionregistrationv1.ScopeType) admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{"apps"},
				APIVersions: []string{"v1"},
				Resources:   []string{"deployments"},
				Scope:       scope,
			},
		},
	}
}

func TestSetPolicyDefaults(t *testing.T) {
	t.Parallel()
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	tests := []struct {
		name string
		in   *admissionregistrationv1.ValidatingAdmissionPolicy
		want *admissionregistrationv1.ValidatingAdmissionPolicy
	}{{
		name: "nil policy",
	}, {
		name: "failurePolicy defaults to Fail, no matchConstraints added",
		in:   &admissionregistrationv1.ValidatingAdmissionPolicy{},
		want: &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr(admissionregistrationv1.Fail),
		}},
	}, {
		name: "failurePolicy Ignore is kept",
		in: &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr(admissionregistrationv1.Ignore),
		}},
		want: &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr(admissionregistrationv1.Ignore),
		}},
	}, {
		name: "matchConstraints defaults: matchPolicy, selectors, rule scope",
		in: &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules:        []admissionregistrationv1.NamedRuleWithOperations{rule(nil)},
				ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule(nil)},
			},
		}},
		want: &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr(admissionregistrationv1.Fail),
			MatchConstraints: func() *admissionregistrationv1.MatchResources {
				m := defaultedMatch(rule(ptr(admissionregistrationv1.AllScopes)))
				m.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{rule(ptr(admissionregistrationv1.AllScopes))}
				return m
			}(),
		}},
	}, {
		name: "values already set are kept",
		in: &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				MatchPolicy:       ptr(admissionregistrationv1.Exact),
				NamespaceSelector: selector,
				ObjectSelector:    selector,
				ResourceRules:     []admissionregistrationv1.NamedRuleWithOperations{rule(ptr(admissionregistrationv1.NamespacedScope))},
			},
		}},
		want: &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				MatchPolicy:       ptr(admissionregistrationv1.Exact),
				NamespaceSelector: selector,
				ObjectSelector:    selector,
				ResourceRules:     []admissionregistrationv1.NamedRuleWithOperations{rule(ptr(admissionregistrationv1.NamespacedScope))},
			},
		}},
	}, {
		name: "paramKind, variables, validations and auditAnnotations get no defaults",
		in: &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind:        &admissionregistrationv1.ParamKind{},
			Validations:      []admissionregistrationv1.Validation{{Expression: "true"}},
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "k"}},
			Variables:        []admissionregistrationv1.Variable{{Name: "v"}},
		}},
		want: &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr(admissionregistrationv1.Fail),
			ParamKind:        &admissionregistrationv1.ParamKind{},
			Validations:      []admissionregistrationv1.Validation{{Expression: "true"}},
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "k"}},
			Variables:        []admissionregistrationv1.Variable{{Name: "v"}},
		}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.in
			SetPolicyDefaults(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SetPolicyDefaults() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetBindingDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   *admissionregistrationv1.ValidatingAdmissionPolicyBinding
		want *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	}{{
		name: "nil binding",
	}, {
		name: "no matchResources: nothing is defaulted",
		in: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "p",
			ParamRef:   &admissionregistrationv1.ParamRef{Name: "x"},
		}},
		want: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "p",
			ParamRef:   &admissionregistrationv1.ParamRef{Name: "x"},
		}},
	}, {
		name: "empty matchResources: matchPolicy and selectors",
		in: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			MatchResources: &admissionregistrationv1.MatchResources{},
		}},
		want: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			MatchResources: defaultedMatch(),
		}},
	}, {
		name: "rule scope in resourceRules and excludeResourceRules",
		in: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			MatchResources: &admissionregistrationv1.MatchResources{
				ResourceRules:        []admissionregistrationv1.NamedRuleWithOperations{rule(nil), rule(ptr(admissionregistrationv1.ClusterScope))},
				ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule(nil)},
			},
		}},
		want: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			MatchResources: func() *admissionregistrationv1.MatchResources {
				m := defaultedMatch(rule(ptr(admissionregistrationv1.AllScopes)), rule(ptr(admissionregistrationv1.ClusterScope)))
				m.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{rule(ptr(admissionregistrationv1.AllScopes))}
				return m
			}(),
		}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.in
			SetBindingDefaults(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SetBindingDefaults() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
