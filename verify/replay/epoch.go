package replay

import (
	"context"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
)

// A replay knows the cluster's API from its catalog: the built-in kinds of Kubernetes 1.37, the
// CRDs of --crd, and those the snapshot and the log define (internal/catalog, crds.go). What it derives from the
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
	res := newCachedResources(r.cat.c.ParamResources(nil))
	e := &epoch{gen: gen, resources: res, scope: newScope(r.set.scopePolicies, r.set.scopeBindings, res, r.cfg.admissionPlugins)}
	if r.state != nil {
		r.state.Rescope(e.scope.paramSelectors)
		e.standIns = r.state.StandInParams(r.set.policies)
	}
	r.cat.epoch.Store(e)
	return e
}

// quiesce is the first half of the barrier of a change of the catalog: every queued request is
// evaluated and accounted for, and no evaluation runs until the catalog calls
// catalogOwner.Changed once it has changed, or catalogOwner.Resume.
func (r *Replayer) quiesce() {
	if r.running != nil && !r.quiesced {
		r.lookaheadCut += r.running.held(r.currentLogTime())
		r.stopEvaluation()
		r.quiesced = true
	}
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
	if notFound := r.cat.c.ResolvingKinds(); notFound != nil {
		altRes = newCachedResources(r.cat.c.ParamResources(notFound))
	}
	evals := make([]evalWorker, 0, r.cfg.workers)
	for range r.cfg.workers {
		w := evalWorker{store: &viewStore{}, res: r.cur().resources, altRes: altRes, given: map[string][2]Evaluator{}}
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

// newDefaultEval is the replay's evaluator (verify.New over the State's Views) of the
// validating and mutating policies and bindings given.
func newDefaultEval(p []*admissionregistrationv1.ValidatingAdmissionPolicy, b []*admissionregistrationv1.ValidatingAdmissionPolicyBinding,
	m []*admissionregistrationv1.MutatingAdmissionPolicy, mb []*admissionregistrationv1.MutatingAdmissionPolicyBinding, res verify.Resources, store verify.ObjectStore, mapOrder vapccel.MapOrder) (Evaluator, error) {
	return verify.New(p, b, verify.WithResources(res), verify.WithStore(store), verify.WithDropUnknownFields(true), verify.WithMutatingPolicies(m, mb), verify.WithMapOrder(mapOrder))
}

// forGiven is the worker with the evaluators of the given policies and bindings that were in
// the cluster when a request was received (g, lifecycle.go), built the first time the worker
// meets that set.
func (r *Replayer) forGiven(w evalWorker, g givenAt) (evalWorker, error) {
	if e, ok := w.given[g.key]; ok {
		w.eval, w.alt = e[0], e[1]
		return w, nil
	}
	gone := func(kind givenKind, name string) bool { return g.absent[givenKey{kind, name}] }
	ps := slices.DeleteFunc(slices.Clone(r.set.policies), func(p *admissionregistrationv1.ValidatingAdmissionPolicy) bool {
		return gone(givenPolicy, p.Name)
	})
	bs := slices.DeleteFunc(slices.Clone(r.set.bindingList), func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
		return gone(givenBinding, b.Name) || gone(givenPolicy, b.Spec.PolicyName)
	})
	ms := slices.DeleteFunc(slices.Clone(r.set.mutatingPolicies), func(m *admissionregistrationv1.MutatingAdmissionPolicy) bool {
		return gone(givenMutating, m.Name)
	})
	mbs := slices.DeleteFunc(slices.Clone(r.set.mutatingBindings), func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) bool {
		return gone(givenMutatingBinding, b.Name) || gone(givenMutating, b.Spec.PolicyName)
	})
	build := func(res verify.Resources) (Evaluator, error) {
		if r.cfg.customEval {
			return r.cfg.newEval(ps, bs, res, w.store)
		}
		return newDefaultEval(ps, bs, ms, mbs, res, w.store, r.cfg.mapOrder)
	}
	var e [2]Evaluator
	var err error
	if e[0], err = build(w.res); err != nil {
		return w, fmt.Errorf("the given policies installed at the request (without %s): %w", g.key, err)
	}
	if w.altRes != nil {
		if e[1], err = build(w.altRes); err != nil {
			return w, fmt.Errorf("the given policies installed at the request (without %s): %w", g.key, err)
		}
	}
	if len(w.given) >= maxGivenEvaluators {
		clear(w.given) // a log that changes them often: build again what it needs again
	}
	w.given[g.key] = e
	w.eval, w.alt = e[0], e[1]
	return w, nil
}

// maxGivenEvaluators bounds the evaluators a worker keeps of the sets of given policies a log
// installs (forGiven).
const maxGivenEvaluators = 16
