package cel

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vapc-dev/vapc/cel/defaults"
)

// MutatingAdmissionPolicies are checked with kube-apiserver's own create-time validation
// (k8s.io/kubernetes/pkg/apis/admissionregistration/validation, which also compiles every
// expression in the policy's CEL environment): the errors the server refuses them with, placed
// at their fields and characters. That validation lives in k8s.io/kubernetes, which this
// package does not require of the modules that import it: package cel/mutatingvalidation
// registers it (vapc's CLI imports it). The matchConditions and variables are then
// type-checked against the schemas of the matched kinds, as a validating policy's are; the
// mutations' expressions are compiled by the server's validation, not typed against the kinds.

// MutatingValidation functions default an object as the server stores it and validate it on
// create.
type (
	MutatingPolicyValidation  func(*admissionregistrationv1.MutatingAdmissionPolicy) (*admissionregistrationv1.MutatingAdmissionPolicy, field.ErrorList, error)
	MutatingBindingValidation func(*admissionregistrationv1.MutatingAdmissionPolicyBinding) (*admissionregistrationv1.MutatingAdmissionPolicyBinding, field.ErrorList, error)
)

var mutatingValidation struct {
	policy  MutatingPolicyValidation
	binding MutatingBindingValidation
}

// RegisterMutatingValidation sets the create-time validation of MutatingAdmissionPolicies and
// their bindings (see package cel/mutatingvalidation).
func RegisterMutatingValidation(policy MutatingPolicyValidation, binding MutatingBindingValidation) {
	mutatingValidation.policy, mutatingValidation.binding = policy, binding
}

const noMutatingValidation = "not validated: this program does not link kube-apiserver's validation of MutatingAdmissionPolicies (import github.com/vapc-dev/vapc/cel/mutatingvalidation)"

// CheckMutatingPolicy checks one MutatingAdmissionPolicy as kube-apiserver validates it on
// create: defaulted, converted to the internal version and validated.
func (c *Checker) CheckMutatingPolicy(p *MutatingPolicy) Diagnostics {
	r := &reporter{src: p.Source, object: "MutatingAdmissionPolicy/" + p.Name, place: managedFieldsSource(p.MutatingAdmissionPolicy, p.ManagedFields)}
	failed := validateMutating(r, p.MutatingAdmissionPolicy, mutatingValidation.policy, true)
	// The matchConditions and variables read the request as a validating policy's do: type
	// them the same way, on a validating policy with the same match and params.
	v := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: *p.ObjectMeta.DeepCopy(),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind:        p.Spec.ParamKind.DeepCopy(),
			MatchConstraints: p.Spec.MatchConstraints.DeepCopy(),
			MatchConditions:  append([]admissionregistrationv1.MatchCondition(nil), p.Spec.MatchConditions...),
			Variables:        append([]admissionregistrationv1.Variable(nil), p.Spec.Variables...),
			FailurePolicy:    p.Spec.FailurePolicy,
		},
	}
	if v.Spec.MatchConstraints != nil {
		defaults.SetPolicyDefaults(v)
		c.typeCheck(r, v, failed)
	}
	return r.diags
}

// CheckMutatingBinding checks one MutatingAdmissionPolicyBinding as kube-apiserver validates it
// on create, and says when its policy is not among policies (nil: not checked).
func (c *Checker) CheckMutatingBinding(b *MutatingBinding, policies map[string]bool) Diagnostics {
	r := &reporter{src: b.Source, object: "MutatingAdmissionPolicyBinding/" + b.Name, place: managedFieldsSource(b.MutatingAdmissionPolicyBinding, b.ManagedFields)}
	validateMutating(r, b.MutatingAdmissionPolicyBinding, mutatingValidation.binding, false)
	if name := b.Spec.PolicyName; name != "" && policies != nil && !policies[name] {
		r.add(Warning, CategoryLint, "spec.policyName", "", fmt.Sprintf("policy %q is not among the checked files; the binding does nothing until it exists", name))
	}
	return r.diags
}

// validateMutating reports the errors of the registered validation of obj; expressions says
// whether compile errors are placed at their character in the expression of their field.
// It returns the fields with errors.
func validateMutating[T runtime.Object](r *reporter, obj T, validate func(T) (T, field.ErrorList, error), expressions bool) map[string]bool {
	failed := map[string]bool{}
	if validate == nil {
		r.add(Warning, CategoryInput, "", "", noMutatingValidation)
		return failed
	}
	defaulted, errs, err := validate(obj)
	if err != nil {
		r.add(Error, CategoryInput, "", "", fmt.Sprintf("cannot convert it to kube-apiserver's internal version: %v", err))
		return failed
	}
	for _, e := range errs {
		expr := ""
		if expressions {
			expr = stringAt(defaulted, e.Field)
		}
		r.fieldError(e, CategoryCreate, expr)
		failed[e.Field] = true
	}
	return failed
}

// checkMutating checks the set's MutatingAdmissionPolicies and their bindings.
func (c *Checker) checkMutating(set *Set) Diagnostics {
	var diags Diagnostics
	names := map[string]bool{}
	for _, p := range set.MutatingPolicies {
		diags = append(diags, c.CheckMutatingPolicy(p)...)
		names[p.Name] = true
	}
	for _, b := range set.MutatingBindings {
		diags = append(diags, c.CheckMutatingBinding(b, names)...)
	}
	return diags
}

// stringAt returns the string at a field path ("spec.mutations[0].jsonPatch.expression") of an
// object, or "".
func stringAt(obj runtime.Object, path string) string {
	raw, err := json.Marshal(obj)
	if err != nil {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return ""
	}
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[name]
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			if !ok {
				return ""
			}
			i, err := strconv.Atoi(idx)
			l, isList := v.([]any)
			if err != nil || !isList || i < 0 || i >= len(l) {
				return ""
			}
			v = l[i]
			rest = strings.TrimPrefix(after, "[")
		}
	}
	s, _ := v.(string)
	return s
}
