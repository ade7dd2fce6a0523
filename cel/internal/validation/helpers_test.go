package validation

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vapc-dev/vapc/cel/defaults"
)

func ptr[T any](v T) *T { return &v }

// fieldErr is the part of a field.Error the tests compare. An empty Detail in a wanted
// fieldErr matches any detail; otherwise the got detail must start with it.
type fieldErr struct {
	Type   field.ErrorType
	Field  string
	Detail string
}

func required(f string) fieldErr { return fieldErr{Type: field.ErrorTypeRequired, Field: f} }
func invalid(f string) fieldErr  { return fieldErr{Type: field.ErrorTypeInvalid, Field: f} }
func notSupported(f string) fieldErr {
	return fieldErr{Type: field.ErrorTypeNotSupported, Field: f}
}
func duplicate(f string) fieldErr { return fieldErr{Type: field.ErrorTypeDuplicate, Field: f} }
func forbidden(f string) fieldErr { return fieldErr{Type: field.ErrorTypeForbidden, Field: f} }

// withDetail returns e expecting a detail that starts with d.
func (e fieldErr) withDetail(d string) fieldErr { e.Detail = d; return e }

// summarize turns got into fieldErrs, keeping a detail only where want has one at the same
// index and trimming it to the length of the wanted prefix when it matches.
func summarize(got field.ErrorList, want []fieldErr) []fieldErr {
	var out []fieldErr
	for i, e := range got {
		s := fieldErr{Type: e.Type, Field: e.Field}
		if i < len(want) && want[i].Detail != "" {
			s.Detail = e.Detail
			if strings.HasPrefix(e.Detail, want[i].Detail) {
				s.Detail = want[i].Detail
			}
		}
		out = append(out, s)
	}
	return out
}

// validPolicy returns a defaulted policy that the server accepts.
func validPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "config"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{namedRule("apps", "v1", "deployments")},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.x < 100"}},
		},
	}
	defaults.SetPolicyDefaults(p)
	return p
}

// validBinding returns a defaulted binding that the server accepts.
func validBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "config"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "xyzlimit-scale.example.com",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	defaults.SetBindingDefaults(b)
	return b
}

func namedRule(group, version string, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{group},
				APIVersions: []string{version},
				Resources:   resources,
				Scope:       ptr(admissionregistrationv1.AllScopes),
			},
		},
	}
}
