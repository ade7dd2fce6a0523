package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/internal/redact"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// A write the log holds without its result (level Request) that one of the cluster's
// MutatingAdmissionPolicies matched stored what the policy changed. The ordered stage follows
// such a write through the pipeline with the policies the cluster ran when they are replayed
// ones (--policies) it holds as given: the same spec, bound by bindings of the same specs, in
// every set its policy source may have admitted the request with. What they read that the
// replay does not know of the request, of the params and namespaces it read, or whether the
// informers held what they read (written moments before), leaves the write unfollowed, as
// does an authorizer check; a policy the cluster holds otherwise, or does not show, still
// does.

// bindingSpecsNow are the specs (mutatingBindingSpecOf) of the bindings of the policy in this set
// alone, by name; ok is false when one of its bindings, or a binding whose policy is not
// known, has an object the replay does not know.
func (m *mutators) bindingSpecsNow(policy string) (specs map[string]string, ok bool) {
	specs = map[string]string{}
	for b, p := range m.bindings {
		if p != policy && p != "" {
			continue
		}
		obj, known := m.objects[mutatorKey{mapsBindGR, b}]
		if !known || p == "" {
			return nil, false
		}
		var typed admissionregistrationv1.MutatingAdmissionPolicyBinding
		if runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &typed) != nil {
			return nil, false
		}
		if specs[b] = mutatingBindingSpecOf(&typed); specs[b] == "" {
			return nil, false
		}
	}
	return specs, true
}

// clusterRuns says whether the cluster ran the replayed MutatingAdmissionPolicy as given: the
// same spec (clusterOwn), bound by bindings of the given names and specs, in every set the
// policy source may have admitted the request with.
func (r *Replayer) clusterRuns(cluster *mutators, policy string) bool {
	rm, ok := r.set.mutating[mutatingName(policy)]
	if !ok || !r.clusterOwn(cluster, policy) {
		return false
	}
	sets := []*mutators{cluster}
	for _, e := range cluster.earlier {
		sets = append(sets, e.m)
	}
	for _, m := range sets {
		specs, ok := m.bindingSpecsNow(policy)
		if !ok || len(specs) != len(rm.bindings) {
			return false
		}
		for name, spec := range specs {
			if rm.bindings[name] != spec {
				return false
			}
		}
	}
	return true
}

// followingMutators is the evaluator of the replayed MutatingAdmissionPolicies the cluster
// runs as given (clusterRuns) among those whose rules match the request, and their names;
// nil when none does. Built once for each set and epoch.
func (r *Replayer) followingMutators(cluster *mutators, req mutatedRequest) (mutatingEvaluator, map[string]bool, error) {
	if r.cfg.customEval || cluster == nil {
		return nil, nil, nil
	}
	var names []string
	for _, p := range r.set.mutatingPolicies {
		if !cluster.matchesRules(p.Name, req) || !r.clusterRuns(cluster, p.Name) {
			continue
		}
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return nil, nil, nil
	}
	sort.Strings(names)
	run := map[string]bool{}
	for _, n := range names {
		run[n] = true
	}
	ep := r.cur()
	key := followKey{gen: ep.gen, names: strings.Join(names, "\x00")}
	r.following.mu.Lock()
	defer r.following.mu.Unlock()
	if e, ok := r.following.evals[key]; ok {
		return e, run, nil
	}
	ps := slices.DeleteFunc(slices.Clone(r.set.mutatingPolicies), func(p *admissionregistrationv1.MutatingAdmissionPolicy) bool { return !run[p.Name] })
	bs := slices.DeleteFunc(slices.Clone(r.set.mutatingBindings), func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) bool {
		return !run[b.Spec.PolicyName]
	})
	ev, err := verify.New(nil, nil, verify.WithResources(ep.resources), verify.WithStore(&r.following.store), verify.WithDropUnknownFields(true),
		verify.WithMutatingPolicies(ps, bs), verify.WithMapOrder(r.cfg.mapOrder))
	if err != nil {
		return nil, nil, err
	}
	if r.following.evals == nil {
		r.following.evals = map[followKey]mutatingEvaluator{}
	}
	r.following.evals[key] = ev
	return ev, run, nil
}

// followKey names an evaluator of followingMutators: the epoch and the policies.
type followKey struct {
	gen   int
	names string
}

// followingEvals are the ordered stage's evaluators of the MutatingAdmissionPolicies it follows
// writes with, over the State's View of the moment (store).
type followingEvals struct {
	mu    sync.Mutex
	evals map[followKey]mutatingEvaluator
	store viewStore
}

// matchesRules says whether the policy, as this set holds it, matches the request's group,
// resource and operation in any version and selects it (mayMutateNow's match).
func (m *mutators) matchesRules(policy string, req mutatedRequest) bool {
	p, ok := m.policies[policy]
	return ok && p.unknown == "" && p.matches(req)
}

// followMutation is what a write the ordered stage follows met of the replayed
// MutatingAdmissionPolicies (followingMutators) on its passes of the chain.
type followMutation struct {
	me       mutatingEvaluator
	run      map[string]bool
	mutation *verify.Mutation
	inputs   []vapccel.Unknown
	err      error
	// view is what they read the params and namespaces through; received is when the
	// request was received.
	view     *state.StateView
	received time.Time
	// lagSettled are the writes completed moments before the request that the policies read,
	// on whose versions before them every pass ran alike (followLagged); lagUnsettled says
	// a pass was not tried so, or ran otherwise.
	lagSettled   []state.TypedWrite
	lagUnsettled bool
}

// followLagged runs the policies' pass on the attributes a again (their object before it as
// before, the pass's error err) on the versions of what they read before the writes that
// completed moments before the request, which kube-apiserver's informers may not have held
// yet (a namespace labelled 177 ms before a ConfigMap's create, helper exAJ): where the pass
// makes the same object and outcome, those writes did not matter to it.
func (r *Replayer) followLagged(ctx context.Context, f *followMutation, a admission.Attributes, o admission.ObjectInterfaces, before runtime.Object, err error) {
	if f.err != nil {
		return
	}
	recent, lost := r.state.RecentTyped(f.received)
	var taken []state.TypedWrite
	for i := range recent {
		if tw := &recent[i]; relevantWrite(tw, f.received, f.view) {
			taken = append(taken, *tw)
		}
	}
	if len(taken) == 0 {
		return
	}
	if before == nil || len(lost) > 0 {
		f.lagUnsettled = true
		return
	}
	lagged := f.view.Before(taken)
	copied := admission.NewAttributesRecord(before, a.GetOldObject(), a.GetKind(), a.GetNamespace(), a.GetName(), a.GetResource(), a.GetSubresource(),
		a.GetOperation(), a.GetOperationOptions(), a.IsDryRun(), a.GetUserInfo())
	r.following.store.v = lagged
	m, lerr := f.me.AdmitAttributes(ctx, copied, o)
	r.following.store.v = f.view
	got, gerr := json.Marshal(copied.GetObject())
	want, werr := json.Marshal(a.GetObject())
	same := lerr == nil && gerr == nil && werr == nil && bytes.Equal(got, want) && (m.Allowed == (err == nil)) && len(lagged.Misses()) == 0
	for i, tw := range recent {
		if same && !slices.ContainsFunc(taken, sameWrite(tw)) && relevantWrite(&recent[i], f.received, lagged) {
			same = false // the versions before read yet another recent write
		}
	}
	if !same {
		f.lagUnsettled = true
		return
	}
	f.lagSettled = append(f.lagSettled, taken...)
}

// admit runs the policies on one pass; unknowns are what the replay does not know of it.
func (f *followMutation) admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces, unknowns []vapccel.Unknown) error {
	m, err := f.me.AdmitAttributes(ctx, a, o)
	if err != nil {
		f.err = err
		return apierrors.NewInternalError(err)
	}
	f.mutation = f.me.Then(f.mutation, m)
	f.inputs = append(f.inputs, unknowns...)
	if !m.Allowed && m.Status != nil {
		return &apierrors.StatusError{ErrStatus: *m.Status}
	}
	return nil
}

// sameWrite matches the writes that are w (of its object, completed when it did, where it did).
func sameWrite(w state.TypedWrite) func(state.TypedWrite) bool {
	return func(x state.TypedWrite) bool {
		return x.GR == w.GR && x.Obj == w.Obj && x.Done.Equal(w.Done) && x.By == w.By && x.Ahead == w.Ahead
	}
}

// scrubbed is what the pipeline answered of a write the policies ran on (its response, why
// what they stored is not known, its error), scrubbed of the values of the Secrets they read
// as params: a failure may quote them (url() of one), and the State keeps it as the reason it
// does not know the object, which every later request on it shows, though it read no Secret
// (a record's own reads are scrubbed: redact.go). The object's name and namespace stay whole,
// as a record's scrub leaves them.
func (f *followMutation) scrubbed(t target, resp *apiserver.Response, unknown string, err error) (*apiserver.Response, string, error) {
	if f == nil {
		return resp, unknown, err
	}
	secrets := f.view.Secrets()
	if len(secrets) == 0 {
		return resp, unknown, err
	}
	vals := &redact.Values{}
	ofSecrets(vals, secrets)
	vals.Shown(t.namespace, t.name)
	if err != nil {
		err = errors.New(vals.Scrub(err.Error()))
	}
	if resp != nil && resp.Status != nil {
		c, st := *resp, *resp.Status
		st.Message = vals.Scrub(st.Message)
		c.Status = &st
		resp = &c
	}
	return resp, vals.Scrub(unknown), err
}

// followUnknown says why what the policies stored is not known, or "".
func (r *Replayer) followUnknown(f *followMutation) string {
	switch {
	case f == nil:
		return ""
	case f.err != nil:
		return "a MutatingAdmissionPolicy could not run: " + f.err.Error()
	case f.mutation == nil:
		return ""
	}
	var scope []string
	for name := range f.run {
		scope = append(scope, mutatingName(name))
	}
	sort.Strings(scope)
	if why, _, _ := r.mutationUnknownStored(f.mutation, f.inputs, nil, nil, scope); why != "" {
		return why
	}
	if misses := f.view.Misses(); len(misses) > 0 {
		return "what the MutatingAdmissionPolicies read is not known: " + state.MissText(misses)
	}
	if why := r.dependsOnPartial(scope, f.view.Partials, nil); why.is() {
		return why.detail
	}
	// The policy source's informers may not have held what they read yet.
	recent, lost := r.state.RecentTyped(f.received)
	for i, tw := range recent {
		if relevantWrite(&recent[i], f.received, f.view) && (f.lagUnsettled || !slices.ContainsFunc(f.lagSettled, sameWrite(tw))) {
			return "the MutatingAdmissionPolicies read " + tw.GR.String() + " " + state.JoinKey(tw.Obj.Namespace, tw.Obj.Name) + ", written moments before the request was received, which kube-apiserver's informers may not have held yet"
		}
	}
	for _, gr := range lost {
		if f.view.Reads(gr) {
			return "the MutatingAdmissionPolicies read " + gr.String() + ", of which more writes completed moments before the request than the replay remembers"
		}
	}
	return ""
}

// followInputs are what the replay does not know of an admission of a write it follows: what
// the log leaves out of the request (settle) and what it did not know of the object before.
func followInputs(ev *Event, t target, a admission.Attributes, logged []byte, p state.Prior) []vapccel.Unknown {
	return append(settle(ev, t, a, logged), rooted(p.Unknowns, t.op == admission.Update)...)
}
