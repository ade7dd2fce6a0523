package vap

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vapc-dev/vapc/cel"
)

// MutatingAdmissionPolicies are built with NewMutatingPolicy from the same options as
// validating ones (Resources, MatchCondition, UserIn, Variable, Params, NodeParams,
// ConfigMapParam, FailurePolicy, CheckWith) and the mutations (ApplyConfiguration, JSONPatch),
// and bound with NewBinding. They are checked with kube-apiserver's create-time validation of
// MutatingAdmissionPolicies when the program links it (import
// github.com/vapc-dev/vapc/cel/mutatingvalidation, which needs k8s.io/kubernetes; without it the
// policy carries a warning), and their matchConditions and variables are type-checked against
// the matched kinds as a validating policy's are. A MutatingAdmissionPolicy has no rollout
// stage: it changes objects as soon as it is bound, and Emit writes its bindings as they are.

// NewMutatingPolicy builds the MutatingAdmissionPolicy name from the options and checks it.
// failurePolicy is always set (Fail unless FailurePolicy says otherwise), and
// reinvocationPolicy, which the server requires, is Never unless Reinvocation says otherwise.
// Validations and audit annotations are not fields of a MutatingAdmissionPolicy: options that
// set them are errors. Errors are returned as an *Error at the Go lines that wrote the fields.
func NewMutatingPolicy(name string, opts ...PolicyOption) (*Policy, error) {
	at := caller()
	b := newPolicyBuilder(name, at)
	b.mutating = true
	never := admissionregistrationv1.NeverReinvocationPolicy
	b.reinvocation = &never
	for _, opt := range opts {
		if opt != nil {
			opt(b)
		}
	}
	for i := range b.obj.Spec.Validations {
		b.errorf(b.loc.site(fmt.Sprintf("spec.validations[%d]", i)), fmt.Sprintf("spec.validations[%d]", i), "Validation: a MutatingAdmissionPolicy has no validations; write them in a validating policy (NewPolicy)")
	}
	for i := range b.obj.Spec.AuditAnnotations {
		b.errorf(b.loc.site(fmt.Sprintf("spec.auditAnnotations[%d]", i)), fmt.Sprintf("spec.auditAnnotations[%d]", i), "AuditAnnotation: a MutatingAdmissionPolicy has no audit annotations")
	}
	if len(b.mutations) == 0 {
		b.errorf(at, "spec.mutations", "no mutations: add ApplyConfiguration or JSONPatch")
	}
	v := b.obj.Spec
	obj := &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: b.obj.ObjectMeta,
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			ParamKind:          v.ParamKind,
			MatchConstraints:   v.MatchConstraints,
			Variables:          v.Variables,
			Mutations:          b.mutations,
			FailurePolicy:      v.FailurePolicy,
			MatchConditions:    v.MatchConditions,
			ReinvocationPolicy: *b.reinvocation,
		},
	}
	checker, err := b.checkerOrDefault()
	if err != nil {
		return nil, err
	}
	diags := append(b.diags, checker.CheckMutatingPolicy(&cel.MutatingPolicy{MutatingAdmissionPolicy: obj, Source: b.loc})...)
	diags.Sort()
	if diags.HasErrors() {
		return nil, &Error{Object: "MutatingAdmissionPolicy/" + name, Diagnostics: diags}
	}
	return &Policy{mobj: obj, paramRef: b.paramRef, paramAt: b.paramAt, loc: b.loc, checker: checker, warnings: diags}, nil
}

// Mutating says whether the policy is a MutatingAdmissionPolicy (NewMutatingPolicy).
func (p *Policy) Mutating() bool { return p.mobj != nil }

// MutatingObject returns a copy of the MutatingAdmissionPolicy, or nil for a validating policy.
func (p *Policy) MutatingObject() *admissionregistrationv1.MutatingAdmissionPolicy {
	return p.mobj.DeepCopy()
}

// ApplyConfiguration adds a mutation that merges the object the expression returns into the
// request's object with server-side apply's rules, e.g.
// Object{metadata: Object.metadata{labels: {'team': 'payments'}}}.
func ApplyConfiguration(expression string) PolicyOption {
	at := caller()
	return func(b *policyBuilder) {
		b.addMutation(at, admissionregistrationv1.Mutation{
			PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expression},
		}, "applyConfiguration.expression", expression)
	}
}

// JSONPatch adds a mutation that applies the JSON patch operations the expression returns, e.g.
// [JSONPatch{op: 'replace', path: '/spec/replicas', value: 10}].
func JSONPatch(expression string) PolicyOption {
	at := caller()
	return func(b *policyBuilder) {
		b.addMutation(at, admissionregistrationv1.Mutation{
			PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expression},
		}, "jsonPatch.expression", expression)
	}
}

func (b *policyBuilder) addMutation(at site, m admissionregistrationv1.Mutation, field, expression string) {
	path := fmt.Sprintf("spec.mutations[%d]", len(b.mutations))
	if !b.mutating {
		b.errorf(at, path, "a ValidatingAdmissionPolicy has no mutations: build a MutatingAdmissionPolicy with NewMutatingPolicy")
	}
	b.mutations = append(b.mutations, m)
	b.loc.set(path, at)
	b.loc.setExpr(path+"."+field, at, expression)
}

// Reinvocation sets whether the policy runs again when a later mutation in the same request
// changes the object: IfNeeded runs it once more (only if it ran the first time), Never (the
// default NewMutatingPolicy sets) does not.
func Reinvocation(r admissionregistrationv1.ReinvocationPolicyType) PolicyOption {
	at := caller()
	return func(b *policyBuilder) {
		if !b.mutating {
			b.errorf(at, "spec.reinvocationPolicy", "a ValidatingAdmissionPolicy has no reinvocationPolicy")
		}
		b.reinvocation = &r
		b.loc.set("spec.reinvocationPolicy", at)
	}
}
