package vap

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vapc-dev/vapc/cel"
)

// Stage is the rollout stage of a binding: what the apiserver does with a request that fails a
// validation. Emit chooses it, so that a policy moves from stage to stage without editing it.
type Stage string

// Rollout stages, in the order a policy goes through them.
const (
	// StageAudit records failures in the audit log only: validationActions [Audit].
	StageAudit Stage = "Audit"
	// StageWarn also returns a warning to the client: validationActions [Warn, Audit].
	StageWarn Stage = "Warn"
	// StageDeny refuses the request and records it: validationActions [Deny, Audit].
	StageDeny Stage = "Deny"
)

// ParseStage parses Audit, Warn or Deny.
func ParseStage(s string) (Stage, error) {
	switch st := Stage(s); st {
	case StageAudit, StageWarn, StageDeny:
		return st, nil
	}
	return "", fmt.Errorf("unknown stage %q: want Audit, Warn or Deny", s)
}

// ValidationActions returns the binding's validationActions for the stage.
func (s Stage) ValidationActions() []admissionregistrationv1.ValidationAction {
	switch s {
	case StageAudit:
		return []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	case StageWarn:
		return []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit}
	case StageDeny:
		return []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}
	}
	return nil
}

// Binding is a ValidatingAdmissionPolicyBinding of a Policy, built in Go and checked, without its
// rollout stage: Object and Emit set validationActions from a Stage. For a mutating policy it
// is a MutatingAdmissionPolicyBinding (MutatingObject), which has no stage.
type Binding struct {
	obj    *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	policy *Policy
	loc    *locator
}

// BindingOption sets a part of a binding.
type BindingOption func(*bindingBuilder)

type bindingBuilder struct {
	obj *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	loc *locator
}

// NewBinding builds a binding of the policy, named like the policy unless BindingName says
// otherwise, with the paramRef the policy's params option set (NodeParams, ConfigMapParam)
// unless BindingParamRef says otherwise. It is checked, with each stage's validationActions,
// against the policy; errors are returned as an *Error.
func NewBinding(p *Policy, opts ...BindingOption) (*Binding, error) {
	at := caller()
	if p == nil {
		return nil, fmt.Errorf("%s: NewBinding: nil policy", at.pos())
	}
	b := &bindingBuilder{
		obj: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name()},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: p.Name(),
				ParamRef:   p.paramRef.DeepCopy(),
			},
		},
		loc: newLocator(at),
	}
	b.loc.set("metadata.name", at)
	b.loc.set("spec.policyName", at)
	if p.paramRef != nil {
		b.loc.set("spec.paramRef", p.paramAt)
	}
	for _, opt := range opts {
		if opt != nil {
			opt(b)
		}
	}
	bd := &Binding{obj: b.obj, policy: p, loc: b.loc}
	if err := bd.check(StageDeny); err != nil {
		return nil, err
	}
	return bd, nil
}

// check checks the binding with the stage's validationActions against its policy.
func (b *Binding) check(stage Stage) error {
	var diags cel.Diagnostics
	if b.policy.Mutating() {
		mb := &cel.MutatingBinding{MutatingAdmissionPolicyBinding: b.MutatingObject(), Source: b.loc}
		diags = b.policy.checker.CheckMutatingBinding(mb, map[string]bool{b.policy.Name(): true})
	} else {
		policies := map[string]*cel.Policy{b.policy.Name(): {ValidatingAdmissionPolicy: b.policy.obj, Source: b.policy.loc}}
		diags = b.policy.checker.CheckBinding(&cel.Binding{ValidatingAdmissionPolicyBinding: b.Object(stage), Source: b.loc}, policies)
	}
	diags.Sort()
	if diags.HasErrors() {
		return &Error{Object: b.kind() + "/" + b.obj.Name, Diagnostics: diags}
	}
	return nil
}

func (b *Binding) kind() string { return b.policy.kind() + "Binding" }

// MutatingObject returns the MutatingAdmissionPolicyBinding of a mutating policy's binding, or
// nil for a validating policy's.
func (b *Binding) MutatingObject() *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	if !b.policy.Mutating() {
		return nil
	}
	return &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: *b.obj.ObjectMeta.DeepCopy(),
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName:     b.obj.Spec.PolicyName,
			ParamRef:       b.obj.Spec.ParamRef.DeepCopy(),
			MatchResources: b.obj.Spec.MatchResources.DeepCopy(),
		},
	}
}

// Name returns the binding's name.
func (b *Binding) Name() string { return b.obj.Name }

// Policy returns the policy the binding binds.
func (b *Binding) Policy() *Policy { return b.policy }

// Object returns a copy of the ValidatingAdmissionPolicyBinding with the validationActions of the
// stage, or nil for a mutating policy's binding.
func (b *Binding) Object(stage Stage) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	if b.policy.Mutating() {
		return nil
	}
	obj := b.obj.DeepCopy()
	obj.Spec.ValidationActions = stage.ValidationActions()
	return obj
}

// BindingName names the binding (by default it has the policy's name).
func BindingName(name string) BindingOption {
	at := caller()
	return func(b *bindingBuilder) {
		b.obj.Name = name
		b.loc.set("metadata.name", at)
	}
}

// BindingParamRef sets the binding's paramRef, replacing the one of the policy's params option.
func BindingParamRef(ref *admissionregistrationv1.ParamRef) BindingOption {
	at := caller()
	return func(b *bindingBuilder) {
		b.obj.Spec.ParamRef = ref.DeepCopy()
		b.loc.set("spec.paramRef", at)
	}
}

// BindingMatch narrows the requests the binding applies to, e.g. to namespaces with a
// namespaceSelector; the policy's matchConstraints still apply.
func BindingMatch(mr *admissionregistrationv1.MatchResources) BindingOption {
	at := caller()
	return func(b *bindingBuilder) {
		b.obj.Spec.MatchResources = mr.DeepCopy()
		b.loc.set("spec.matchResources", at)
	}
}
