package cel

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MutatingAdmissionPolicies are checked with kube-apiserver's own create-time validation
// (k8s.io/kubernetes/pkg/apis/admissionregistration/validation, which also compiles every
// expression in the policy's CEL environment): the errors the server refuses them with, placed
// at their fields and characters. That validation lives in k8s.io/kubernetes, which this
// package does not require of the modules that import it: package cel/mutatingvalidation
// registers it (vapc's CLI imports it). Expressions are not type-checked against the matched
// kinds' schemas (the server does not either).

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
	if mutatingValidation.policy == nil {
		r.add(Warning, CategoryInput, "", "", noMutatingValidation)
		return r.diags
	}
	obj, errs, err := mutatingValidation.policy(p.MutatingAdmissionPolicy)
	if err != nil {
		r.add(Error, CategoryInput, "", "", fmt.Sprintf("cannot convert the policy: %v", err))
		return r.diags
	}
	for _, e := range errs {
		r.fieldError(e, CategoryCreate, stringAt(obj, e.Field))
	}
	return r.diags
}

// CheckMutatingBinding checks one MutatingAdmissionPolicyBinding as kube-apiserver validates it
// on create, and says when its policy is not among policies (nil: not checked).
func (c *Checker) CheckMutatingBinding(b *MutatingBinding, policies map[string]bool) Diagnostics {
	r := &reporter{src: b.Source, object: "MutatingAdmissionPolicyBinding/" + b.Name, place: managedFieldsSource(b.MutatingAdmissionPolicyBinding, b.ManagedFields)}
	if mutatingValidation.binding == nil {
		r.add(Warning, CategoryInput, "", "", noMutatingValidation)
		return r.diags
	}
	obj, errs, err := mutatingValidation.binding(b.MutatingAdmissionPolicyBinding)
	if err != nil {
		r.add(Error, CategoryInput, "", "", fmt.Sprintf("cannot convert the binding: %v", err))
		return r.diags
	}
	for _, e := range errs {
		r.fieldError(e, CategoryCreate, "")
	}
	if obj.Spec.PolicyName != "" && policies != nil && !policies[obj.Spec.PolicyName] {
		r.add(Warning, CategoryLint, "spec.policyName", "", fmt.Sprintf("policy %q is not among the checked files; the binding does nothing until it exists", obj.Spec.PolicyName))
	}
	return r.diags
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
