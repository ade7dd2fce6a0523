package replay

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// kube-apiserver runs its MutatingAdmissionPolicies after the built-in mutating plugins and
// before ValidatingAdmissionPolicy, and, unlike a mutating webhook, a policy's change leaves no
// trace in the audit log. A replay does not run them: it follows the cluster's policies and
// bindings (from the snapshot and the writes of the log; a patch the log holds without its
// result, at level Request, applied to the object as the log last showed it), and the object
// of a request one of them may change is not known, unless the log holds it as the response
// of the request.

var (
	mapsGR     = schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}
	mapsBindGR = schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"}
)

// mutators are the cluster's MutatingAdmissionPolicies and their bindings as the replay knows
// them at one point of the log. A value is never changed once a job holds it: a write makes a
// new one.
type mutators struct {
	// policies are the rules of each policy; a policy whose object is not known has nil
	// rules and why in unknown.
	policies map[string]mutatingPolicy
	// bindings map each binding to its policy ("" when the binding's object is not known).
	bindings map[string]string
	// objects are the policies' and bindings' objects, where known: a patch the log holds
	// without its result is applied to them (writtenSpecObject). Never changed once stored.
	objects map[mutatorKey]map[string]any
	// selects are the namespace and object selectors of each binding's matchResources (nil:
	// every one), which narrow its policy's.
	selects map[string]bindingSelect
	// earlier are the sets before these that kube-apiserver's policy source may still have
	// admitted a request with (see Replayer.mutatorsAt), the latest first.
	earlier []earlierMutators
	// lost says why a set before the earlier ones, which the policy source may also have
	// admitted the request with, is not known ("" when there is none): it may have bound
	// any policy, or none.
	lost string
}

// earlierMutators is a set of the cluster's MutatingAdmissionPolicies that the write at until
// replaced.
type earlierMutators struct {
	m     *mutators
	until string
}

type mutatingPolicy struct {
	rules []admissionregistrationv1.NamedRuleWithOperations
	// namespaces and objects select the requests (nil selects every one).
	namespaces, objects labels.Selector
	unknown             string
	// spec is its spec as the server stores it (specOf), "" when not known.
	spec string
}

// matches says whether the policy's rules match the request's group, resource and operation in
// any version (a policy's matchPolicy Equivalent matches every version of a resource).
func (p mutatingPolicy) matches(req mutatedRequest) bool {
	for _, r := range p.rules {
		rule := r.RuleWithOperations
		rule.APIVersions = []string{"*"}
		if ruleMatches(rule, req.gvr, req.sub, req.op) {
			return true
		}
	}
	return false
}

// mutatedRequest is what selects a request for a MutatingAdmissionPolicy.
type mutatedRequest struct {
	gvr       schema.GroupVersionResource
	sub       string
	op        admission.Operation
	namespace string
	// labels of the object and the old object, when there is one.
	object, old       labels.Set
	hasObject, hasOld bool
	// view answers for the namespace's labels.
	view *state.StateView
	// replayed are the policies the evaluation runs itself (--policies), taken to be those
	// the cluster has of their name: they leave nothing unknown. The ordered stage, which
	// follows the cluster's writes without them, leaves it nil, and says so of them
	// (following).
	replayed, following map[string]bool
}

// mayMutate says why a request's object may have been changed by a bound
// MutatingAdmissionPolicy, or "". The rules are matched by group, resource and operation in
// any version (a policy's matchPolicy Equivalent matches every version of a resource), then
// the namespace and object selectors of the policy and of its binding's matchResources as the
// apiserver's matcher reads them; the exclusions, the binding's resource rules and the match
// conditions are not read, so a policy they would skip still counts. A set the policy source may still have admitted the request with
// (earlier) counts too.
func (m *mutators) mayMutate(req mutatedRequest) string {
	if m == nil {
		return ""
	}
	if why := m.mayMutateNow(req); why != "" {
		return why
	}
	if m.lost != "" && mutatedOperation(req.op) {
		return m.lost
	}
	for _, e := range m.earlier {
		if why := e.m.mayMutateNow(req); why != "" {
			return why + ", as it was before the write at " + e.until + ", which kube-apiserver's policy source may not have compiled yet (it compiles what its informers hold a second after its last refresh, and compiling takes time)"
		}
	}
	return ""
}

// mutatedOperation says whether a MutatingAdmissionPolicy may change a request of the
// operation: a create's or an update's object, and a connect's options (the plugin handles
// CONNECT, which ConnectResource admits on the options it then connects with), never a
// DELETE's.
func mutatedOperation(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update || op == admission.Connect
}

// mayMutateNow is mayMutate for these policies and bindings alone, not the earlier ones.
func (m *mutators) mayMutateNow(req mutatedRequest) string {
	if m == nil || len(m.bindings) == 0 || !mutatedOperation(req.op) {
		return ""
	}
	names := make([]string, 0, len(m.bindings))
	for b := range m.bindings {
		names = append(names, b)
	}
	sort.Strings(names)
	for _, b := range names {
		name := m.bindings[b]
		if name == "" {
			return fmt.Sprintf("MutatingAdmissionPolicyBinding %s binds a policy the log does not show", b)
		}
		p, ok := m.policies[name]
		switch {
		case !ok:
			continue // a binding of a policy that does not exist binds nothing
		case req.replayed[name]:
			continue
		case p.unknown != "":
			return fmt.Sprintf("MutatingAdmissionPolicy %s (bound by %s) is not known: %s", name, b, p.unknown)
		}
		if !p.matches(req) {
			continue
		}
		if !selects(req, p.namespaces, p.objects) || !selects(req, m.selects[b].namespaces, m.selects[b].objects) {
			continue
		}
		if req.following[name] {
			return fmt.Sprintf("MutatingAdmissionPolicy %s (bound by %s) matches the request and may have changed the object: the replay runs the policies of --policies to decide requests, not to follow the writes the log holds without their result", name, b)
		}
		return fmt.Sprintf("MutatingAdmissionPolicy %s (bound by %s) matches the request and may have changed the object; give it among --policies for vapc to run it", name, b)
	}
	return ""
}

// selects says whether a policy's or binding's namespace and object selectors (nil: every
// one) may select the request, as the apiserver's matcher reads them: by the object's labels
// or the old object's, and the namespace's where the State knows them.
func selects(req mutatedRequest, namespaces, objects labels.Selector) bool {
	if objects != nil && !(req.hasObject && objects.Matches(req.object)) && !(req.hasOld && objects.Matches(req.old)) {
		return false
	}
	if namespaces != nil && req.namespace != "" {
		if ns, known := req.view.NamespaceLabels(req.namespace); known && !namespaces.Matches(ns) {
			return false
		}
	}
	return true
}

// unknowns are the fields of the request's object a MutatingAdmissionPolicy may have changed.
func (m *mutators) unknowns(req mutatedRequest) []vapccel.Unknown {
	if why := m.mayMutate(req); why != "" {
		return []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object"}, Why: why}}
	}
	return nil
}

// mutatedBy is the request of an admission's attributes, for mayMutate.
func mutatedBy(t target, a admission.Attributes, view *state.StateView) mutatedRequest {
	req := mutatedRequest{gvr: t.gvr, sub: t.sub, op: t.op, namespace: a.GetNamespace(), view: view}
	if t.gvr.GroupResource() == state.NamespacesGR && t.sub == "" {
		req.namespace = "" // a Namespace is matched by its own labels, as its object's
	}
	for _, o := range []struct {
		obj runtime.Object
		set *labels.Set
		has *bool
	}{{a.GetObject(), &req.object, &req.hasObject}, {a.GetOldObject(), &req.old, &req.hasOld}} {
		if o.obj == nil {
			continue
		}
		if m, err := meta.Accessor(o.obj); err == nil {
			*o.set, *o.has = labels.Set(m.GetLabels()), true
		}
	}
	return req
}

// mutatedObject is the request of a rebuilt object, for mayMutate.
func mutatedObject(t target, obj, old *unstructured.Unstructured, view *state.StateView) mutatedRequest {
	req := mutatedRequest{gvr: t.gvr, sub: t.sub, op: t.op, namespace: t.namespace, view: view}
	if t.gvr.GroupResource() == state.NamespacesGR && t.sub == "" {
		req.namespace = ""
	}
	if obj != nil {
		req.object, req.hasObject = labels.Set(obj.GetLabels()), true
	}
	if old != nil {
		req.old, req.hasOld = labels.Set(old.GetLabels()), true
	}
	return req
}

func (m *mutators) clone() *mutators {
	c := &mutators{policies: map[string]mutatingPolicy{}, bindings: map[string]string{}, objects: map[mutatorKey]map[string]any{}, selects: map[string]bindingSelect{}}
	if m != nil {
		maps.Copy(c.policies, m.policies)
		maps.Copy(c.bindings, m.bindings)
		maps.Copy(c.objects, m.objects)
		maps.Copy(c.selects, m.selects)
	}
	return c
}

// bindingSelect are the selectors of a binding's matchResources.
type bindingSelect struct{ namespaces, objects labels.Selector }

// mutatorKey names a MutatingAdmissionPolicy or binding: its resource and name.
type mutatorKey struct {
	gr   schema.GroupResource
	name string
}

// isMutator says whether a resource is a MutatingAdmissionPolicy's or its binding's.
func isMutator(gr schema.GroupResource) bool { return gr == mapsGR || gr == mapsBindGR }

// withObject returns the mutators with a policy or binding (u, of resource gr) as it is now;
// u nil removes it, and why, when set, says its object is not known.
func (m *mutators) withObject(gr schema.GroupResource, name string, u *unstructured.Unstructured, why string) *mutators {
	c := m.clone()
	if u != nil {
		c.objects[mutatorKey{gr, name}] = u.Object
	} else {
		delete(c.objects, mutatorKey{gr, name})
	}
	switch {
	case gr == mapsGR && u == nil && why == "":
		delete(c.policies, name)
	case gr == mapsGR && u == nil:
		c.policies[name] = mutatingPolicy{unknown: why}
	case gr == mapsGR:
		var spec struct {
			MatchConstraints *struct {
				ResourceRules     []admissionregistrationv1.NamedRuleWithOperations `json:"resourceRules"`
				NamespaceSelector *metav1.LabelSelector                             `json:"namespaceSelector"`
				ObjectSelector    *metav1.LabelSelector                             `json:"objectSelector"`
			} `json:"matchConstraints"`
		}
		raw, err := json.Marshal(u.Object["spec"])
		if err == nil {
			err = json.Unmarshal(raw, &spec)
		}
		var p mutatingPolicy
		var typed admissionregistrationv1.MutatingAdmissionPolicy
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &typed) == nil {
			p.spec = specOf(&typed)
		}
		if err == nil && spec.MatchConstraints != nil {
			mc := spec.MatchConstraints
			p.rules = mc.ResourceRules
			if mc.NamespaceSelector != nil {
				p.namespaces, err = metav1.LabelSelectorAsSelector(mc.NamespaceSelector)
			}
			if err == nil && mc.ObjectSelector != nil {
				p.objects, err = metav1.LabelSelectorAsSelector(mc.ObjectSelector)
			}
		}
		if err != nil {
			p = mutatingPolicy{unknown: "its spec does not decode: " + err.Error()}
		}
		c.policies[name] = p
	case u == nil && why == "":
		delete(c.bindings, name)
		delete(c.selects, name)
	case u == nil:
		c.bindings[name] = ""
		delete(c.selects, name)
	default:
		policy, _, _ := unstructured.NestedString(u.Object, "spec", "policyName")
		c.bindings[name] = policy
		delete(c.selects, name)
		var spec struct {
			MatchResources *struct {
				NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector"`
				ObjectSelector    *metav1.LabelSelector `json:"objectSelector"`
			} `json:"matchResources"`
		}
		raw, err := json.Marshal(u.Object["spec"])
		if err == nil && json.Unmarshal(raw, &spec) == nil && spec.MatchResources != nil {
			var sel bindingSelect
			if mr := spec.MatchResources; mr.NamespaceSelector != nil {
				sel.namespaces, err = metav1.LabelSelectorAsSelector(mr.NamespaceSelector)
			}
			if mr := spec.MatchResources; err == nil && mr.ObjectSelector != nil {
				sel.objects, err = metav1.LabelSelectorAsSelector(mr.ObjectSelector)
			}
			if err == nil {
				c.selects[name] = sel // one that does not decode narrows nothing
			}
		}
	}
	return c
}

// applyMutatorWrite follows a write of a MutatingAdmissionPolicy or binding of the log.
func (r *Replayer) applyMutatorWrite(ev *Event, t target, src string) {
	r.setMutators(r.mutatorsAfter(ev, t, src), auditlog.ParseTime(ev.StageTimestamp), src)
}

// mutatorsAfter are the cluster's MutatingAdmissionPolicies and bindings after a write of one.
func (r *Replayer) mutatorsAfter(ev *Event, t target, src string) *mutators {
	gr := t.gvr.GroupResource()
	if t.name == "" {
		// A deletecollection, or a create whose name the log does not hold.
		return r.mutators.withObject(gr, "(unnamed at "+src+")", nil, "written at "+src+" without its name")
	}
	switch ev.Verb {
	case "delete":
		return r.mutators.withObject(gr, t.name, nil, "")
	case "deletecollection":
		return r.mutators.withObject(gr, "(deleted at "+src+")", nil, "deleted at "+src+" without the list of what")
	}
	// The object the write left: its response's, its body, or a patch the log holds without
	// its result (at level Request) applied to the object as the log last showed it.
	var cur map[string]any
	if r.mutators != nil {
		cur = r.mutators.objects[mutatorKey{gr, t.name}]
	}
	var obj *unstructured.Unstructured
	if o := writtenSpecObject(ev, cur); o != nil {
		obj = &unstructured.Unstructured{Object: o}
	}
	if obj == nil && ev.Verb == "create" {
		// A create whose body the log does not hold is taken as the given one of its name,
		// as the lifecycle takes it (lifecyclespec.go).
		obj = r.givenMutator(gr, t.name)
	}
	if obj == nil {
		return r.mutators.withObject(gr, t.name, nil, "written at "+src+" "+atLevel(ev)+": the result is not in the log")
	}
	return r.mutators.withObject(gr, t.name, obj, "")
}

// givenMutator is the replayed MutatingAdmissionPolicy or binding (by gr) of the name, as an
// object; nil when none is given.
func (r *Replayer) givenMutator(gr schema.GroupResource, name string) *unstructured.Unstructured {
	var given any
	switch gr {
	case mapsGR:
		if i := slices.IndexFunc(r.set.mutatingPolicies, func(p *admissionregistrationv1.MutatingAdmissionPolicy) bool { return p.Name == name }); i >= 0 {
			given = r.set.mutatingPolicies[i]
		}
	case mapsBindGR:
		if i := slices.IndexFunc(r.set.mutatingBindings, func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) bool { return b.Name == name }); i >= 0 {
			given = r.set.mutatingBindings[i]
		}
	}
	if given == nil {
		return nil
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(given)
	if err != nil {
		return nil
	}
	return &unstructured.Unstructured{Object: obj}
}

// policyRefresh is how long after kube-apiserver's policy informers have a write of a policy
// or a binding it may take effect in admission (the informers themselves behind by up to
// their lag): its policy source compiles the policies and bindings its informers hold a
// second (policyRefreshIntervalDefault, wait.Until's period, which runs from the end of the
// refresh before, in k8s.io/apiserver/pkg/admission/plugin/policy/generic/policy_source.go)
// after its last refresh, and the refresh compiles every policy before the new set takes
// effect, for which a second more is an estimate, not a bound (a write during a refresh waits
// for it, the second, and the next; random parity seed r:1518: a binding not in effect 1.26 s
// after its create completed, 40 policies compiled on a loaded 2-core machine).
const policyRefresh = 2 * time.Second

// compiledWithin is how long after a write of a policy or a binding the policy source may still
// decide without it, or with the copy it replaced: policyRefresh and the informers' lag, and as
// long again, which a loaded server takes (random parity controllers seed c:787: a binding's
// create not in effect 2.8 s after it completed, on a 2-core machine running two clusters).
// Where a given pair's create is decided likely within it past policyRefresh (lifecycle.at),
// the log's verdicts are no evidence of the cluster's policies (installed), and the cluster's
// MutatingAdmissionPolicies kept from before may still be in effect (mutatorsAt).
func compiledWithin(lag time.Duration) time.Duration {
	return 2*policyRefresh + lag
}

// maxMutatorSets bounds the sets of the cluster's MutatingAdmissionPolicies a replay keeps
// for the requests the policy source may not have caught up with (mutatorsAt): a GitOps sync
// that applies a hundred policies and their bindings within the policy source's window makes
// a set of each write. A request the window reaches past the oldest one kept may have been
// admitted with a set dropped: what it was is not known (mutators.lost).
const maxMutatorSets = 256

// mutatorSet is the cluster's MutatingAdmissionPolicies and bindings from when the write that
// made them (by, at the log's line) completed (zero: before the log).
type mutatorSet struct {
	m     *mutators
	since time.Time
	by    string
}

// setMutators makes m the cluster's MutatingAdmissionPolicies, from the write at src that
// completed at done.
func (r *Replayer) setMutators(m *mutators, done time.Time, src string) {
	if len(r.mutatorSets) == 0 {
		r.mutatorSets = append(r.mutatorSets, mutatorSet{m: r.mutators})
	}
	if len(r.mutatorSets) >= maxMutatorSets {
		r.mutatorSets = append(r.mutatorSets[:0:0], r.mutatorSets[len(r.mutatorSets)-maxMutatorSets+1:]...)
		r.mutatorsDropped = true
	}
	r.mutatorSets = append(r.mutatorSets, mutatorSet{m: m, since: done, by: src})
	r.mutators = m
}

// mutatorsAt are the cluster's MutatingAdmissionPolicies a request received at received may
// have been admitted with: the latest set the log has shown, and each one before it that the
// policy source may still have held (compiledWithin), the earlier
// sets of the result.
func (r *Replayer) mutatorsAt(received time.Time) *mutators {
	sets := r.mutatorSets
	if len(sets) < 2 || received.IsZero() {
		return r.mutators
	}
	window := compiledWithin(r.state.Lag)
	first := 0
	for i := len(sets) - 1; i > 0; i-- {
		if !sets[i].since.IsZero() && received.Sub(sets[i].since) >= window {
			first = i
			break
		}
	}
	if first == len(sets)-1 {
		return r.mutators
	}
	m := *r.mutators
	m.earlier = nil
	if first == 0 && r.mutatorsDropped && (sets[0].since.IsZero() || received.Sub(sets[0].since) < window) {
		// The sets before the oldest one kept were dropped (maxMutatorSets), and the policy
		// source may still have held the last of them: the oldest kept may not be in effect
		// yet (or completed at a time the log does not give).
		m.lost = fmt.Sprintf("the cluster's MutatingAdmissionPolicies as they were before the write at %s, which the replay no longer holds (it keeps the last %d sets) and kube-apiserver's policy source may not have replaced yet", sets[0].by, maxMutatorSets)
	}
	for i := len(sets) - 2; i >= first; i-- {
		m.earlier = append(m.earlier, earlierMutators{m: sets[i].m, until: sets[i+1].by})
	}
	return &m
}
