package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/decide"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// The ordered stage of a replay reads and changes the State in log order; rebuilding a
// request and evaluating it is most of a replay's work and needs only what the State held at
// the request's point of the log: the old object's stored JSON and a View of the params and
// namespaces. So the ordered stage hands each matched request to evaluation workers with those,
// moves on, and accounts for the outcomes in log order.

// listing is what a deletecollection lists: the stored objects (list), or why the State does
// not know them (listUnknown).
type listing struct {
	list        [][]byte
	listUnknown string
	// named, when set, is the one name the list was of (a field selector's).
	named string
	// listUnknowns are the fields of the listed objects the State does not know.
	listUnknowns map[state.ObjectKey][]vapccel.Unknown
}

// lagged is what kube-apiserver's informers may not yet have held when it admitted a request
// (see Replayer.informerLag).
type lagged struct {
	// typedWrites are the writes to params and namespaces the informers may not yet have
	// held; typedLost the resources of such writes the State did not keep.
	typedWrites []state.TypedWrite
	typedLost   []schema.GroupResource
	// lostLate are those of typedLost of which a write completed after the request's likely
	// admission (likelyAdmission): the State holds it, the likely state does not.
	lostLate []schema.GroupResource
	// aheadUnknown are the resources of which a request the log records after this one, which
	// ran concurrently with it, may have written objects the State does not know (see
	// Replayer.reviseAhead), and where the log records it.
	aheadUnknown []aheadUnknown
	// readBy are the Views the evaluation read params and namespaces through, the job's own
	// and those of the states the informers may have held.
	readBy []*state.StateView
	// settled says every state the informers may have held was evaluated and decided, each
	// through a View of readBy.
	settled bool
	// contradicted says the log's verdicts contradict every state evaluated: a write logged
	// later may give the one they are (see Replayer.reviseAhead).
	contradicted bool
}

// jobResult is a job's outcome: skipped (and a note on why), not matched after all, or a
// record and the evaluator's decision.
type jobResult struct {
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
	// firstAnnotations, when set, are the audit annotations firstAttempt settled the request
	// published on a first attempt on an older version than the one it was decided on.
	firstAnnotations map[string]string
	// reached are the objects a deletecollection the log shows failed deleted in the
	// request pipeline before it failed, with the pipeline's answer (see
	// failedDeleteCollection).
	reached *reachedItems
	// reachedOn are the objects the pipeline's pass on each other View of lag.readBy wrote
	// before it failed.
	reachedOn map[*state.StateView]*reachedItems
	// reachedApplied says the follow stage applied reached to the State: a write logged later
	// that ran concurrently with the request makes what it applied unknown again.
	reachedApplied bool
	// contradicted, when set, says the decision read what the request's response shows the
	// version it read held otherwise than the State's (keptOtherRead): unless a write the log
	// records after it explains it (a revision), the State lacked a write.
	contradicted undecided
}

// job is one matched request on its way through evaluation.
type job struct {
	d        decoded
	ev       *Event
	t        target
	rec      recording
	policies []string
	// given is where the given policies and bindings were when the request was received
	// (lifecycle.go); givenErr why the evaluator of those there could not be built.
	given    givenAt
	givenErr error
	// alike is the prior as decidedAlike compares other versions with it.
	alike *alike
	prior state.Prior
	// createdAfterDelete, for an update, patch or apply that created its object, is the
	// version a DELETE that completed after it was received removed (State.DeletedAfter),
	// which its first attempt may have read; "" otherwise.
	createdAfterDelete string
	// deleted is what the latest deletion of the object removed (State.DeletedPrior) and why
	// a first attempt may have read an older version (State.DeletedStale), as the ordered
	// stage found them for a request answered 404 or raced by a deletion.
	deleted struct {
		prior state.Prior
		found bool
		stale string
	}
	// listed is what a deletecollection lists.
	listed listing
	view   *state.StateView
	// mutators are the cluster's MutatingAdmissionPolicies at the request's point of the log.
	mutators *mutators
	// facts are what the log showed of the server's configuration before the request.
	facts serverFacts
	// lag is what kube-apiserver's informers may not yet have held when it admitted the
	// request.
	lag lagged
	// mutationUnexplained, when set, says why a MutatingAdmissionPolicy the replay does not run
	// may have refused the request before validating admission (failedInUnreplayedMutation).
	mutationUnexplained string
	// evidenced are the replayed policies the log shows installed at the request (see
	// installed), whose verdicts the log records are evidence of what the server did; nil
	// unless the replay checks the log.
	evidenced map[string]bool
	// ran are the replayed policies the log shows installed at the request, whether or not
	// the replay checks the log (evidenced is ran when it does): where the log shows a policy
	// ran, the absence of its verdicts is one.
	ran map[string]bool
	// auditors are the given bindings with the Audit action (Replayer.set).
	auditors map[policyBinding]bool
	// resolving says why the apiserver may not have found the paramKind of a policy of the
	// request yet: the request is decided both ways. unsettled says why it cannot be (see
	// Replayer.unsettledParams).
	resolving, unsettled undecided
	// early is what an export's lost receipt leaves unsettled of the paramKinds of the
	// request's policies, had it been received before it likely was (receivedEarly).
	early earlyReceipt

	done chan struct{}
	// result is the job's outcome, once done is closed.
	result jobResult
	// revise is what a write logged after the request, which ran concurrently with it,
	// revises the outcome with (reviseConcurrent).
	revise revision
}

// revision is what reviseConcurrent needs of a job: the object whose stored version the
// request read, when the request completed, and what the log recorded of it before the
// evaluation refined it.
type revision struct {
	key       state.ReplacedKey
	completed time.Time
	recorded  recording
	// tracked says the job is registered for revision (evaluation.track); revised that a
	// concurrent write revised it.
	tracked, revised bool
	// warns says a policy of the request may warn (see firstAttempt); unknowns are the fields
	// of the request its evaluation did not know.
	warns    bool
	unknowns []vapccel.Unknown
	// concurrent is the write logged after the request that ran concurrently with it, and
	// the outcome before it was evaluated again for it (see likelyOutcome).
	concurrent *concurrentWrite
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
	j.rec = j.revise.recorded
	j.view = j.view.Fresh()
	j.result.out, j.result.dec, j.result.skip, j.result.skipNote, j.result.notMatched, j.result.mutationRan, j.lag.readBy, j.lag.settled, j.lag.contradicted, j.result.reachedOn = nil, nil, "", "", false, false, nil, false, false, nil
	j.result.contradicted = undecided{}
	// What decidedAlike compares with is the prior's, which a revision may change.
	j.alike = nil
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
	// res and altRes are the resources eval and alt were built over; given the evaluators
	// of the given policies and bindings a request found there when some were not
	// (forGiven), by givenAt.key.
	res, altRes verify.Resources
	given       map[string][2]Evaluator
	// plugins are kube-apiserver's built-in admission plugins this worker runs requests
	// through (see plugins.go).
	plugins *apiserver.Plugins
}

// viewStore is the verify.ObjectStore of one evaluator: the View of the request it evaluates.
type viewStore struct{ v *state.StateView }

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
	byKey map[state.ReplacedKey][]*job
}

func (r *Replayer) startEvaluation(ctx context.Context) *evaluation {
	e := &evaluation{jobs: make(chan *job, maxQueued)}
	for _, w := range r.evals {
		e.wg.Add(1)
		go func(w evalWorker) {
			defer e.wg.Done()
			for j := range e.jobs {
				ww := w
				if j.given.key != "" {
					ww, j.givenErr = r.forGiven(w, j.given)
				}
				r.evaluateRecovered(ctx, ww, j)
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
		if !head.revise.tracked && !head.isDone() {
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

// deletedNothing says why a deletecollection the log shows succeeded deleted no object, "" when
// it may have deleted some. The store's DeleteCollection runs validating admission on each
// object it deletes, and on nothing else, and answers with the list of those it deleted: an
// empty list in the log's response, or, without it, a namespace where the State knows there
// is no object of the resource, shows no admission ran.
func deletedNothing(j *job) string {
	ev := j.ev
	if ev.Verb != "deletecollection" || ev.Code() < 200 || ev.Code() >= 300 {
		return ""
	}
	if hasBody(ev.ResponseObject) {
		var list struct {
			Items *[]json.RawMessage `json:"items"`
		}
		if json.Unmarshal(ev.ResponseObject, &list) == nil && list.Items != nil && len(*list.Items) == 0 {
			return "its response lists no deleted object"
		}
		return ""
	}
	if j.listed.list != nil && len(j.listed.list) == 0 && j.listed.listUnknown == "" {
		return "the State holds no object of " + j.t.gvr.GroupResource().String() + " there"
	}
	return ""
}

// failed makes the job's request indeterminate (ReasonInternal) after a panic while the
// replay decided it, named with what panicked.
func (j *job) failed(p any) {
	out := newRecord(j, rebuilt{})
	j.result = jobResult{out: out}
	out.indeterminate(because(ReasonInternal, fmt.Sprintf("vapc failed on this request (a bug: please report it with the event): %v", p)))
}

// settleRecovered settles the job's outcome among the states the server may have been in; a
// panic while it does makes the request indeterminate (ReasonInternal), as evaluateRecovered
// does, instead of ending the replay.
func (j *job) settleRecovered() {
	defer func() {
		if p := recover(); p != nil {
			j.failed(p)
		}
	}()
	j.likelyOutcome()
	j.settleUnsure()
	j.settleContradicted()
	j.settleCreatedAfterDelete()
}

// settleCreatedAfterDelete takes out of the record of an update, patch or apply that created
// its object (201) after a DELETE of it that completed after it was received (its prior's
// RacedFrom) the audit annotations and warnings: its first attempt may have run admission as
// an UPDATE on the version the DELETE removed (the store's retry on the live object, gone, then
// created it), and the audit event keeps what that attempt published (helper exY: a
// server-side apply racing a DELETE, whose annotations were its first attempt's, certain from
// the create). The decision is the create's: a refusal of the first attempt, on data the store
// then found stale, is not the answer.
func (j *job) settleCreatedAfterDelete() {
	out := j.result.out
	if out == nil || out.Decision == DecisionIndeterminate || j.createdAfterDelete == "" || (len(out.AuditAnnotations) == 0 && len(out.Warnings) == 0) {
		return
	}
	why := "its first attempt may have run as an UPDATE on " + j.createdAfterDelete + ", and the audit event keeps what it published"
	for _, k := range slices.Sorted(maps.Keys(out.AuditAnnotations)) {
		out.Notes = append(out.Notes, "audit annotation "+k+" is not known: "+why)
	}
	if len(out.Warnings) > 0 {
		out.Notes = append(out.Notes, "the warnings are not known: "+why)
	}
	out.AuditAnnotations, out.Warnings = nil, nil
	out.Disagreements = nil
}

// mayHaveMutated says whether admission may have changed the object of the job's write: a
// mutating webhook the event names, or a MutatingAdmissionPolicy of the cluster or of the
// replay's that may match it (exB: a cluster's policy labelled the ConfigMaps it patched).
func (r *Replayer) mayHaveMutated(j *job) bool {
	if len(recordedWebhooks(j.ev)) > 0 {
		return true
	}
	resp := auditlog.DecodeAnyObject(j.ev.ResponseObject)
	old, _ := j.prior.Decode()
	req := mutatedObject(j.t, resp, old, j.view)
	req.following = r.set.replayedMAPs
	return j.mutators.mayMutate(req) != ""
}

// settleContradicted makes the request indeterminate whose decision read what its response
// shows the version it read held otherwise than the State's (jobResult.contradicted), where no
// write the log records after it explains it: a write the log does not hold (the scheduler's
// binding at level None, a request logged only as its RequestReceived stage; helper exV).
func (j *job) settleContradicted() {
	if !j.result.contradicted.is() || j.revise.concurrent != nil || j.result.out == nil || j.result.out.Decision == DecisionIndeterminate {
		return
	}
	j.result.out.Alternatives = nil
	j.result.out.indeterminate(j.result.contradicted)
}

// evaluate rebuilds the job's request and decides it, on a worker.
// evaluateRecovered evaluates the job; a panic while it does makes the request indeterminate
// (ReasonInternal), named with what panicked, instead of ending the replay with no output.
func (r *Replayer) evaluateRecovered(ctx context.Context, w evalWorker, j *job) {
	defer func() {
		if p := recover(); p != nil {
			j.failed(p)
		}
	}()
	r.evaluate(ctx, w, j)
}

func (r *Replayer) evaluate(ctx context.Context, w evalWorker, j *job) {
	if !r.cfg.mapOrder.Empty() {
		ctx = verify.WithMessageOrder(ctx, j.messageOrder)
	}
	if r.cfg.evaluateHook != nil {
		r.cfg.evaluateHook(j.ev)
	}
	// Decoded on the worker, not the ordered stage: every scheduled pod's DELETE marks it.
	answered := j.t.op == admission.Delete && j.ev.Verb == "delete" && r.readAsAnswered(j.d, j.ev, j.t, &j.prior)
	if other := markedOtherVersion(j.d, j.ev, j.t, &j.prior); len(other) > 0 && !answered {
		j.prior.Unknowns = append(slices.Clip(j.prior.Unknowns), other...)
	}
	if other := keptOtherStatus(j.ev, j.t, j.prior); len(other) > 0 {
		j.prior.Unknowns = append(slices.Clip(j.prior.Unknowns), other...)
	}
	if kept := keptOtherRead(j.ev, j.t, j.prior); len(kept) > 0 && !r.mayHaveMutated(j) {
		// Settled once the log ahead is read (settleContradicted): a write the log records
		// after this request that ran concurrently with it may be what the response shows.
		defer func() {
			if j.result.dec != nil && j.result.out != nil && j.result.out.Decision != DecisionIndeterminate {
				j.result.contradicted = r.dependsOnUnknown(j, []admitted{{dec: j.result.dec, unknowns: kept}})
			}
		}()
	}
	// The response of a successful write is decoded once: whether it is the admission object
	// decides the pipeline, and rebuild takes it as that object.
	var resp *unstructured.Unstructured
	decodeResponse := func(raw json.RawMessage) *unstructured.Unstructured {
		resp = auditlog.DecodeAnyObject(raw)
		return resp
	}
	if why := deletedNothing(j); why != "" {
		// Before the pipeline, which would list the objects the State holds (helper exAI: a
		// namespace's cleanup whose response lists no pod, in a log that does not hold every
		// pod of the namespace).
		j.result.skip, j.result.skipNote = SkipNothingDeleted, why
		return
	}
	if r.servesThrough(j.ev, j.t, decodeResponse) {
		r.evaluateServed(ctx, w, j)
		return
	}
	if j.rec.byPlugin {
		// A built-in plugin refused it before validating admission (the log's message; its
		// annotations show no policy ran: recordedOf), which the request pipeline would tell
		// (notReached) but does not serve this request: the policies did not decide it (helper
		// exAB: NodeRestriction's refusals of a node's TokenRequests, decided as the policy
		// would have).
		j.result.skip, j.result.skipNote = SkipBeforeAdmission, j.rec.note
		return
	}
	b := r.rebuildWith(j.ev, j.t, j.rec, j.prior, j.facts, resp)
	if b.skip == SkipPendingDeletion && j.revise.concurrent == nil && j.prior.RacedFrom == nil && r.ranAdmission(j.ev) {
		// The log's annotations say admission ran: the State's version, marked deleted, is not
		// the one the server read (a snapshot read after this DELETE marked it).
		out := newRecord(j, b)
		j.result.out = out
		out.indeterminate(because(ReasonOldObjectUnknown, pendingButAdmitted(j)))
		return
	}
	if b.skip != "" {
		j.result.skip = b.skip
		return
	}
	r.prepareCustomResource(j.ev, j.t, &b)
	out := newRecord(j, b)
	j.result.out = out
	if b.indeterminate.is() {
		out.indeterminate(b.indeterminate)
		return
	}
	if u := j.undecidable(w); u.is() {
		out.indeterminate(u)
		return
	}
	d := &rebuiltDecider{r: r, ctx: ctx, w: w, j: j, live: true, b: &b, unknowns: r.rebuiltUnknowns(j, &b, j.prior)}
	r.conclude(w, j, out, b.oldUnknown, d.decide)
	j.revise.unknowns = d.unknowns
	decideOn := func(p state.Prior) (*verify.Decision, error) { return r.decideOn(ctx, w, j, p) }
	r.firstAttempt(j, out, j.result.dec, decideOn)
	r.raced(j, out, decideOn)
	if j.result.dec != nil && j.result.dec.Mutation != nil && out.Decision != DecisionIndeterminate {
		out.Mutations = j.result.dec.Mutation.Changes
	}
}

// pendingButAdmitted says why the old object of a DELETE is not known that the State's version
// has completed without admission (its graceful deletion pending) where the log's annotations
// show validating admission ran.
func pendingButAdmitted(j *job) string {
	return fmt.Sprintf("%s %s: the log's annotations show validating admission ran, where the version the State holds (%s), its graceful deletion pending, completes the DELETE without it: the server read another version", j.t.gvr.GroupResource(), state.JoinKey(j.t.namespace, j.t.name), j.prior.Source)
}

// rebuiltUnknowns are what the replay does not know of a request it rebuilt (b) outside the
// request pipeline on the stored version p: what the State does not know of p, what the
// rebuild could not give, what an export lost of the request, and, for an object the log does
// not hold as the server's response, what the mutating webhooks and policies, the handler's
// field manager and a schema the log does not hold did to it before validating admission.
func (r *Replayer) rebuiltUnknowns(j *job, b *rebuilt, p state.Prior) []vapccel.Unknown {
	var unknowns []vapccel.Unknown
	if b.objectSource == SourceResponse {
		unknowns = append(responseRooted(p.Unknowns, j.t.op == admission.Update), b.unknowns...)
	} else {
		unknowns = append(rooted(p.Unknowns, j.t.op == admission.Update), b.unknowns...)
	}
	unknowns = append(unknowns, exportUnknowns(j.ev, j.t.op)...) // what an export lost (exportloss.go)
	u := b.req.Object
	if u == nil || b.objectSource == SourceResponse {
		return unknowns
	}
	if j.t.op == admission.Create || j.t.op == admission.Update {
		// Mutating webhooks changed the object before validating admission.
		var defaults func(map[string]any)
		if cat := r.cat.c.Schema(); cat != nil && !kubescheme.Knows(u.GroupVersionKind()) {
			defaults, _ = cat.CustomResourceDefaulter(u.GroupVersionKind())
		}
		unknowns = append(unknowns, patchRebuilt(j.ev, u, objectNotLogged(j.ev, j.t), defaults, mayRetry(j.t, j.prior))...)
		unknowns = append(unknowns, j.mutators.unknowns(r.replayedMutation(mutatedObject(j.t, u, b.req.OldObject, j.view)))...)
		// The handler's field manager records the write in managedFields before admission
		// (a custom resource's, a subresource's such as a TokenRequest); the replay runs it
		// only in the request pipeline, which does not serve this request.
		unknowns = append(unknowns, vapccel.Unknown{Path: objectPath("metadata", "managedFields"),
			Why: "the managedFields the field manager of " + describe(j.t.gvr, j.t.sub) + " writes before admission, which the replay does not compute outside the request pipeline"})
	}
	if r.cat.c.Learned(j.t.gvr) {
		schema := j.t.gvr.Resource + "." + j.t.gvr.Group
		if decodedBody(j, b) && r.cat.c.CRDWrittenIn(j.t.gvr.Group) {
			// The log holds the body as a CRD's handler decoded it, pruned and defaulted by the
			// schema (audit.LogRequestObject runs after the decoder): what the strategy does
			// next by the CustomResourceDefinition is not known (exAK). Where the log shows no
			// CRD of the group, it may be an aggregated API's.
			unknowns = append(unknowns,
				vapccel.Unknown{Path: objectPath("status"), Why: "the status as the strategy of " + schema + " prepares it (dropped, or the stored one's, where its CustomResourceDefinition has a status subresource), which the log does not hold"},
				vapccel.Unknown{Path: objectPath("metadata", "generation"), Why: "the generation the strategy of " + schema + " gives the object by its CustomResourceDefinition, which the log does not hold"})
		} else {
			// The server pruned and defaulted the object by a schema the log does not hold.
			unknowns = append(unknowns, vapccel.Unknown{Path: vapccel.FieldPath{Root: "object"},
				Why: "the object as the schema of " + schema + " prunes and defaults it, which the log does not hold"})
		}
	}
	return unknowns
}

// decodedBody says whether the object the replay rebuilt (b) is the request's body of a create
// or an update of a main resource as the log holds it: the object as the handler decoded it.
func decodedBody(j *job, b *rebuilt) bool {
	return (j.ev.Verb == "create" || j.ev.Verb == "update") && j.t.sub == "" && b.objectSource == SourceRequest &&
		(j.t.op == admission.Create || j.t.op == admission.Update)
}

// rebuiltDecider decides a request the replay rebuilt outside the request pipeline (b), with
// what it does not know of it (unknowns): the replayed MutatingAdmissionPolicies first, then
// the validating ones (verify.Evaluator.Evaluate).
type rebuiltDecider struct {
	r   *Replayer
	ctx context.Context
	w   evalWorker
	j   *job
	// live says the decider decides the request on the version the log's order gives, whose
	// evaluations say whether the mutating policies ran (job.result.mutationRan); not on
	// another version (decideOn).
	live     bool
	b        *rebuilt
	unknowns []vapccel.Unknown
}

// decide is an evaluateOn: a decision on any state stands only if it does not depend on what
// is not known of the request.
func (d *rebuiltDecider) decide(eval Evaluator, view *state.StateView) (*verify.Decision, error) {
	dec, err := d.evaluate(eval, view)
	if err == nil {
		var why undecided
		if dec, why = d.numbers(eval, view, dec); why.is() {
			return nil, &indeterminateError{why}
		}
		depends := d.r.dependsOnUnknown
		if d.live && view == d.j.view {
			depends = d.r.dependsOnUnknownButAnnotations // the state the log's order gives
		}
		if why := depends(d.j, []admitted{{dec: dec, unknowns: d.unknowns}}); why.is() {
			return nil, &indeterminateError{why}
		}
	}
	return dec, err
}

// numbers is the decision of a custom resource's create or update whose whole numbers the
// client may have sent as doubles (numbers.go): dec where the policies decide the object with
// them as doubles alike, or where checking against the log its verdicts are dec's and not the
// other's (that one where it is the other way); otherwise why it is not known.
func (d *rebuiltDecider) numbers(eval Evaluator, view *state.StateView, dec *verify.Decision) (*verify.Decision, undecided) {
	j := d.j
	if len(j.policies) == 0 && !hasMutatingPolicies(eval) || !numbersUnsaid(j.ev, j.t) {
		return dec, undecided{}
	}
	doubled, ok := doubledObject(d.b.req.Object, d.r.numberSchema(j.t))
	if !ok {
		return dec, undecided{}
	}
	obj := d.b.req.Object
	d.b.req.Object = doubled
	alt, err := d.evaluate(eval, view)
	d.b.req.Object = obj
	if err != nil {
		return dec, undecided{}
	}
	diff := outcomeDiff(dec, alt)
	if diff == "" || len(verify.Configured(alt.Authorizer)) > 0 && d.alikeAnswered(eval, view, doubled) {
		return dec, undecided{}
	}
	if d.live && view == j.view && j.byAnnotations() {
		switch logged, other := len(check(j.ev, j.rec, dec, j.evidenced)) == 0, len(check(j.ev, j.rec, alt, j.evidenced)) == 0; {
		case logged && !other:
			return dec, undecided{}
		case other && !logged:
			alt.Notes = append(alt.Notes, "decided with the custom resource's whole numbers as doubles (2.0), as the log's verdicts show the client sent them")
			return alt, undecided{}
		}
	}
	return nil, numbersReason(diff)
}

// alikeAnswered says whether the request decides alike with its object and with other (its
// whole numbers as doubles) whatever the authorizer checks the log does not answer answered:
// with each such check allowed or not, on its own (answerWorlds), the two outcomes are the same (the checks
// aside, which outcomeDiff takes as a difference: a validation that asks one beside a
// condition that settles it, seed c:648).
func (d *rebuiltDecider) alikeAnswered(eval Evaluator, view *state.StateView, other *unstructured.Unstructured) bool {
	a, ok := eval.(answeringEvaluator)
	if !ok {
		return false
	}
	without := func(dec *verify.Decision) *verify.Decision {
		c := *dec
		c.Authorizer = nil
		return &c
	}
	obj := d.b.req.Object
	defer func() { d.b.req.Object = obj }()
	return answerWorlds(a, func() ([]verify.AuthorizerCheck, bool) {
		d.b.req.Object = obj
		x, xerr := d.evaluate(eval, view)
		d.b.req.Object = other
		y, yerr := d.evaluate(eval, view)
		if xerr != nil || yerr != nil || x == nil || y == nil || outcomeDiff(without(x), without(y)) != "" {
			return nil, false
		}
		return append(verify.Configured(x.Authorizer), verify.Configured(y.Authorizer)...), true
	})
}

// hasMutatingPolicies says whether eval runs MutatingAdmissionPolicies.
func hasMutatingPolicies(eval Evaluator) bool {
	me, ok := eval.(mutatingEvaluator)
	return ok && me.HasMutatingPolicies()
}

// evaluate evaluates the request with eval over view, and settles what the mutating policies
// did: not known (the request is indeterminate when a decision depends on it), or already in
// the object the server stored.
func (d *rebuiltDecider) evaluate(eval Evaluator, view *state.StateView) (*verify.Decision, error) {
	r, j, b, ctx := d.r, d.j, d.b, d.ctx
	d.w.store.v = view
	defer func() { d.w.store.v = nil }()
	mark := view.Mark()
	dec, err := eval.Evaluate(ctx, b.req)
	if err != nil || dec.Mutation == nil {
		return dec, err
	}
	if d.live {
		j.result.mutationRan = j.result.mutationRan || dec.Mutation.Acted()
	}
	if j.result.schemaRefreshing != "" && dec.Mutation.Acted() {
		return nil, &indeterminateError{because(ReasonMutationUnknown, j.result.schemaRefreshing)}
	}
	var stored []vapccel.Unknown
	if b.objectSource == SourceResponse {
		stored = storedAfterMutation(j.ev, j.t, b.req.Object, b.req.OldObject)
	}
	why, read, refuses := r.mutationUnknownStored(dec.Mutation, d.unknowns, stored, j.mutators, j.policies)
	orderWhy := ""
	if b.objectSource == SourceResponse && dec.Mutation.OrderDependent != "" {
		// The stored object holds what the policies changed in the server's order: that the
		// replay does not know the order matters only when it cannot decide on that object.
		m := *dec.Mutation
		m.OrderDependent = ""
		if w, rd, rf := r.mutationUnknownStored(&m, d.unknowns, stored, j.mutators, j.policies); w == "" {
			orderWhy, why, read, refuses = why, w, rd, rf
		}
	}
	if refuses {
		// A policy that fails on an error may have refused the request on what it read.
		return nil, &indeterminateError{because(mutationReason(j, read), why)}
	}
	if b.objectSource == SourceResponse && why == "" {
		reapplied, clusterOnly := r.reapplied(dec.Mutation, j.mutators)
		if reapplied == "" && dec.Mutation.Allowed && view.Mark() != mark && r.selectedClusterOwn(dec.Mutation, j.mutators) {
			// The policies changed nothing here, but what they read is not all known: they
			// are the cluster's own, and what they did is in the stored object.
			clusterOnly = true
		}
		if v, ok := eval.(validatingEvaluator); ok && clusterOnly {
			// The stored object already holds what the cluster's own copies of the policies
			// changed, in the server's order: validation saw it as it is, whatever the
			// mutating policies read (a param the replay does not know: helper exAJ).
			view.DropSince(mark)
			vdec, err := v.EvaluateValidating(ctx, b.req)
			if err == nil {
				vdec.Notes = append(vdec.Notes, "decided on the object kube-apiserver stored, which already holds what the cluster's MutatingAdmissionPolicies changed")
			}
			return vdec, err
		}
		why = reapplied
		if orderWhy != "" {
			why = orderWhy
		}
	}
	if why != "" {
		if ind := r.dependsOnUnknown(j, []admitted{{dec: dec, unknowns: []vapccel.Unknown{mutationUnknownField(why)}}}); ind.is() || !dec.Mutation.Allowed {
			return nil, &indeterminateError{because(mutationReason(j, read), why)}
		}
		dec.Mutation.Changes = nil // decided without them; what they changed is not known
		dec.Notes = append(dec.Notes, "what the MutatingAdmissionPolicies changed is not known: "+why)
	}
	return dec, nil
}

// evaluateOn evaluates a job's request with an evaluator over a View: the View the job's point of
// the log gives, or one of a state kube-apiserver may have been in. It errs with an
// indeterminateError when the decision depends on what the replay does not know of the request.
type evaluateOn func(eval Evaluator, view *state.StateView) (*verify.Decision, error)

// answeringEvaluator is an Evaluator whose authorizer's answers a caller may set
// (verify.Evaluator.AnsweringChecks).
type answeringEvaluator interface {
	AnsweringChecks(answer func(verify.AuthorizerCheck) authorizer.Decision, f func())
}

// maxAnswerWorlds bounds how many times answerWorlds evaluates a request: a decision that asks
// more checks than that many ways of answering them tell apart is not tried (six checks each
// asked whatever the others answer take 64; six asked one after the other, each only where the
// one before was allowed, seven).
const maxAnswerWorlds = 64

// answerWorlds runs eval once for each way the authorizer may answer the configured checks
// its evaluations ask (verify.AuthorizerCheck.Asked), each allowed or not on its own (RBAC may allow a user to get secrets
// and not to delete them): a check no answer was chosen for yet is answered allow, and the
// checks a run asks are then tried not allowed too, one by one, and so are those the runs of
// each way ask. eval returns the configured checks it asked, or false to stop. answerWorlds
// says whether it tried every way (within maxAnswerWorlds) without eval stopping.
func answerWorlds(a answeringEvaluator, eval func() ([]verify.AuthorizerCheck, bool)) bool {
	runs := 0
	var walk func(chosen map[verify.AuthorizerCheck]authorizer.Decision) bool
	// expand tries the ways of answering the checks a run with chosen asked that no answer was
	// chosen for: allowed, the run's own answer (the run is that way's too), and not allowed.
	var expand func(chosen map[verify.AuthorizerCheck]authorizer.Decision, asked []verify.AuthorizerCheck) bool
	expand = func(chosen map[verify.AuthorizerCheck]authorizer.Decision, asked []verify.AuthorizerCheck) bool {
		for _, c := range asked {
			k := c.Asked()
			if _, done := chosen[k]; done {
				continue
			}
			allowed, denied := maps.Clone(chosen), maps.Clone(chosen)
			allowed[k], denied[k] = authorizer.DecisionAllow, authorizer.DecisionNoOpinion
			return expand(allowed, asked) && walk(denied)
		}
		return true // every check it asked was answered as chosen
	}
	walk = func(chosen map[verify.AuthorizerCheck]authorizer.Decision) bool {
		if runs == maxAnswerWorlds {
			return false
		}
		runs++
		var asked []verify.AuthorizerCheck
		ok := false
		a.AnsweringChecks(func(c verify.AuthorizerCheck) authorizer.Decision {
			if d, ok := chosen[c]; ok { // (given as asked)
				return d
			}
			return authorizer.DecisionAllow
		}, func() { asked, ok = eval() })
		return ok && expand(chosen, asked)
	}
	return walk(map[verify.AuthorizerCheck]authorizer.Decision{})
}

// answersAlike says whether the decision dec, which asked the authorizer checks the log does
// not answer, is the same whatever they answered: evaluated again with each such check allowed
// or not, on its own (answerWorlds), the response, refusals, warnings and audit annotations are
// dec's (a false matchCondition beside the check, a validation that fails before it, a binding
// that only audits; helper exAB). A check's error, which only a webhook authorizer gives, is not
// tried. Tried with every check allowed and with none alone, a policy that refuses a user who
// may get secrets and not delete them was claimed to admit.
func (r *Replayer) answersAlike(w evalWorker, j *job, dec *verify.Decision, evaluateOn evaluateOn) (alike bool, differing []string) {
	a, ok := w.eval.(answeringEvaluator)
	if !ok {
		return false, nil
	}
	diff := map[string]bool{}
	var worlds []*verify.Decision
	tried := answerWorlds(a, func() ([]verify.AuthorizerCheck, bool) {
		again, err := evaluateOn(w.eval, j.view)
		if err != nil || again == nil {
			return nil, false
		}
		worlds = append(worlds, again)
		for k, v := range dec.AuditAnnotations {
			if w, ok := again.AuditAnnotations[k]; !ok || w != v {
				diff[k] = true
			}
		}
		for k := range again.AuditAnnotations {
			if _, ok := dec.AuditAnnotations[k]; !ok {
				diff[k] = true
			}
		}
		return verify.Configured(again.Authorizer), true
	})
	if !tried {
		return false, nil
	}
	// Alike but for the audit annotations the answers give.
	without := func(d *verify.Decision) *verify.Decision {
		c := *d
		c.Authorizer = nil
		c.AuditAnnotations = maps.Clone(d.AuditAnnotations)
		for k := range diff {
			delete(c.AuditAnnotations, k)
		}
		return &c
	}
	base := without(dec)
	for _, again := range worlds {
		if outcomeDiff(base, without(again)) != "" {
			return false, nil
		}
	}
	return true, slices.Sorted(maps.Keys(diff))
}

// unknownAnswered takes the audit annotations keys (a policy's "<policy>/<key>" or the
// validation_failure annotation) out of the decision, its results included, as not known (why).
func unknownAnswered(dec *verify.Decision, keys []string, why string) {
	for _, k := range keys {
		dec.Forget(k, why)
	}
}

// conclude decides the job's request with evaluateOn (which evaluates it with an evaluator over a
// View, and errs with an indeterminateError when the decision depends on what the replay does
// not know of the request) and fills its record, with the notes given: the decision both ways while a paramKind may not have been
// found yet, what the View could not answer, what holds without what is missing (oldUnknown:
// why the old object is not known and a stand-in took its place), the authorizer, and the
// check against the log.
func (r *Replayer) conclude(w evalWorker, j *job, out *Record, oldUnknown undecided, evaluateOn evaluateOn, notes ...string) {
	dec, err := evaluateOn(w.eval, j.view)
	var alt *verify.Decision
	if err == nil && j.resolving.is() {
		alt, err = evaluateOn(w.alt, j.view)
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
	dec, lagAlternatives, lagged := r.informerLag(w, j, dec, evaluateOn)
	if lagged.is() {
		out.indeterminate(lagged)
		out.Alternatives = lagAlternatives
		return
	}
	if dec, lagAlternatives = r.paramKindsSettled(w, j, out, dec, alt, lagAlternatives, evaluateOn); dec == nil {
		return
	}
	misses := j.view.Misses()
	paramsIncomplete := len(misses) > 0
	for _, m := range misses {
		if m.GR == state.NamespacesGR {
			paramsIncomplete = false // a namespace's labels decide whether a policy applies
		}
	}
	var inferred string
	var unaffected func(string) bool
	if paramsIncomplete && !oldUnknown.is() {
		unaffected = r.paramsUnaffected(state.MissedResources(misses))
	}
	if (oldUnknown.is() || paramsIncomplete) && (len(misses) == 0 || paramsIncomplete) && r.decidedWithoutMissing(w, j, dec, paramsIncomplete, unaffected, evaluateOn) {
		// Decided whatever is missing: see requestOnly.
		what := oldUnknown.detail
		if paramsIncomplete {
			what = state.MissText(misses)
		}
		inferred = "decided without what is not known (" + what + "): every policy that reads it skipped the request on a matchCondition that reads only the request"
		misses = nil
	} else if oldUnknown.is() {
		if !r.decidedWithoutOld(j, dec) {
			out.indeterminate(oldUnknown)
			return
		}
		inferred = "decided without the old object, which is not known (" + oldUnknown.detail + "): no policy of the request reads it"
	}
	var partial undecided
	if len(misses) == 0 {
		// What the evaluator read of a param or namespace the State knows but for some fields.
		partial = r.dependsOnPartial(j.policies, j.view.Partials, dec)
	}
	if len(dec.Results) == 0 && len(misses) == 0 && !partial.is() && !j.result.mutationRan && len(lagAlternatives) == 0 {
		j.result.notMatched = true
		return
	}
	// Whether the authorizer checks the log does not answer change the decision, and which
	// audit annotations their answers give (those are then not known).
	checks := verify.Configured(dec.Authorizer)
	authzAlike := false
	if len(misses) == 0 && !partial.is() && len(checks) > 0 {
		var differing []string
		if authzAlike, differing = r.answersAlike(w, j, dec, evaluateOn); authzAlike {
			unknownAnswered(dec, differing, fmt.Sprintf("it depends on the answers of authorizer checks the audit log does not hold (the first: %s)", checks[0]))
		}
	}
	if dec.ByChance != "" && len(misses) == 0 && !partial.is() {
		// (A decision that read what the State does not know is indeterminate for that
		// first, below: seed r:1344, a param created at level Metadata.)
		out.indeterminate(because(ReasonMapOrder, dec.ByChance))
		return
	}
	// No result but a miss: whether a policy matched rested on an object the State does not
	// know (a namespace for a namespaceSelector, as the apiserver's matcher reads it), so
	// "not matched" would be a guess.
	out.fill(dec)
	out.likely(lagAlternatives...)
	out.Notes = append(out.Notes, notes...)
	if inferred != "" {
		out.Notes = append(out.Notes, inferred)
		if oldUnknown.is() {
			out.OldObjectSource = SourceUnknown
		}
	}
	if len(misses) > 0 {
		out.indeterminate(because(readReason(misses[0].GR), state.MissText(misses)))
	} else if partial.is() {
		out.indeterminate(partial)
	} else if len(checks) > 0 {
		if authzAlike {
			out.Notes = slices.DeleteFunc(out.Notes, func(n string) bool {
				return strings.HasPrefix(n, "the decision depended on the authorizer, which vapc answers")
			})
			out.Notes = append(out.Notes, fmt.Sprintf("decided without the answers of %d authorizer checks, which the audit log does not hold: it is the same whether the authorizer allowed them or not (the first: %s)", len(checks), checks[0]))
		} else {
			out.indeterminate(because(ReasonAuthorizer, fmt.Sprintf("the decision depended on %d authorizer checks, which the audit log does not answer (the first: %s)", len(checks), checks[0])))
		}
	}
	if r.cfg.check && out.Decision != DecisionIndeterminate {
		out.Disagreements = check(j.ev, j.rec, dec, j.evidenced)
		if len(dec.Denials) > 0 && j.rec.policy != "" && dec.Refuses(j.ev.Code(), j.ev.Message()) {
			// Several refusals were possible: the log says which one the server chose.
			out.Code, out.Message = j.ev.Code(), j.ev.Message()
		}
	}
	j.result.dec = dec
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
	if update {
		out = append(out, entriesOrderUnknown(unknowns)...)
	}
	return out
}

// entriesOrderUnknown is the order of an object's managedFields entries, not known once it is
// written again where the time of an entry is not (the replay stood in its own clock for the
// server's): the field manager sorts the entries by their times. None where every time is
// known.
func entriesOrderUnknown(unknowns []vapccel.Unknown) []vapccel.Unknown {
	for _, u := range unknowns {
		if s := u.Path.Steps; u.Path.Root == "object" && len(s) == 4 && s[0] == "metadata" && s[1] == "managedFields" && s[3] == "time" {
			return []vapccel.Unknown{{Path: objectPath("metadata", "managedFields"),
				Why: "the order of the managedFields entries, which the field manager sorts by their times, one of which is not known: " + u.Why}}
		}
	}
	return nil
}

// responseRooted is rooted for a request whose object is its response (the object the store
// kept, which admission saw: see rebuild): what the State does not know of the version it read
// is not known of its oldObject, and of its object only the resourceVersion, which the replay
// gives it from the oldObject (the response has the one the write stored).
func responseRooted(unknowns []vapccel.Unknown, update bool) []vapccel.Unknown {
	out := rooted(unknowns, false)
	if !update {
		return out
	}
	for _, u := range unknowns {
		if state.FieldUnder(u.Path.Steps, "metadata", "resourceVersion") {
			out = append(out, vapccel.Unknown{Path: objectPath("metadata", "resourceVersion"), ValueOnly: u.ValueOnly, Why: u.Why})
		}
	}
	return out
}

// paramKindsSettled settles a decision (dec) where kube-apiserver may not have found the
// paramKind of a policy of the request yet: decided both ways while the kind resolves (alt,
// resolvedParamKind), or received before it was found for sure where its export lost when
// (receivedEarly). It returns the decision and the alternatives (alts, and theirs); a nil
// decision where the record is filled, indeterminate.
func (r *Replayer) paramKindsSettled(w evalWorker, j *job, out *Record, dec, alt *verify.Decision, alts []Alternative, evaluateOn evaluateOn) (*verify.Decision, []Alternative) {
	if alt != nil {
		if dec, alts = r.resolvedParamKind(j, out, dec, alt, alts); dec == nil {
			return nil, nil
		}
	}
	if j.early.why.is() {
		return r.receivedEarly(w, j, out, dec, alts, evaluateOn)
	}
	return dec, alts
}

// resolvedParamKind settles a request decided both ways while kube-apiserver may not have
// found a paramKind yet (found: dec, after the informers' lag; not found: alt): alike, or the
// way the log's verdicts do not contradict when they contradict the other (kube-apiserver's
// discovery cache, renewed every 30 seconds, chose), certain. The rest of the request's
// settling (the informers' lag, an older version of its object) is the found way's: not found
// is chosen only where none applies. Otherwise the record is indeterminate, with both ways as
// alternatives, and the result nil. The not-found way is evaluated on the state the log's
// order gives alone: where the request may have read another (a write the informers may not
// have held), alike there is the likely state's, and the not-found way on the others an
// undecided alternative, added to the lag's (alts).
func (r *Replayer) resolvedParamKind(j *job, out *Record, dec, alt *verify.Decision, alts []Alternative) (*verify.Decision, []Alternative) {
	const found, notFound = "kube-apiserver had found the paramKind", "kube-apiserver had not yet found the paramKind"
	settledOnFound := j.otherStates(alts)
	if sameOutcome(dec, alt) {
		dec.Notes = append(dec.Notes, "decided alike whether or not kube-apiserver had found the paramKind yet: "+j.resolving.detail)
		if settledOnFound && j.evidenceOf(dec) != decide.Agrees {
			// (Where the log's verdicts are the decision's, the server decided so.)
			alts = append(alts, undecidedAlternative(j.resolving, notFound+", and the informers held another state of the params and namespaces it read than the log's order gives"))
		}
		return dec, alts
	}
	onFound, onNotFound := j.evidenceOf(dec), j.evidenceOf(alt)
	switch {
	case onNotFound == decide.Disagrees && onFound != decide.Disagrees:
		dec.Notes = append(dec.Notes, "decided on the log's verdicts, which are not those of the state where "+notFound+": "+j.resolving.detail)
		return dec, alts
	case onFound == decide.Disagrees && onNotFound != decide.Disagrees && !settledOnFound:
		alt.Notes = append(alt.Notes, "decided on the log's verdicts, which are not those of the state where "+found+": "+j.resolving.detail)
		return alt, nil
	}
	out.indeterminate(j.resolving)
	out.Alternatives = []Alternative{alternativeOf(alt, dec, found), alternativeOf(dec, alt, notFound)}
	return nil, nil
}

// otherStates says whether the request may have read another state than the one it was
// decided on: a write the informers may not have held (alts, the lag's alternatives), an
// older version of its object.
func (j *job) otherStates(alts []Alternative) bool {
	return len(j.lag.typedWrites) > 0 || len(alts) > 0 || j.prior.OtherVersionRead()
}

// earlyReceipt is what an export's lost receipt leaves unsettled of the paramKinds of a
// request's policies (see Replayer.unsettledParams): why, had it been received at the
// earliest it may have been; both when one kind was resolving then (the request is decided
// both ways, on the worker's alternative evaluator); until, when the last kind was found for
// sure; done, when the request completed.
type earlyReceipt struct {
	why         undecided
	both        bool
	until, done time.Time
}

// receivedEarly settles a request decided as received moments before it completed, where its
// export lost when it was: an earlier receipt, before kube-apiserver had found the paramKinds
// of its policies for sure, is an alternative, and the decision is likely, as for a write that
// completed before it (lagWorlds). The alternative is decided where the worker can take the
// one kind as not found and the request read no param or namespace another state of the
// informers would give otherwise (the not-found way is evaluated on the likely state alone:
// an earlier receipt may have read another), undecided otherwise. The log's verdicts decide
// as resolvedParamKind's do: the likely decision certain where they contradict the
// alternative and not it, the alternative where they contradict the likely decision alone and
// it was decided on the one state; where they contradict the likely decision and nothing else
// is decided, the record is indeterminate with the reason the earliest receipt gives, and the
// decision returned nil.
func (r *Replayer) receivedEarly(w evalWorker, j *job, out *Record, dec *verify.Decision, alts []Alternative, evaluateOn evaluateOn) (*verify.Decision, []Alternative) {
	e := j.early
	cond := fmt.Sprintf("the request was received before %s, %s or more before it completed (%s), when kube-apiserver may not have found the paramKind yet",
		e.until.UTC().Format("2006-01-02T15:04:05.000Z07:00"), e.done.Sub(e.until).Round(time.Millisecond), j.ev.Loss.Of(auditlog.LostReceived))
	oneState := !j.otherStates(alts)
	var alt *verify.Decision
	if e.both && w.alt != nil {
		if d, err := evaluateOn(w.alt, j.view); err == nil {
			alt = d
		}
	}
	onFound := j.evidenceOf(dec)
	if alt != nil {
		onNotFound := j.evidenceOf(alt)
		switch {
		case sameOutcome(dec, alt) && oneState:
			dec.Notes = append(dec.Notes, "decided alike whether or not kube-apiserver had found the paramKind yet, had the request been received before it likely was: "+e.why.detail)
			return dec, alts
		case onNotFound == decide.Disagrees && onFound != decide.Disagrees:
			dec.Notes = append(dec.Notes, "decided on the log's verdicts, which are not those of the request received before kube-apiserver had found the paramKind for sure: "+cond)
			return dec, alts
		case onFound == decide.Disagrees && onNotFound != decide.Disagrees && oneState:
			alt.Notes = append(alt.Notes, "decided on the log's verdicts, which are not those of the request received moments before it completed: "+cond)
			return alt, nil
		}
	}
	if onFound == decide.Disagrees {
		out.indeterminate(e.why)
		return nil, nil
	}
	a := undecidedAlternative(e.why, cond)
	if alt != nil && oneState {
		a = alternativeOf(dec, alt, cond)
	}
	return dec, append(alts, a)
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
	if j.givenErr != nil {
		return because(ReasonRequest, j.givenErr.Error())
	}
	if u := j.exportUndecided(); u.is() {
		return u
	}
	if j.resolving.is() && w.alt == nil {
		return j.resolving
	}
	return undecided{}
}

// settleCode makes indeterminate a denial whose HTTP code is not the one the log records
// where an export lost the failure's message (the log does not say what refused it): the
// server refused the request otherwise, before validating admission (a mutating webhook's
// failed call, a 500; helper exAA, GKE's sink) or on another state than the replay's.
func (j *job) settleCode() {
	out := j.result.out
	if out == nil || out.Decision != DecisionDeny || out.Recorded != RecordedUnknown || !j.ev.Loss.Lost.Has(auditlog.LostMessage) || j.ev.Loss.Lost.Has(auditlog.LostCode) ||
		j.ev.Code() < 300 || out.Code == 0 || out.Code == j.ev.Code() {
		return
	}
	out.Alternatives = nil
	out.indeterminate(because(ReasonRebuild, fmt.Sprintf("the policies refuse it with HTTP %d, where the log records HTTP %d and %s: what refused it in kube-apiserver ran before validating admission, or the state the replay knows is not the server's", out.Code, j.ev.Code(), j.ev.Loss.Of(auditlog.LostMessage))))
}

// settleUnran takes out of an admitted request's record the audit annotations and warnings
// where it failed and an export lost the message: what refused it may have run before
// validating admission (a mutating webhook's failed call, a plugin), and then no policy
// published anything (helper exAA through GKE's sink: an observer's annotations certain on
// pods a mutating webhook's failed call refused).
func (j *job) settleUnran() {
	out := j.result.out
	if out == nil || out.Decision != DecisionAdmit || out.Recorded != RecordedUnknown || j.ev.Code() < 300 || !j.ev.Loss.Lost.Has(auditlog.LostMessage) ||
		(len(out.AuditAnnotations) == 0 && len(out.Warnings) == 0) {
		return
	}
	why := "the request failed, and " + j.ev.Loss.Of(auditlog.LostMessage) + ": what refused it may have run before validating admission"
	for _, k := range slices.Sorted(maps.Keys(out.AuditAnnotations)) {
		out.Notes = append(out.Notes, "audit annotation "+k+" is not known: "+why)
	}
	if len(out.Warnings) > 0 {
		out.Notes = append(out.Notes, "the warnings are not known: "+why)
	}
	out.AuditAnnotations, out.Warnings = nil, nil
	for i := range out.Results {
		out.Results[i].AuditAnnotations = nil
	}
	for i := range out.Alternatives {
		out.Alternatives[i].AuditAnnotations, out.Alternatives[i].Warnings = nil, nil
	}
}

// settleGeneratedName takes out of a refused create's message the name the replay's pipeline
// generated for an object created with generateName where the log does not hold the server's
// (its refusal's details, which an export may lose): the message names the object as
// generateName and "?????" (names.SimpleNameGenerator's five random characters), with a note
// (helper exAA through GKE's sink: a ReplicaSet's pods refused, each message certain with
// another name than the server's).
func (j *job) settleGeneratedName() {
	out := j.result.out
	if out == nil || out.Decision != DecisionDeny || j.ev.Verb != "create" || j.t.sub != "" ||
		(j.ev.ResponseStatus != nil && j.ev.ResponseStatus.Details != nil && j.ev.ResponseStatus.Details.Name != "") {
		return
	}
	gn := auditlog.MemberString(j.ev.RequestObject, "metadata", "generateName")
	if gn == "" || auditlog.MemberString(j.ev.RequestObject, "metadata", "name") != "" {
		return
	}
	generated := regexp.MustCompile(`"` + regexp.QuoteMeta(gn) + `[a-z0-9]{5}"`)
	if !generated.MatchString(out.Message) {
		return
	}
	placeholder := `"` + gn + `?????"`
	out.Message = generated.ReplaceAllLiteralString(out.Message, placeholder)
	for i := range out.Alternatives {
		out.Alternatives[i].Message = generated.ReplaceAllLiteralString(out.Alternatives[i].Message, placeholder)
	}
	out.Notes = append(out.Notes, "the message names the object by the name kube-apiserver generated (generateName "+gn+"), which the log does not hold: "+placeholder+" stands for it")
}

// finish accounts for a job's outcome, on the ordered stage, in log order.
func (r *Replayer) finish(j *job) {
	r.running.untrack(j)
	j.settleRecovered()
	j.settleCode()
	j.settleUnran()
	j.settleGeneratedName()
	switch {
	case j.result.skip != "":
		r.output.sum.skip(j.result.skip, j.result.skipNote)
	case j.result.notMatched:
		r.output.sum.NotMatched++
	default:
		explainLoss(j.result.out, j.ev) // what an export lost (exportloss.go)
		if len(r.set.secretParams) > 0 {
			// A Secret's values the policies read as params are scrubbed (redact.go); only
			// a policy whose params are Secrets reads one through the view.
			var secrets []runtime.Object
			if j.view != nil {
				secrets = j.view.Secrets()
			}
			j.result.out.paramSecrets(secrets, slices.ContainsFunc(j.policies, func(p string) bool { return r.set.secretParams[p] }))
		}
		if out := j.result.out; out.Decision == DecisionIndeterminate && out.recordedVerdict != "" {
			unproven := maps.Clone(r.set.loadedPolicies)
			maps.DeleteFunc(unproven, func(p string, _ bool) bool { return j.evidenced[p] })
			out.verdictUnproven = recordedVerdictOf(j.ev, unproven) != ""
		}
		r.output.emit(j.result.out, j.policies, j.result.dec)
	}
}

// decidedWithoutOld says whether an update's decision, made with a stand-in for its old object
// (its kind and name), holds whatever the old object is: no policy of the request reads
// oldObject (in its expressions or an object selector, which matches an update on the old
// object's labels too) or the object's resourceVersion, and no replayed
// MutatingAdmissionPolicy acted on it.
func (r *Replayer) decidedWithoutOld(j *job, dec *verify.Decision) bool {
	if j.t.op != admission.Update || dec == nil || dec.Mutation.Acted() {
		return false
	}
	// The object's resourceVersion is the old object's too: the store sets it on the object
	// of an unconditional update before admission. Every messageExpression counts: the
	// validator evaluates them all, on what the validations left of the cost budget, and the
	// old object's size is not known.
	old := []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "oldObject"}}, {Path: objectPath("metadata", "resourceVersion")}}
	return r.noneReads(j.policies, old)
}

// paramsUnaffected says which policies read nothing of the resources the State missed params
// of: those without params, or with params of another resource.
func (r *Replayer) paramsUnaffected(missed map[schema.GroupResource]bool) func(policy string) bool {
	paramOf := r.cur().scope.paramOf
	return func(p string) bool {
		gr, ok := paramOf[p]
		return !ok || !missed[gr]
	}
}

// decidedWithoutMissing says whether a decision made without the old object or all the params
// holds whatever they are (see requestOnly). A binding that found none of the params the
// State knows (parameterNotFoundAction Allow admitted) may have had some in the cluster: the
// request is evaluated again with a stand-in for each missing param, and the decision holds
// when a condition on the request alone skips it too.
func (r *Replayer) decidedWithoutMissing(w evalWorker, j *job, dec *verify.Decision, paramsIncomplete bool, unaffected func(string) bool, evaluateOn evaluateOn) bool {
	if r.set.requestOnly.decides(dec, j.policies, paramsIncomplete, unaffected) {
		return true
	}
	if !paramsIncomplete || len(r.cur().standIns) == 0 || !r.set.requestOnly.decides(dec, j.policies, false, unaffected) {
		return false
	}
	again, err := evaluateOn(w.eval, j.view.WithStandIns(r.cur().standIns))
	return err == nil && r.set.requestOnly.decides(again, j.policies, true, unaffected)
}

// dependsOnPartial says why a policy's decision depends on a field of a param or namespace
// the evaluator read that the State does not know (see partialUse); zero when none does.
func (r *Replayer) dependsOnPartial(policies []string, partials []state.PartialUse, dec *verify.Decision) undecided {
	for _, pu := range partials {
		root, reason := "params", ReasonParamUnknown
		if pu.GR == state.NamespacesGR {
			root, reason = "namespaceObject", ReasonNamespaceUnknown
		}
		us := make([]vapccel.Unknown, len(pu.Unknowns))
		var shapes []vapccel.Unknown
		for i, u := range pu.Unknowns {
			u.Path = vapccel.FieldPath{Root: root, Steps: u.Path.Steps}
			us[i] = u
			if !u.ValueOnly {
				shapes = append(shapes, u)
			}
		}
		for _, p := range policies {
			// The messageExpressions of validations that did not fail read only values there
			// (readsOf): the decision (nil: not made yet) says which.
			reads, _ := r.readsOf(p, dec, shapes)
			if m, ok := r.set.mutating[p]; ok && pu.GR == state.NamespacesGR {
				// A MutatingAdmissionPolicy's change, which validation then reads, rests on
				// all it reads of the namespace: its selectors, its expressions.
				reads = m.reads
			}
			if read, u, dep := reads.DependsOn(us); dep {
				return because(reason, fmt.Sprintf("policy %s reads %s, and %s of %s %s is not known: %s", p, read.Path, u.Path, pu.GR, pu.Key(), u.Why))
			}
		}
	}
	return undecided{}
}
