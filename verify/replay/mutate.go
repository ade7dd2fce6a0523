package replay

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
)

// The MutatingAdmissionPolicies among --policies run on every request the replay evaluates,
// with kube-apiserver's own mutating dispatcher (verify.Evaluator.AdmitAttributes) at their
// place in the request pipeline: after the built-in mutating plugins, before the recorded
// mutating webhooks and validating admission, with the chain's reinvocation. The validating
// policies then decide on the mutated object, and the record says what each policy, binding
// and param changed. Where a policy that ran reads a field the replay does not know, what it
// wrote is not known either: the object is unknown to the validating policies.

// WithMutatingPolicies adds MutatingAdmissionPolicies and their bindings to the replayed
// policies (the default evaluator runs them; an evaluator of WithEvaluator runs them if it
// implements AdmitAttributes and HasMutatingPolicies as verify.Evaluator does).
func WithMutatingPolicies(policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) Option {
	return func(r *Replayer) error {
		r.mutatingPolicies = append(r.mutatingPolicies, policies...)
		r.mutatingBindings = append(r.mutatingBindings, bindings...)
		return nil
	}
}

// mutatingEvaluator is an Evaluator that runs MutatingAdmissionPolicies.
type mutatingEvaluator interface {
	HasMutatingPolicies() bool
	AdmitAttributes(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) (*verify.Mutation, error)
}

// mutatingReads is what the replayed MutatingAdmissionPolicies read, together.
func (r *Replayer) mutatingReads() vapccel.Reads {
	r.mutatingReadsOnce.Do(func() {
		for _, p := range r.mutatingPolicies {
			rd := vapccel.MutatingPolicyReads(p, r.mutatingBindings)
			if rd.All != "" && r.mutatingReadsAll.All == "" {
				r.mutatingReadsAll.All = fmt.Sprintf("mutating policy %s: %s", p.Name, rd.All)
			}
			r.mutatingReadsAll.Reads = append(r.mutatingReadsAll.Reads, rd.Reads...)
		}
	})
	return r.mutatingReadsAll
}

// runMutatingPolicies runs the MutatingAdmissionPolicies on one pass of the chain and keeps
// what they did in s. unknowns are the fields of the admission the replay does not know.
func (r *Replayer) runMutatingPolicies(ctx context.Context, me mutatingEvaluator, s *served, a admission.Attributes, o admission.ObjectInterfaces, unknowns []vapccel.Unknown) error {
	mut, err := me.AdmitAttributes(ctx, a, o)
	if err != nil {
		s.err = err
		return apierrors.NewInternalError(err)
	}
	if s.mutation == nil {
		s.mutation = mut
	} else {
		prev := s.mutation
		s.mutation = mut
		mut.Changes = append(prev.Changes, mut.Changes...)
		mut.Ran += prev.Ran
	}
	switch {
	case s.mutationUnknown != "":
	case mut.Unknown != "":
		s.mutationUnknown = "a MutatingAdmissionPolicy could not run: " + mut.Unknown
	case mut.Ran > 0:
		if rd, u, ok := r.mutatingReads().DependsOn(unknowns); ok {
			s.mutationUnknown = fmt.Sprintf("a MutatingAdmissionPolicy read %s, and %s is not known: %s", rd.Path, u.Path, u.Why)
		}
	}
	if !mut.Allowed && mut.Status != nil {
		return &apierrors.StatusError{ErrStatus: *mut.Status}
	}
	return nil
}

// mutationUnknowns are the fields the replayed MutatingAdmissionPolicies leave unknown.
func (s *served) mutationUnknowns() []vapccel.Unknown {
	if s.mutationUnknown == "" {
		return nil
	}
	return []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object"}, Why: s.mutationUnknown}}
}
