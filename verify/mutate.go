package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"

	vapccel "github.com/vapc-dev/vapc/cel"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
)

// MutatingAdmissionPolicies run as kube-apiserver's MutatingAdmissionPolicy plugin runs them:
// the apiserver's own mutating dispatcher (k8s.io/apiserver/pkg/admission/plugin/policy/
// mutating), its matcher, its patchers (JSON patch and apply configurations through the
// structured-merge-diff type converter of the matched kind) and its reinvocation context, after
// the built-in mutating plugins and before validating admission. What vapc adds is a record of
// what each policy, binding and param changed.

// WithMutatingPolicies adds MutatingAdmissionPolicies and their bindings: Evaluate runs them
// on a request's object before the validating policies decide, as kube-apiserver does, and
// AdmitAttributes runs them alone. Policies and bindings are defaulted as the apiserver
// defaults them when it stores them.
func WithMutatingPolicies(policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) Option {
	return func(e *Evaluator) error {
		e.mutatingPolicies = append(e.mutatingPolicies, policies...)
		e.mutatingBindings = append(e.mutatingBindings, bindings...)
		return nil
	}
}

// Change is what one invocation of a MutatingAdmissionPolicy (a policy, binding and param)
// changed in the request's object.
type Change struct {
	Policy  string    `json:"policy"`
	Binding string    `json:"binding"`
	Param   *ParamRef `json:"param,omitempty"`
	// Reinvoked is set for the invocation of a policy with reinvocationPolicy IfNeeded that
	// ran again after a later mutation changed the object.
	Reinvoked bool `json:"reinvoked,omitempty"`
	// Patch is the change as a JSON patch (RFC 6902) of the object in the version the policy
	// matched, after the apiserver defaulted the patched object.
	Patch json.RawMessage `json:"patch"`
}

// Mutation is what the MutatingAdmissionPolicies did to one admission.
type Mutation struct {
	// Allowed is false when a policy refused the request; Code, Reason, Message and Status
	// are then the apiserver's refusal.
	Allowed bool                `json:"allowed"`
	Code    int32               `json:"code"`
	Reason  metav1.StatusReason `json:"reason,omitempty"`
	Message string              `json:"message,omitempty"`
	Status  *metav1.Status      `json:"status,omitempty"`
	// Changes are the invocations that changed the object, in the order they ran; Invoked
	// are all the invocations that ran their mutations, changing the object or not (without
	// their Patch).
	Changes []Change `json:"changes,omitempty"`
	Invoked []Change `json:"-"`
	// Refusals are the invocations whose errors refused the request (failurePolicy Fail), in
	// the order the server lists them in its status's causes: each a Result of ResultError
	// with the error's message (the part after "denied request: "). A refusal the server did
	// not tie to a policy (an internal error returned as it is) is not among them.
	Refusals []Result `json:"refusals,omitempty"`
	// Unknown says why the mutated object is not the one kube-apiserver would have made
	// (empty when it is).
	Unknown string `json:"unknown,omitempty"`
	// OrderDependent says why the object or the refusal may depend on the order
	// kube-apiserver ran the policies in (empty when no order could change it, or every order
	// was tried and agreed); see Evaluator.OrderDependence.
	OrderDependent string `json:"orderDependent,omitempty"`
	// Authorizer lists the checks the policies made through `authorizer` (in another order
	// of the policies too, when OrderDependent was settled by trying them).
	Authorizer []AuthorizerCheck `json:"authorizer,omitempty"`

	// runnable are the policies that may run on the request in some order (see
	// Evaluator.runnable); nil when not worked out (every policy may). explored says every
	// order of them was tried on the whole chain, its reinvocation included, and agreed.
	runnable map[string]bool
	explored bool
	// selected are the policies whose matchConstraints and a binding's matchResources
	// matched the request (Evaluator.runnable); nil when not worked out.
	selected map[string]bool
}

// Selected says whether the policy's matchConstraints and a binding's matchResources matched
// the request, their matchConditions aside, as kube-apiserver's policy matcher says (a
// namespace it cannot read matches): false only when they did not. What else the policy
// reads did not decide the request then; its selectors did.
func (m *Mutation) Selected(policy string) bool {
	return m == nil || m.selected == nil || m.selected[policy]
}

// Acted says whether a policy ran its mutations on the request or refused it.
func (m *Mutation) Acted() bool { return m != nil && (len(m.Invoked) > 0 || !m.Allowed) }

// RequestObject returns the attributes' object as JSON in the version of the request's kind:
// the object as the request's client sees it, whatever version the admission chain holds it
// in (the internal version, in kube-apiserver's handlers). A nil o is the evaluator's own
// ObjectInterfaces.
func (e *Evaluator) RequestObject(a admission.Attributes, o admission.ObjectInterfaces) (json.RawMessage, error) {
	obj := a.GetObject()
	if obj == nil {
		return nil, nil
	}
	if o == nil {
		o = e.oi
	}
	gvk := a.GetKind()
	obj = withKind(obj)
	if obj.GetObjectKind().GroupVersionKind().GroupVersion() != gvk.GroupVersion() {
		out, err := o.GetObjectConvertor().ConvertToVersion(obj.DeepCopyObject(), gvk.GroupVersion())
		if err != nil {
			return nil, fmt.Errorf("converting the object to %s: %w", gvk.GroupVersion(), err)
		}
		obj = out
	} else {
		obj = obj.DeepCopyObject()
	}
	// A patched object may have lost its kind on the way (the dispatcher's conversions).
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return json.Marshal(obj)
}

// withKind returns the object with its kind set when it lost it: the mutating dispatcher's
// patchers decode the patched object into a new typed object of the same Go type without its
// TypeMeta (a JSON patch, an apply configuration; the reinvocation of IfNeeded policies
// patches such an object again), which kube-apiserver's conversions place by their Go type;
// the scheme says the kind of that type. An object the scheme does not know is left as it is.
func withKind(obj runtime.Object) runtime.Object {
	if !obj.GetObjectKind().GroupVersionKind().Empty() {
		return obj
	}
	kinds, _, err := kubescheme.Scheme.ObjectKinds(obj)
	if err != nil || len(kinds) == 0 {
		return obj
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(kinds[0])
	return obj
}

// HasMutatingPolicies says whether the evaluator runs any MutatingAdmissionPolicy.
func (e *Evaluator) HasMutatingPolicies() bool { return len(e.mhooks) > 0 }

// buildMutatingHooks builds the dispatcher's hooks as buildHooks does for validating policies,
// but with one hook per policy and binding (in the order of policy and binding names), so that
// the patchers of each hook know the binding they run for. The dispatcher invokes a policy's
// bindings in the order of its hook's bindings, and hooks in order: the invocations are the
// same. The apiserver orders policies by map iteration.
func buildMutatingHooks(policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding, mapper meta.RESTMapper, store ObjectStore) []mutating.PolicyHook {
	byPolicy := map[string][]*admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	for _, b := range bindings {
		b = b.DeepCopy()
		kubescheme.Scheme.Default(b)
		byPolicy[b.Spec.PolicyName] = append(byPolicy[b.Spec.PolicyName], b)
	}
	sorted := append([]*admissionregistrationv1.MutatingAdmissionPolicy(nil), policies...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var hooks []mutating.PolicyHook
	seen := map[string]bool{}
	views := &paramViews{}
	for _, p := range sorted {
		bs := byPolicy[p.Name]
		if len(bs) == 0 || seen[p.Name] {
			continue
		}
		seen[p.Name] = true
		sort.SliceStable(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
		p = p.DeepCopy()
		kubescheme.Scheme.Default(p)
		base := mutating.PolicyHook{Policy: p}
		var ok bool
		if base.ParamInformer, base.ParamScope, ok, base.ConfigurationError = resolveParamKind(p.Spec.ParamKind, mapper, store, views); !ok {
			continue
		}
		ev := compileMutatingPolicy(p)
		for _, b := range bs {
			hook := base
			hook.Bindings = []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}
			hook.Evaluator = ev
			hook.Evaluator.Mutators = make([]patch.Patcher, len(ev.Mutators))
			for i, m := range ev.Mutators {
				hook.Evaluator.Mutators[i] = recordingPatcher{inner: m, policy: p.Name, binding: b.Name}
			}
			hooks = append(hooks, hook)
		}
	}
	return hooks
}

// compileMutatingPolicy mirrors the unexported compilePolicy of
// k8s.io/apiserver/pkg/admission/plugin/policy/mutating/compilation.go (v0.37.0) line by line.
// Keep it in step with upstream when the pinned k8s.io/apiserver changes.
func compileMutatingPolicy(policy *admissionregistrationv1.MutatingAdmissionPolicy) mutating.PolicyEvaluator {
	opts := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return mutating.PolicyEvaluator{Error: &apiservercel.Error{
			Type:   apiservercel.ErrorTypeInternal,
			Detail: fmt.Sprintf("failed to initialize CEL compiler: %v", err),
		}}
	}
	compiler.CompileAndStoreVariables(convertMutatingVariables(policy.Spec.Variables), opts, environment.StoredExpressions)
	var matcher matchconditions.Matcher
	if mcs := policy.Spec.MatchConditions; len(mcs) > 0 {
		accessors := make([]plugincel.ExpressionAccessor, len(mcs))
		for i := range mcs {
			accessors[i] = (*matchconditions.MatchCondition)(&mcs[i])
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(accessors, opts, environment.StoredExpressions), policy.Spec.FailurePolicy, "policy", "validate", policy.Name)
	}
	var patchers []patch.Patcher
	patchOptions := opts
	patchOptions.HasPatchTypes = true
	for _, m := range policy.Spec.Mutations {
		switch m.PatchType {
		case admissionregistrationv1.PatchTypeJSONPatch:
			if m.JSONPatch != nil {
				accessor := &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}
				patchers = append(patchers, patch.NewJSONPatcher(compiler.CompileMutatingEvaluator(accessor, patchOptions, environment.StoredExpressions)))
			}
		case admissionregistrationv1.PatchTypeApplyConfiguration:
			if m.ApplyConfiguration != nil {
				accessor := &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}
				patchers = append(patchers, patch.NewApplyConfigurationPatcher(compiler.CompileMutatingEvaluator(accessor, patchOptions, environment.StoredExpressions)))
			}
		}
	}
	return mutating.PolicyEvaluator{Matcher: matcher, Mutators: patchers, CompositedCompiler: compiler}
}

func convertMutatingVariables(variables []admissionregistrationv1.Variable) []plugincel.NamedExpressionAccessor {
	if variables == nil {
		return nil
	}
	out := make([]plugincel.NamedExpressionAccessor, len(variables))
	for i, v := range variables {
		out[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	return out
}

// AdmitAttributes runs the MutatingAdmissionPolicies on an admission as the
// MutatingAdmissionPolicy plugin does when kube-apiserver's admission chain calls it: it may
// change the attributes' object in place. It runs once; the chain's reinvocation (a second run
// when a mutation asked for it) is the caller's, as in the apiserver (see Evaluate).
func (e *Evaluator) AdmitAttributes(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) (*Mutation, error) {
	if o == nil {
		o = e.oi
	}
	mut := &Mutation{Allowed: true, Code: http.StatusOK}
	if len(e.mhooks) == 0 || excludedResources.Has(a.GetResource().GroupResource()) {
		return mut, nil
	}
	switch a.GetOperation() {
	case admission.Create, admission.Update, admission.Connect:
	default:
		return mut, nil // the plugin handles no other operation
	}
	m, _ := e.matcher(a)
	mt := &mutationTrace{reinvoke: a.GetReinvocationContext().IsReinvoke()}
	d := mutating.NewDispatcher(recordingAuthorizer{inner: e.authorizer(), checks: &mt.checks}, m, e.typeConverters)
	var runnable []bool
	if e.orderMayMatter || e.refusalsOrdered {
		runnable = e.runnable(a, o, m)
	}
	var before runtime.Object
	if e.explorable(a, e.conditionedOnObject(runnable)) {
		before = a.GetObject().DeepCopyObject()
	}
	err := d.Dispatch(withMutationTrace(ctx, mt), a, o, e.mhooks)
	mt.finish()
	selected := runnable
	if err == nil {
		runnable = e.ranOrObjectConditioned(runnable, mt.invoked)
	}
	mut.Changes, mut.Invoked, mut.Authorizer = mt.changes, mt.invoked, mt.checks
	if err != nil {
		var st *apierrors.StatusError
		if !errors.As(err, &st) {
			st = apierrors.NewInternalError(err)
		}
		s := responsewriters.ErrorToAPIStatus(st)
		mut.Allowed, mut.Code, mut.Reason, mut.Message, mut.Status = false, s.Code, s.Reason, s.Message, s
		mut.Refusals = e.refusals(s, mt.invoked)
		if s.Code == http.StatusServiceUnavailable {
			// The dispatcher found no type converter for the matched kind (a custom
			// resource's): kube-apiserver has one and would have run the policy.
			mut.Unknown = s.Message
		}
	}
	if selected == nil {
		selected = e.runnable(a, o, m)
	}
	mut.selected = map[string]bool{}
	for i, h := range e.mhooks {
		if selected[i] {
			mut.selected[h.Policy.Name] = true
		}
	}
	if runnable != nil {
		mut.runnable = map[string]bool{}
		for i, h := range e.mhooks {
			if runnable[i] {
				mut.runnable[h.Policy.Name] = true
			}
		}
	}
	if mut.OrderDependent = e.OrderDependence(mut); mut.OrderDependent != "" && before != nil && e.explorable(a, runnable) && e.ordersAgree(ctx, a, o, before, runnable, &mut.Authorizer) {
		mut.OrderDependent, mut.explored = "", true
	}
	return mut, nil
}

// refusals are the invocations a mutating refusal's causes name. kube-apiserver's policy
// dispatcher (generic.PolicyError) writes each as "policy 'P' with binding 'B' denied request:
// M"; the param is named when one invocation of P and B ran (the cause does not say which of
// several erred; a match condition's error comes before any).
func (e *Evaluator) refusals(s *metav1.Status, invoked []Change) []Result {
	if s.Details == nil {
		return nil
	}
	var out []Result
causes:
	for _, cause := range s.Details.Causes {
		for _, h := range e.mhooks {
			for _, b := range h.Bindings {
				prefix := fmt.Sprintf("policy '%s' with binding '%s' denied request: ", h.Policy.Name, b.Name)
				msg, ok := strings.CutPrefix(cause.Message, prefix)
				if !ok {
					continue
				}
				res := Result{Policy: h.Policy.Name, Binding: b.Name, Result: ResultError, Message: msg}
				// The param, when one invocation of the policy and binding ran: of several,
				// the cause does not say which erred.
				params := map[string]*ParamRef{}
				for _, c := range invoked {
					if c.Policy == res.Policy && c.Binding == res.Binding {
						params[c.Param.String()] = c.Param
					}
				}
				if len(params) == 1 {
					for _, p := range params {
						res.Param = p
					}
				}
				out = append(out, res)
				continue causes
			}
		}
	}
	return out
}

// runnable says which hooks may run on the request in some order of the policies: their
// policy's matchConstraints and their binding's matchResources match it, by the apiserver's
// policy matcher (their matchConditions, which read the object, may hold in another order).
// A match the matcher cannot decide (a namespace it cannot read) may run.
func (e *Evaluator) runnable(a admission.Attributes, o admission.ObjectInterfaces, m *matching.Matcher) []bool {
	pm := generic.NewPolicyMatcher(m)
	out := make([]bool, len(e.mhooks))
	for i, h := range e.mhooks {
		ok, _, _, err := pm.DefinitionMatches(a, o, mutating.NewMutatingAdmissionPolicyAccessor(h.Policy))
		if err == nil && ok {
			ok, err = pm.BindingMatches(a, o, mutating.NewMutatingAdmissionPolicyBindingAccessor(h.Bindings[0]))
		}
		out[i] = ok || err != nil
	}
	return out
}

// conditionedOnObject is runnable without the hooks that run or not alike in every order
// (orderFree): a copy; nil for nil.
func (e *Evaluator) conditionedOnObject(runnable []bool) []bool {
	if runnable == nil {
		return nil
	}
	out := slices.Clone(runnable)
	for i, h := range e.mhooks {
		out[i] = out[i] && !e.orderFree(h)
	}
	return out
}

// ranOrObjectConditioned is runnable without the order-free hooks (orderFree) that did not run
// (invoked, by a dispatch that ran every hook): what kept them from running (a match
// condition false on the request, the params, the authorizer; a param not found) is the same
// in every order (a copy).
func (e *Evaluator) ranOrObjectConditioned(runnable []bool, invoked []Change) []bool {
	if runnable == nil {
		return nil
	}
	out := slices.Clone(runnable)
	for i, h := range e.mhooks {
		if out[i] && e.orderFree(h) {
			out[i] = slices.ContainsFunc(invoked, func(c Change) bool { return c.Policy == h.Policy.Name && c.Binding == h.Bindings[0].Name })
		}
	}
	return out
}

// orderFree says whether the hook runs or not cannot depend on what the hooks before it
// changed: neither its policy's matchConditions nor an objectSelector (its policy's or its
// binding's, which the dispatcher matches on the object as the hooks before it left it) read
// the object.
func (e *Evaluator) orderFree(h mutating.PolicyHook) bool {
	if e.mpolicies[h.Policy.Name].conditionsReadObject {
		return false
	}
	if mc := h.Policy.Spec.MatchConstraints; mc != nil && !emptySelector(mc.ObjectSelector) {
		return false
	}
	mr := h.Bindings[0].Spec.MatchResources
	return mr == nil || emptySelector(mr.ObjectSelector)
}

// emptySelector says whether a label selector selects every object.
func emptySelector(s *metav1.LabelSelector) bool {
	return s == nil || len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
}

// maxExploredHooks bounds the policies and bindings whose orders ordersAgree tries (4! = 24).
const maxExploredHooks = 4

// explorable says whether ordersAgree can try the other orders of the policies on the
// admission: a first pass of the chain, with few enough policies and bindings that may run on
// it (runnable), each with one param at most.
func (e *Evaluator) explorable(a admission.Attributes, runnable []bool) bool {
	if !e.orderMayMatter || runnable == nil || a.GetObject() == nil || a.GetReinvocationContext().IsReinvoke() {
		return false
	}
	n := 0
	for i, h := range e.mhooks {
		if !runnable[i] {
			continue
		}
		n++
		if ref := h.Bindings[0].Spec.ParamRef; ref != nil && ref.Name == "" {
			return false // params by selector: their order is the param informer's
		}
	}
	return n <= maxExploredHooks
}

// ordersAgree runs the policies that may run on the request (runnable) in every order of their
// hooks (each a policy and binding), the chain's reinvocation of IfNeeded policies included, on
// copies of the object they received (before), and says whether every order makes the same
// object and the same refusal: kube-apiserver's order, which follows its informer caches, cannot
// matter then. (The params of a binding run in the order of its param informer, which this does
// not try: explorable leaves out bindings that select params.) The authorizer checks of the
// other orders go to checks.
func (e *Evaluator) ordersAgree(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces, before runtime.Object, runnable []bool, checks *[]AuthorizerCheck) bool {
	m, _ := e.matcher(a)
	var order []int
	for i := range e.mhooks {
		if runnable[i] {
			order = append(order, i)
		}
	}
	// chain runs the policies in the order of the hooks, and again for a reinvocation.
	chain := func(perm []int, checks *[]AuthorizerCheck) (object []byte, refusal string, ok bool) {
		hooks := make([]mutating.PolicyHook, len(perm))
		for i, j := range perm {
			hooks[i] = e.mhooks[j]
		}
		copied := admission.NewAttributesRecord(before.DeepCopyObject(), a.GetOldObject(), a.GetKind(), a.GetNamespace(), a.GetName(),
			a.GetResource(), a.GetSubresource(), a.GetOperation(), a.GetOperationOptions(), a.IsDryRun(), a.GetUserInfo())
		d := mutating.NewDispatcher(recordingAuthorizer{inner: e.authorizer(), checks: checks}, m, e.typeConverters)
		err := d.Dispatch(ctx, copied, o, hooks)
		if rc := copied.GetReinvocationContext(); err == nil && rc.ShouldReinvoke() {
			rc.SetIsReinvoke()
			err = d.Dispatch(ctx, copied, o, hooks)
		}
		got, merr := json.Marshal(withKind(copied.GetObject()))
		return got, errorText(err), merr == nil
	}
	want, wantErr, ok := chain(order, new([]AuthorizerCheck)) // the order they ran in, whose checks are the mutation's
	if !ok {
		return false
	}
	agree := true
	permute(order, 0, func(perm []int) bool {
		if slices.IsSorted(perm) {
			return true // the order the policies ran in
		}
		got, gotErr, ok := chain(perm, checks)
		agree = ok && gotErr == wantErr && bytes.Equal(got, want)
		return agree
	})
	return agree
}

// permute calls fn with every permutation of order[k:] (order[:k] fixed) until fn returns false.
func permute(order []int, k int, fn func([]int) bool) bool {
	if k == len(order) {
		return fn(order)
	}
	for i := k; i < len(order); i++ {
		order[k], order[i] = order[i], order[k]
		ok := permute(order, k+1, fn)
		order[k], order[i] = order[i], order[k]
		if !ok {
			return false
		}
	}
	return true
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// admit runs the MutatingAdmissionPolicies with the admission chain's reinvocation: when a
// mutation asked for it, the chain runs once more (reinvoker in k8s.io/apiserver/pkg/admission).
func (e *Evaluator) admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) (*Mutation, error) {
	mut, err := e.AdmitAttributes(ctx, a, o)
	if err != nil || !mut.Allowed {
		return mut, err
	}
	if rc := a.GetReinvocationContext(); rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		again, err := e.AdmitAttributes(ctx, a, o)
		if err != nil {
			return nil, err
		}
		mut = e.Then(mut, again)
	}
	return mut, nil
}

// Notes are the notes a decision carries for what the MutatingAdmissionPolicies did: when
// the mutated object may depend on the order the policies ran in, and when it depended on the
// configured authorizer.
func (m *Mutation) Notes() []string {
	if m == nil {
		return nil
	}
	var notes []string
	if m.OrderDependent != "" {
		notes = append(notes, "the mutated object may depend on the order kube-apiserver runs MutatingAdmissionPolicies in (informer-cache order, not the names vapc runs them by): "+m.OrderDependent)
	}
	if n := len(Configured(m.Authorizer)); n > 0 {
		notes = append(notes, fmt.Sprintf("the mutation depended on the authorizer, which vapc answers from its configuration (%d checks)", n))
	}
	return notes
}

// Then returns what the two passes of an admission chain did together: m, then next (the
// chain's reinvocation). A nil m is next.
func (e *Evaluator) Then(m, next *Mutation) *Mutation {
	if m == nil {
		return next
	}
	out := *next
	out.Changes = append(append([]Change(nil), m.Changes...), next.Changes...)
	out.Invoked = append(append([]Change(nil), m.Invoked...), next.Invoked...)
	out.Authorizer = append(append([]AuthorizerCheck(nil), m.Authorizer...), next.Authorizer...)
	if out.Unknown == "" {
		out.Unknown = m.Unknown
	}
	if m.runnable != nil && next.runnable != nil {
		out.runnable = maps.Clone(m.runnable)
		maps.Copy(out.runnable, next.runnable)
	} else {
		out.runnable = nil
	}
	if m.selected != nil && next.selected != nil {
		out.selected = maps.Clone(m.selected)
		maps.Copy(out.selected, next.selected)
	} else {
		out.selected = nil
	}
	switch {
	case m.explored:
		out.OrderDependent, out.explored = "", true // the first pass tried the whole chain
	case len(m.Changes) > 0 && len(next.Changes) > 0:
		out.OrderDependent = e.OrderDependence(&out) // the passes' changes together
	case len(m.Changes) > 0:
		out.OrderDependent = m.OrderDependent
	}
	return &out
}

// OrderDependence says why the object the changes made may depend on the order the policies
// ran in, or "". kube-apiserver runs MutatingAdmissionPolicies, and the bindings and params of
// each, in the order of its informer caches (Go map iteration), which nothing outside the
// server determines; vapc runs them by policy and binding name. The order cannot matter when
// no two invocations write overlapping fields and no policy reads a field another invocation
// wrote (whether or not that policy ran: in another order its match conditions might have
// held).
func (e *Evaluator) OrderDependence(m *Mutation) string {
	if m == nil {
		return ""
	}
	if !m.Allowed && e.refusalsOrdered && refusalsOrdered(invokedOnce(runnableInfos(e.mpolicies, m.runnable), m)) {
		return "a mutating policy refused the request, and one reads what another may write: in another order it may have passed"
	}
	if len(m.Changes) == 0 {
		return ""
	}
	changes := m.Changes
	key := func(c Change) string { return c.Policy + "\x00" + c.Binding + "\x00" + c.Param.String() }
	changed := map[string][]write{}
	for _, c := range changes {
		changed[key(c)] = append(changed[key(c)], refine(patchWrites(c.Patch), e.mpolicies[c.Policy].writes)...)
	}
	// What each invocation that ran may have written: what it changed, and what its
	// mutations write at all (one that set a field to the value it had changed nothing here,
	// but would overwrite another's value in another order).
	invoked := m.Invoked
	if len(invoked) == 0 {
		invoked = changes
	}
	writes := make([][]write, len(invoked))
	for i, c := range invoked {
		writes[i] = changed[key(c)]
		for _, w := range e.mpolicies[c.Policy].writes {
			writes[i] = append(writes[i], write{u: w})
		}
	}
	for i, c := range invoked {
		for j := i + 1; j < len(invoked); j++ {
			d := invoked[j]
			if key(d) == key(c) || len(changed[key(c)]) == 0 && len(changed[key(d)]) == 0 {
				continue // the same invocation, or neither changed the object
			}
			for _, w := range writes[j] {
				for _, v := range writes[i] {
					if v.affects(vapccel.Read{Path: w.u.Path}) && w.affects(vapccel.Read{Path: v.u.Path}) {
						return fmt.Sprintf("%s and %s both write %s", describeInvocation(c), describeInvocation(d), w.u.Path)
					}
				}
			}
		}
	}
	// The policies that may run on the request in some order: their binding matches it.
	names := slices.Sorted(maps.Keys(runnableInfos(e.mpolicies, m.runnable)))
	for _, c := range changes {
		for _, name := range names {
			info := e.mpolicies[name]
			if name == c.Policy && !info.inOrder(name, m) {
				continue // a policy's own single invocation: the same in any order
			}
			if rd, ok := readOf(info.reads, changed[key(c)]); ok {
				return fmt.Sprintf("policy %s reads %s, which %s wrote", name, rd, describeInvocation(c))
			}
		}
	}
	return ""
}

// runnableInfos are the infos of the policies that may run on a request (runnable; all of them
// when nil).
func runnableInfos(infos map[string]mutatingInfo, runnable map[string]bool) map[string]mutatingInfo {
	if runnable == nil {
		return infos
	}
	out := map[string]mutatingInfo{}
	for name, info := range infos {
		if runnable[name] {
			out[name] = info
		}
	}
	return out
}

// write is a field an invocation wrote; created is set for a map or list the change created
// (an apply configuration's labels on an object without labels), which holds only the keys
// the mutation writes: what it holds besides is the same in any order.
type write struct {
	u       vapccel.Unknown
	created bool
}

// affects says whether the write can change what the read reads: an overlapping field, or,
// as a write may create the fields above it, their presence and keys (metadata always is).
func (w write) affects(r vapccel.Read) bool {
	if w.created && len(r.Path.Steps) > len(w.u.Path.Steps) {
		return false
	}
	if _, _, ok := (vapccel.Reads{Reads: []vapccel.Read{r}}).DependsOn([]vapccel.Unknown{w.u}); ok {
		return true
	}
	above := r.Path.Root == w.u.Path.Root && len(r.Path.Steps) < len(w.u.Path.Steps) && slices.Equal(r.Path.Steps, w.u.Path.Steps[:len(r.Path.Steps)])
	return above && (r.Kind == vapccel.ReadPresence || r.Kind == vapccel.ReadChildren) && !slices.Equal(r.Path.Steps, []string{"metadata"}) && len(r.Path.Steps) > 0
}

// readOf returns a read of reads that a write affects.
func readOf(reads vapccel.Reads, writes []write) (string, bool) {
	if reads.All != "" && len(writes) > 0 {
		return "any field (" + reads.All + ")", true
	}
	for _, r := range reads.Reads {
		for _, w := range writes {
			if w.affects(r) {
				return r.Path.String(), true
			}
		}
	}
	return "", false
}

// refine narrows the fields a change wrote by what its policy's mutations write: a patch that
// adds a whole labels map because the object had none created the map (its presence and keys
// changed) and wrote the labels the mutation sets, not every label.
func refine(changed, static []vapccel.Unknown) []write {
	var out []write
	for _, c := range changed {
		n := len(out)
		for _, w := range static {
			if w.Path.Root == c.Path.Root && len(w.Path.Steps) > len(c.Path.Steps) && slices.Equal(w.Path.Steps[:len(c.Path.Steps)], c.Path.Steps) {
				out = append(out, write{u: w})
			}
		}
		if len(out) > n {
			out = append(out, write{u: c, created: true})
		} else {
			out = append(out, write{u: c})
		}
	}
	return out
}

// orderMayMatter says whether the order the policies run in may matter at all: one reads, or
// needs to exist where it writes, what another may write, or two write one field. When it
// does not, no change or refusal depends on the order.
func orderMayMatter(infos map[string]mutatingInfo) bool {
	for a, ia := range infos {
		for b, ib := range infos {
			if a == b {
				continue
			}
			for _, w := range ib.writes {
				for _, v := range ia.writes {
					if (write{u: v}).affects(vapccel.Read{Path: w.Path}) {
						return true
					}
				}
			}
		}
	}
	return refusalsOrdered(infos)
}

// refusalsOrdered says whether a refusal by one of the policies may depend on the order they
// run in: one reads, or needs to exist where it writes, what another may write.
func refusalsOrdered(infos map[string]mutatingInfo) bool {
	for a, ia := range infos {
		reads := ia.reads
		for _, w := range ia.writes {
			if n := len(w.Path.Steps); n > 0 {
				reads.Reads = append(reads.Reads, vapccel.Read{Path: vapccel.FieldPath{Root: w.Path.Root, Steps: w.Path.Steps[:n-1]}, Kind: vapccel.ReadPresence})
			}
		}
		for b, ib := range infos {
			if a == b && !ia.invokedInOrder {
				continue
			}
			var ws []write
			for _, w := range ib.writes {
				ws = append(ws, write{u: w})
			}
			if _, ok := readOf(reads, ws); ok {
				return true
			}
		}
	}
	return false
}

// mutatingInfo is what a mutating policy reads and may write, and whether it is invoked more
// than once in an order kube-apiserver's informers choose (several bindings, or a binding that
// selects params).
type mutatingInfo struct {
	reads          vapccel.Reads
	writes         []vapccel.Unknown
	invokedInOrder bool
	// conditionsReadObject says the policy's match conditions may read the object (or
	// oldObject): whether one of its invocations runs may depend on what another wrote.
	conditionsReadObject bool
}

// inOrder says whether the policy (name, of info) was invoked on the request in an order its
// informers choose: more than once (several bindings, or a binding whose selector picked
// several params). One whose selector may pick several ran once here when every invocation ran
// (the request was admitted, or refused by the policies' errors, which the dispatcher gathers
// after running them all; a StatusError stops it at once) and its match conditions, which
// would skip a param in one order and not another, read nothing of the object.
func (info mutatingInfo) inOrder(name string, m *Mutation) bool {
	if !info.invokedInOrder || info.conditionsReadObject || !m.Allowed && len(m.Refusals) == 0 {
		return info.invokedInOrder
	}
	invoked := m.Invoked
	if len(invoked) == 0 {
		invoked = m.Changes
	}
	seen := map[string]bool{} // the invocations that ran, a reinvocation not counted again
	for _, c := range invoked {
		if c.Policy == name {
			seen[c.Binding+"\x00"+c.Param.String()] = true
		}
	}
	return len(seen) > 1
}

// invokedOnce returns the infos with invokedInOrder as the request shows it (see inOrder).
func invokedOnce(infos map[string]mutatingInfo, m *Mutation) map[string]mutatingInfo {
	out := make(map[string]mutatingInfo, len(infos))
	for name, info := range infos {
		info.invokedInOrder = info.inOrder(name, m)
		out[name] = info
	}
	return out
}

// conditionsReadObject says whether a policy's match conditions may read object or oldObject.
func conditionsReadObject(p *admissionregistrationv1.MutatingAdmissionPolicy) bool {
	var exprs []string
	for _, c := range p.Spec.MatchConditions {
		exprs = append(exprs, c.Expression)
	}
	if len(exprs) == 0 {
		return false
	}
	_, _, dep := vapccel.ExpressionReads(nil, exprs...).DependsOn([]vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object"}}, {Path: vapccel.FieldPath{Root: "oldObject"}}})
	return dep
}

// mutatingInfos returns the mutatingInfo of the hooks' policies.
func mutatingInfos(hooks []mutating.PolicyHook, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) map[string]mutatingInfo {
	out := map[string]mutatingInfo{}
	for _, h := range hooks {
		name := h.Policy.Name
		info, seen := out[name]
		if !seen {
			info = mutatingInfo{reads: vapccel.MutatingPolicyReads(h.Policy, bindings), writes: staticWrites(h.Policy), conditionsReadObject: conditionsReadObject(h.Policy)}
		}
		ref := h.Bindings[0].Spec.ParamRef
		info.invokedInOrder = info.invokedInOrder || seen || ref != nil && ref.Name == ""
		out[name] = info
	}
	return out
}

// staticWrites are the fields a policy's mutations may write, or all of object when one
// cannot be told.
func staticWrites(p *admissionregistrationv1.MutatingAdmissionPolicy) []vapccel.Unknown {
	var out []vapccel.Unknown
	for _, mu := range p.Spec.Mutations {
		ws, all := vapccel.MutationWrites(mu)
		if all != "" {
			return []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object"}}}
		}
		for _, w := range ws {
			out = append(out, vapccel.Unknown{Path: w})
		}
	}
	return out
}

func describeInvocation(c Change) string {
	s := fmt.Sprintf("policy %s (binding %s", c.Policy, c.Binding)
	if c.Param != nil {
		s += ", param " + c.Param.String()
	}
	return s + ")"
}

// patchWrites are the fields of object a JSON patch writes, list indices as any element.
func patchWrites(patch []byte) []vapccel.Unknown {
	var ops []struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		return []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object"}}}
	}
	out := make([]vapccel.Unknown, 0, len(ops))
	for _, op := range ops {
		p := vapccel.FieldPath{Root: "object"}
		for _, seg := range strings.Split(strings.TrimPrefix(op.Path, "/"), "/") {
			if seg == "" {
				continue
			}
			if _, err := strconv.Atoi(seg); err == nil {
				seg = vapccel.AnyStep
			}
			p.Steps = append(p.Steps, strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~"))
		}
		out = append(out, vapccel.Unknown{Path: p})
	}
	return out
}

// recordingPatcher passes every call to the apiserver's patcher and records, in the request's
// mutation trace, the object before each invocation of its policy and binding.
type recordingPatcher struct {
	inner           patch.Patcher
	policy, binding string
}

func (p recordingPatcher) Patch(ctx context.Context, req patch.Request, budget int64) (runtime.Object, error) {
	if mt := mutationTraceFrom(ctx); mt != nil {
		mt.begin(p.policy, p.binding, req)
	}
	return p.inner.Patch(ctx, req, budget)
}

// mutationTrace records the object before each invocation and makes the change of the previous
// invocation when the next one begins (or the dispatch ends): the dispatcher defaults the
// patched object after each patch, so an invocation's result is final only then.
type mutationTrace struct {
	reinvoke bool
	invoked  []Change
	pending  *pendingChange
	changes  []Change
	checks   []AuthorizerCheck
}

type pendingChange struct {
	change Change
	attrs  *admission.VersionedAttributes
	before []byte
}

type mutationTraceKey struct{}

func withMutationTrace(ctx context.Context, t *mutationTrace) context.Context {
	return context.WithValue(ctx, mutationTraceKey{}, t)
}

func mutationTraceFrom(ctx context.Context) *mutationTrace {
	t, _ := ctx.Value(mutationTraceKey{}).(*mutationTrace)
	return t
}

func (t *mutationTrace) begin(policy, binding string, req patch.Request) {
	c := Change{Policy: policy, Binding: binding, Param: paramRef(req.OptionalVariables.VersionedParams), Reinvoked: t.reinvoke}
	if p := t.pending; p != nil && p.change.Policy == c.Policy && p.change.Binding == c.Binding && p.change.Param.String() == c.Param.String() {
		return // the next mutation of the same invocation
	}
	t.finish()
	t.invoked = append(t.invoked, c)
	// The server's object was defaulted when it was decoded; the dispatcher defaults every
	// patched object: what defaulting adds to an object that was not is not the policy's.
	obj := req.VersionedAttributes.VersionedObject.Object()
	if obj != nil {
		obj = obj.DeepCopyObject()
		req.ObjectInterfaces.GetObjectDefaulter().Default(obj)
	}
	before, _ := json.Marshal(obj)
	t.pending = &pendingChange{change: c, attrs: req.VersionedAttributes, before: before}
}

func (t *mutationTrace) finish() {
	p := t.pending
	if p == nil {
		return
	}
	t.pending = nil
	after, err := json.Marshal(p.attrs.VersionedObject.Object())
	if err != nil {
		return
	}
	if bytes.Equal(p.before, after) {
		return
	}
	ops, err := jsonPatchBetween(p.before, after)
	if err != nil || len(ops) == 0 {
		return
	}
	p.change.Patch = ops
	t.changes = append(t.changes, p.change)
}

// typeConverters answer the mutating dispatcher's type converter requests with the
// structured-merge-diff types of the built-in kinds, from the catalog's embedded OpenAPI (as
// the apiserver's own OpenAPI v3 gives them), and of the custom resources of the catalog's
// CRDs, from the OpenAPI v3 the apiserver publishes for them (the server then defaults the
// object by its structural schema after each patch: the evaluator's defaulter, see
// schema.Catalog.CustomResourceDefaulter). One the catalog has no CRD of gets none: the
// dispatcher then fails the mutation (503) as the server does while a CRD's schema is not yet
// known, and AdmitAttributes says the result is not known.
type typeConverters struct{ cat *vapcschema.Catalog }

var _ patch.TypeConverterManager = typeConverters{}

// CatalogHolder is a Resources backed by a catalog, whose CRDs give the type converters of
// custom resources (replay's resources wrap the replay's catalog).
type CatalogHolder interface {
	Catalog() *vapcschema.Catalog
}

// CatalogOf is the catalog behind resources: itself, or a CatalogHolder's; nil when none.
func CatalogOf(r Resources) *vapcschema.Catalog {
	switch t := r.(type) {
	case *vapcschema.Catalog:
		return t
	case CatalogHolder:
		return t.Catalog()
	}
	return nil
}

func newTypeConverters(r Resources) (typeConverters, error) {
	if cat := CatalogOf(r); cat != nil {
		return typeConverters{cat}, nil
	}
	cat, err := vapcschema.Builtin(KubernetesVersion)
	return typeConverters{cat}, err
}

func (typeConverters) Run(context.Context) {}

func (c typeConverters) GetTypeConverter(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	if !kubescheme.Knows(gvk) {
		// The dispatcher's defaulter applies the schema's defaults (see defaulter).
		tc, ok, err := c.cat.CustomTypeConverter(gvk)
		if !ok || err != nil {
			return nil
		}
		return tc
	}
	tc, err := c.cat.TypeConverter(gvk.GroupVersion()) // cached by the catalog
	if err != nil {
		return nil
	}
	return tc
}
