package replay

import (
	"context"
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
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

// WithGKEDryRunsLabelled says that the cluster's GKE labels the Cloud Logging entries of dry
// runs (command.gke.io/dryRun, as GKE has since 2026): an entry without the label was no dry
// run, its write happened, from the first entry on, where the export holds no labelled entry
// to show it (an export whose requests include no dry run). The user's knowledge, not the
// log's: a GKE that does not label them would make its dry runs' writes taken as done.
func WithGKEDryRunsLabelled(on bool) Option {
	return func(r *Replayer) error {
		if on {
			r.dryRunLabels = export.ExportGKE
		}
		return nil
	}
}

// WithCheckRecorded compares the log's own verdicts with the predictions (see Check).
func WithCheckRecorded(on bool) Option {
	return func(r *Replayer) error { r.cfg.check = on; return nil }
}

// WithLogEvidence lets the verdicts the log records of a replayed policy it shows installed word
// for word (its create or update, and its replayed bindings', with the replayed specs) choose
// among the states kube-apiserver may have decided a request on, and the ways a patch may
// have been sent (default on; with WithCheckRecorded, the verdicts of every replayed policy
// the log shows installed choose). Off, the replay decides on the state the log's order
// gives, as likely, where a verdict would tell.
func WithLogEvidence(on bool) Option {
	return func(r *Replayer) error { r.cfg.noEvidence = !on; return nil }
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

// WithMapOrder names the audit annotations and validations' messageExpressions, by policy
// name, whose values may follow the order kube-apiserver's CEL iterates a map in
// (cel.Checker.MapOrderOf): Go's map order, the server's chance. The replay does not claim such an
// annotation (verify.WithMapOrder), nor a failure's message the log does not hold the
// server's of (settleMapOrder).
func WithMapOrder(m vapccel.MapOrder) Option {
	return func(r *Replayer) error { r.cfg.mapOrder = m; return nil }
}

// WithPoliciesThroughout decides every request of the log with the given policies and
// bindings, also where the log shows one of them not installed (before its create, after its
// delete): what they would have decided over the whole log, not what the server decided.
func WithPoliciesThroughout() Option {
	return func(r *Replayer) error { r.cfg.throughout = true; return nil }
}

// WithProgress calls fn about every interval while a replay runs.
func WithProgress(interval time.Duration, fn func(Progress)) Option {
	return func(r *Replayer) error { r.cfg.progress, r.cfg.progressEvery = fn, interval; return nil }
}

// Replayer replays audit logs through a fixed set of policies and bindings. A Replayer runs
// one replay: its State moves forward with the log, and a second Run is refused.
type Replayer struct {
	// following are the ordered stage's evaluators of the replayed MutatingAdmissionPolicies
	// it follows writes with (followmutating.go).
	following followingEvals
	// dryRunLabels is the export that labelled a dry run (auditlog.Loss.DryRunLabelled):
	// its entries after it are no dry runs unless labelled (labelledDryRuns).
	dryRunLabels string
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
	// statusKeeps are what writes to each resource's status subresource leave as they were,
	// as the ordered stage's pipeline answered (statuswrite.go).
	statusKeeps map[statusKey]statusKept
	// mutators are the cluster's MutatingAdmissionPolicies as the log has shown them so far.
	mutators *mutators
	// mutatorSets are the sets of them the log has shown, the last maxMutatorSets, for the
	// requests kube-apiserver's policy source may not have caught up with (mutatorsAt).
	mutatorSets []mutatorSet
	// mutatorsDropped says setMutators has dropped the oldest sets (maxMutatorSets).
	mutatorsDropped bool
	// followed are the writes the ordered stage followed through the pipeline in the last
	// moment of log time, by where the log records them (commute.go).
	followed map[string]followedWrite
	// installed follows which of the policies the log shows installed (with --check-recorded).
	installed *installed
	// lifecycle follows where the given policies and bindings were in the cluster along the
	// log (lifecycle.go).
	lifecycle *lifecycle
	state     *state.State
	evals     []evalWorker
	running   *evaluation
	// gaps are the files that follow a rotated file the logs given lack (source.RotationGaps),
	// with why: at a gap's first event, the State forgets what it held.
	gaps map[string]string
	// lacking is the write that withdrew what the State knew whole, while its object's create
	// may still come (see lacksWrites).
	lacking *lackingWrite
	// facts are what the log has shown so far of the server's configuration (ordered stage).
	facts serverFacts
	// logStamp is the latest completion of a request the log records so far; logTime is it
	// parsed (from logTimeOf), see currentLogTime.
	logStamp, logTimeOf string
	logTime             time.Time
	// clock follows where the log's clock goes back (see noteLogTime).
	clock source.Clock
	// lookaheadCut counts the requests accounted for before their lookahead ended.
	lookaheadCut int
	quiesced     bool // between the halves of a barrier (see quiesce)
	// snapshotRead says, by resource, how the log shows its snapshot listed it after its
	// first lines (see findSnapshotRead); snapshotUnchecked that the log could not be read
	// again to tell.
	snapshotRead      map[schema.GroupResource]string
	snapshotUnchecked bool
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
	// unlearned are the writes of resources whose kinds the catalog does not know, by
	// resource (noteUnlearned); ahead what learnAhead looked for.
	unlearned map[schema.GroupResource]map[state.ObjectKey]string
	ahead     aheadScan
}

// emitter is where a replay's records go (in the log's order), and what they add up to.
type emitter struct {
	sum     *Summary
	agg     *aggregator
	pending map[string]pendingRequest
	finals  recentIDs
	sink    func(*Record) error
	sinkErr error
	// check says the log's verdicts are compared (--check-recorded).
	check bool
}

// config is what a replay's Options set.
type config struct {
	// resources are the cluster's kinds: after New, the replay's own copy of the catalog
	// it was given, when it is one.
	resources verify.Resources
	newEval   EvaluatorFunc
	// customEval says newEval is WithEvaluator's, which takes the replayed
	// MutatingAdmissionPolicies as they are.
	customEval bool
	// throughout decides every request with the given policies (WithPoliciesThroughout).
	throughout bool
	// spoolDir is where standard input is copied to (source.Spool): os.TempDir when empty.
	spoolDir string
	// evaluateHook, when set, is called with each request evaluated (tests).
	evaluateHook func(*Event)
	snapshots    []string
	maxLine      int
	workers      int
	check        bool
	// noEvidence: no verdict of the log chooses a state without check (WithLogEvidence).
	noEvidence    bool
	progress      func(Progress)
	progressEvery time.Duration
	lag           *time.Duration
	// slowSnapshot reads snapshots without loadYAMLListFile's fast path (tests).
	slowSnapshot     bool
	observer         Observer
	admissionPlugins []string
	// mapOrder names the expressions whose values follow map iteration (WithMapOrder).
	mapOrder vapccel.MapOrder
}

// policySet is the policies a replay decides with, and what New derived from them.
type policySet struct {
	policies    []*admissionregistrationv1.ValidatingAdmissionPolicy
	bindingList []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// bindings are the names of each policy's bindings; loadedPolicies the policies with
	// bindings.
	bindings       map[string][]string
	loadedPolicies map[string]bool
	// secretParams are the policies (a mutating one by its scope name) whose params are
	// Secrets: the log's verdicts of a request they match may quote their values.
	secretParams map[string]bool
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
	// butMessages are what each validating policy with messageExpressions reads but those,
	// and messages what each of those reads, by the validation's index (see readsOf).
	butMessages map[string]vapccel.Reads
	messages    map[string][]vapccel.Reads
	// annotated are the validating policies with auditAnnotations: what decides their part
	// of a decision but them, and what each reads (see unknownAnnotationsOnly).
	annotated map[string]annotatedPolicy
	// requestOnly knows which matchConditions read only the request (infer.go).
	requestOnly *requestOnly
	// auditors are the given bindings with the Audit action: their failures are the
	// validation_failure annotation's entries (see job.outcomeOrder).
	auditors map[policyBinding]bool
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
			return newDefaultEval(p, b, r.set.mutatingPolicies, r.set.mutatingBindings, res, store, r.cfg.mapOrder)
		}
	} else {
		r.cfg.customEval = true
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
	r.set.auditors = map[policyBinding]bool{}
	for _, b := range bindings {
		if known[b.Spec.PolicyName] {
			r.set.bindings[b.Spec.PolicyName] = append(r.set.bindings[b.Spec.PolicyName], b.Name)
			if slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Audit) {
				r.set.auditors[policyBinding{b.Spec.PolicyName, b.Name}] = true
			}
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
	r.set.butMessages, r.set.messages = map[string]vapccel.Reads{}, map[string][]vapccel.Reads{}
	r.set.annotated = map[string]annotatedPolicy{}
	for _, p := range policies {
		r.set.reads[p.Name] = vapccel.PolicyReads(p, bindings)
		if len(p.Spec.AuditAnnotations) > 0 {
			a := annotatedPolicy{
				reads: vapccel.PolicyReadsButAnnotations(p, bindings, true), butMessages: vapccel.PolicyReadsButAnnotations(p, bindings, false),
				each: vapccel.AnnotationReads(p), ignore: p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == admissionregistrationv1.Ignore,
			}
			for _, an := range p.Spec.AuditAnnotations {
				a.keys = append(a.keys, an.Key)
			}
			r.set.annotated[p.Name] = a
		}
		if slices.ContainsFunc(p.Spec.Validations, func(v admissionregistrationv1.Validation) bool { return v.MessageExpression != "" }) {
			r.set.butMessages[p.Name], r.set.messages[p.Name] = vapccel.PolicyReadsButMessages(p, bindings), vapccel.MessageReads(p)
		}
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
	r.set.secretParams = map[string]bool{}
	for _, p := range r.set.policies {
		if isSecretKind(p.Spec.ParamKind) {
			r.set.secretParams[p.Name] = true
		}
	}
	for _, p := range r.set.mutatingPolicies {
		if isSecretKind(p.Spec.ParamKind) {
			r.set.secretParams[mutatingName(p.Name)] = true
		}
	}
	r.installed = newInstalled(r.set.loadedPolicies, r.set.bindings, r.set.policies, r.set.bindingList)
	r.installed.window = compiledWithin(r.state.Lag)
	r.lifecycle = newLifecycle(r.set.policies, r.set.bindingList, r.set.mutatingPolicies, r.set.mutatingBindings, r.cfg.throughout)
	r.lifecycle.window = policyRefresh + r.state.Lag
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

// Prepare begins reading the logs of a replay ahead, on a goroutine of its own, while the
// caller does other work (reads the policies and the snapshot, New): the searches of their
// bytes that Run makes before its first event (an export's file for the admission policies'
// names, a compressed one decompressed once for them and for the replay: source.Ahead). Give
// Run the sources it returns; call release once Run has returned (or where it is not called),
// which stops the reading not done and removes its temporary files.
func Prepare(ctx context.Context, sources []Source) (prepared []Source, release func()) {
	return source.Ahead(ctx, sources, lifecycleNeedle)
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
	// A log read once (standard input, a pipe) is copied to a file first, which the replay
	// reads again (below); with --policies-throughout, which needs none of that, it is
	// streamed, as a live log needs.
	sources, spooled := source.Spool(ctx, sources, r.cfg.spoolDir, r.cfg.throughout)
	defer spooled.Remove()
	if !source.IsShared(sources) {
		var release func()
		sources, release = source.Shared(sources, lifecycleNeedle)
		defer release()
	}
	if !smallLogs(sources) {
		go pipelineServer() // warmed while the passes below read the logs on one core
	}
	sources, jumps := source.Split(sources, r.cfg.maxLine)
	sources, first, reordered := source.InTimeOrder(sources, r.cfg.maxLine)
	for _, g := range source.RotationGaps(sources, first, r.cfg.maxLine) {
		if r.gaps == nil {
			r.gaps = map[string]string{}
		}
		r.gaps[g.Before] = fmt.Sprintf("%s begins at %s, %s after %s was rotated (%s, the time in its name): the rotated file between them is not among the logs given, and what the server wrote in it is not known", g.Before, g.Resumed.UTC().Format(time.RFC3339Nano), g.Resumed.Sub(g.Rotated).Round(time.Millisecond), g.After, g.Rotated.UTC().Format(time.RFC3339Nano))
	}
	r.cat.ahead.noteSources(sources)
	r.findSnapshotRead(ctx)
	r.output.sum = newSummary(sources)
	r.output.sum.Notes = append(r.output.sum.Notes, spooled.Notes...)
	if source.LabelsDryRuns(ctx, sources) {
		r.dryRunLabels = export.ExportGKE // from its first entry (labelledDryRuns)
	}
	r.scanLifecycle(ctx)
	if len(r.snapshotRead) > 0 {
		var grs []string
		for gr := range r.snapshotRead {
			grs = append(grs, gr.String())
		}
		slices.Sort(grs)
		r.output.sum.Notes = append(r.output.sum.Notes, "the log begins before its snapshot was read (of "+strings.Join(grs, ", ")+"): what a request completed before then read of the snapshot's objects is not known")
	}
	if r.snapshotUnchecked {
		r.output.sum.Notes = append(r.output.sum.Notes, "the log was not read from files, which the replay reads again for when its snapshot was read: it is taken as read before the log's first line (give the log as files to check it)")
	}
	if reordered {
		r.output.sum.Notes = append(r.output.sum.Notes, "the logs were read as one, in the time order of their events, not in the order given: "+filesText(r.output.sum.Files))
	}
	for _, j := range jumps {
		r.output.sum.clockJump(ClockJump{File: j.File, Line: j.Line, Latest: j.Latest, At: j.At, Parts: true})
	}
	noted := map[string]bool{}
	for _, src := range sources {
		if src.InStageOrder() && !noted[src.Name] {
			noted[src.Name] = true
			r.output.sum.Notes = append(r.output.sum.Notes, src.Name+": its events go back in their stage times by more than "+source.OrderJitter.String()+" (a log backend writing under load, events a tool copied out of the server's order, or logs interleaved): read in the order of their stage times, within the window an export's are put back in order")
		}
	}
	r.output.agg = newAggregator(r.set.policies, r.set.bindings)
	r.output.pending = map[string]pendingRequest{}
	r.output.sink = sink
	r.output.check = r.cfg.check
	start := time.Now()
	lastProgress := start
	var bytes int64
	// An interrupt stops the reading; the lines read are replayed and decided to the end.
	work := context.WithoutCancel(ctx)
	r.running = r.startEvaluation(work)
	read := ctx
	if spooled.Interrupted {
		// The interrupt came while the replay copied standard input: what it read of it is
		// the log, replayed and decided, and the replay is partial.
		read = work
	}
	err := decodeLogs(read, sources, r.cfg.maxLine, r.cfg.workers, r.prepare, func(d decoded) {
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
	if more := len(r.output.sum.ClockJumps) - maxClockNotes; more > 0 {
		// Those Split found and those the replay met in logs it could not split alike.
		r.output.sum.Notes = append(r.output.sum.Notes, fmt.Sprintf("the logs' clocks go back at %d more lines than those noted above, each read as they are: a log that goes back every few seconds is events a tool copied out of the server's order (Firehose's extracted messages, a sort by another time)", more))
	}
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
	} else if n := r.output.sum.evidenceWould; n > 0 {
		r.output.sum.Notes = append(r.output.sum.Notes, fmt.Sprintf("%d %s indeterminate where the verdict the log records of a replayed policy would say how %s sent or read: the log does not show that policy created word for word (at level Request or above, with the bindings replayed), so the verdict may be another version's; if the replayed policies are the cluster's, --check-recorded takes such verdicts as evidence", n, plural(n, "request is", "requests are"), plural(n, "it was", "they were")))
	}
	r.output.sum.Notes = append(r.output.sum.Notes, r.lifecycle.notes()...)
	r.output.agg.finish(r.output.sum)
	if r.cfg.progress != nil {
		r.cfg.progress(Progress{Lines: r.output.sum.Lines, Bytes: bytes, Elapsed: time.Since(start)})
	}
	r.output.sum.Partial = spooled.Interrupted || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if r.output.sinkErr != nil {
		return r.output.sum, r.output.sinkErr
	}
	if err == nil && spooled.Interrupted {
		err = ctx.Err()
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
		r.forgetMalformed(d)
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
	if why, ok := r.gaps[d.file]; ok {
		// The first event after a rotated file the logs given lack: nothing the State held
		// before is known after it.
		delete(r.gaps, d.file)
		r.state.ForgetEverything(why)
		r.installed.forget()
		r.output.sum.Notes = append(r.output.sum.Notes, why+": no object is taken as known after it; give every rotated file")
	}
	delete(r.output.pending, ev.AuditID)
	if first, dup := r.output.finals.add(ev.AuditID, finalRef{d.ref(), d.sum}); dup {
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
	if ev.Truncated() {
		r.output.sum.Truncated++
	}
	r.labelledDryRuns(ev)
	r.noteLogTime(d, ev)
	r.installed.observe(ev) // for the verdicts taken as evidence, and the map order's (job.ran)
	r.lifecycle.observe(d, ev)
	if r.cfg.observer.Event != nil {
		r.cfg.observer.Event(d.file, d.num, ev, d.observed)
	}
	r.request(ctx, d, ev)
}

// forgetMalformed forgets what a line that is not an audit event the replay can read (d, its
// error) may have written: nothing where what it still tells shows a read or a stage before
// the request completed (auditlog.Salvage), the object its URI names (all of its resource in
// the namespace for a create, whose name is not in it), or everything the State holds when it
// tells nothing. The server made the request: a decision that reads what it may have changed is
// not known (helper exAE: a label patch's line cut short, replayed with --max-malformed, and the
// next patch claimed admitted on the object before it, certain, where a policy refused it).
func (r *Replayer) forgetMalformed(d decoded) {
	s := d.salvaged
	if s != nil && s.Harmless() {
		return
	}
	why := fmt.Sprintf("%s may have written it: the line is not an audit event the replay can read", lineRef{d.file, d.num, d.item})
	if s == nil || s.Resource == nil || s.Resource.APIGroup == "admissionregistration.k8s.io" {
		r.installed.forget() // it may have written a policy or a binding
	}
	switch {
	case s == nil || s.Resource == nil:
		r.state.ForgetEverything(fmt.Sprintf("%s may have been a write: the line is not an audit event the replay can read", lineRef{d.file, d.num, d.item}))
	case s.Resource.Name == "" || s.Verb == "deletecollection" || s.Verb == "create" && s.Resource.Subresource == "":
		r.state.ForgetAll(schema.GroupResource{Group: s.Resource.APIGroup, Resource: s.Resource.Resource}, s.Resource.Namespace, why)
	default:
		r.state.Forget(schema.GroupResource{Group: s.Resource.APIGroup, Resource: s.Resource.Resource}, schema.GroupVersionKind{}, s.Resource.Namespace, s.Resource.Name, why)
	}
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

// lineRef is a line of a log.
type lineRef struct {
	file string
	line int
	// item tells apart the events of one line of an export (auditlog.Line.Item): the second
	// and later are file:line#item.
	item int
}

func (l lineRef) String() string {
	if l.item > 1 {
		return l.file + ":" + strconv.Itoa(l.line) + "#" + strconv.Itoa(l.item)
	}
	return l.file + ":" + strconv.Itoa(l.line)
}

// ref is where the event is, one event's own place.
func (d decoded) ref() lineRef { return lineRef{d.file, d.num, d.item} }

// recordedOf is what the log says validating admission did of the request (classify),
// settled by what else the log shows: whether the pipeline decides whether admission ran before
// the refusal, and why the old object is not known when the log's annotations show a first
// attempt ran admission on a version the replay does not evaluate it on (firstAttemptUnknown).
func (r *Replayer) recordedOf(ev *Event, t target) (rec recording, pipeline bool, firstUnknown string) {
	rec = classify(ev, t.connect)
	if rec.byPlugin && r.ranAdmission(ev) {
		// A 403 nothing else claims, but the log's annotations show validating admission ran:
		// what refused the request came after it (a proxied backend's answer to a CONNECT, a
		// validating webhook), not a plugin before it.
		rec = ranBeforeFailing(ev, recording{note: strings.TrimSuffix("Forbidden: "+firstLine(ev.Message()), ": ")})
	}
	if rec.skip == SkipBeforeAdmission && notFoundItself(ev, t) && !r.ranAdmission(ev) {
		// Its own object was gone when the store last read it: admission ran only on a first
		// attempt on an older copy (the watch cache's, or a read a concurrent delete
		// overtook), which the log's annotations show. Without them, as a 409's, it was
		// refused before admission.
		rec.sure = true
	}
	// A request the server refused for another reason than authentication or authorization
	// is sent through its pipeline, which tells whether validating admission ran before the
	// refusal; the log's message alone does not always.
	pipeline = rec.skip == SkipBeforeAdmission && (!rec.sure || r.staleAttemptPossible(ev, t)) && r.usesPipeline(ev, t)
	if rec.skip == SkipBeforeAdmission && !pipeline {
		if firstUnknown = r.firstAttemptUnknown(ev, t); firstUnknown != "" {
			rec = recording{outcome: RecordedAdmit, vapRan: true, note: "failed after admission: Conflict"}
		}
	}
	if rec.skip == SkipBeforeAdmission && !pipeline && !rec.sure && firstUnknown == "" && r.ranAdmission(ev) {
		// The log's annotations show validating admission ran: what refused the request
		// came after it (a TokenRequest's bound object, a 409 after a first attempt), or its
		// message is lost.
		rec = ranBeforeFailing(ev, rec)
	}
	return rec, pipeline, firstUnknown
}

// request replays one request.
func (r *Replayer) request(ctx context.Context, d decoded, ev *Event) {
	t, skip := r.resolve(ev)
	if skip != "" {
		r.output.sum.skip(skip, "")
		return
	}
	t = r.learnFromUse(ctx, d, ev, t)
	t = r.learnAhead(ctx, d, ev, t)
	r.noteUnlearned(d, ev, t)
	r.reviseConcurrent(d, ev, t)
	r.detectBirth(d, ev, t)
	rec, pipeline, firstUnknown := r.recordedOf(ev, t)
	if rec.skip != "" && !pipeline {
		r.output.sum.skip(rec.skip, rec.note)
		return
	}
	var evaluated *job // what a failed deletecollection's write waits for (failedDeleteCollection)
	defer func() {
		r.applyWrite(ctx, d, ev, t, evaluated)
		r.reviseAhead(d, ev)
	}()
	ep := r.cur()
	policies := ep.scope.match(t.gvr, t.sub, t.op)
	if mayHaveCreated(ev, t) {
		// Admission saw a CREATE if the object was not there (the request pipeline, which
		// serves it on the object the State holds, tells which).
		for _, c := range ep.scope.match(t.gvr, t.sub, admission.Create) {
			if !slices.Contains(policies, c) {
				policies = append(slices.Clip(policies), c) // the scope's order, its cache untouched
			}
		}
	}
	given := r.lifecycle.at(d.file, ev)
	policies = given.filter(r.lifecycle, policies)
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
	j := &job{d: d, ev: ev, t: t, rec: rec, policies: policies, given: given, mutators: r.mutatorsAt(ev.Received()), facts: r.facts, ran: r.installed.at(ev.Received(), compiledWithin(r.state.Lag)), auditors: r.set.auditors, done: make(chan struct{})}
	if r.cfg.check {
		j.evidenced = j.ran
	} else if !r.cfg.noEvidence {
		j.evidenced = r.installed.provenAt(ev.Received(), compiledWithin(r.state.Lag))
	}
	j.result.schemaRefreshing = r.schemaRefreshing(t.gvr, ev.Received())
	var unknownParams map[schema.GroupResource]string
	j.resolving, unknownParams, j.unsettled, j.early = r.unsettledParams(policies, ev)
	if why, _ := r.namespaceRemoved(ev, t); why != "" && !j.unsettled.is() {
		j.unsettled = because(ReasonNamespaceUnknown, why)
	}
	received := receivedOf(ev) // for what the State reads for the request, and says of it
	if t.op == admission.Update || t.op == admission.Delete || t.op == admission.Connect || t.sub != "" {
		// Only an update or a delete reads the stored object from the watch cache, and what it
		// read first shows only in audit annotations.
		// A 409 Conflict may come after a first attempt that ran admission on that copy too.
		// A dry run has none: DryRunnableStorage reads the object from storage.
		firstAttempt := (t.op == admission.Update || t.op == admission.Delete) && ev.Verb != "deletecollection" && !isDryRun(ev) && (ep.scope.publishes(policies) || ev.Code() == http.StatusConflict)
		j.revise.warns = ep.scope.warns(policies)
		if read := dryRunRead(ev, t); read > 0 {
			j.prior = r.state.PriorRead(t.gvr.GroupResource(), t.namespace, t.name, read, received)
		} else {
			var rv uint64
			var uid string
			if resp := storedResult(d, ev, t); resp != nil {
				rv, uid = state.ResourceVersion(resp.GetResourceVersion()), string(resp.GetUID())
			}
			j.prior = r.state.PriorOfResult(t.gvr.GroupResource(), t.namespace, t.name, rv, uid, received, firstAttempt)
		}
		if j.prior.Raw == nil && j.prior.IfThere != nil && showsThere(ev, t) && (t.op != admission.Delete || r.usesPipeline(ev, t)) &&
			!ev.Received().IsZero() && ev.Received().After(j.prior.IfThereAfter) {
			// A deletion the log does not show the result of left it marked deleted. (Whether
			// the store admits a DELETE of it is settled in the pipeline: decidedWithout.)
			after := j.prior.IfThereAfter
			j.prior = *j.prior.IfThere
			if firstAttempt && ev.Received().Sub(after) < r.state.Lag {
				// Its first attempt may have read the watch cache's copy of a version before
				// the deletion, which the State no longer holds.
				j.prior.StaleUnknown = "the watch cache's copy its first attempt may have read, a version from before the deletion the State follows the object after (" + j.prior.Source + ")"
			}
		}
		j.askedFor()
		if firstUnknown != "" {
			j.prior = j.prior.WithoutVersion(firstUnknown)
		}
	}
	if t.op == admission.Create && t.sub == "" && (ev.Verb == "update" || ev.Verb == "patch" || ev.Verb == "apply") {
		// Created by a write that may have found it first (settleCreatedAfterDelete).
		j.createdAfterDelete = r.state.DeletedAfter(t.gvr.GroupResource(), t.namespace, t.name, received)
	}
	if notFoundItself(ev, t) || j.prior.RacedFrom != nil {
		// What a deletion removed, for the workers (notFoundAfterFirstAttempt, goneRaced),
		// as the State holds it at the request's point of the log.
		j.deleted.prior, j.deleted.found = r.state.DeletedPrior(t.gvr.GroupResource(), t.namespace, t.name)
		j.deleted.stale = r.state.DeletedStale(t.gvr.GroupResource(), t.namespace, t.name, received)
	}
	if ev.Verb == "deletecollection" {
		j.listed.named, _ = namedByFieldSelector(ev)
		j.listed.list, j.listed.listUnknowns, j.listed.listUnknown = r.state.List(t.gvr.GroupResource(), t.namespace, j.listed.named, ev.Received())
		if why := exportListUnknown(ev); why != "" {
			j.listed = listing{listUnknown: why} // exportloss.go
		}
		if ep.scope.publishes(policies) {
			// It deletes each object as a DELETE does, first on the watch cache's copy.
			j.prior.StaleUnknown = r.state.RecentWrite(t.gvr.GroupResource(), t.namespace, received)
		}
	}
	// An unknown namespace is a miss only when a matched policy selects or reads it.
	j.view = r.state.View(ep.scope.readNamespaces(policies))
	// A namespace the State does not know is known by its name, but where it may be a param.
	j.view.NamespaceNames = !ep.scope.params[state.NamespacesGR]
	j.view.Unknown = unknownParams
	j.view.Reread = r.paramRereads(policies, ev)
	r.beforeSnapshot(j)
	j.lag.typedWrites, j.lag.typedLost = r.state.RecentTyped(ev.Received())
	if admitted := likelyAdmission(ev, t); !admitted.IsZero() {
		j.lag.lostLate = r.state.LostAfter(j.lag.typedLost, admitted)
	}
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
	evaluated = j
}

// namespaceRemoved says why a request in a namespace the log removed before it (a DELETE, or
// the finalize or status update that emptied its finalizers while objects were left in it) is
// not decided, or "": kube-apiserver's validating admission fails a request a policy matches
// in a namespace it cannot find (the dispatcher's GetNamespace: its lister, then a live GET)
// with NotFound before any expression runs, and a deletecollection there deletes nothing
// (helper exAL: a kubelet's status patches of a pod left in a namespace finalized by hand,
// answered 404). A create there is refused by NamespaceLifecycle before. settled says the
// removal completed longer than the informers' lag before the request was received.
func (r *Replayer) namespaceRemoved(ev *Event, t target) (why string, settled bool) {
	if t.namespace == "" || t.op == admission.Create || t.gvr.GroupResource() == state.NamespacesGR {
		return "", false
	}
	by, done := r.state.Removed(state.NamespacesGR, "", t.namespace)
	if by == "" {
		return "", false
	}
	at := ev.Received()
	if at.IsZero() {
		at = auditlog.ParseTime(ev.StageTimestamp)
	}
	if at.IsZero() || done.IsZero() || done.After(at) {
		return "", false
	}
	settled = !ev.Received().IsZero() && ev.Received().Sub(done) >= r.state.Lag
	return fmt.Sprintf("namespace %s was removed at %s, %s before the request: kube-apiserver's validating admission fails a request a policy matches in a namespace it cannot find (NotFound), once its namespace informer no longer holds it, and vapc does not decide it", t.namespace, by, at.Sub(done).Round(time.Millisecond)), settled
}

// emit adds a record to the summary and gives it to the sink.
func (e *emitter) emit(out *Record, policies []string, dec *verify.Decision) {
	out.Policies = policies
	if !e.check {
		// The log's verdicts chose among the worlds (evidence.go): they are compared only
		// with --check-recorded.
		out.Disagreements = nil
	}
	out.otherRefusals()
	out.changed()
	shown := out.scrubbed()
	e.sum.record(shown)
	e.agg.add(shown, policies, dec)
	if e.sink != nil && e.sinkErr == nil {
		e.sinkErr = e.sink(shown)
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
