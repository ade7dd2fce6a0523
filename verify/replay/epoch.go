package replay

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
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
	// standIns are a stand-in param of each paramKind (see state.StateView.WithStandIns).
	standIns map[schema.GroupResource]kruntime.Object
}

// cur returns the current epoch.
func (r *Replayer) cur() *epoch { return r.cat.epoch.Load() }

// newEpoch derives the next epoch from the catalog and the paramKinds' mappings, and makes the
// State follow it.
func (r *Replayer) newEpoch() *epoch {
	gen := 1
	if prev := r.cur(); prev != nil {
		gen = prev.gen + 1
	}
	res := newCachedResources(r.paramResources(nil))
	e := &epoch{gen: gen, resources: res, scope: newScope(r.set.scopePolicies, r.set.scopeBindings, res)}
	if r.state != nil {
		r.state.Rescope(e.scope.paramSelectors)
		e.standIns = r.state.StandInParams(r.set.policies)
	}
	r.cat.epoch.Store(e)
	return e
}

// paramResources returns the replay's resources as its scope and its evaluators see them: the
// REST mapping of a paramKind is the one the apiserver's policy source found for it
// (ensureParamsForPolicyLocked, k8s.io/apiserver/pkg/admission/plugin/policy/generic/policy_source.go),
// which it keeps, with the param informer it started, as long as a policy uses the paramKind:
// after its CRD is deleted too. The kinds of notFound are not found, as before the policy
// source found them.
func (r *Replayer) paramResources(notFound map[schema.GroupVersionKind]bool) verify.Resources {
	params := map[schema.GroupVersionKind]*meta.RESTMapping{}
	for gvk, pk := range r.cat.paramKinds {
		if pk.mapping != nil && !notFound[gvk] {
			params[gvk] = pk.mapping
		}
	}
	return paramResources{Resources: r.cfg.resources, mapper: paramMapper{RESTMapper: r.cfg.resources.RESTMapper(), params: params, notFound: notFound}}
}

type paramResources struct {
	verify.Resources
	mapper meta.RESTMapper // a paramMapper, made once: RESTMapper is called for every request
}

func (p paramResources) RESTMapper() meta.RESTMapper { return p.mapper }

// Catalog implements verify.CatalogHolder.
func (p paramResources) Catalog() *vapcschema.Catalog { return verify.CatalogOf(p.Resources) }

type paramMapper struct {
	meta.RESTMapper
	params   map[schema.GroupVersionKind]*meta.RESTMapping
	notFound map[schema.GroupVersionKind]bool
}

func (m paramMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) == 1 {
		gvk := gk.WithVersion(versions[0])
		if m.notFound[gvk] {
			return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
		}
		if pm := m.params[gvk]; pm != nil {
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
		r.lookaheadCut += r.running.held(r.currentLogTime())
		r.stopEvaluation()
		r.quiesced = true
	}
}

// changeCatalog is the second half of the barrier of a change of the catalog the log made at
// src and the time at: the epoch, the paramKinds and the evaluators follow the catalog, and
// evaluation goes on.
func (r *Replayer) changeCatalog(ctx context.Context, src string, at time.Time) error {
	r.quiesce()
	if r.cat.paramKinds != nil {
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

// buildEvaluators builds one evaluator per evaluating goroutine over the current epoch, and,
// while the policy source may not have found a paramKind yet, an alternative one that takes
// those kinds as not found.
func (r *Replayer) buildEvaluators() error {
	var altRes verify.Resources
	if notFound := r.resolvingKinds(); notFound != nil {
		altRes = newCachedResources(r.paramResources(notFound))
	}
	evals := make([]evalWorker, 0, r.cfg.workers)
	for range r.cfg.workers {
		w := evalWorker{store: &viewStore{}}
		var err error
		if w.plugins, err = apiserver.NewPlugins(r.cfg.admissionPlugins); err != nil {
			return fmt.Errorf("admission plugins: %w", err)
		}
		if w.eval, err = r.cfg.newEval(r.set.policies, r.set.bindingList, r.cur().resources, w.store); err != nil {
			return err
		}
		if altRes != nil {
			if w.alt, err = r.cfg.newEval(r.set.policies, r.set.bindingList, altRes, w.store); err != nil {
				return err
			}
		}
		evals = append(evals, w)
	}
	r.evals = evals
	return nil
}
