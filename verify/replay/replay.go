package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/catalog"
	"github.com/vapc-dev/vapc/verify/replay/internal/source"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// Evaluator decides one admission request: one the replay rebuilt from the log (Evaluate), or
// one kube-apiserver's request pipeline built (EvaluateAttributes). *verify.Evaluator
// implements it.
type Evaluator interface {
	Evaluate(ctx context.Context, req verify.Request) (*verify.Decision, error)
	EvaluateAttributes(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) (*verify.Decision, error)
}

// EvaluatorFunc builds an Evaluator of a replay over the store it must read params and
// namespaces from: a View of the replay's State at the point of the log of the request it
// evaluates. A replay builds one per evaluating goroutine and calls each from one goroutine at
// a time.
type EvaluatorFunc func(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, resources verify.Resources, store verify.ObjectStore) (Evaluator, error)

// Progress is how far a replay has got.
type Progress struct {
	Lines   int
	Bytes   int64
	Elapsed time.Duration
}

// Option configures a Replayer.
type Option func(*Replayer) error

// WithResources sets the cluster's API (default: the built-in APIs of Kubernetes 1.37). A
// *schema.Catalog is copied: the replay adds to its copy the CustomResourceDefinitions the
// snapshot and the log define, and removes those the log deletes. Other Resources are taken as
// they are, without the log's CRDs.
func WithResources(res verify.Resources) Option {
	return func(r *Replayer) error { r.cfg.resources = res; return nil }
}

// WithEvaluator replaces the evaluator (default: verify.New over the State).
func WithEvaluator(f EvaluatorFunc) Option {
	return func(r *Replayer) error { r.cfg.newEval = f; return nil }
}

// WithSnapshot seeds the State with the objects of files or folders (kubectl get -o yaml or
// -o json output).
func WithSnapshot(paths ...string) Option {
	return func(r *Replayer) error { r.cfg.snapshots = append(r.cfg.snapshots, paths...); return nil }
}

// WithMaxLineBytes sets the longest line read (default DefaultMaxLineBytes).
func WithMaxLineBytes(n int) Option {
	return func(r *Replayer) error {
		if n <= 0 {
			return fmt.Errorf("max line bytes must be positive, not %d", n)
		}
		r.cfg.maxLine = n
		return nil
	}
}

// WithWorkers sets how many goroutines decode lines, and how many evaluate requests (default
// GOMAXPROCS). Each evaluating goroutine has its own Evaluator.
func WithWorkers(n int) Option {
	return func(r *Replayer) error { r.cfg.workers = n; return nil }
}

// WithCheckRecorded compares the log's own verdicts with the predictions (see Check).
func WithCheckRecorded(on bool) Option {
	return func(r *Replayer) error { r.cfg.check = on; return nil }
}

// WithAdmissionPlugins sets the built-in admission plugins requests are replayed through, by
// the names kube-apiserver's --enable-admission-plugins takes (default: those kube-apiserver
// 1.37 enables by default that run before ValidatingAdmissionPolicy; see AdmissionPlugins).
func WithAdmissionPlugins(names []string) Option {
	return func(r *Replayer) error { r.cfg.admissionPlugins = append([]string{}, names...); return nil }
}

// AdmissionPlugins returns the built-in admission plugins of a replay with kube-apiserver's
// --enable-admission-plugins and --disable-admission-plugins applied to its defaults, in the
// order the server runs them; an error names a plugin a replay cannot run.
func AdmissionPlugins(enable, disable []string) ([]string, error) {
	return apiserver.SelectPlugins(enable, disable)
}

// DefaultLag is how long after a write completed a replay holds, by default, that
// kube-apiserver's informers and watch cache may not have held it yet (see WithLag): a request
// received later is decided on the write, certain; one received sooner is decided on it too,
// but likely, where the version before it decides otherwise. Measured on the e2e harness's
// kube-apiserver on two cores (TestLagMeasured, BENCHMARKS.md): the ValidatingAdmissionPolicy
// plugin's informer and the watch cache hold a write by the next request at p90, and within
// 2.5 ms at most, at rest and under a load of eight writers alike. A production server behind
// a remote etcd adds its network round trips, and one under heavy load its queueing: 250 ms,
// a hundred times what was measured, covers those; a longer lag makes more decisions likely,
// none wrong.
const DefaultLag = 250 * time.Millisecond

// WithLag sets how long after a write completed the replay holds that kube-apiserver's
// informers and watch cache may not have held it yet (default DefaultLag): a request received
// sooner is decided as likely where the version before the write decides otherwise.
func WithLag(d time.Duration) Option {
	return func(r *Replayer) error {
		if d < 0 {
			return fmt.Errorf("the lag must be 0 or more, not %s", d)
		}
		r.cfg.lag = &d
		return nil
	}
}

// WithProgress calls fn about every interval while a replay runs.
func WithProgress(interval time.Duration, fn func(Progress)) Option {
	return func(r *Replayer) error { r.cfg.progress, r.cfg.progressEvery = fn, interval; return nil }
}

// Replayer replays audit logs through a fixed set of policies and bindings. A Replayer runs
// one replay: its State moves forward with the log, and a second Run is refused.
type Replayer struct {
	// set is the policies replayed, fixed by New: the workers read it.
	set policySet
	// cfg is what the Options set, fixed by New.
	cfg config
	// cat is the cluster's API as the replay follows it: CRDs, paramKinds, epochs.
	cat catalogState
	// output is where the records go, and what they add up to.
	output emitter
	// ran says Run was called: a Replayer runs once.
	ran bool
	// orderedPlugins are the admission plugins the ordered stage replays writes through
	// (replayWrite).
	orderedPlugins *apiserver.Plugins
	// mutators are the cluster's MutatingAdmissionPolicies as the log has shown them so far.
	mutators *mutators
	// installed follows which of the policies the log shows installed (with --check-recorded).
	installed *installed
	state     *state.State
	evals     []evalWorker
	running   *evaluation
	// facts are what the log has shown so far of the server's configuration (ordered stage).
	facts serverFacts
	// logStamp is the latest completion of a request the log records so far; logTime is it
	// parsed (from logTimeOf), see currentLogTime.
	logStamp, logTimeOf string
	logTime             time.Time
	// clockBack follows where the log's clock goes back (see noteLogTime): the latest stage
	// time of the part of the log being read.
	clockBack struct {
		latest string
	}
	// lookaheadCut counts the requests accounted for before their lookahead ended.
	lookaheadCut int
	quiesced     bool // between the halves of a barrier (see quiesce)
}

// catalogState is the cluster's API as a replay follows it: the catalog (internal/catalog:
// the CRDs of the catalog, the snapshot and the log, the paramKinds' mappings) and the epoch
// derived from it (epoch.go). The ordered stage changes it, between the halves of a barrier;
// the workers read the epoch.
type catalogState struct {
	c     *catalog.Catalog
	epoch atomic.Pointer[epoch]
	// deferred are the snapshot's objects of kinds not yet known, while it loads.
	deferred []deferredObject
}

// emitter is where a replay's records go (in the log's order), and what they add up to.
type emitter struct {
	sum     *Summary
	agg     *aggregator
	pending map[string]pendingRequest
	finals  recentIDs
	sink    func(*Record) error
	sinkErr error
}

// config is what a replay's Options set.
type config struct {
	// resources are the cluster's kinds: after New, the replay's own copy of the catalog
	// it was given, when it is one.
	resources     verify.Resources
	newEval       EvaluatorFunc
	snapshots     []string
	maxLine       int
	workers       int
	check         bool
	progress      func(Progress)
	progressEvery time.Duration
	lag           *time.Duration
	// slowSnapshot reads snapshots without loadYAMLListFile's fast path (tests).
	slowSnapshot     bool
	observer         Observer
	admissionPlugins []string
}

// policySet is the policies a replay decides with, and what New derived from them.
type policySet struct {
	policies    []*admissionregistrationv1.ValidatingAdmissionPolicy
	bindingList []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// bindings are the names of each policy's bindings; loadedPolicies the policies with
	// bindings.
	bindings       map[string][]string
	loadedPolicies map[string]bool
	// mutatingPolicies and mutatingBindings are the MutatingAdmissionPolicies replayed
	// (see mutate.go).
	mutatingPolicies []*admissionregistrationv1.MutatingAdmissionPolicy
	mutatingBindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	// mutating are the replayed MutatingAdmissionPolicies by their scope name
	// (mutatingName): what each reads, and its spec as a cluster would hold it.
	mutating     map[string]replayedMutating
	replayedMAPs map[string]bool
	// scopePolicies and scopeBindings are what the scope matches requests with and what the
	// State keeps objects for: the validating policies and, in their shape, the mutating ones.
	scopePolicies []*admissionregistrationv1.ValidatingAdmissionPolicy
	scopeBindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// reads are what each policy reads of the request's objects; selects what its object
	// selectors and its bindings' read; conditions what each of its matchConditions reads.
	reads      map[string]vapccel.Reads
	selects    map[string]vapccel.Reads
	conditions map[string]map[string]vapccel.Reads
	// requestOnly knows which matchConditions read only the request (infer.go).
	requestOnly *requestOnly
}

type pendingRequest struct {
	file string
	line int
	verb string
}

// maxPending bounds the requests tracked between their first stage and their last.
const maxPending = 100000

// New compiles the policies, loads the snapshot and returns a Replayer.
func New(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, opts ...Option) (*Replayer, error) {
	r := &Replayer{cfg: config{maxLine: DefaultMaxLineBytes, admissionPlugins: apiserver.DefaultPlugins()}, set: policySet{bindings: map[string][]string{}}}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	if r.cfg.resources == nil {
		cat, err := vapcschema.Builtin(verify.KubernetesVersion)
		if err != nil {
			return nil, err
		}
		r.cfg.resources = cat
	}
	r.cat.c = catalog.New(r.cfg.resources, catalogOwner{r})
	r.cfg.resources = r.cat.c.Resources()
	if r.cfg.newEval == nil {
		r.cfg.newEval = func(p []*admissionregistrationv1.ValidatingAdmissionPolicy, b []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, res verify.Resources, store verify.ObjectStore) (Evaluator, error) {
			return verify.New(p, b, verify.WithResources(res), verify.WithStore(store), verify.WithDropUnknownFields(true),
				verify.WithMutatingPolicies(r.set.mutatingPolicies, r.set.mutatingBindings))
		}
	}
	r.set.policies, r.set.bindingList = policies, bindings
	r.set.scopePolicies, r.set.scopeBindings = scopeOfMutating(policies, bindings, r.set.mutatingPolicies, r.set.mutatingBindings)
	r.set.mutating = replayedMutatings(r.set.mutatingPolicies, r.set.mutatingBindings)
	r.set.replayedMAPs = map[string]bool{}
	for _, p := range r.set.mutatingPolicies {
		r.set.replayedMAPs[p.Name] = true
	}

	known := map[string]bool{}
	for _, p := range policies {
		known[p.Name] = true
	}
	for _, b := range bindings {
		if known[b.Spec.PolicyName] {
			r.set.bindings[b.Spec.PolicyName] = append(r.set.bindings[b.Spec.PolicyName], b.Name)
		}
	}
	for _, bs := range r.set.bindings {
		sort.Strings(bs)
	}
	r.newEpoch()
	r.state = state.NewState(r.cfg.resources.RESTMapper(), func(gr schema.GroupResource) bool {
		// The State keeps a storage's objects when some policy sees them through any of the
		// resources it serves (see storageOf).
		return r.cur().scope.keeps(gr) || (gr == state.EventsGR && r.cur().scope.keeps(state.EventsK8sIOGR))
	}, func(gr schema.GroupResource) bool {
		return gr == state.NamespacesGR || r.cur().scope.params[gr] || r.cur().scope.pluginInputs[gr]
	})
	r.state.Lag = DefaultLag
	if r.cfg.lag != nil {
		r.state.Lag = *r.cfg.lag
	}
	r.state.Rescope(r.cur().scope.paramSelectors)
	r.set.requestOnly = newRequestOnly(policies, bindings)
	r.set.reads, r.set.selects, r.set.conditions = map[string]vapccel.Reads{}, map[string]vapccel.Reads{}, map[string]map[string]vapccel.Reads{}
	for _, p := range policies {
		r.set.reads[p.Name] = vapccel.PolicyReads(p, bindings)
		r.set.selects[p.Name] = vapccel.SelectorReads(p, bindings)
		r.set.conditions[p.Name] = map[string]vapccel.Reads{}
		for _, c := range p.Spec.MatchConditions {
			r.set.conditions[p.Name][c.Name] = vapccel.ExpressionReads(nil, c.Expression)
		}
	}
	for name, m := range r.set.mutating {
		if m.fails {
			// A mutating policy that fails on what the replay does not know refuses the
			// request (failurePolicy Fail): the decision depends on what it reads.
			r.set.reads[name] = m.reads
		}
	}
	r.set.loadedPolicies = map[string]bool{}
	for p := range r.set.bindings {
		r.set.loadedPolicies[p] = true
	}
	r.installed = newInstalled(r.set.loadedPolicies, r.set.bindings)
	if _, err := r.loadSnapshot(r.cfg.snapshots); err != nil {
		return nil, err
	}

	// The paramKinds the catalog maps once the snapshot is loaded are resolved from the start.
	r.cat.c.InitParamKinds(r.set.scopePolicies, r.set.scopeBindings)
	r.newEpoch()
	if r.cfg.workers <= 0 {
		r.cfg.workers = runtime.GOMAXPROCS(0)
	}
	if err := r.buildEvaluators(); err != nil {
		return nil, err
	}
	return r, nil
}

// Run replays the sources as one log, in the time order of their events (rotated logs oldest
// first, whatever order they are given in; the logs of several kube-apiservers interleaved:
// source.Lines), and calls sink with the record of every request the policies match, in that
// order. It returns the summary of the whole replay. Malformed lines
// and logs that cannot be read to their end are counted and listed, never fatal (Summary.Decide
// judges them); the error is about the replay itself (the context, the sink). When the context
// is canceled, reading stops, the requests read are decided, and the summary of what was read
// is returned, Partial, with the context's error.
func (r *Replayer) Run(ctx context.Context, sources []Source, sink func(*Record) error) (*Summary, error) {
	if r.ran {
		return nil, errors.New("a Replayer runs once: its State has moved forward with the log it replayed; make another with New")
	}
	r.ran = true
	sources, jumps := source.Split(sources, r.cfg.maxLine)
	sources, reordered := source.InTimeOrder(sources, r.cfg.maxLine)
	r.output.sum = newSummary(sources)
	if reordered {
		r.output.sum.Notes = append(r.output.sum.Notes, "the logs were read as one, in the time order of their events, not in the order given: "+strings.Join(r.output.sum.Files, ", "))
	}
	for _, j := range jumps {
		r.output.sum.clockJump(ClockJump{File: j.File, Line: j.Line, Latest: j.Latest, At: j.At, Parts: true})
	}
	r.output.agg = newAggregator(r.set.policies, r.set.bindings)
	r.output.pending = map[string]pendingRequest{}
	r.output.sink = sink
	start := time.Now()
	lastProgress := start
	var bytes int64
	// An interrupt stops the reading; the lines read are replayed and decided to the end.
	work := context.WithoutCancel(ctx)
	r.running = r.startEvaluation(work)
	err := decodeLogs(ctx, sources, r.cfg.maxLine, r.cfg.workers, r.prepare, func(d decoded) {
		if r.output.sinkErr != nil {
			return
		}
		bytes += int64(d.bytes)
		r.line(work, d)
		if r.cfg.progress != nil && r.output.sum.Lines%1024 == 0 {
			if now := time.Now(); now.Sub(lastProgress) >= r.cfg.progressEvery {
				lastProgress = now
				r.cfg.progress(Progress{Lines: r.output.sum.Lines, Bytes: bytes, Elapsed: now.Sub(start)})
			}
		}
	})
	r.stopEvaluation()
	if r.lookaheadCut > 0 {
		r.output.sum.Notes = append(r.output.sum.Notes, fmt.Sprintf("%d requests were accounted for before a second of log time had passed after them (more than %d waited, or a CRD changed the catalog): a write the log records later that ran concurrently with one of them was not looked for", r.lookaheadCut, maxHeld))
	}
	for _, p := range r.output.pending {
		r.output.sum.Incomplete[p.verb]++
	}
	r.output.sum.Bytes = bytes
	r.output.sum.StateObjects = r.state.Len()
	r.output.sum.CustomResourceDefinitions = r.cat.c.Changes()
	if r.cfg.check {
		r.installed.summarize(r.output.sum)
	}
	r.output.agg.finish(r.output.sum)
	if r.cfg.progress != nil {
		r.cfg.progress(Progress{Lines: r.output.sum.Lines, Bytes: bytes, Elapsed: time.Since(start)})
	}
	r.output.sum.Partial = errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if r.output.sinkErr != nil {
		return r.output.sum, r.output.sinkErr
	}
	return r.output.sum, err
}

// line accounts for one line of a log.
func (r *Replayer) line(ctx context.Context, d decoded) {
	if d.skip != "" {
		r.output.sum.exportSkipped(d.skip)
		return
	}
	r.output.sum.Lines++
	switch {
	case d.err != nil:
		r.output.sum.lineError(d.file, d.num, d.err)
		return
	case d.blank:
		r.output.sum.Blank++
		return
	case d.duplicate:
		r.output.sum.Duplicates++
		return
	}
	ev := d.ev
	if !ev.Final() {
		r.output.sum.IntermediateStages++
		if _, ok := r.output.pending[ev.AuditID]; !ok && len(r.output.pending) < maxPending {
			r.output.pending[ev.AuditID] = pendingRequest{file: d.file, line: d.num, verb: ev.Verb}
		}
		return
	}
	delete(r.output.pending, ev.AuditID)
	if first, dup := r.output.finals.add(ev.AuditID, finalRef{lineRef{d.file, d.num}, d.sum}); dup {
		if first.sum == d.sum {
			// The same event again: an export that delivers at least once (Firehose, Event
			// Hubs, a Cloud Logging sink, a webhook receiver) delivered it twice.
			r.output.sum.Duplicates++
			return
		}
		r.output.sum.malformed(d.file, d.num, fmt.Sprintf("duplicate: the final record of audit ID %s was read at %s already, another event", ev.AuditID, first.lineRef))
		return
	}
	if ev.ObjectRef == nil && isResourcePath(ev.RequestURI) {
		r.output.sum.malformed(d.file, d.num, "no objectRef: a request for a resource ("+ev.RequestURI+") without the object it is about")
		return
	}
	r.output.sum.Requests++
	r.noteLogTime(d, ev)
	if r.cfg.check {
		r.installed.observe(ev)
	}
	if r.cfg.observer.Event != nil {
		r.cfg.observer.Event(d.file, d.num, ev, d.observed)
	}
	r.request(ctx, d, ev)
}

// isResourcePath says whether a request URI names a resource (/api/v1/RESOURCE...,
// /apis/GROUP/VERSION/RESOURCE...), not discovery or another non-resource URL: the apiserver
// gives the audit event of every resource request an objectRef.
func isResourcePath(uri string) bool {
	path, _, _ := strings.Cut(uri, "?")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		return parts[2] != ""
	case len(parts) >= 4 && parts[0] == "apis":
		return parts[3] != ""
	}
	return false
}

// recentIDs remembers the last audit IDs whose final record was read, to find a final record
// read twice.
type recentIDs struct {
	// An audit ID is a UUID (the apiserver's, or what a client sent in Audit-ID): its 16
	// bytes are the key; another string is kept as it is.
	uuids map[[16]byte]finalRef
	other map[string]finalRef
	ring  []recentID
	next  int
}

// finalRef is where a final record was read, and the hash of its line.
type finalRef struct {
	lineRef
	sum uint64
}

// lineRef is a line of a log.
type lineRef struct {
	file string
	line int
}

func (l lineRef) String() string { return l.file + ":" + strconv.Itoa(l.line) }

type recentID struct {
	uuid  [16]byte
	other string
	isSet bool
}

const maxRecentIDs = 1 << 16

// add records the ID read at where; dup says it was read before, at first.
func (r *recentIDs) add(id string, where finalRef) (first finalRef, dup bool) {
	if r.ring == nil {
		r.uuids = map[[16]byte]finalRef{}
		r.other = map[string]finalRef{}
		r.ring = make([]recentID, maxRecentIDs)
	}
	var key recentID
	if u, ok := parseUUID(id); ok {
		key.uuid = u
	} else {
		key.other = id
	}
	key.isSet = true
	if first, ok := r.lookup(key); ok {
		return first, true
	}
	if old := r.ring[r.next]; old.isSet {
		if old.other != "" {
			delete(r.other, old.other)
		} else {
			delete(r.uuids, old.uuid)
		}
	}
	r.ring[r.next] = key
	r.next = (r.next + 1) % len(r.ring)
	if key.other != "" {
		r.other[key.other] = where
	} else {
		r.uuids[key.uuid] = where
	}
	return finalRef{}, false
}

func (r *recentIDs) lookup(k recentID) (finalRef, bool) {
	if k.other != "" {
		l, ok := r.other[k.other]
		return l, ok
	}
	l, ok := r.uuids[k.uuid]
	return l, ok
}

// parseUUID reads a UUID in its canonical text form, 8-4-4-4-12 lowercase hexadecimal digits
// (the apiserver's own); another form is not one, so that two IDs are the same key only if
// they are the same string.
func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if s[i] == '-' {
			i--
			continue
		}
		hi, ok1 := hexDigit(s[i])
		lo, ok2 := hexDigit(s[i+1])
		if !ok1 || !ok2 {
			return u, false
		}
		u[j] = hi<<4 | lo
		j++
	}
	return u, j == 16
}

// hexDigit is the value of a lowercase hexadecimal digit: an uppercase one makes the ID
// another string (see parseUUID).
func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// request replays one request.
func (r *Replayer) request(ctx context.Context, d decoded, ev *Event) {
	t, skip := r.resolve(ev)
	if skip != "" {
		r.output.sum.skip(skip, "")
		return
	}
	t = r.learnFromUse(ctx, d, ev, t)
	r.reviseConcurrent(d, ev, t)
	r.detectBirth(d, ev, t)
	rec := classify(ev, t.connect)
	// A request the server refused for another reason than authentication or authorization
	// is sent through its pipeline, which tells whether validating admission ran before the
	// refusal; the log's message alone does not always.
	pipeline := rec.skip == SkipBeforeAdmission && (!rec.sure || r.staleAttemptPossible(ev, t)) && r.usesPipeline(ev, t)
	if rec.skip != "" && !pipeline {
		r.output.sum.skip(rec.skip, rec.note)
		return
	}
	defer func() {
		r.applyWrite(ctx, d, ev, t)
		r.reviseAhead(d, ev)
	}()
	ep := r.cur()
	policies := ep.scope.match(t.gvr, t.sub, t.op)
	if len(policies) == 0 {
		if rec.skip != "" {
			r.output.sum.skip(rec.skip, rec.note)
			return
		}
		r.output.sum.NotMatched++
		return
	}
	rec.verdict = recordedVerdictOf(ev, r.set.loadedPolicies)
	r.learnSystemNamespace(ev, t, rec)
	// What the request's evaluation reads of the State, as it is now, before its own write.
	j := &job{d: d, ev: ev, t: t, rec: rec, policies: policies, mutators: r.mutators, facts: r.facts, evidenced: r.installed.evidenced, done: make(chan struct{})}
	j.result.schemaRefreshing = r.schemaRefreshing(t.gvr, ev.Received())
	var unknownParams map[schema.GroupResource]string
	j.resolving, unknownParams, j.unsettled = r.unsettledParams(policies, ev)
	if t.op == admission.Update || t.op == admission.Delete || t.op == admission.Connect || t.sub != "" {
		// Only an update or a delete reads the stored object from the watch cache, and what it
		// read first shows only in audit annotations.
		// A 409 Conflict may come after a first attempt that ran admission on that copy too.
		firstAttempt := (t.op == admission.Update || t.op == admission.Delete) && ev.Verb != "deletecollection" && (ep.scope.publishes(policies) || ev.Code() == http.StatusConflict)
		j.revise.warns = ep.scope.warns(policies)
		j.prior = r.state.PriorOf(t.gvr.GroupResource(), t.namespace, t.name, writtenVersion(d, ev, t), ev.Received(), firstAttempt)
	}
	if ev.Verb == "deletecollection" {
		j.listed.list, j.listed.listUnknowns, j.listed.listUnknown = r.state.List(t.gvr.GroupResource(), t.namespace, ev.Received())
		if why := exportListUnknown(ev); why != "" {
			j.listed = listing{listUnknown: why} // exportloss.go
		}
		if ep.scope.publishes(policies) {
			// It deletes each object as a DELETE does, first on the watch cache's copy.
			j.prior.StaleUnknown = r.state.RecentWrite(t.gvr.GroupResource(), t.namespace, ev.Received())
		}
	}
	// An unknown namespace is a miss only when a matched policy selects or reads it.
	j.view = r.state.View(ep.scope.readNamespaces(policies))
	j.view.Unknown = unknownParams
	j.lag.typedWrites, j.lag.typedLost = r.state.RecentTyped(ev.Received())
	// What evaluations read of the params and namespaces, for the informers' lag, before the
	// request (informerLag) and after it (reviseAhead).
	j.view.Track = true
	j.revise.completed, j.revise.recorded = auditlog.ParseTime(ev.StageTimestamp), rec
	if t.op == admission.Update || t.op == admission.Delete || t.sub != "" {
		// A deletecollection (no name) read the objects of its namespace.
		j.revise.key = state.ReplacedKey{GR: state.StorageOf(t.gvr.GroupResource()), Obj: state.ObjectKey{Namespace: t.namespace, Name: t.name}}
		r.running.track(j)
	}
	r.submit(j)
}

// emit adds a record to the summary and gives it to the sink.
func (e *emitter) emit(out *Record, policies []string, dec *verify.Decision) {
	out.Policies = policies
	out.otherRefusals()
	out.changed()
	e.sum.record(out)
	e.agg.add(out, policies, dec)
	if e.sink != nil && e.sinkErr == nil {
		e.sinkErr = e.sink(out)
	}
}

// detectBirth marks every resource complete when the log shows the apiserver creating its
// system namespaces: the cluster was created during the log, so the log holds every object.
func (r *Replayer) detectBirth(d decoded, ev *Event, t target) {
	if t.gvr.Resource != "namespaces" || t.gvr.Group != "" || ev.Verb != "create" || ev.Code() != 201 || ev.User.Username != "system:apiserver" {
		return
	}
	if t.name == "kube-system" || t.name == "default" {
		r.state.MarkAllComplete(fmt.Sprintf("%s:%d: the log begins with the cluster's creation", d.file, d.num))
	}
}

// applyWrite applies a successful write to the State, and to the catalog when it is a CRD's.
func (r *Replayer) applyWrite(ctx context.Context, d decoded, ev *Event, t target) {
	done := auditlog.ParseTime(ev.StageTimestamp)
	completed := done
	if completed.IsZero() {
		completed = r.currentLogTime() // when it completed is not known: not long before the next
	}
	r.state.BeginWrite(t.op == admission.Create && t.sub == "", completed, lineRef{d.file, d.num}.String())
	defer r.state.EndWrite()
	code := ev.Code()
	if code >= 400 && t.op == admission.Delete && !isDryRun(ev) {
		r.refusedPodDelete(d, ev, t)
		return
	}
	if code < 200 || code >= 300 || t.op == admission.Connect || isDryRun(ev) {
		return
	}
	gr := t.gvr.GroupResource()
	if gr == serviceAccountsGR && t.sub == "token" {
		r.facts.learnAudiences(ev) // its response may show the server's audiences
	}
	if gr == catalog.CRDs {
		defer func() {
			if err := r.learnCRD(ctx, d, ev, t); err != nil && r.output.sinkErr == nil {
				r.output.sinkErr = err
			}
		}()
	}
	if isMutator(gr) && t.sub == "" {
		r.applyMutatorWrite(ev, t, lineRef{d.file, d.num}.String())
	}
	if !r.state.Keeps(gr) {
		return
	}
	src := lineRef{d.file, d.num}.String()
	w := d.written
	if w != nil && w.gen != r.cur().gen {
		w = nil // prepared with a catalog the log has changed since
	}
	if w == nil {
		w = writtenObject(ev, t)
	}
	if !done.IsZero() {
		name := t.name
		if name == "" && ev.Verb == "create" && w.resp != nil {
			name = w.resp.GetName() // the server generated it
		}
		// A deletecollection marks each object it leaves (below), and the resource.
		defer r.state.MarkDone(gr, t.namespace, name, src, done)
	}
	sw := stateWrite{ev: ev, t: t, gr: gr, src: src, done: done, w: w}
	dry := ev.Loss.Lost.Has(auditlog.LostDryRun) && t.name != "" && ev.Verb != "deletecollection"
	var before state.Prior
	if dry {
		before = r.state.Prior(gr, t.namespace, t.name)
	}
	switch ev.Verb {
	case "create", "update", "patch", "apply":
		r.applyUpdate(ctx, sw)
	case "delete":
		r.applyDelete(ctx, sw)
	case "deletecollection":
		r.applyDeleteCollection(sw)
	}
	if dry {
		r.mayBeDryRun(sw, before)
	}
}

// mayBeDryRun keeps what the State knows of an object after a write whose export lost whether
// it was a dry run (a GKE entry does not carry the query, ?dryRun=All: kubectl diff, an
// --dry-run=server apply), which stores nothing: before is the object as the State held it.
// A dry run answers with the resourceVersion the object has: a write that answered with
// another over a version the State knows, of a resource the log holds whole, was stored; one
// that answered with the same and another content was a dry run, and the object is as it was.
// Otherwise the fields the write changed are not known, those it left as they were are; and
// whether an object the State did not know, or one deleted, is there is not known.
func (r *Replayer) mayBeDryRun(sw stateWrite, before state.Prior) {
	gr, t := sw.gr, sw.t
	after := r.state.Prior(gr, t.namespace, t.name)
	why := sw.ev.Loss.Of(auditlog.LostDryRun) + ": whether the write at " + sw.src + " was a dry run, which stores nothing"
	known := before.Found && before.Raw != nil && before.RV != 0
	stored := after.Found && after.Raw != nil && after.RV != 0
	switch {
	case known && stored && after.RV != before.RV && before.Complete:
		return
	case known && stored && after.RV == before.RV:
		if u, err := auditlog.DecodeObject(before.Raw); err == nil {
			_ = r.state.PutPartly(gr, u, before.Unknowns, before.Source+" (the write at "+sw.src+", answered with its resourceVersion, was a dry run)")
		}
		return
	case !known || !stored:
		// Whether the object is there, or as what, is not known.
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, why)
		return
	}
	bu, err1 := auditlog.DecodeObject(before.Raw)
	au, err2 := auditlog.DecodeObject(after.Raw)
	if err1 != nil || err2 != nil {
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, why)
		return
	}
	diffs := differing(bu.Object, au.Object, nil, why)
	if len(diffs) == 0 {
		return
	}
	unknowns := append(append(slices.Clip(after.Unknowns), before.Unknowns...), diffs...)
	_ = r.state.PutPartly(gr, au, unknowns, after.Source+" (or, a dry run, as it was)")
}

// stateWrite is a successful write applyWrite applies to the State: the request, logged at
// src, completed at done (zero when not known), and what it wrote (w).
type stateWrite struct {
	ev   *Event
	t    target
	gr   schema.GroupResource
	src  string
	done time.Time
	w    *written
}

// put stores an object the write left, from the written JSON when it is the response's.
func (r *Replayer) put(sw stateWrite, u *unstructured.Unstructured, source string) {
	if sw.w.raw != nil && u == sw.w.resp {
		_ = r.state.PutRaw(sw.gr, u, sw.w.raw, sw.w.typed, source)
		return
	}
	_ = r.state.Put(sw.gr, u, source)
}

// applyUpdate applies a create, update, patch or apply: the object the log holds, or the
// write replayed through the pipeline where it does not hold it.
func (r *Replayer) applyUpdate(ctx context.Context, sw stateWrite) {
	ev, t, gr, src, resp, isMain := sw.ev, sw.t, sw.gr, sw.src, sw.w.resp, sw.w.isMain
	switch {
	case gr == (schema.GroupResource{Resource: "pods"}) && (t.sub == "binding" || t.sub == "eviction"):
		r.replayWrite(ctx, ev, t, "written through "+describe(t.gvr, t.sub)+" at "+src, src)
	case gr == serviceAccountsGR && t.sub == "token":
		// A TokenRequest issues a token; the ServiceAccount is not written.
	case derivesScale(t) && r.followsWrite(ev, t):
		// The ScaleREST's write, managedFields included (a manager of the scale
		// subresource), as the pipeline makes it.
		r.replayWrite(ctx, ev, t, "changed through "+describe(t.gvr, t.sub)+" at "+src, src)
	case derivesScale(t) && r.applyScale(ev, t, resp, src):
	case isMain && ev.Verb != "create" && emptiedOfFinalizers(resp):
		// The store deletes an object being deleted once an update leaves it without
		// finalizers (Store.Update, shouldDeleteDuringUpdate); the response is the
		// object as it was deleted.
		r.state.Delete(gr, t.mainKind, t.namespace, t.name)
	case isMain:
		r.put(sw, resp, src)
	case t.name != "":
		why := "written at " + src + " at level " + orNone(ev.Level) + ": the result is not in the log"
		if ev.Level == auditlog.LevelRequestResponse {
			why = "changed through " + describe(t.gvr, t.sub) + " at " + src + ": the result is not in the log"
		}
		if r.followsWrite(ev, t) {
			r.replayWrite(ctx, ev, t, why, src)
			break
		}
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, why)
	default:
		r.state.ForgetAll(gr, t.namespace, "created at "+src+" without a recorded result")
	}
}

// applyDelete applies a delete: the object gone, or left marked deleted.
func (r *Replayer) applyDelete(ctx context.Context, sw stateWrite) {
	ev, t, gr, src, resp, isMain := sw.ev, sw.t, sw.gr, sw.src, sw.w.resp, sw.w.isMain
	switch {
	case isMain && stillExists(resp):
		r.put(sw, resp, src+" (deletion pending)")
	case isMain || (resp != nil && resp.GetKind() == "Status"):
		r.state.Delete(gr, t.mainKind, t.namespace, t.name)
	default:
		why := "deleted at " + src + " at level " + orNone(ev.Level) + ": whether it is gone is not in the log"
		if r.followsWrite(ev, t) {
			r.replayWrite(ctx, ev, t, why, src)
			break
		}
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, why)
	}
}

// listedBy is what the deletecollection ev of gr in namespace deleted of the objects the State
// knows, decoded: those its label selector selects, as the store's list read them when the
// request was received. An object the State does not know stays so. why says why it is not
// known: a field selector, which only the resource's own attributes answer, list options that
// page or pin the list, a level that does not log its delete options, a selector that does
// not parse, a request received at a time the log does not say, or what the State does not
// know (state.State.Selected).
func (r *Replayer) listedBy(gr schema.GroupResource, namespace string, ev *Event) (items []any, unknowns map[state.ObjectKey][]vapccel.Unknown, why string) {
	q := ev.Query()
	switch {
	case exportListUnknown(ev) != "":
		return nil, nil, exportListUnknown(ev) // exportloss.go
	case q.Get("fieldSelector") != "":
		return nil, nil, "a field selector"
	case q.Get("limit") != "" || q.Get("continue") != "" || q.Get("resourceVersion") != "":
		return nil, nil, "list options that page or pin the list"
	case !r.state.Keeps(gr):
		return nil, nil, "the replay does not keep " + state.StorageOf(gr).String()
	case ev.Level != auditlog.LevelRequest && ev.Level != auditlog.LevelRequestResponse:
		// Its DeleteOptions (a grace period, a propagation policy's finalizers, preconditions)
		// decide what each deletion leaves.
		return nil, nil, "its delete options, which level " + orNone(ev.Level) + " does not log"
	}
	received := ev.Received()
	if received.IsZero() {
		return nil, nil, "when it was received, which the log does not say"
	}
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return nil, nil, "the label selector: " + err.Error()
	}
	return r.state.Selected(gr, namespace, received, sel)
}

// applyDeleteCollection applies a deletecollection to each object it listed: gone, or left
// marked deleted.
func (r *Replayer) applyDeleteCollection(sw stateWrite) {
	ev, t, gr, src, resp := sw.ev, sw.t, sw.gr, sw.src, sw.w.resp
	var items []any
	if resp != nil {
		items, _ = resp.Object["items"].([]any)
	}
	itemUnknowns := map[state.ObjectKey][]vapccel.Unknown{}
	if items == nil {
		// The log does not hold what it deleted: what the State holds of the namespace,
		// by the request's selector, when that is all it listed.
		var why string
		items, itemUnknowns, why = r.listedBy(gr, t.namespace, ev)
		if why != "" {
			r.state.ForgetAll(gr, t.namespace, "deletecollection at "+src+" without a recorded result: "+why)
			return
		}
	}
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" {
			u.SetGroupVersionKind(t.mainKind)
		}
		// The response lists the objects as they were before their deletion: whether each
		// is gone, or stays with a deletionTimestamp of the server's clock (a graceful
		// deletion, finalizers), is the store's to say.
		left, err := deleteLeaves(gr, u, ev)
		switch {
		case err != nil:
			r.state.Forget(gr, t.mainKind, u.GetNamespace(), u.GetName(), "deleted by the deletecollection at "+src+": what it left is not known: "+err.Error())
		case left.Remains:
			r.leftMarked(sw, u, left, itemUnknowns[state.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}])
		default:
			r.state.Delete(gr, t.mainKind, u.GetNamespace(), u.GetName())
		}
	}
}

// leftMarked stores an object a deletecollection left, marked deleted by the server's clock,
// with a new resourceVersion; unknowns are what the State did not know of it before.
func (r *Replayer) leftMarked(sw stateWrite, u *unstructured.Unstructured, left apiserver.Deletion, unknowns []vapccel.Unknown) {
	why := "the server's clock and storage when the deletecollection at " + sw.src + " wrote the object, which the log does not show"
	unknowns = append(slices.Clip(unknowns), vapccel.Unknown{Path: objectPath("metadata", "resourceVersion"), ValueOnly: true, Why: why})
	switch {
	case left.Marked:
		u.SetDeletionTimestamp(markedAt(sw.ev))
		u.SetDeletionGracePeriodSeconds(&left.GracePeriodSeconds)
		if left.Generation > 0 {
			u.SetGeneration(left.Generation)
		}
		unknowns = append(unknowns, vapccel.Unknown{Path: objectPath("metadata", "deletionTimestamp"), ValueOnly: true, Why: why})
	case left.Shortened:
		// Moved back, or to the server's clock with a grace period of one second.
		u.SetDeletionGracePeriodSeconds(&left.GracePeriodSeconds)
		unknowns = append(unknowns, vapccel.Unknown{Path: objectPath("metadata", "deletionTimestamp"), ValueOnly: true, Why: why},
			vapccel.Unknown{Path: objectPath("metadata", "deletionGracePeriodSeconds"), ValueOnly: true, Why: why})
	}
	_ = r.state.PutPartly(sw.gr, u, unknowns, sw.src+" (deletion pending)")
	if !sw.done.IsZero() {
		r.state.MarkDone(sw.gr, u.GetNamespace(), u.GetName(), sw.src, sw.done)
	}
}

// markedAt is the deletionTimestamp a deletion ev made, by the server's clock, which the log
// does not show: when it was received, held unknown by the caller.
func markedAt(ev *Event) *metav1.Time {
	marked := ev.Received()
	if marked.IsZero() {
		marked = time.Unix(0, 0) // not known either way: a value the object can hold
	}
	return &metav1.Time{Time: marked}
}

// deleteLeaves says what the store of gr leaves of the object u when the request ev deletes it
// with its options (see apiserver.Server.DeleteLeaves).
func deleteLeaves(gr schema.GroupResource, u *unstructured.Unstructured, ev *Event) (apiserver.Deletion, error) {
	srv, err := pipelineServer()
	if err != nil {
		return apiserver.Deletion{}, err
	}
	opts, err := deleteOptions(ev.RequestObject, ev.Query())
	if err != nil {
		return apiserver.Deletion{}, err
	}
	options := &metav1.DeleteOptions{}
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(opts.Object, options); err != nil {
		return apiserver.Deletion{}, err
	}
	raw, err := u.MarshalJSON()
	if err != nil {
		return apiserver.Deletion{}, err
	}
	return srv.DeleteLeaves(gr, raw, options)
}

// written is the response object of a write as applyWrite reads it, decoded off the ordered
// stage by prepareWrite.
type written struct {
	resp   *unstructured.Unstructured
	isMain bool   // resp is an object of the resource's own kind
	raw    []byte // the JSON of resp when isMain, for State.putRaw; resp may hold only a part of it
	typed  *state.PreparedTyped
	gen    int // the epoch it was prepared in
}

// refusedPodDelete follows a pod DELETE that admission refused. The store deletes a pod whose
// grace period is 0 (asked for, the pod's terminationGracePeriodSeconds, or a pod not
// scheduled or finished: podStrategy.CheckGracefulDelete, run by deleteLeaves) in two steps, each
// validated: it marks it deleted (deletionTimestamp, deletionGracePeriodSeconds 0, a new
// resourceVersion and generation), then removes it. A policy that refuses only the second
// (one that reads the mark) leaves the pod marked; one that refuses the first changes nothing.
// The log does not say which: the State holds the pod with those fields unknown.
func (r *Replayer) refusedPodDelete(d decoded, ev *Event, t target) {
	gr := t.gvr.GroupResource()
	if gr != (schema.GroupResource{Resource: "pods"}) || t.sub != "" || ev.Verb != "delete" || !r.state.Keeps(gr) ||
		classify(ev, false).outcome != RecordedDeny {
		return
	}
	u, _, unknown, found := r.state.Lookup(gr, t.namespace, t.name)
	if !found || unknown != "" || u == nil || u.GetDeletionTimestamp() != nil {
		return
	}
	if left, err := deleteLeaves(gr, u, ev); err == nil && left.Remains {
		// A graceful deletion, or one that waits for finalizers, is validated once: refused,
		// it wrote nothing. One that leaves nothing (the pod strategy's grace period is 0) is
		// validated twice; what deleteLeaves cannot tell may be either.
		return
	}
	src := lineRef{d.file, d.num}.String()
	why := "the DELETE at " + src + ", which admission refused, after or before the store marked the pod deleted: the log does not say which"
	var unmarked []byte // the version it has unless marked, when the State knows it in full
	if p := r.state.Prior(gr, t.namespace, t.name); len(p.Unknowns) == 0 {
		unmarked = p.Raw
	}
	zero := int64(0)
	u.SetDeletionTimestamp(markedAt(ev))
	u.SetDeletionGracePeriodSeconds(&zero)
	unknowns := []vapccel.Unknown{
		{Path: objectPath("metadata", "deletionTimestamp"), Why: why},
		{Path: objectPath("metadata", "deletionGracePeriodSeconds"), Why: why},
		{Path: objectPath("metadata", "resourceVersion"), ValueOnly: true, Why: why},
		{Path: objectPath("metadata", "generation"), ValueOnly: true, Why: why},
	}
	_ = r.state.PutPartly(gr, u, unknowns, src+" (refused DELETE: maybe marked deleted)")
	r.state.MarkedMaybe(gr, t.namespace, t.name, unmarked)
}

// writtenVersion is the resourceVersion of the object a successful write stored, as its
// response shows it; 0 when the log does not show it.
func writtenVersion(d decoded, ev *Event, t target) uint64 {
	if c := ev.Code(); c < 200 || c >= 300 || isDryRun(ev) || (ev.Verb != "update" && ev.Verb != "patch" && ev.Verb != "apply") || !hasBody(ev.ResponseObject) {
		return 0
	}
	resp := (*unstructured.Unstructured)(nil)
	if d.written != nil {
		resp = d.written.resp
	} else if h, err := auditlog.DecodeHeader(ev.ResponseObject); err == nil {
		resp = h
	}
	if resp == nil || resp.GetName() != t.name || resp.GetNamespace() != t.namespace {
		return 0
	}
	return state.ResourceVersion(resp.GetResourceVersion())
}

// writtenObject decodes the response object of a write and gives it the resource's kind when
// the log left it out. An object of the resource's kind, as the log mostly holds them, is
// decoded only as far as the State reads it (decodeHeader): the State keeps its JSON.
func writtenObject(ev *Event, t target) *written {
	if ev.Verb != "deletecollection" && hasBody(ev.ResponseObject) {
		if h, err := auditlog.DecodeHeader(ev.ResponseObject); err == nil && h.GroupVersionKind() == t.mainKind {
			return &written{resp: h, isMain: true, raw: ev.ResponseObject}
		}
	}
	resp := auditlog.DecodeAnyObject(ev.ResponseObject)
	kindSet := false
	if resp != nil && resp.GetKind() == "" && resp.GetAPIVersion() == "" && sameKind(resp, t.mainKind) && ev.Verb != "deletecollection" {
		resp.SetGroupVersionKind(t.mainKind)
		kindSet = true
	} else if resp != nil && resp.GetAPIVersion() == "" && resp.GetKind() == t.mainKind.Kind {
		resp.SetGroupVersionKind(t.mainKind)
		kindSet = true
	}
	w := &written{resp: resp, isMain: resp != nil && resp.GroupVersionKind() == t.mainKind}
	if w.isMain && ev.Verb != "deletecollection" {
		if !kindSet {
			// The log's JSON is the object's: decoding it again gives the same object.
			w.raw = ev.ResponseObject
		} else if raw, err := json.Marshal(resp.Object); err == nil {
			w.raw = raw
		}
	}
	return w
}

// prepareWrite runs on a decoding worker: for a final event of a successful write that
// applyWrite will apply to the State, it decodes the response object and prepares what the
// State stores, so that the ordered stage does not; nil for other events. It reads the epoch of
// the moment, which the ordered stage may have replaced by the time it applies the write:
// applyWrite then prepares it again.
func (r *Replayer) prepareWrite(ev *Event) *written {
	if !ev.Final() || len(ev.ResponseObject) == 0 {
		return nil
	}
	code := ev.Code()
	if code < 200 || code >= 300 {
		return nil
	}
	ep := r.cur()
	t, skip := resolveIn(ep.resources, ev)
	gr := t.gvr.GroupResource()
	if skip != "" || t.op == admission.Connect || !ep.scope.keeps(gr) || isDryRun(ev) {
		return nil
	}
	w := writtenObject(ev, t)
	w.gen = ep.gen
	if w.raw != nil && (gr == state.NamespacesGR || ep.scope.params[gr] || ep.scope.pluginInputs[gr]) {
		w.typed = r.state.PrepareTyped(w.resp, w.raw)
	}
	return w
}

// stillExists says whether an object a DELETE returned is still stored: its graceful deletion
// or its finalizers are pending (a namespace stays while it terminates).
// emptiedOfFinalizers says whether an update's result is an object the store deleted: being
// deleted with no grace period left and no finalizer (shouldDeleteDuringUpdate in
// k8s.io/apiserver's genericregistry.Store, whose update keeps the old object's
// deletionTimestamp and deletionGracePeriodSeconds). A namespace is finalized otherwise.
func emptiedOfFinalizers(u *unstructured.Unstructured) bool {
	if u == nil || u.GetDeletionTimestamp() == nil || len(u.GetFinalizers()) > 0 || u.GetKind() == "Namespace" {
		return false
	}
	g := u.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

// stillExists says whether an object a DELETE returned is still stored: its graceful deletion
// or its finalizers are pending (a namespace stays while it terminates).
func stillExists(u *unstructured.Unstructured) bool {
	if len(u.GetFinalizers()) > 0 {
		return true
	}
	if g := u.GetDeletionGracePeriodSeconds(); g != nil && *g > 0 {
		return true
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return u.GetKind() == "Namespace" && phase == "Terminating"
}

// applyScale applies a scale update whose resulting Scale the log holds to the stored object
// (see applyScale in scale.go); false when it cannot.
func (r *Replayer) applyScale(ev *Event, t target, resp *unstructured.Unstructured, src string) bool {
	gr := t.gvr.GroupResource()
	obj, _, unknown, found := r.state.Lookup(gr, t.namespace, t.name)
	if !found || unknown != "" || obj.GroupVersionKind() != t.mainKind || !applyScale(obj, resp) {
		return false
	}
	_ = r.state.Put(gr, obj, src+" ("+describe(t.gvr, t.sub)+": spec.replicas, resourceVersion and generation set; managedFields as before)")
	return true
}
