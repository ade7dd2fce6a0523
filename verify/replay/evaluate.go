package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
)

// The ordered stage of a replay reads and changes the State in log order; rebuilding a
// request and evaluating it is most of a replay's work and needs only what the State held at
// the request's point of the log: the old object's stored JSON and a View of the params and
// namespaces. So the ordered stage hands each matched request to evaluation workers with those,
// moves on, and accounts for the outcomes in log order.

// job is one matched request on its way through evaluation.
type job struct {
	d        decoded
	ev       *Event
	t        target
	rec      recording
	policies []string
	prior    prior
	// list is what a deletecollection lists, or listUnknown why the State does not know it.
	list        [][]byte
	listUnknown string
	// listUnknowns are the fields of the listed objects the State does not know.
	listUnknowns map[objectKey][]vapccel.Unknown
	view         *stateView
	// mutators are the cluster's MutatingAdmissionPolicies at the request's point of the log.
	mutators *mutators
	// facts are what the log showed of the server's configuration before the request.
	facts serverFacts
	// typedWrites are the writes to params and namespaces kube-apiserver's informers may not
	// yet have held when it admitted the request (see Replayer.informerLag).
	typedWrites []typedWrite
	typedLost   []schema.GroupResource
	// aheadUnknown are the resources of which a request the log records after this one, which
	// ran concurrently with it, may have written objects the State does not know (see
	// Replayer.reviseAhead), and where the log records it.
	aheadUnknown []aheadUnknown
	// readBy are the Views the evaluation read params and namespaces through, the job's own
	// and those of the states the informers may have held (see Replayer.informerLag).
	readBy []*stateView
	// resolving says why the apiserver may not have found the paramKind of a policy of the
	// request yet: the request is decided both ways. unsettled says why it cannot be (see
	// Replayer.unsettledParams).
	resolving, unsettled undecided

	done chan struct{}
	// The outcome: skipped (and a note on why), not matched after all, or a record.
	skip       Reason
	skipNote   string
	notMatched bool
	// mutationRan says whether a replayed MutatingAdmissionPolicy ran on the request (or refused
	// it): the request was evaluated, whether or not a validating policy matched.
	mutationRan bool
	// schemaRefreshing says why the MutatingAdmissionPolicy plugin may not have had the
	// schema of the request's custom resource (see Replayer.schemaRefreshing).
	schemaRefreshing string
	out              *Record
	dec              *verify.Decision

	// For reviseConcurrent: the object whose stored version the request read, when the
	// request completed, and what the log recorded of it before the evaluation refined it.
	// warns says a policy of the request may warn (see firstAttempt); unknowns are the fields
	// of the request its evaluation did not know.
	warns    bool
	unknowns []vapccel.Unknown

	key              replacedKey
	completed        time.Time
	recorded         recording
	tracked, revised bool
}

// aheadUnknown is a resource of which a request the log records later, at by, may have written
// objects the State does not know.
type aheadUnknown struct {
	gr schema.GroupResource
	by string
}

// again readies the job to be evaluated again, as the log first recorded it, on a fresh View.
func (j *job) again() {
	<-j.done
	j.rec = j.recorded
	j.view = j.view.fresh()
	j.out, j.dec, j.skip, j.skipNote, j.notMatched, j.mutationRan, j.readBy = nil, nil, "", "", false, false, nil
	j.done = make(chan struct{})
}

// isDone says whether the job's evaluation is done.
func (j *job) isDone() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// evalWorker is an evaluator and the View it reads, which its goroutine sets before each
// evaluation; alt is the alternative evaluator of the time a paramKind may not have been found
// (see buildEvaluators), or nil.
type evalWorker struct {
	eval, alt Evaluator
	store     *viewStore
	// plugins are kube-apiserver's built-in admission plugins this worker runs requests
	// through (see plugins.go).
	plugins *apiserver.Plugins
}

// viewStore is the verify.ObjectStore of one evaluator: the View of the request it evaluates.
type viewStore struct{ v *stateView }

func (s *viewStore) Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	return s.v.Get(gvr, namespace, name)
}

func (s *viewStore) List(gvr schema.GroupVersionResource, namespace string, selector labels.Selector) ([]runtime.Object, error) {
	return s.v.List(gvr, namespace, selector)
}

// maxQueued bounds the jobs between the ordered stage and their accounting, and so the memory
// their events hold.
const maxQueued = 256

// evaluation runs jobs on the workers and gives them back in the order they came.
type evaluation struct {
	jobs  chan *job
	queue []*job
	wg    sync.WaitGroup
	// byKey are the queued jobs that read a stored object, by the object (see track).
	byKey map[replacedKey][]*job
}

func (r *Replayer) startEvaluation(ctx context.Context) *evaluation {
	e := &evaluation{jobs: make(chan *job, maxQueued)}
	for _, w := range r.evals {
		e.wg.Add(1)
		go func(w evalWorker) {
			defer e.wg.Done()
			for j := range e.jobs {
				r.evaluate(ctx, w, j)
				close(j.done)
			}
		}(w)
	}
	return e
}

// submit queues the job and accounts for the jobs at the head of the queue that are done,
// waiting for the oldest when the queue is full.
func (r *Replayer) submit(j *job) {
	e := r.running
	e.queue = append(e.queue, j)
	e.jobs <- j
	for len(e.queue) > 0 {
		head := e.queue[0]
		if !head.tracked && !head.isDone() {
			// Whether it is held depends on what its evaluation read.
			if len(e.queue) < maxQueued {
				return
			}
			<-head.done
		}
		held := e.holds(head, r.currentLogTime())
		switch {
		case len(e.queue) >= maxHeld:
			<-head.done
			if held {
				r.lookaheadCut++
			}
		case held:
			// The jobs behind it wait too; those not evaluated yet are bounded by the
			// channel to the workers.
			return
		case len(e.queue) >= maxQueued:
			<-head.done
		default:
			select {
			case <-head.done:
			default:
				return
			}
		}
		e.queue[0] = nil
		e.queue = e.queue[1:]
		r.finish(head)
	}
}

// stopEvaluation waits for every job and accounts for them.
func (r *Replayer) stopEvaluation() {
	e := r.running
	close(e.jobs)
	for _, j := range e.queue {
		<-j.done
		r.finish(j)
	}
	e.queue = nil
	e.wg.Wait()
}

// evaluate rebuilds the job's request and decides it, on a worker.
func (r *Replayer) evaluate(ctx context.Context, w evalWorker, j *job) {
	if r.usesPipeline(j.ev, j.t) {
		r.evaluateServed(ctx, w, j)
		return
	}
	b := r.rebuild(j.ev, j.t, j.rec, j.prior, j.facts)
	if b.skip != "" {
		j.skip = b.skip
		return
	}
	r.prepareCustomResource(j.ev, j.t, &b)
	out := newRecord(j.d, j.ev, j.t, j.rec, b)
	j.out = out
	if b.indeterminate.is() {
		out.indeterminate(b.indeterminate)
		return
	}
	if u := j.undecidable(w); u.is() {
		out.indeterminate(u)
		return
	}
	var unknowns []vapccel.Unknown
	decide := func(eval Evaluator, view *stateView) (*verify.Decision, error) {
		w.store.v = view
		defer func() { w.store.v = nil }()
		dec, err := eval.Evaluate(ctx, b.req)
		if err != nil || dec.Mutation == nil {
			return dec, err
		}
		j.mutationRan = j.mutationRan || dec.Mutation.Acted()
		if j.schemaRefreshing != "" && dec.Mutation.Acted() {
			return nil, &indeterminateError{because(ReasonMutationUnknown, j.schemaRefreshing)}
		}
		// The replayed MutatingAdmissionPolicies ran first (verify.Evaluator.Evaluate).
		why := r.mutationUnknown(dec.Mutation, unknowns, j.policies)
		if b.objectSource == SourceResponse && why == "" {
			reapplied, clusterOnly := r.reapplied(dec.Mutation, j.mutators)
			if v, ok := eval.(validatingEvaluator); ok && clusterOnly {
				// The stored object already holds what the cluster's own copies of the
				// policies changed, in the server's order: validation saw it as it is.
				vdec, err := v.EvaluateValidating(ctx, b.req)
				if err == nil {
					vdec.Notes = append(vdec.Notes, "decided on the object kube-apiserver stored, which already holds what the cluster's MutatingAdmissionPolicies changed")
				}
				return vdec, err
			}
			why = reapplied
		}
		if why != "" {
			if ind := r.dependsOnUnknown(j.policies, []admitted{{dec: dec, unknowns: []vapccel.Unknown{mutationUnknownField(why)}}}); ind.is() || !dec.Mutation.Allowed {
				return nil, &indeterminateError{because(ReasonMutationUnknown, why)}
			}
			dec.Mutation.Changes = nil // decided without them; what they changed is not known
			dec.Notes = append(dec.Notes, "what the MutatingAdmissionPolicies changed is not known: "+why)
		}
		return dec, nil
	}
	unknowns = append(rooted(j.prior.unknowns, j.t.op == admission.Update), b.unknowns...)
	unknowns = append(unknowns, exportUnknowns(j.ev)...) // what an export lost (exportloss.go)
	if u := b.req.Object; u != nil && b.objectSource != SourceResponse && (j.t.op == admission.Create || j.t.op == admission.Update) {
		// Mutating webhooks changed the object before validating admission.
		if why := patchRebuilt(j.ev, u); why != "" {
			unknowns = append(unknowns, vapccel.Unknown{Path: vapccel.FieldPath{Root: "object"}, Why: why})
		}
		unknowns = append(unknowns, j.mutators.unknowns(r.replayedMutation(mutatedObject(j.t, u, b.req.OldObject, j.view)))...)
	}
	if u := b.req.Object; u != nil && b.objectSource != SourceResponse && (j.t.op == admission.Create || j.t.op == admission.Update) {
		// The handler's field manager records the write in managedFields before admission
		// (a custom resource's, a subresource's such as a TokenRequest); the replay runs it
		// only in the request pipeline, which does not serve this request.
		unknowns = append(unknowns, vapccel.Unknown{Path: objectPath("metadata", "managedFields"),
			Why: "the managedFields the field manager of " + describe(j.t.gvr, j.t.sub) + " writes before admission, which the replay does not compute outside the request pipeline"})
	}
	if r.learnedKind(j.t.gvr) && b.req.Object != nil && b.objectSource != SourceResponse {
		// The server pruned and defaulted the object by a schema the log does not hold.
		unknowns = append(unknowns, vapccel.Unknown{Path: vapccel.FieldPath{Root: "object"},
			Why: "the object as the schema of " + j.t.gvr.Resource + "." + j.t.gvr.Group + " prunes and defaults it, which the log does not hold"})
	}
	// A decision on any state stands only if it does not depend on what is not known of the
	// request.
	known := func(eval Evaluator, view *stateView) (*verify.Decision, error) {
		dec, err := decide(eval, view)
		if err == nil {
			if why := r.dependsOnUnknown(j.policies, []admitted{{dec: dec, unknowns: unknowns}}); why.is() {
				return nil, &indeterminateError{why}
			}
		}
		return dec, err
	}
	r.conclude(w, j, out, b.oldUnknown, known)
	j.unknowns = unknowns
	r.firstAttempt(j, out, j.dec, func(p prior) (*verify.Decision, error) { return r.decideOn(ctx, w, j, p) })
	if j.dec != nil && j.dec.Mutation != nil && out.Decision != DecisionIndeterminate {
		out.Mutations = j.dec.Mutation.Changes
	}
}

// conclude decides the job's request with decide (which evaluates it with an evaluator over a
// View, and errs with an indeterminateError when the decision depends on what the replay does
// not know of the request) and fills its record, with the notes given: the decision both ways while a paramKind may not have been
// found yet, what the View could not answer, what holds without what is missing (oldUnknown:
// why the old object is not known and a stand-in took its place), the authorizer, and the
// check against the log.
func (r *Replayer) conclude(w evalWorker, j *job, out *Record, oldUnknown undecided, decide func(eval Evaluator, view *stateView) (*verify.Decision, error), notes ...string) {
	dec, err := decide(w.eval, j.view)
	var alt *verify.Decision
	if err == nil && j.resolving.is() {
		alt, err = decide(w.alt, j.view)
	}
	if err != nil {
		var ind *indeterminateError
		if errors.As(err, &ind) {
			out.indeterminate(ind.why)
			return
		}
		out.indeterminate(because(ReasonRequest, err.Error()))
		return
	}
	dec, lagged := r.informerLag(w, j, dec, decide)
	if lagged.is() {
		out.indeterminate(lagged)
		return
	}
	if alt != nil {
		if !sameOutcome(dec, alt) {
			out.indeterminate(j.resolving)
			return
		}
		dec.Notes = append(dec.Notes, "decided alike whether or not kube-apiserver had found the paramKind yet: "+j.resolving.detail)
	}
	misses := j.view.Misses()
	paramsIncomplete := len(misses) > 0
	for _, m := range misses {
		if m.gr == namespacesGR {
			paramsIncomplete = false // a namespace's labels decide whether a policy applies
		}
	}
	var inferred string
	if (oldUnknown.is() || paramsIncomplete) && (len(misses) == 0 || paramsIncomplete) && r.decidedWithoutMissing(w, j, dec, paramsIncomplete, decide) {
		// Decided whatever is missing: see requestOnly.
		what := oldUnknown.detail
		if paramsIncomplete {
			what = missText(misses)
		}
		inferred = "decided without what is not known (" + what + "): every policy skipped the request on a matchCondition that reads only the request"
		misses = nil
	} else if oldUnknown.is() {
		out.indeterminate(oldUnknown)
		return
	}
	var partial undecided
	if len(misses) == 0 {
		// What the evaluator read of a param or namespace the State knows but for some fields.
		partial = r.dependsOnPartial(j.policies, j.view.partials)
	}
	if len(dec.Results) == 0 && len(misses) == 0 && !partial.is() && !j.mutationRan {
		j.notMatched = true
		return
	}
	// No result but a miss: whether a policy matched rested on an object the State does not
	// know (a namespace for a namespaceSelector, as the apiserver's matcher reads it), so
	// "not matched" would be a guess.
	out.fill(dec)
	out.Notes = append(out.Notes, notes...)
	if inferred != "" {
		out.Notes = append(out.Notes, inferred)
		if oldUnknown.is() {
			out.OldObjectSource = SourceUnknown
		}
	}
	if len(misses) > 0 {
		reason := ReasonParamUnknown
		if misses[0].gr == namespacesGR {
			reason = ReasonNamespaceUnknown
		}
		out.indeterminate(because(reason, missText(misses)))
	} else if partial.is() {
		out.indeterminate(partial)
	} else if checks := verify.Configured(dec.Authorizer); len(checks) > 0 {
		out.indeterminate(because(ReasonAuthorizer, fmt.Sprintf("the decision depended on %d authorizer checks, which the audit log does not answer (the first: %s)", len(checks), checks[0])))
	}
	if r.check && out.Decision != DecisionIndeterminate {
		out.Disagreements = check(j.ev, j.rec, dec, r.loadedPolicies)
		if len(dec.Denials) > 0 && j.rec.policy != "" && dec.Refuses(j.ev.Code(), j.ev.Message()) {
			// Several refusals were possible: the log says which one the server chose.
			out.Code, out.Message = j.ev.Code(), j.ev.Message()
		}
	}
	j.dec = dec
}

// informerLag decides whether the decision dec stands though kube-apiserver's informers may
// not yet have held writes to params or namespaces the evaluation read (the job's
// typedWrites: completed less than informerLag before the request was received, or after).
// An informer holds its watch's events in order, each resource's its own: the request is
// evaluated again on each state they may have been in (see undoneStates), and once more on
// what those states read, and dec stands when every state gives the same outcome, known in
// full (decide errs where it is not). When,
// checking against the log, the audit annotations it records are those of states that agree,
// their decision is the one; otherwise the request is indeterminate, as it is when it read a
// resource some of whose writes around it the replay no longer remembers (the job's
// typedLost). A namespace decides whether a policy applies at all, and one the informer does
// not hold yet is read from storage (the policy matcher's GetNamespace, "in case of latency in
// our caches"): a namespace's create is never undone. A param read by name falls back to
// storage too (CollectParams): its create, completed before the request was received, is not
// undone when no list or admission plugin read it.
func (r *Replayer) informerLag(w evalWorker, j *job, dec *verify.Decision, decide func(Evaluator, *stateView) (*verify.Decision, error)) (*verify.Decision, undecided) {
	// What the views read of resources a request logged later may have written unknown
	// objects of, or of resources whose writes around it the State no longer remembers.
	unknownRead := func(views ...*stateView) undecided {
		for _, au := range j.aheadUnknown {
			if slices.ContainsFunc(views, func(v *stateView) bool { return v.reads(au.gr) }) {
				return laggedResource(au.gr, "may have had objects written by the request at "+au.by+", which the log records after this one but which was received before this one completed, that the log does not show: they ran concurrently, and kube-apiserver's admission may have read them from an informer")
			}
		}
		for _, gr := range j.typedLost {
			if slices.ContainsFunc(views, func(v *stateView) bool { return v.reads(gr) }) {
				return laggedResource(gr, "more of its writes completed around this request than the replay remembers, and kube-apiserver's admission reads it from an informer, which may not yet have held them")
			}
		}
		return undecided{}
	}
	if why := unknownRead(j.view); why.is() {
		return nil, why
	}
	if len(j.typedWrites) == 0 {
		j.readBy = []*stateView{j.view}
		return dec, undecided{}
	}
	relevant := func(tw typedWrite, views ...*stateView) bool {
		if tw.created && !tw.ahead {
			if tw.gr == namespacesGR {
				return false
			}
			// A param created before the request was received and read by name only: an
			// informer that did not hold it yet left CollectParams to read it from storage.
			if tw.done.Before(j.ev.Received()) && !slices.ContainsFunc(views, func(v *stateView) bool { return v.readOtherThanByName(tw) }) {
				return false
			}
		}
		return slices.ContainsFunc(views, func(v *stateView) bool { return v.read(tw) })
	}
	byAnnotations := r.check && (j.rec.vapRan || j.ev.Annotations[ValidationFailureAnnotation] != "") && j.prior.stale == nil && j.prior.staleUnknown == ""
	views := []*stateView{j.view}
	var taken []typedWrite
	isTaken := make([]bool, len(j.typedWrites))
	outcomes := []*verify.Decision{dec}
	for round := 0; ; round++ {
		var more []typedWrite
		for i, tw := range j.typedWrites {
			if !isTaken[i] && relevant(tw, views...) {
				isTaken[i] = true
				more = append(more, tw)
			}
		}
		if len(more) == 0 {
			break
		}
		if round == 2 {
			return nil, lagged(more[0], j.ev, "what it read of the params and namespaces depends on which of their writes the informers held")
		}
		taken = append(taken, more...)
		for _, tw := range more {
			if tw.unknownBefore || (tw.had && tw.prev.obj == nil) {
				return nil, lagged(tw, j.ev, tw.version()+" is not known")
			}
			if tw.had && len(tw.prev.unknowns) > 0 {
				if why := r.dependsOnPartial(j.policies, []partialUse{{gr: tw.gr, k: tw.k, unknowns: tw.prev.unknowns}}); why.is() {
					return nil, lagged(tw, j.ev, tw.version()+" is not known in full: "+why.detail)
				}
			}
		}
		states, ok := undoneStates(taken)
		if !ok {
			return nil, lagged(taken[0], j.ev, "the informers may have held more states of the params and namespaces it read than the replay evaluates")
		}
		for _, undone := range states {
			if !slices.ContainsFunc(undone, func(tw typedWrite) bool {
				return slices.ContainsFunc(more, func(m typedWrite) bool { return m.gr == tw.gr && m.k == tw.k && m.done.Equal(tw.done) })
			}) {
				continue // evaluated in an earlier round
			}
			v := j.view.before(undone)
			alt, err := decide(w.eval, v)
			version := undone[0].version()
			if err != nil {
				var ind *indeterminateError
				if errors.As(err, &ind) {
					return nil, lagged(undone[0], j.ev, "on "+version+", "+ind.why.String())
				}
				return nil, lagged(undone[0], j.ev, "the request does not evaluate on "+version+": "+err.Error())
			}
			if len(v.Misses()) > 0 {
				return nil, lagged(undone[0], j.ev, version+" is not known: "+missText(v.Misses()))
			}
			if why := r.dependsOnPartial(j.policies, v.partials); why.is() {
				return nil, lagged(undone[0], j.ev, "on "+version+", "+why.String())
			}
			if !sameOutcome(dec, alt) {
				if !byAnnotations {
					return nil, lagged(undone[0], j.ev, version+" decides otherwise ("+outcomeDiff(dec, alt)+"): "+alt.Summary())
				}
				outcomes = append(outcomes, alt)
			}
			views = append(views, v)
		}
	}
	if why := unknownRead(views...); why.is() {
		return nil, why
	}
	j.readBy = views
	if len(outcomes) == 1 {
		return dec, undecided{}
	}
	var agree []*verify.Decision
	for _, o := range outcomes {
		if len(checkAnnotations(j.ev, o.AuditAnnotations, o, r.loadedPolicies)) == 0 {
			agree = append(agree, o)
		}
	}
	if len(agree) == 0 || slices.ContainsFunc(agree[1:], func(d *verify.Decision) bool { return !sameOutcome(agree[0], d) }) {
		return nil, lagged(taken[0], j.ev, "the states the informers may have held decide otherwise ("+outcomeDiff(dec, outcomes[1])+"): "+outcomes[1].Summary())
	}
	if agree[0] != dec {
		agree[0].Notes = append(agree[0].Notes, "decided on params or namespaces in a state kube-apiserver's informers may have held other than the one the log's order gives: the audit annotations the log records are those of that state")
	}
	return agree[0], undecided{}
}

// maxLagStates bounds the states of params and namespaces a request is evaluated on for the
// informers' lag (see Replayer.informerLag).
const maxLagStates = 16

// undoneStates are the states the informers may have held of the writes, each the writes
// undone: every combination of the resources' states but the one where none is undone. A
// resource's informer holds its writes in the order they were committed: its states undo its
// newest requests one more at a time, and of the oldest undone request any of its writes (a
// deletecollection's deletions commit in no order the log says). A write the log records after
// the request (ahead) is "undone" into what it wrote: the states of a resource's ahead writes
// do its oldest requests one more at a time, and never go with its undone ones (an informer
// that held a later write held the earlier ones). ok is false when there are more than
// maxLagStates.
func undoneStates(writes []typedWrite) (states [][]typedWrite, ok bool) {
	var grs []schema.GroupResource
	by := map[schema.GroupResource][]typedWrite{}
	for _, tw := range writes {
		if _, ok := by[tw.gr]; !ok {
			grs = append(grs, tw.gr)
		}
		by[tw.gr] = append(by[tw.gr], tw)
	}
	states = [][]typedWrite{nil}
	for _, gr := range grs {
		var undo, ahead []typedWrite
		for _, tw := range by[gr] {
			if tw.ahead {
				ahead = append(ahead, tw)
			} else {
				undo = append(undo, tw)
			}
		}
		own := [][]typedWrite{nil} // this resource's states
		for _, ws := range [][]typedWrite{undo, ahead} {
			more, ok := unitStates(ws, len(ws) > 0 && ws[0].ahead, maxLagStates+1-len(own))
			if !ok {
				return nil, false
			}
			own = append(own, more...)
		}
		var next [][]typedWrite
		for _, st := range states {
			for _, o := range own {
				next = append(next, append(slices.Clip(st), o...))
			}
		}
		if len(next) > maxLagStates+1 {
			return nil, false
		}
		states = next
	}
	return states[1:], true // the first undoes nothing
}

// unitStates are the states of one resource's writes, each a request's writes in turn (newest
// first, or oldest first when ahead), with any of the last request's; at most room of them
// (ok is false beyond).
func unitStates(ws []typedWrite, ahead bool, room int) (states [][]typedWrite, ok bool) {
	slices.SortStableFunc(ws, func(a, b typedWrite) int {
		c := b.done.Compare(a.done)
		if ahead {
			c = -c
		}
		if c != 0 {
			return c
		}
		return strings.Compare(joinKey(a.k.namespace, a.k.name), joinKey(b.k.namespace, b.k.name))
	})
	for start := 0; start < len(ws); {
		end := start + 1
		for end < len(ws) && ws[end].done.Equal(ws[start].done) {
			end++
		}
		unit := ws[start:end]
		if len(unit) > 4 || len(states)+(1<<len(unit))-1 > room {
			return nil, false
		}
		for mask := 1; mask < 1<<len(unit); mask++ {
			st := slices.Clip(ws[:start])
			for i, tw := range unit {
				if mask&(1<<i) != 0 {
					st = append(st, tw)
				}
			}
			states = append(states, st)
		}
		start = end
	}
	return states, true
}

// version names the version of its object the write gives a state it is undone in.
func (tw typedWrite) version() string {
	if tw.ahead {
		return "the version it wrote"
	}
	return "the version before it"
}

// lagged is why a request is not decided for the informers' lag after the write tw: what of
// the version before it is in the way.
func lagged(tw typedWrite, ev *Event, what string) undecided {
	if tw.ahead {
		return laggedResource(tw.gr, fmt.Sprintf("%s was written by the request at %s, which the log records after this one but which was received before this one completed: they ran concurrently, kube-apiserver's admission reads it from an informer, which may already have held that write, and %s",
			joinKey(tw.k.namespace, tw.k.name), tw.by, what))
	}
	return laggedResource(tw.gr, fmt.Sprintf("%s was written %s: kube-apiserver's admission reads it from an informer, which may not yet have held that write, and %s",
		joinKey(tw.k.namespace, tw.k.name), describeDone(tw.done, ev.Received()), what))
}

// laggedResource is why a request is not decided for the informers' lag of gr.
func laggedResource(gr schema.GroupResource, what string) undecided {
	reason := ReasonParamUnknown
	if gr == namespacesGR {
		reason = ReasonNamespaceUnknown
	}
	return because(reason, gr.String()+" "+what)
}

// describeDone says when a write completed relative to a request received at received.
func describeDone(done, received time.Time) string {
	if done.After(received) {
		return fmt.Sprintf("by a request that completed %s after this one was received", done.Sub(received).Round(time.Microsecond))
	}
	return fmt.Sprintf("by a request that completed %s before this one was received", received.Sub(done).Round(time.Microsecond))
}

// rooted are the unknown fields of a stored object as a request reads them: in its oldObject,
// and in its object too for an update (which starts from the stored object).
func rooted(unknowns []vapccel.Unknown, update bool) []vapccel.Unknown {
	var out []vapccel.Unknown
	for _, u := range unknowns {
		old := u
		old.Path = vapccel.FieldPath{Root: "oldObject", Steps: u.Path.Steps}
		out = append(out, old)
		if update {
			out = append(out, u)
		}
	}
	return out
}

// indeterminateError is a decide function's way to say the request cannot be decided, and why.
type indeterminateError struct{ why undecided }

func (e *indeterminateError) Error() string { return e.why.String() }

// undecidable says why the job cannot be decided before it is evaluated: its paramKinds are
// unsettled (see Replayer.unsettledParams), or one is resolving and the worker has no
// alternative evaluator to decide it both ways.
func (j *job) undecidable(w evalWorker) undecided {
	if j.unsettled.is() {
		return j.unsettled
	}
	if u := j.exportUndecided(); u.is() {
		return u
	}
	if j.resolving.is() && w.alt == nil {
		return j.resolving
	}
	return undecided{}
}

// finish accounts for a job's outcome, on the ordered stage, in log order.
func (r *Replayer) finish(j *job) {
	r.running.untrack(j)
	switch {
	case j.skip != "":
		r.sum.skip(j.skip, j.skipNote)
	case j.notMatched:
		r.sum.NotMatched++
	default:
		explainLoss(j.out, j.ev) // what an export lost (exportloss.go)
		r.emit(j.out, j.policies, j.dec)
	}
}

// decidedWithoutMissing says whether a decision made without the old object or all the params
// holds whatever they are (see requestOnly). A binding that found none of the params the
// State knows (parameterNotFoundAction Allow admitted) may have had some in the cluster: the
// request is evaluated again with a stand-in for each missing param, and the decision holds
// when a condition on the request alone skips it too.
func (r *Replayer) decidedWithoutMissing(w evalWorker, j *job, dec *verify.Decision, paramsIncomplete bool, decide func(Evaluator, *stateView) (*verify.Decision, error)) bool {
	if r.requestOnly.decides(dec, j.policies, paramsIncomplete) {
		return true
	}
	if !paramsIncomplete || len(r.standIns) == 0 || !r.requestOnly.decides(dec, j.policies, false) {
		return false
	}
	again, err := decide(w.eval, j.view.withStandIns(r.standIns))
	return err == nil && r.requestOnly.decides(again, j.policies, true)
}

// dependsOnPartial says why a policy's decision depends on a field of a param or namespace
// the evaluator read that the State does not know (see partialUse); zero when none does.
func (r *Replayer) dependsOnPartial(policies []string, partials []partialUse) undecided {
	for _, pu := range partials {
		root, reason := "params", ReasonParamUnknown
		if pu.gr == namespacesGR {
			root, reason = "namespaceObject", ReasonNamespaceUnknown
		}
		us := make([]vapccel.Unknown, len(pu.unknowns))
		for i, u := range pu.unknowns {
			u.Path = vapccel.FieldPath{Root: root, Steps: u.Path.Steps}
			us[i] = u
		}
		for _, p := range policies {
			if read, u, dep := r.reads[p].DependsOn(us); dep {
				return because(reason, fmt.Sprintf("policy %s reads %s, and %s of %s %s is not known: %s", p, read.Path, u.Path, pu.gr, pu.key(), u.Why))
			}
		}
	}
	return undecided{}
}
