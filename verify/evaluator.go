package verify

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/defaults"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
)

// KubernetesVersion is the only Kubernetes minor the evaluator decides as: the minor of the
// k8s.io/apiserver library it calls.
const KubernetesVersion = "1.37"

// Evaluator decides admission requests against a fixed set of policies and bindings as
// kube-apiserver does. It is safe for concurrent use.
type Evaluator struct {
	resources          Resources
	store              ObjectStore
	authz              authorizer.UnconditionalAuthorizer
	implicitNamespaces bool
	dropUnknown        bool
	oi                 objectInterfaces

	hooks  []validating.PolicyHook
	byName map[string]*validating.PolicyHook

	mutatingPolicies []*admissionregistrationv1.MutatingAdmissionPolicy
	mutatingBindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	mhooks           []mutating.PolicyHook
	typeConverters   typeConverters
	// mpolicies says, of each mutating policy by name, what it reads and writes, for
	// OrderDependence.
	mpolicies map[string]mutatingInfo
	// refusalsOrdered says whether a mutating policy's refusal may depend on their order,
	// orderMayMatter whether anything they do may (see orderMayMatter).
	refusalsOrdered, orderMayMatter bool
	// mapOrder names the audit annotations and messageExpressions whose values may follow the
	// order CEL iterates a map in (WithMapOrder).
	mapOrder vapccel.MapOrder
	// answer, when set, answers every check of the configured authorizer
	// (AnsweringChecks).
	answer func(AuthorizerCheck) authorizer.Decision
}

// AnsweringChecks runs f with each check the configured authorizer answers (those of members
// of system:masters excepted) answered by answer, given the check as asked
// (AuthorizerCheck.Asked): for a caller that does not know the authorizer's answers and asks
// whether they change a decision, each check on its own (RBAC may allow a user to get secrets
// and not to delete them). The Evaluator must not be used concurrently while f runs; it may
// be called within another's f, and restores that one's answers.
func (e *Evaluator) AnsweringChecks(answer func(AuthorizerCheck) authorizer.Decision, f func()) {
	prev := e.answer
	e.answer = answer
	defer func() { e.answer = prev }()
	f()
}

// authorizer is the authorizer the policies' checks ask: the configured one, or the answers
// AnsweringChecks gives.
func (e *Evaluator) authorizer() authorizer.UnconditionalAuthorizer {
	if e.answer != nil {
		return answeringAuthorizer(e.answer)
	}
	return e.authz
}

// answeringAuthorizer answers a check as the function does.
type answeringAuthorizer func(AuthorizerCheck) authorizer.Decision

func (f answeringAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	return f(checkOf(a)), "vapc: an answer the replay tries", nil
}

// WithMapOrder names the audit annotations and validations' messageExpressions, by policy
// name, whose values may list a map's keys in the order CEL iterates the map (vapc check's
// lint, cel.MapOrderMessage): kube-apiserver iterates in Go's map order, which changes from
// request to request, so their values are the server's chance. The Evaluator evaluates a
// decision that holds such a value again, to find the order the server took, as far as the
// caller knows it (WithMessageOrder), or to see the value change: such an audit annotation is
// then in UnknownAnnotations, with a note, not in AuditAnnotations, and such a failure
// message makes the decision's ByChance.
func WithMapOrder(m vapccel.MapOrder) Option {
	return func(e *Evaluator) error { e.mapOrder = m; return nil }
}

// Option configures an Evaluator.
type Option func(*Evaluator) error

// WithResources sets the cluster's API (default: the built-in APIs of Kubernetes 1.37, a
// *schema.Catalog; pass one with CRDs added for custom resources).
func WithResources(r Resources) Option {
	return func(e *Evaluator) error { e.resources = r; return nil }
}

// WithStore sets the cluster objects decisions read (params, namespaces); default an empty
// MemoryStore.
func WithStore(s ObjectStore) Option {
	return func(e *Evaluator) error { e.store = s; return nil }
}

// WithAuthorizer sets what the `authorizer` of policies answers; default DenyAll.
func WithAuthorizer(a authorizer.UnconditionalAuthorizer) Option {
	return func(e *Evaluator) error { e.authz = a; return nil }
}

// WithKubernetesVersion refuses any version but KubernetesVersion: the evaluator runs the
// apiserver code it is built with and cannot decide as another version would.
func WithKubernetesVersion(v string) Option {
	return func(*Evaluator) error { return CheckKubernetesVersion(v) }
}

// CheckKubernetesVersion reports an error unless v names KubernetesVersion ("1.37" or
// "v1.37").
func CheckKubernetesVersion(v string) error {
	if v != KubernetesVersion && v != "v"+KubernetesVersion {
		return fmt.Errorf("vapc evaluates policies as kube-apiserver %s (the k8s.io/apiserver it is built with), not %s", KubernetesVersion, v)
	}
	return nil
}

// WithImplicitNamespaces says whether a request in a namespace the store does not hold sees a
// namespace of that name with only the labels every namespace has (default true): in a real
// cluster the namespace of a namespaced object always exists. When false, such a request fails
// as it would if the namespace were missing from the apiserver.
func WithImplicitNamespaces(on bool) Option {
	return func(e *Evaluator) error { e.implicitNamespaces = on; return nil }
}

// WithDropUnknownFields says whether the fields of a request's objects that their kind does not
// have are dropped, as the apiserver's decoder drops them before admission when a request does
// not ask for strict field validation (default false: such fields are an error, so that a typo
// in a test's object is not silently ignored). Replays of audit logs drop them: the server
// decided on what it decoded. Objects are always as they would be stored: a field an object
// cannot hold never reaches CEL.
func WithDropUnknownFields(on bool) Option {
	return func(e *Evaluator) error { e.dropUnknown = on; return nil }
}

// New compiles the policies and binds them. Policies and bindings are defaulted as the
// apiserver defaults them when it stores them (their originals are not changed). A binding of a
// policy that is not given is ignored, and a policy without bindings is never evaluated, as in
// the apiserver.
func New(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, opts ...Option) (*Evaluator, error) {
	e := &Evaluator{implicitNamespaces: true}
	for _, o := range opts {
		if err := o(e); err != nil {
			return nil, err
		}
	}
	if e.resources == nil {
		cat, err := vapcschema.Builtin(KubernetesVersion)
		if err != nil {
			return nil, err
		}
		e.resources = cat
	}
	if e.store == nil {
		var opts []StoreOption
		if e.dropUnknown {
			opts = append(opts, StoreDropUnknownFields())
		}
		e.store = NewMemoryStore(e.resources.RESTMapper(), opts...)
	}
	if e.authz == nil {
		e.authz = DenyAll()
	}
	e.oi = objectInterfaces{resources: e.resources}
	e.hooks = buildHooks(policies, bindings, e.resources.RESTMapper(), e.store)
	e.byName = map[string]*validating.PolicyHook{}
	for i := range e.hooks {
		e.byName[e.hooks[i].Policy.Name] = &e.hooks[i]
	}
	e.mhooks = buildMutatingHooks(e.mutatingPolicies, e.mutatingBindings, e.resources.RESTMapper(), e.store)
	if len(e.mhooks) > 0 {
		e.mpolicies = mutatingInfos(e.mhooks, e.mutatingBindings)
		e.refusalsOrdered = refusalsOrdered(e.mpolicies)
		e.orderMayMatter = len(e.mhooks) > 1 && orderMayMatter(e.mpolicies)
		var err error
		if e.typeConverters, err = newTypeConverters(e.resources); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// buildHooks mirrors calculatePolicyData and ensureParamsForPolicyLocked of
// k8s.io/apiserver/pkg/admission/plugin/policy/generic/policy_source.go: bindings grouped by
// policy name, bindings of missing policies skipped, a policy with an unparsable paramKind
// apiVersion skipped, and a paramKind without a resource a configuration error of the hook.
// The apiserver orders hooks and bindings by map iteration (random); vapc orders both by name.
func buildHooks(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, mapper meta.RESTMapper, store ObjectStore) []validating.PolicyHook {
	byPolicy := map[string][]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	for _, b := range bindings {
		b = b.DeepCopy()
		defaults.SetBindingDefaults(b)
		byPolicy[b.Spec.PolicyName] = append(byPolicy[b.Spec.PolicyName], b)
	}
	sorted := append([]*admissionregistrationv1.ValidatingAdmissionPolicy(nil), policies...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var hooks []validating.PolicyHook
	seen := map[string]bool{}
	views := &paramViews{} // shared by the hooks: one conversion per stored param
	for _, p := range sorted {
		bs := byPolicy[p.Name]
		if len(bs) == 0 || seen[p.Name] {
			continue
		}
		seen[p.Name] = true
		sort.SliceStable(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
		p = p.DeepCopy()
		defaults.SetPolicyDefaults(p)
		hook := validating.PolicyHook{Policy: p, Bindings: bs}
		var ok bool
		if hook.ParamInformer, hook.ParamScope, ok, hook.ConfigurationError = resolveParamKind(p.Spec.ParamKind, mapper, store, views); !ok {
			continue
		}
		hooks = append(hooks, hook)
	}
	// Each policy compiled on its own, on every core, as the apiserver's policy source
	// compiles each policy apart (compilePolicy): most of a replay's set-up before its first
	// event. A panic goes on in the caller's goroutine, as if compiled there.
	var wg sync.WaitGroup
	panics := make([]any, len(hooks))
	for i := range hooks {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			hooks[i].Evaluator = compilePolicy(hooks[i].Policy)
		})
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	return hooks
}

// resolveParamKind resolves a policy's paramKind as ensureParamsForPolicyLocked does: the
// param informer and scope, or the hook's configuration error when the kind has no resource.
// ok is false when the apiVersion does not parse: the apiserver logs "failed to parse paramKind
// APIVersion" and skips the policy.
func resolveParamKind(pk *admissionregistrationv1.ParamKind, mapper meta.RESTMapper, store ObjectStore, views *paramViews) (informers.GenericInformer, meta.RESTScope, bool, error) {
	if pk == nil {
		return nil, nil, true, nil
	}
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return nil, nil, false, nil
	}
	gvk := gv.WithKind(pk.Kind)
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, nil, true, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
	}
	return storeInformer{store: store, gvr: mapping.Resource, gvk: gvk, paramCache: views}, mapping.Scope, true, nil
}

// excludedResources are the resources kube-apiserver keeps from every admission policy (its
// admission initializer gives the policy plugins exclusion.Excluded(), the non-persisted
// reviews) and the admission configuration resources API-defined policies never see
// (generic/plugin.go admissionResources).
var excludedResources = sets.New(append(exclusion.Excluded(),
	schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingadmissionpolicies"},
	schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingadmissionpolicybindings"},
	schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "mutatingadmissionpolicies"},
	schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "mutatingadmissionpolicybindings"},
)...)

// Excluded says whether kube-apiserver keeps requests for the resource from every admission
// policy the API defines (excludedResources): none matches them.
func Excluded(gr schema.GroupResource) bool { return excludedResources.Has(gr) }

// Evaluate decides the request: the MutatingAdmissionPolicies change its object first (see
// WithMutatingPolicies), then the request's BeforeValidation prepares it as the handler's
// store does, then the validating policies decide on the result. The error is about
// the request itself (an unknown resource, an object of the wrong kind); a denial is a
// Decision.
func (e *Evaluator) Evaluate(ctx context.Context, req Request) (*Decision, error) {
	attrs, err := e.attributes(req)
	if err != nil {
		return nil, err
	}
	prepare := func() error {
		if req.BeforeValidation == nil {
			return nil
		}
		return req.BeforeValidation(attrs.GetObject(), attrs.GetOldObject())
	}
	if len(e.mhooks) == 0 {
		if err := prepare(); err != nil {
			return nil, err
		}
		return e.EvaluateAttributes(ctx, attrs, nil)
	}
	mut, err := e.admit(ctx, attrs, nil)
	if err != nil {
		return nil, err
	}
	var dec *Decision
	if !mut.Allowed {
		dec = &Decision{Code: mut.Code, Reason: mut.Reason, Message: mut.Message, Status: mut.Status}
	} else if err := prepare(); err != nil {
		return nil, err
	} else if dec, err = e.EvaluateAttributes(ctx, attrs, nil); err != nil {
		return nil, err
	}
	dec.Mutation = mut
	if len(mut.Changes) > 0 {
		if dec.Object, err = e.RequestObject(attrs, nil); err != nil {
			return nil, err
		}
	}
	dec.Notes = append(dec.Notes, mut.Notes()...)
	return dec, nil
}

// EvaluateValidating decides the request with the validating policies alone, on its object as
// given: for an object that already holds what the MutatingAdmissionPolicies changed (the
// object a server stored).
func (e *Evaluator) EvaluateValidating(ctx context.Context, req Request) (*Decision, error) {
	attrs, err := e.attributes(req)
	if err != nil {
		return nil, err
	}
	return e.EvaluateAttributes(ctx, attrs, nil)
}

// EvaluateAttributes decides an admission as the ValidatingAdmissionPolicy plugin decides it
// when kube-apiserver's handlers call validating admission: the attributes as the handler
// built them (objects in the internal version for built-in kinds) and the request scope's
// ObjectInterfaces, which convert them to the version each policy matched. A nil o is the
// evaluator's own ObjectInterfaces.
func (e *Evaluator) EvaluateAttributes(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) (*Decision, error) {
	if o == nil {
		o = e.oi
	}
	attrs, ok := a.(*recordingAttributes)
	if !ok {
		attrs = &recordingAttributes{Attributes: a}
	}
	if excludedResources.Has(attrs.GetResource().GroupResource()) {
		return &Decision{Allowed: true, Code: http.StatusOK, Notes: []string{
			fmt.Sprintf("kube-apiserver evaluates no ValidatingAdmissionPolicy on %s", attrs.GetResource().GroupResource()),
		}}, nil
	}

	dec, err := e.dispatch(ctx, attrs, o)
	if err != nil || (!dec.MessagesByChance() && len(dec.chanceKeys) == 0 && !dec.outcomesByChance()) {
		return dec, err
	}
	return e.inServerOrder(ctx, attrs, o, dec), nil
}

// dispatch runs the ValidatingAdmissionPolicy plugin's dispatcher over the attributes and
// gives its decision.
func (e *Evaluator) dispatch(ctx context.Context, attrs *recordingAttributes, o admission.ObjectInterfaces) (*Decision, error) {
	t := &trace{}
	var notes []string
	m, implicit := e.matcher(attrs)
	if implicit {
		notes = append(notes, fmt.Sprintf("namespace %q is not among the cluster objects: assumed to exist with only the label %s=%s", attrs.GetNamespace(), namespaceNameLabel, attrs.GetNamespace()))
	}
	pm := &recordingPolicyMatcher{PolicyMatcher: generic.NewPolicyMatcher(m), t: t, hooks: e.byName, namespace: attrs.GetNamespace()}
	d := validating.NewDispatcher(recordingAuthorizer{inner: e.authorizer(), checks: &t.checks}, pm)

	// The apiserver's warning recorder (an HTTP filter) dedupes and truncates warnings and
	// writes them as Warning headers: run the dispatch inside it and read them back.
	var dispatchErr error
	w := &headerWriter{header: http.Header{}}
	handler := filters.WithWarningRecorder(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		dispatchErr = d.Dispatch(r.Context(), attrs, o, e.hooks)
	}))
	httpReq, err := http.NewRequestWithContext(withTrace(ctx, t), http.MethodPost, "/", nil)
	if err != nil {
		return nil, err
	}
	handler.ServeHTTP(w, httpReq)

	dec := newDecision(dispatchErr)
	if hs := w.header.Values("Warning"); len(hs) > 0 {
		ws, _ := utilnet.ParseWarningHeaders(hs)
		for _, h := range ws {
			dec.Warnings = append(dec.Warnings, h.Text)
		}
	}
	attrs.mu.Lock()
	if len(attrs.annotations) > 0 {
		dec.AuditAnnotations = map[string]string{}
		for k, v := range attrs.annotations {
			dec.AuditAnnotations[k] = v
		}
	}
	attrs.mu.Unlock()
	dec.Results = e.results(t)
	e.byChance(dec) // before the refusals, which say which of them a map's order words
	dec.Denials = denials(attrs, dec)
	dec.Authorizer = t.checks
	dec.Notes = append(notes, e.notes(t, attrs, dec)...)
	return dec, nil
}

// matcher is the apiserver's matcher over the store's namespaces for a request in namespace
// ns; implicit says the namespace is not in the store and is assumed (WithImplicitNamespaces).
func (e *Evaluator) matcher(a admission.Attributes) (m *matching.Matcher, implicit bool) {
	nsLister := namespaceLister{store: e.store}
	ns := a.GetNamespace()
	if ownNamespace(a) {
		// A Namespace's create or update is in the namespace of its own name, which the
		// matcher reads from the request's object, and namespaceObject is null: nothing
		// reads a stored namespace (helper exAI: a Namespace's create was taken to read the
		// namespace the State did not hold yet).
		ns = ""
	}
	if ns != "" && e.implicitNamespaces {
		if _, err := nsLister.Get(ns); err != nil {
			nsLister.implicit, implicit = implicitNamespace(ns), true
		}
	}
	return matching.NewMatcher(nsLister, namespaceClient{lister: nsLister}), implicit
}

// ownNamespace says whether a request is a Namespace's create or update, whose namespace is
// its own name: the matcher's namespace selector reads the request's object
// (matching.Matcher.GetNamespaceLabels), and the dispatchers give it no namespaceObject.
func ownNamespace(a admission.Attributes) bool {
	gvk := a.GetKind()
	return gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "Namespace" && a.GetSubresource() == "" &&
		(a.GetOperation() == admission.Create || a.GetOperation() == admission.Update)
}

func (e *Evaluator) notes(t *trace, attrs admission.Attributes, dec *Decision) []string {
	var notes []string
	if n := len(Configured(t.checks)); n > 0 {
		notes = append(notes, fmt.Sprintf("the decision depended on the authorizer, which vapc answers from its configuration (%d checks)", n))
	}
	for _, p := range t.policies {
		if !p.matchKind.Empty() && p.matchKind != attrs.GetKind() && !kubescheme.Knows(p.matchKind) {
			notes = append(notes, fmt.Sprintf("policy %s matched as %s (matchPolicy Equivalent): vapc changes the custom resource's apiVersion, as kube-apiserver converts a CRD with conversion strategy None", p.name, p.matchKind))
		}
	}
	denying := map[string]bool{}
	for _, r := range dec.Results {
		if r.denies() {
			denying[r.Policy+"\x00"+r.Binding+"\x00"+r.Param.String()] = true
		}
	}
	if len(denying) > 1 && !dec.Allowed {
		notes = append(notes, fmt.Sprintf("%d policy bindings or params deny: kube-apiserver reports the first in an order that follows its informer caches; vapc orders policies, bindings and params by name", len(denying)))
	}
	return notes
}

// headerWriter is the http.ResponseWriter the warning recorder writes headers to.
type headerWriter struct{ header http.Header }

func (w *headerWriter) Header() http.Header         { return w.header }
func (w *headerWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *headerWriter) WriteHeader(int)             {}
