package replay

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/verify"
)

// A replay knows the cluster's API from its catalog: the built-in kinds of Kubernetes 1.37, the
// CRDs of --crd, and those the snapshot and the log define (crds.go). What it derives from the
// catalog is an epoch: the kinds requests are rebuilt with (cached), the scope (which policies
// can match a request, which resources the State keeps), the REST mappings of the policies'
// paramKinds, and the evaluators built over them. When the log changes what the apiserver
// serves, the epoch changes: the ordered stage finishes every request it has queued (they were
// received before the change), builds the next epoch and new evaluators, and goes on. A CRD
// change is rare; the barrier costs a few milliseconds.

// epoch is what a replay derives from its catalog between two changes of it. Decoding workers
// read the current one (prepareWrite); only the ordered stage replaces it.
type epoch struct {
	gen       int
	resources *cachedResources
	scope     *scope
}

// cur returns the current epoch.
func (r *Replayer) cur() *epoch { return r.epoch.Load() }

// newEpoch derives the next epoch from the catalog and the paramKinds' mappings, and makes the
// State follow it.
func (r *Replayer) newEpoch() *epoch {
	gen := 1
	if prev := r.cur(); prev != nil {
		gen = prev.gen + 1
	}
	params := map[schema.GroupVersionKind]*meta.RESTMapping{}
	for gvk, pk := range r.paramKinds {
		if pk.mapping != nil {
			params[gvk] = pk.mapping
		}
	}
	res := newCachedResources(paramResources{Resources: r.resources, params: params})
	e := &epoch{gen: gen, resources: res, scope: newScope(r.policies, r.bindingList, res)}
	r.epoch.Store(e)
	if r.state != nil {
		r.state.rescope(e.scope.paramSelectors)
		r.standIns = r.state.standInParams(r.policies)
	}
	return e
}

// paramResources are a replay's resources as its scope and its evaluators see them: the REST
// mapping of a paramKind is the one the apiserver's policy source found for it
// (ensureParamsForPolicyLocked, k8s.io/apiserver/pkg/admission/plugin/policy/generic/policy_source.go),
// which it keeps, with the param informer it started, as long as a policy uses the paramKind:
// after its CRD is deleted too.
type paramResources struct {
	verify.Resources
	params map[schema.GroupVersionKind]*meta.RESTMapping
}

func (p paramResources) RESTMapper() meta.RESTMapper {
	return paramMapper{RESTMapper: p.Resources.RESTMapper(), params: p.params}
}

type paramMapper struct {
	meta.RESTMapper
	params map[schema.GroupVersionKind]*meta.RESTMapping
}

func (m paramMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) == 1 {
		if pm := m.params[gk.WithVersion(versions[0])]; pm != nil {
			out := *pm
			return &out, nil
		}
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// quiesce is the first half of the barrier of a change of the catalog: every queued request is
// evaluated and accounted for, and no evaluation runs until changeCatalog, which the caller
// must call once it has changed the catalog.
func (r *Replayer) quiesce() {
	if r.running != nil && !r.quiesced {
		r.stopEvaluation()
		r.quiesced = true
	}
}

// changeCatalog is the second half of the barrier of a change of the catalog the log made at
// src and the time at: the epoch, the paramKinds and the evaluators follow the catalog, and
// evaluation goes on.
func (r *Replayer) changeCatalog(ctx context.Context, src string, at time.Time) error {
	r.quiesce()
	if r.paramKinds != nil {
		r.followParamKinds(src, at)
	}
	r.newEpoch()
	if r.evals != nil {
		if err := r.buildEvaluators(); err != nil {
			return err
		}
	}
	r.resume(ctx)
	return nil
}

// resume ends a barrier: evaluation goes on.
func (r *Replayer) resume(ctx context.Context) {
	if r.quiesced {
		r.running = r.startEvaluation(ctx)
		r.quiesced = false
	}
}

// buildEvaluators builds one evaluator per evaluating goroutine over the current epoch.
func (r *Replayer) buildEvaluators() error {
	evals := make([]evalWorker, 0, r.workers)
	for range r.workers {
		store := &viewStore{}
		ev, err := r.newEval(r.policies, r.bindingList, r.cur().resources, store)
		if err != nil {
			return err
		}
		evals = append(evals, evalWorker{eval: ev, store: store})
	}
	r.evals = evals
	return nil
}

// paramResolveDelay is how long after a CRD is Established a policy whose paramKind it serves
// may still fail with "failed to find resource referenced by paramKind": the apiserver resolves
// paramKinds through a discovery REST mapper over a cached discovery client that it resets
// every 30 seconds (k8s.io/apiserver/pkg/server/options/admission.go,
// restmapper.DeferredDiscoveryRESTMapper does not refresh a fresh cache on a miss), and its
// policy source retries a configuration error every second (policyRefreshInterval). Those are
// 31 seconds; the rest is a margin for discovery to list the new version on a loaded server.
const paramResolveDelay = 40 * time.Second

// paramKind is a paramKind of the bound policies as the apiserver's policy source resolves it.
type paramKind struct {
	gvk      schema.GroupVersionKind
	policies []string
	// mapping is the REST mapping once found: kept, as the policy source keeps its informer.
	mapping *meta.RESTMapping
	// served says whether the catalog maps the kind now; crd is the CRD that serves it.
	served bool
	crd    string
	// pending says why the policy source may or may not have resolved the paramKind when a
	// request arrives before until (zero: until a later change of the log); "" when it has
	// resolved it or cannot.
	pending string
	until   time.Time
}

// initParamKinds finds the paramKinds of the bound policies, resolved as the catalog maps them
// when the replay begins.
func (r *Replayer) initParamKinds() {
	r.paramKinds = map[schema.GroupVersionKind]*paramKind{}
	r.policyParam = map[string]*paramKind{}
	for _, p := range r.policies {
		pk := p.Spec.ParamKind
		if pk == nil || len(r.bindings[p.Name]) == 0 {
			continue
		}
		gv, err := schema.ParseGroupVersion(pk.APIVersion)
		if err != nil {
			continue
		}
		gvk := gv.WithKind(pk.Kind)
		k := r.paramKinds[gvk]
		if k == nil {
			k = &paramKind{gvk: gvk}
			r.paramKinds[gvk] = k
		}
		k.policies = append(k.policies, p.Name)
		r.policyParam[p.Name] = k
	}
	for _, k := range r.paramKinds {
		if m, err := r.resources.RESTMapper().RESTMapping(k.gvk.GroupKind(), k.gvk.Version); err == nil {
			k.mapping, k.served, k.crd = m, true, r.crdOf(m.Resource)
		}
	}
}

// crdOf is the name of the CRD that serves the resource, or "".
func (r *Replayer) crdOf(gvr schema.GroupVersionResource) string {
	if r.catalog == nil {
		return ""
	}
	info, _ := r.catalog.Resource(gvr, "")
	return info.CRD
}

// followParamKinds follows a change of the catalog the log made at src and the time at: a
// paramKind a CRD begins to serve is pending until the CRD has been Established for
// paramResolveDelay (from at when it already is, else from when the log shows it, see
// established); one whose CRD is deleted once the policy source resolved it keeps its mapping,
// and is pending with no end, since the apiserver's informer loses the CRD's objects as they
// are deleted, which the log does not show.
func (r *Replayer) followParamKinds(src string, at time.Time) {
	for _, k := range r.sortedParamKinds() {
		m, err := r.resources.RESTMapper().RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
		now := err == nil
		switch {
		case now && !k.served:
			k.mapping, k.crd = m, r.crdOf(m.Resource)
			k.pending, k.until = "", time.Time{}
			if k.crd != "" {
				k.pending = fmt.Sprintf("the CustomResourceDefinition %s of paramKind %s began to be served at %s: kube-apiserver finds a paramKind through a discovery cache it renews every 30 seconds, and fails the policy until then",
					k.crd, gvkString(k.gvk), src)
				if c := r.crds[k.crd]; (c == nil || c.established) && !at.IsZero() {
					k.until = at.Add(paramResolveDelay)
				}
			}
		case now:
			k.mapping = m
		case k.served && k.mapping != nil:
			k.pending = fmt.Sprintf("the CustomResourceDefinition %s of paramKind %s was deleted at %s: kube-apiserver keeps the param informer, which loses the CRD's objects as they are deleted without the log showing when",
				k.crd, gvkString(k.gvk), src)
			k.until = time.Time{}
		}
		k.served = now
	}
}

// established records that the log shows the CRD Established at the time at: the wait of the
// paramKinds it began to serve ends paramResolveDelay later.
func (r *Replayer) established(name string, at time.Time) {
	for _, k := range r.paramKinds {
		if k.crd == name && k.served && k.pending != "" && k.until.IsZero() && !at.IsZero() {
			k.until = at.Add(paramResolveDelay)
		}
	}
}

func (r *Replayer) sortedParamKinds() []*paramKind {
	out := make([]*paramKind, 0, len(r.paramKinds))
	for _, k := range r.paramKinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return gvkString(out[i].gvk) < gvkString(out[j].gvk) })
	return out
}

// paramKindPending says why the decision of the request of an event may depend on whether the
// apiserver had resolved the paramKind of one of the policies when it received it; "" when it
// does not.
func (r *Replayer) paramKindPending(policies []string, ev *Event) string {
	var received time.Time
	for _, p := range policies {
		k := r.policyParam[p]
		if k == nil || k.pending == "" {
			continue
		}
		if received.IsZero() {
			received = ev.received()
		}
		if k.until.IsZero() || received.IsZero() || received.Before(k.until) {
			why := k.pending
			if !k.until.IsZero() {
				why += fmt.Sprintf(" (at the latest %s after it was Established, at %s)", paramResolveDelay, k.until.UTC().Format(time.RFC3339))
			}
			return fmt.Sprintf("param-kind-pending: policy %s: %s", p, why)
		}
	}
	return ""
}

func gvkString(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + " " + gvk.Kind
}
