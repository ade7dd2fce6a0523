// Package mutatingvalidation gives vapc's checker kube-apiserver's own create-time validation
// of MutatingAdmissionPolicies and their bindings (k8s.io/kubernetes/pkg/apis/
// admissionregistration/validation, which also compiles every expression). It is a package of
// its own, imported for its side effect, so that the cel package and the Go authoring API do
// not require k8s.io/kubernetes (and its replace directives) of the modules that use them:
//
//	import _ "github.com/vapc-dev/vapc/cel/mutatingvalidation"
package mutatingvalidation

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install" // v1 defaults and conversions

	"github.com/vapc-dev/vapc/cel"
)

func init() {
	cel.RegisterMutatingValidation(validatePolicy, validateBinding)
}

// validatePolicy defaults the policy and validates a create of it, as the create handler, the
// store and the registry strategy do (see validateCreate).
func validatePolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) (*admissionregistrationv1.MutatingAdmissionPolicy, field.ErrorList, error) {
	p = p.DeepCopy()
	legacyscheme.Scheme.Default(p)
	errs, err := validateCreate(p, &p.ObjectMeta, &admissionregistration.MutatingAdmissionPolicy{})
	return p, errs, err
}

func validateBinding(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) (*admissionregistrationv1.MutatingAdmissionPolicyBinding, field.ErrorList, error) {
	b = b.DeepCopy()
	legacyscheme.Scheme.Default(b)
	errs, err := validateCreate(b, &b.ObjectMeta, &admissionregistration.MutatingAdmissionPolicyBinding{})
	return b, errs, err
}
