package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
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
		r.set.mutatingPolicies = append(r.set.mutatingPolicies, policies...)
		r.set.mutatingBindings = append(r.set.mutatingBindings, bindings...)
		return nil
	}
}

// mutatingEvaluator is an Evaluator that runs MutatingAdmissionPolicies.
type mutatingEvaluator interface {
	HasMutatingPolicies() bool
	AdmitAttributes(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) (*verify.Mutation, error)
	Then(m, next *verify.Mutation) *verify.Mutation
}

// mutatingPrefix marks a mutating policy's name among the names of the policies a request
// may match (a validating and a mutating policy may have one name).
const mutatingPrefix = "mutating:"

func mutatingName(name string) string { return mutatingPrefix + name }

// replayedMutating is what the replay knows of a replayed MutatingAdmissionPolicy.
type replayedMutating struct {
	name  string
	reads vapccel.Reads
	// selects is what its selectors read (of reads): all it reads where they did not select
	// the request (verify.Mutation.Selected); conditions is that and what its matchConditions
	// read: all it reads where they skipped it (it neither ran its mutations nor refused).
	selects, conditions vapccel.Reads
	// fails says whether an error of it refuses the request (failurePolicy Fail, the
	// default).
	fails bool
	// spec is its spec as a cluster holds it (specOf); bindings are the specs of its
	// bindings, by name (mutatingBindingSpecOf).
	spec     string
	bindings map[string]string
}

// replayedMutatings returns the replayed MutatingAdmissionPolicies by their scope name.
func replayedMutatings(policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) map[string]replayedMutating {
	out := map[string]replayedMutating{}
	for _, p := range policies {
		fp := p.Spec.FailurePolicy
		out[mutatingName(p.Name)] = replayedMutating{
			name:       p.Name,
			reads:      vapccel.MutatingPolicyReads(p, bindings),
			selects:    vapccel.MutatingSelectorReads(p, bindings),
			conditions: mutatingConditionReads(p, bindings),
			fails:      fp == nil || *fp == admissionregistrationv1.Fail,
			spec:       specOf(p),
			bindings:   map[string]string{},
		}
	}
	for _, b := range bindings {
		if rm, ok := out[mutatingName(b.Spec.PolicyName)]; ok {
			rm.bindings[b.Name] = mutatingBindingSpecOf(b)
		}
	}
	return out
}

// specOf is a MutatingAdmissionPolicy's spec as the server stores it (defaulted), as JSON, to
// tell whether a replayed policy is the one a cluster has; "" when it does not encode. The
// white space around its CEL expressions, which CEL does not read, is left out: a YAML block
// scalar (`expression: >`) ends one with a newline that a loader may keep or not. (A refusal's
// message may quote an expression: the decision is the same.)
func specOf(p *admissionregistrationv1.MutatingAdmissionPolicy) string {
	p = p.DeepCopy()
	for _, m := range p.Spec.Mutations {
		if m.JSONPatch != nil {
			m.JSONPatch.Expression = trimCEL(m.JSONPatch.Expression)
		}
		if m.ApplyConfiguration != nil {
			m.ApplyConfiguration.Expression = trimCEL(m.ApplyConfiguration.Expression)
		}
	}
	return storedSpec(p, &p.Spec, p.Spec.MatchConditions, p.Spec.Variables)
}

// storedSpec is spec, the spec of obj (a copy the caller owns), as JSON once obj has
// kube-apiserver's defaults, with the CEL of its matchConditions and variables trimmed
// (trimCEL); "" when it does not encode.
func storedSpec(obj runtime.Object, spec any, conditions []admissionregistrationv1.MatchCondition, variables []admissionregistrationv1.Variable) string {
	for i := range conditions {
		conditions[i].Expression = trimCEL(conditions[i].Expression)
	}
	for i := range variables {
		variables[i].Expression = trimCEL(variables[i].Expression)
	}
	kubescheme.Scheme.Default(obj)
	data, err := json.Marshal(spec)
	if err != nil {
		return ""
	}
	return string(data)
}

// runMutatingPolicies runs the MutatingAdmissionPolicies on one pass of the chain and keeps
// what they did in s. unknowns are the fields of the admission the replay does not know.
func (r *Replayer) runMutatingPolicies(ctx context.Context, me mutatingEvaluator, s *served, a admission.Attributes, o admission.ObjectInterfaces, unknowns []vapccel.Unknown) error {
	mut, err := me.AdmitAttributes(ctx, a, o)
	if err != nil {
		s.err = err
		return apierrors.NewInternalError(err)
	}
	// On the chain's second pass (reinvocation), the request's changes are both passes'.
	mut = me.Then(s.mutation, mut)
	s.mutation = mut
	s.mutationInputs = append(s.mutationInputs, unknowns...)
	if !mut.Allowed && mut.Status != nil {
		return &apierrors.StatusError{ErrStatus: *mut.Status}
	}
	return nil
}

// mutationUnknown says why what the replayed MutatingAdmissionPolicies did (m) is not known,
// or "": a policy could not run as the server would, another order of the policies could have
// given another object, or a policy that ran reads a field the replay does not know (inputs:
// the unknown fields of the admission they ran on).
func (r *Replayer) mutationUnknown(m *verify.Mutation, inputs []vapccel.Unknown, policies []string) string {
	why, _, _ := r.mutationUnknownRead(m, inputs, policies)
	return why
}

// mutationUnknownRead is mutationUnknown, with the unknown field a policy read when that is
// why (nil otherwise), and whether that policy refuses the request on an error (failurePolicy
// Fail): what it read may have made it fail.
func (r *Replayer) mutationUnknownRead(m *verify.Mutation, inputs []vapccel.Unknown, policies []string) (string, *vapccel.Unknown, bool) {
	return r.mutationUnknownStored(m, inputs, nil, nil, policies)
}

// mutationUnknownStored is mutationUnknownRead with what the policies did not see of a stored
// object (stored: storedAfterMutation), which a policy the cluster has as replayed (cluster)
// did not depend on: what it wrote is in the stored object, and the write succeeded.
func (r *Replayer) mutationUnknownStored(m *verify.Mutation, inputs, stored []vapccel.Unknown, cluster *mutators, policies []string) (string, *vapccel.Unknown, bool) {
	switch {
	case m == nil:
		return "", nil, false
	case m.Unknown != "":
		return "a MutatingAdmissionPolicy could not run as kube-apiserver would: " + m.Unknown, nil, false
	case m.OrderDependent != "":
		return "kube-apiserver runs MutatingAdmissionPolicies in an order no log records, and the order matters here: " + m.OrderDependent, nil, false
	}
	if checks := verify.Configured(m.Authorizer); len(checks) > 0 {
		return fmt.Sprintf("a MutatingAdmissionPolicy made %d authorizer checks, which the audit log does not answer (the first: %s)", len(checks), checks[0]), nil, false
	}
	// Whether a policy the request's rules match ran or was skipped, by a matchCondition or
	// a selector, rests on what it reads as much as what it wrote.
	for _, p := range policies {
		if mp, ok := r.set.mutating[p]; ok {
			reads := mp.reads
			switch {
			case !m.Selected(mp.name):
				reads = mp.selects // its conditions and mutations did not run
			case !ranOn(m, mp.name):
				reads = mp.conditions // its mutations did not run
			}
			in := inputs
			if len(stored) > 0 && !r.clusterOwn(cluster, mp.name) {
				in = append(slices.Clip(inputs), stored...)
			}
			if rd, u, ok := reads.DependsOn(in); ok {
				return fmt.Sprintf("MutatingAdmissionPolicy %s reads %s, and %s is not known: %s", mp.name, rd.Path, u.Path, u.Why), &u, mp.fails
			}
		}
	}
	return "", nil, false
}

// mutatingConditionReads is what a MutatingAdmissionPolicy's selectors and matchConditions read.
func mutatingConditionReads(p *admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) vapccel.Reads {
	var conditions []string
	for _, c := range p.Spec.MatchConditions {
		conditions = append(conditions, c.Expression)
	}
	out := vapccel.ExpressionReads(nil, conditions...)
	out.Reads = append(out.Reads, vapccel.MutatingSelectorReads(p, bindings).Reads...)
	return out
}

// ranOn says whether the policy ran its mutations on the admission m tells of, or refused it.
func ranOn(m *verify.Mutation, policy string) bool {
	return m == nil || slices.ContainsFunc(m.Invoked, func(c verify.Change) bool { return c.Policy == policy }) ||
		slices.ContainsFunc(m.Refusals, func(r verify.Result) bool { return r.Policy == policy }) || !m.Allowed
}

// mutationReason is the reason of a request undecided because what the MutatingAdmissionPolicies
// did is not known, as a policy read the field read: what the log's level left out of the
// request's body (no-object), what its export lost (export-lost), or mutation-unknown.
func mutationReason(j *job, read *vapccel.Unknown) Reason {
	switch {
	case read == nil:
		return ReasonMutationUnknown
	case lostByExport(j.ev, j.t.op, *read):
		return ReasonExportLost
	case bodyUnknown(j.ev, j.t, *read):
		return ReasonNoObject
	}
	return ReasonMutationUnknown
}

// mutationUnknownField is the field an unknown mutation leaves unknown: the whole object.
func mutationUnknownField(why string) vapccel.Unknown {
	return vapccel.Unknown{Path: vapccel.FieldPath{Root: "object"}, Why: because(ReasonMutationUnknown, why).String()}
}

// sameMutation says whether two variants of a request were changed alike.
func sameMutation(a, b *verify.Mutation) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Allowed == b.Allowed && a.Message == b.Message && a.Unknown == b.Unknown &&
		slices.EqualFunc(a.Changes, b.Changes, func(x, y verify.Change) bool {
			return x.Policy == y.Policy && x.Binding == y.Binding && x.Param.String() == y.Param.String() && bytes.Equal(x.Patch, y.Patch)
		})
}

// replayedMutation is a request for mayMutate in the evaluation, which runs the replayed
// policies itself.
func (r *Replayer) replayedMutation(req mutatedRequest) mutatedRequest {
	req.replayed = r.set.replayedMAPs
	return req
}

// scopeOfMutating returns the validating policies and bindings with the mutating ones in
// their shape, named by mutatingName (match, params, matchConditions, variables, and the
// mutations' expressions as validations, which the scope only searches for words): a request
// only a mutating policy matches is replayed, and the State keeps what the mutating policies
// read.
func scopeOfMutating(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding,
	mutating []*admissionregistrationv1.MutatingAdmissionPolicy, mutatingBindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	if len(mutating) == 0 {
		return policies, bindings
	}
	ps := slices.Clone(policies)
	bs := slices.Clone(bindings)
	for _, m := range mutating {
		v := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: *m.ObjectMeta.DeepCopy()}
		v.Name = mutatingName(m.Name)
		v.Spec.ParamKind = m.Spec.ParamKind.DeepCopy()
		v.Spec.MatchConstraints = m.Spec.MatchConstraints.DeepCopy()
		v.Spec.MatchConditions = slices.Clone(m.Spec.MatchConditions)
		v.Spec.Variables = slices.Clone(m.Spec.Variables)
		for _, mu := range m.Spec.Mutations {
			switch {
			case mu.ApplyConfiguration != nil:
				v.Spec.Validations = append(v.Spec.Validations, admissionregistrationv1.Validation{Expression: mu.ApplyConfiguration.Expression})
			case mu.JSONPatch != nil:
				v.Spec.Validations = append(v.Spec.Validations, admissionregistrationv1.Validation{Expression: mu.JSONPatch.Expression})
			}
		}
		ps = append(ps, v)
	}
	for _, b := range mutatingBindings {
		bs = append(bs, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: *b.ObjectMeta.DeepCopy(),
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: mutatingName(b.Spec.PolicyName), ParamRef: b.Spec.ParamRef.DeepCopy(), MatchResources: b.Spec.MatchResources.DeepCopy(),
			},
		})
	}
	return ps, bs
}

// checkMutated compares what the replayed MutatingAdmissionPolicies wrote with the object the
// log records the server storing (the response of an admitted create or update, at level
// RequestResponse), at every path a change wrote, for the policies the cluster had when the
// request came (its own copy ran then; the replayed one is taken to be it). checked is false
// when there is nothing to compare: no response object, another kind, or only policies the
// cluster did not have.
func checkMutated(ev *Event, t target, resp *apiserver.Response, changes []verify.Change, cluster *mutators) (diffs []string, checked bool) {
	if resp == nil || ev.Code() >= 300 || len(ev.ResponseObject) == 0 {
		return nil, false
	}
	recorded := auditlog.DecodeAnyObject(ev.ResponseObject)
	if recorded == nil || recorded.GroupVersionKind() != t.reqKind {
		return nil, false
	}
	var written *apiserver.Write
	for i := range resp.Writes {
		if w := &resp.Writes[i]; w.Resource == t.gvr.GroupResource() && w.Namespace == t.namespace && (t.name == "" || w.Name == t.name) && w.Object != nil {
			written = w
		}
	}
	if written == nil {
		return nil, false
	}
	predicted := versioned(written.Object, t.reqKind)
	if predicted == nil {
		return nil, false
	}
	for _, c := range changes {
		if cluster == nil || !cluster.has(c.Policy) {
			continue
		}
		var ops []struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(c.Patch, &ops) != nil {
			continue
		}
		checked = true
		for _, op := range ops {
			want, wok := pointerValue(recorded.Object, op.Path)
			got, gok := pointerValue(predicted.Object, op.Path)
			if wok != gok || !equality.Semantic.DeepEqual(want, got) {
				diffs = append(diffs, fmt.Sprintf("MutatingAdmissionPolicy %s (binding %s) at %s: recorded %s, predicted %s", c.Policy, c.Binding, op.Path, describeValue(want, wok), describeValue(got, gok)))
			}
		}
	}
	return diffs, checked
}

// has says whether the cluster has the policy bound, in every set the policy source may have
// admitted the request with (earlier).
func (m *mutators) has(policy string) bool {
	if m == nil || m.lost != "" {
		return false
	}
	for _, e := range m.earlier {
		if !e.m.hasNow(policy) {
			return false
		}
	}
	return m.hasNow(policy)
}

// hasAny says whether the cluster has the policy bound in any set the policy source may have
// admitted the request with (earlier).
func (m *mutators) hasAny(policy string) bool {
	if m == nil {
		return false
	}
	if m.lost != "" {
		return true // the set not known may have bound it
	}
	for _, e := range m.earlier {
		if e.m.hasNow(policy) {
			return true
		}
	}
	return m.hasNow(policy)
}

// specOf is the spec of the cluster's policy (specOf), "" when it is not known or not the
// same in every set the policy source may have admitted the request with (earlier).
func (m *mutators) specOf(policy string) string {
	if m == nil || m.lost != "" {
		return ""
	}
	spec := m.specNow(policy)
	for _, e := range m.earlier {
		if e.m.specNow(policy) != spec {
			return ""
		}
	}
	return spec
}

// specNow is specOf for these policies alone, not the earlier ones (none: "").
func (m *mutators) specNow(policy string) string {
	if m == nil {
		return ""
	}
	return m.policies[policy].spec
}

// hasNow is has for these policies and bindings alone, not the earlier ones.
func (m *mutators) hasNow(policy string) bool {
	if m == nil {
		return false
	}
	if _, ok := m.policies[policy]; !ok {
		return false
	}
	for _, p := range m.bindings {
		if p == policy {
			return true
		}
	}
	return false
}

// trimCEL trims the white space CEL's grammar skips (WHITESPACE: space, tab, CR, LF, form
// feed) from the ends of an expression.
func trimCEL(expr string) string { return strings.Trim(expr, " \t\r\n\f") }

// pointerValue is the value at a JSON pointer (RFC 6901) of an object.
func pointerValue(obj map[string]any, pointer string) (any, bool) {
	var v any = obj
	if pointer == "" {
		return v, true
	}
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func describeValue(v any, ok bool) string {
	if !ok {
		return "nothing"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// reapplied says, of a request whose object is the one the log records the server storing,
// why what the replayed policies changed in it is not known: a policy the cluster has had
// already changed it, so running it again gives what the server's did not; "" when none of
// them changed it again. clusterOnly says whether every policy that did is the cluster's own,
// with the spec the replay runs: the stored object then already holds what they changed, in
// the server's order.
func (r *Replayer) reapplied(m *verify.Mutation, cluster *mutators) (why string, clusterOnly bool) {
	if m == nil || cluster == nil {
		return "", false
	}
	clusterOnly = m.Allowed
	for _, c := range m.Changes {
		if !cluster.hasAny(c.Policy) {
			clusterOnly = false
			continue
		}
		if !cluster.has(c.Policy) {
			clusterOnly = false // the server may have admitted the request without it
		}
		if why == "" {
			why = fmt.Sprintf("the log's object is the one kube-apiserver stored, which MutatingAdmissionPolicy %s had already changed, and running it again changed it again", c.Policy)
		}
		if spec := cluster.specOf(c.Policy); spec == "" || spec != r.set.mutating[mutatingName(c.Policy)].spec {
			clusterOnly = false
		}
	}
	return why, why != "" && clusterOnly
}

// clusterOwn says whether the cluster has the replayed MutatingAdmissionPolicy bound, with the
// replayed spec, in every set the policy source may have admitted the request with.
func (r *Replayer) clusterOwn(cluster *mutators, policy string) bool {
	spec := cluster.specOf(policy)
	return cluster.has(policy) && spec != "" && spec == r.set.mutating[mutatingName(policy)].spec
}

// selectedClusterOwn says whether every replayed MutatingAdmissionPolicy the request selected
// (m.Selected) is the cluster's own (clusterOwn).
func (r *Replayer) selectedClusterOwn(m *verify.Mutation, cluster *mutators) bool {
	if cluster == nil {
		return false
	}
	for _, p := range r.set.mutatingPolicies {
		if m.Selected(p.Name) && !r.clusterOwn(cluster, p.Name) {
			return false
		}
	}
	return true
}

// validatingEvaluator is an Evaluator that decides with the validating policies alone.
type validatingEvaluator interface {
	EvaluateValidating(ctx context.Context, req verify.Request) (*verify.Decision, error)
}
