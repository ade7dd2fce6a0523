package replay

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	vapccel "github.com/vapc-dev/vapc/cel"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// A request of a built-in resource whose admission object the log does not hold (a refused
// write, a write logged without its result, a patch, a delete, a deletecollection, a connect)
// is sent through kube-apiserver's own request pipeline (package verify/internal/apiserver):
// its handler decodes the logged body with the server's scheme, applies the patch, runs the
// field manager and the resource's registry strategy over the stored object the State knows,
// and calls validating admission with the attributes the server built. The replay's
// evaluator decides there, and its denial goes back to the handler as the plugin's would.

// pipelineServer returns the process's kube-apiserver pipeline, built on first use.
func pipelineServer() (*apiserver.Server, error) { return apiserver.Shared() }

// smallLogAbove is the size of logs above which a replay builds the pipeline before its
// first event (Run), on a goroutine of its own while the passes before the first event read
// the logs on one core: a log of writes needs it (a write whose result the log does not show,
// a request refused before admission), and its build (0.15 s of CPU) would otherwise hold
// the ordered stage at its first use. A smaller log builds it on first use, if it needs it: a
// log that does not (creates whose results it shows, reads) would pay for the build, which
// is 5% and more of the replay of a log below 64 MiB (10,000 pod CREATEs, 20 MB: 0.55 ->
// 0.65 s when it was built for logs above 1 MiB).
const smallLogAbove = 64 << 20

// smallLogs says whether the sources are files of smallLogAbove bytes at most in all
// (InputSize, which opens regular files only: a named pipe's open would wait for its writer).
func smallLogs(sources []Source) bool {
	var names []string
	for _, s := range sources {
		if s.Reader != nil {
			return false
		}
		names = append(names, s.Name)
	}
	n, ok := InputSize(names)
	return ok && n <= smallLogAbove
}

// admitted is one call of validating admission in the pipeline and its decision.
type admitted struct {
	attrs admission.Attributes
	o     admission.ObjectInterfaces
	dec   *verify.Decision
	// unknowns are the fields of the objects the replay does not know for sure.
	unknowns []vapccel.Unknown
}

// served is the outcome of one request sent through the pipeline (one patch type of it).
type served struct {
	// variant names the patch type the body was sent as, or the Job's labels it was sent
	// with (see jobLabelVariants); empty for other requests.
	variant string
	// labels says the variants are a Job's labels, not patch types.
	labels bool
	resp   *apiserver.Response
	// calls are the validating admissions, in order (several for a deletecollection).
	calls []admitted
	// err is an error of the evaluator.
	err error
	// unknown is an object the request read that the State does not know, before or during
	// admission.
	unknown *apiserver.UnknownError
	// pluginMisses are the objects the admission plugins read that the View does not know;
	// pluginRead says they read the View at all.
	pluginMisses string
	pluginRead   bool
	// mutation is what the replayed MutatingAdmissionPolicies (--policies) did, over the
	// chain's passes; mutationInputs are the fields of the admission they ran on that the
	// replay does not know.
	mutation       *verify.Mutation
	mutationInputs []vapccel.Unknown
	// undecided says why its admissions' decision depends on what the replay does not know,
	// where the variants' outcomes are described side by side (pickServed).
	undecided string
}

// errAfterAdmission stops a connect request once validating admission admitted it: what the
// server does next (reaching a kubelet) is not admission's.
var errAfterAdmission = errors.New("vapc: stopped after admission")

// serveRequest is the HTTP request of an event, as the apiserver received it, but for the
// body's content type, which the log does not record.
func serveRequest(ev *Event, t target) (apiserver.Request, bool) {
	req := apiserver.Request{URI: ev.RequestURI, UserAgent: ev.UserAgent}
	switch {
	case t.connect:
		// The connect handler serves every method alike.
		req.Method = http.MethodPost
	case ev.Verb == "create":
		req.Method = http.MethodPost
	case ev.Verb == "update":
		req.Method = http.MethodPut
	case ev.Verb == "patch" || ev.Verb == "apply":
		req.Method = http.MethodPatch
	case ev.Verb == "delete" || ev.Verb == "deletecollection":
		req.Method = http.MethodDelete
	default:
		return req, false
	}
	if !t.connect && hasBody(ev.RequestObject) || (ev.Verb == "patch" && len(bytes.TrimSpace(ev.RequestObject)) > 0) {
		req.Body = ev.RequestObject
	}
	u := ev.Requester()
	req.User = &user.DefaultInfo{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	return req, true
}

// serve sends the request through the pipeline once per content type it may have had, with
// the worker's admission plugins reading the View, deciding each admission with eval.
func (r *Replayer) serve(ctx context.Context, ev *Event, t target, policies []string, objects apiserver.Objects, eval Evaluator, plugins *apiserver.Plugins, view *state.StateView, passed bool, mut *mutators, retried string) ([]served, error) {
	srv, err := pipelineServer()
	if err != nil {
		return nil, err
	}
	if why := bodyLost(ev); why.is() {
		return nil, &indeterminateError{why}
	}
	req, ok := serveRequest(ev, t)
	if !ok {
		return nil, fmt.Errorf("the verb %q has no HTTP request", ev.Verb)
	}
	logged := req.Body
	named := false // the create's generated name, which a refusal gives, put into its body
	if req.Method == http.MethodPost {
		req.Body, named = namedBody(ev, req.Body)
	}
	if evictionNotLogged(ev, t) {
		req.Body = evictionBody(t) // what the log leaves out is unknown (unlogged.go)
	}
	variants := sendVariants(req, ev, t)
	var out []served
	for _, v := range variants {
		s := served{variant: v.name, labels: v.labels}
		req.ContentType, req.Body = string(v.contentType), v.body
		pc := &pluginCluster{v: view, mapper: r.cur().resources.RESTMapper(), passed: passed}
		pc.setAt(ev)
		ex := &apiserver.Exchange{Objects: objects}
		if plugins != nil {
			plugins.SetCluster(pc)
			ex.Plugins = plugins
		}
		wm := newWebhookMutation(ev, retried)
		if wm != nil {
			ex.Mutate = wm.mutate
		}
		if me, ok := eval.(mutatingEvaluator); ok && me.HasMutatingPolicies() {
			ex.MutatingPolicies = func(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
				// What the cluster's other mutating policies, which the same plugin runs in an
				// order no log records, may have changed is not known to these either.
				if view != nil {
					// Their reads (and which of them the request's namespace selects) are
					// earlier than validating admission's (likelyMutation).
					defer view.MutatingReads()()
				}
				inputs := append(append(settle(ev, t, a, logged), answeredPluginFields(ev, t, a, pc.unknowns(t.gvr.GroupResource()))...), mut.unknowns(r.replayedMutation(mutatedBy(t, a, view)))...)
				if named {
					return beforeNameGenerated(a, func(a admission.Attributes) error { return r.runMutatingPolicies(ctx, me, &s, a, o, inputs) })
				}
				return r.runMutatingPolicies(ctx, me, &s, a, o, inputs)
			}
		}
		ex.Validate = func(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
			unknowns := append(append(r.callUnknowns(ev, t, a, logged, mut, view), answeredPluginFields(ev, t, a, pc.unknowns(t.gvr.GroupResource()))...), wm.unknowns()...)
			dec, err := r.validateCall(ctx, eval, policies, s.calls, a, o)
			if err != nil {
				s.err = err
				return apierrors.NewInternalError(err)
			}
			s.calls = append(s.calls, admitted{attrs: a, o: o, dec: dec, unknowns: unknowns})
			if !dec.Allowed && dec.Status != nil {
				return &apierrors.StatusError{ErrStatus: *dec.Status}
			}
			if t.connect {
				return errAfterAdmission
			}
			return nil
		}
		resp, err := srv.Do(ctx, req, ex)
		if plugins != nil {
			plugins.SetCluster(nil)
		}
		if err != nil {
			return nil, err
		}
		s.resp, s.unknown, s.pluginMisses, s.pluginRead = resp, resp.Unknown, pc.missed(), pc.read
		out = append(out, s)
	}
	return out, nil
}

// callUnknowns are the fields of a validating admission's attributes a that the replay does
// not know, but for what the plugins and a webhook's patch set: what the log leaves out of the
// request (settle) and what the cluster's mutating admission, which the View says may have run,
// may have changed.
func (r *Replayer) callUnknowns(ev *Event, t target, a admission.Attributes, logged []byte, mut *mutators, view *state.StateView) []vapccel.Unknown {
	return append(settle(ev, t, a, logged), mut.unknowns(r.replayedMutation(mutatedBy(t, a, view)))...)
}

// validateCall evaluates one validating admission of a pass whose earlier ones are calls.
func (r *Replayer) validateCall(ctx context.Context, eval Evaluator, policies []string, calls []admitted, a admission.Attributes, o admission.ObjectInterfaces) (*verify.Decision, error) {
	if n := len(calls); n > 0 && r.marksUnread(policies) && sameButDeletionMarks(calls[n-1].attrs, a) {
		// The store validates an immediate deletion again once it has marked the object
		// deleted: no policy reads the marks, so the decision is the same.
		return calls[n-1].dec, nil
	}
	return eval.EvaluateAttributes(ctx, a, o)
}

// revalidated is the pass first again with its validating admissions decided by eval over
// view, without sending the request through the pipeline again, when nothing but those
// admissions can differ: a DELETE, which no mutating admission changes (no webhook patch, no
// MutatingAdmissionPolicy to run), whose admission plugins read nothing of the cluster in the
// first pass, and whose admissions refuse it where they did in the first pass (the store went
// as far). It says whether it could; the request is served again when not.
func (r *Replayer) revalidated(ctx context.Context, w evalWorker, j *job, first *served, eval Evaluator, view *state.StateView) (servedOnce, bool) {
	if j.t.op != admission.Delete || first == nil || len(first.calls) == 0 || first.mutation != nil || first.pluginRead ||
		first.err != nil || first.unknown != nil || newWebhookMutation(j.ev, "") != nil {
		return servedOnce{}, false
	}
	if hasMutatingPolicies(eval) {
		return servedOnce{}, false
	}
	req, ok := serveRequest(j.ev, j.t)
	if !ok {
		return servedOnce{}, false
	}
	w.store.v = view
	defer func() { w.store.v = nil }()
	s := *first
	s.calls = make([]admitted, 0, len(first.calls))
	for _, c := range first.calls {
		// The first pass's attributes hold the audit annotations it added, which the
		// apiserver's record does not let another value overwrite: the admission gets a
		// record of its own, as it does when served.
		a := c.attrs
		a = admission.NewAttributesRecord(a.GetObject(), a.GetOldObject(), a.GetKind(), a.GetNamespace(), a.GetName(), a.GetResource(), a.GetSubresource(), a.GetOperation(), a.GetOperationOptions(), a.IsDryRun(), a.GetUserInfo())
		dec, err := r.validateCall(ctx, eval, j.policies, s.calls, a, c.o)
		if err != nil {
			return servedOnce{}, false
		}
		if refused(dec) != refused(c.dec) {
			return servedOnce{}, false // the store would have gone elsewhere
		}
		s.calls = append(s.calls, admitted{attrs: a, o: c.o, dec: dec, unknowns: r.callUnknowns(j.ev, j.t, a, req.Body, j.mutators, view)})
	}
	return servedOnce{s: s}, true
}

// refused says whether a validating admission's decision refuses the request (the pipeline
// stops there).
func refused(dec *verify.Decision) bool { return !dec.Allowed && dec.Status != nil }

// jobObjects are the stored objects a request's pipeline reads: the object it is about, as the
// State held it at the request's point of the log, and for a deletecollection the objects it
// lists.
type jobObjects struct {
	gr              schema.GroupResource
	namespace, name string
	prior           state.Prior
	// absent says the object does not exist for sure (its resource is complete in the State).
	absent bool
	// standIn, when set, is the JSON the object is read as when the State does not know it.
	standIn []byte
	// list is what a deletecollection lists; listUnknown says why it is not known.
	list        [][]byte
	listUnknown string
	// listNamed, when set, is the one name list is of.
	listNamed string
	// version and uid, when set, are the resourceVersion and uid the object is read with (see
	// evaluateServed).
	version, uid string
	// body, when set, is an update's body whose values the object is read with where the
	// State does not know them (see overlayUnknown).
	body []byte
	// reread, when set, is the version the object is read as after the store's Get of it
	// (apiserver.Rereads; see retriedOnMarked).
	reread []byte
}

// Reread is the version the object is read as after the store's Get of it, when the job
// gives one (apiserver.Rereads).
func (o *jobObjects) Reread(gr schema.GroupResource, namespace, name string) ([]byte, bool) {
	if o.reread == nil || !state.SameStorage(gr, o.gr) || namespace != o.namespace || name != o.name {
		return nil, false
	}
	return o.reread, true
}

func (o *jobObjects) Get(gr schema.GroupResource, namespace, name string) ([]byte, bool, error) {
	if !state.SameStorage(gr, o.gr) || namespace != o.namespace || name != o.name {
		if state.SameStorage(gr, o.gr) && o.list != nil {
			for _, raw := range o.list {
				if h, err := auditlog.DecodeHeader(raw); err == nil && h.GetNamespace() == namespace && h.GetName() == name {
					return raw, true, nil
				}
			}
			if namespace == o.namespace && (o.listNamed == "" || o.listNamed == name) {
				return nil, false, nil // not among what the State listed: it does not exist
			}
		}
		if state.SameStorage(gr, o.gr) && o.listUnknown != "" && namespace == o.namespace && (o.listNamed == "" || o.listNamed == name) {
			// What the request lists (the one object its field selector names) is not known.
			return nil, false, errors.New(o.listUnknown)
		}
		return nil, false, fmt.Errorf("the replay does not read it for this request")
	}
	switch {
	case o.prior.Found && o.prior.Raw != nil && (o.version != "" || o.uid != "" || o.body != nil):
		raw := o.prior.Raw
		if o.body != nil {
			raw = overlayUnknown(raw, o.body, o.prior.Unknowns)
		}
		return withMeta(raw, o.version, o.uid), true, nil
	case o.prior.Found && o.prior.Raw != nil:
		return o.prior.Raw, true, nil
	case o.standIn != nil:
		return o.standIn, true, nil
	case o.prior.Found:
		return nil, false, errors.New(state.ShortReason(o.prior.Unknown))
	case o.absent:
		return nil, false, nil
	case !o.prior.Kept:
		return nil, false, errors.New("the replay does not keep " + gr.String())
	}
	return nil, false, errors.New("not in the snapshot or earlier in the log")
}

func (o *jobObjects) List(gr schema.GroupResource, namespace string) ([][]byte, error) {
	if !state.SameStorage(gr, o.gr) || o.listUnknown != "" || (o.list == nil && namespace != o.namespace) {
		why := o.listUnknown
		if why == "" {
			why = "the replay does not list them for this request"
		}
		return nil, errors.New(why)
	}
	return o.list, nil
}

var jobsResource = schema.GroupResource{Group: "batch", Resource: "jobs"}

// usesPipeline says whether a request is decided through kube-apiserver's request pipeline:
// a request of a built-in resource the pipeline serves, whose admission object the log does
// not hold as the response of a successful create or update, at a level that logs its body
// (a connect has none).
func (r *Replayer) usesPipeline(ev *Event, t target) bool {
	return r.servesThrough(ev, t, decodeKind)
}

// servesThrough is usesPipeline with the response object decoded by decode, which gives its
// apiVersion and kind as decodeKind does (evaluate decodes it whole, once, for rebuild too).
func (r *Replayer) servesThrough(ev *Event, t target, decode func(json.RawMessage) *unstructured.Unstructured) bool {
	if t.reqKind.Empty() || ev.Verb == "" {
		return false
	}
	if t.op != admission.Connect {
		if !levelLogsBody(ev.Level) && !bodyNotLogged(ev, t) {
			return false // nothing to send but a DELETE or an eviction without its body (unlogged.go)
		}
		if (t.op == admission.Create || t.op == admission.Update) && ev.Code() >= 200 && ev.Code() < 300 && !apiserver.DefaultedOnRead(t.gvr.GroupResource()) {
			if resp := decode(ev.ResponseObject); resp != nil && sameKind(resp, t.reqKind) {
				return false // the stored result is the admission object (see rebuild)
			}
		}
	}
	// Built the first time a request needs it.
	srv, err := pipelineServer()
	return err == nil && srv.Serves(t.gvr, t.sub)
}

// followsWrite says whether the ordered stage follows a successful write whose result the log
// does not show through the pipeline (replayWrite): a create, update or patch of a resource the
// pipeline serves, whose body the log holds, or a delete of one at a level that logs its
// options.
func (r *Replayer) followsWrite(ev *Event, t target) bool {
	switch {
	case t.connect || ev.Level == auditlog.LevelMetadata || ev.Level == auditlog.LevelNone || ev.Level == "":
		return false
	case t.op == admission.Delete:
		if ev.Verb != "delete" || t.sub != "" {
			return false
		}
	case t.op != admission.Create && t.op != admission.Update:
		return false
	case !hasBody(ev.RequestObject) && !(ev.Verb == "patch" && len(bytes.TrimSpace(ev.RequestObject)) > 0):
		return false
	}
	srv, err := pipelineServer()
	return err == nil && srv.Serves(t.gvr, t.sub)
}

// evaluateServed decides a request through kube-apiserver's request pipeline, on a worker.
func (r *Replayer) evaluateServed(ctx context.Context, w evalWorker, j *job) {
	ev, t := j.ev, j.t
	objs, oldUnknown := servedObjects(j, r.ranAdmission(j.ev))
	b := rebuilt{req: verify.Request{Operation: t.op, Resource: t.gvr, SubResource: t.sub, Kind: t.reqKind,
		Namespace: t.namespace, Name: t.name, UserInfo: ev.Requester(), DryRun: isDryRun(ev)}}
	b.objectSource, b.oldObjectSource = pipelineSources(ev, t, j.prior)
	out := newRecord(j, b)
	j.result.out = out
	if u := j.undecidable(w); u.is() {
		out.indeterminate(u)
		return
	}

	// The first pass: with the worker's evaluator over the request's View. Whether admission
	// ran at all, and where the pipeline could not follow the server, is decided here.
	first, err := r.serveOnce(ctx, w, j, objs, w.eval, j.view, true)
	if err != nil {
		out.indeterminate(undecidedOf(err))
		return
	}
	if first.why != "" {
		out.Notes = append(out.Notes, first.why)
	}
	s := first.s
	if (ev.Verb == "deletecollection" || ev.Verb == "delete") && ev.Code() >= 400 && s.resp != nil {
		j.result.reached, j.result.reachedOn = reachedBy(t, s.resp, servedDecision(ev.Verb, s)), nil
	}
	unknowns := passUnknowns{listed: j.listed.listUnknowns, old: oldUnknown}
	if len(j.prior.Unknowns) > 0 && (t.op == admission.Update || t.op == admission.Delete) {
		unknowns.prior = rooted(knownFrom(j.prior.Unknowns, objs.version, objs.uid), t.op == admission.Update)
	}
	// What the log does not hold of the request: unknown to each admission of every pass, and
	// to the mutating policies.
	unknowns.prior = append(unknowns.prior, requestUnknowns(j, j.prior)...)
	mutationUnknown := r.withUnknowns(unknowns, &s, j.policies)
	refusedByMutation := len(s.calls) == 0 && s.mutation != nil && !s.mutation.Allowed
	if r.mutationUndecided(j, out, s, mutationUnknown, refusedByMutation) {
		return
	}
	if why := optionsUndecided(j, s); why.is() {
		out.indeterminate(why)
		return
	}
	if len(s.calls) == 0 && !refusedByMutation {
		if !r.conflictAfterFirstAttempt(ctx, w, j, out) && !r.notFoundAfterFirstAttempt(ctx, w, j, out) {
			r.notAdmitted(j, out, s)
			r.pendingRaced(ctx, w, j, out)
			r.goneRaced(ctx, w, j, out)
		}
		return
	}
	if note := notReached(j, s, refusedByMutation); note != "" {
		j.result.skip, j.result.skipNote = SkipBeforeAdmission, note
		return
	}
	if len(s.calls) > 0 {
		if note := r.failedInUnreplayedMutation(j, s); note != "" {
			j.result.skip, j.result.skipNote = SkipBeforeAdmission, note
			return
		}
		// (A request a mutating policy refused did not reach validating admission in the
		// pipeline, nor in the server if the server's refusal is the same.)
		admittedBeforeFailing(j, out)
		if name := s.calls[0].attrs.GetName(); out.Name == "" && ev.Verb != "deletecollection" && !unknownName(s.calls[0].unknowns) {
			out.Name = name
		}
		// A server-side apply that found no object created it: admission's CREATE.
		out.Operation = string(s.calls[0].attrs.GetOperation())
		if r.observed() {
			// What an observer (the HTML report) shows of the request: its objects in the
			// version of the request.
			out.Object = masked(versioned(s.calls[0].attrs.GetObject(), t.reqKind), "object", s.calls[0].unknowns)
			if !oldUnknown.is() {
				out.OldObject = masked(versioned(s.calls[0].attrs.GetOldObject(), t.reqKind), "oldObject", s.calls[0].unknowns)
			}
		}
		if out.secret != nil {
			// What each attempt evaluated, which its policies' texts may quote.
			for _, c := range s.calls {
				out.secret.attempt(c.attrs)
			}
		}
	}
	notes, ok := r.decidedWithout(j, out, s.calls, oldUnknown)
	if !ok {
		return
	}
	d := servedDecider{r: r, ctx: ctx, w: w, j: j, objs: objs, first: &first.s, unknowns: unknowns}
	r.conclude(w, j, out, undecided{}, d.decide, notes...)
	decideOn := func(p state.Prior) (*verify.Decision, error) { return r.decideServedOn(ctx, w, j, p) }
	r.firstAttempt(j, out, j.result.dec, decideOn)
	r.raced(j, out, decideOn)
	if m := decidedMutation(j, s); mutationUnknown == "" && m != nil && out.Decision != DecisionIndeterminate {
		out.Mutations = m.Changes
	}
	if r.cfg.check && out.Decision == DecisionAdmit && len(out.Mutations) > 0 {
		if diffs, checked := checkMutated(ev, t, s.resp, out.Mutations, j.mutators); checked {
			out.Disagreements = append(slices.Clip(out.Disagreements), diffs...)
			if out.Disagreements == nil {
				out.Disagreements = []string{}
			}
		}
	}
}

// servedObjects returns the objects the request pipeline reads for a job from the State, and
// when the old object of a DELETE is not known, why (a stand-in holding its kind and name
// takes its place, and the decision stands only if it does not depend on it: see
// requestOnly).
func servedObjects(j *job, ranAdmission bool) (*jobObjects, undecided) {
	ev, t := j.ev, j.t
	gr := t.gvr.GroupResource()
	objs := &jobObjects{gr: gr, namespace: t.namespace, name: t.name, prior: j.prior,
		absent: !j.prior.Found && j.prior.Complete, list: j.listed.list, listUnknown: j.listed.listUnknown, listNamed: j.listed.named}
	if j.rec.vapRan || j.rec.byWebhook {
		// The log shows the request got past the storage's check of the resourceVersion and
		// uid it asked for: they are those stored, where the replay does not know them.
		objs.version, objs.uid = fromRequest(ev, j.prior.Unknowns)
		objs.body = updateBody(ev, j.prior.Unknowns)
	}
	if first, ok := retriedOnMarked(j, ranAdmission); ok {
		objs.prior, objs.reread = first, j.prior.Raw
	}
	if t.op == admission.Create && t.sub == "" && ev.Verb != "create" && ev.Code() == http.StatusCreated {
		// An update or a patch that created its object (201) found none stored: the store's
		// Update creates it when it does not exist.
		objs.absent = true
	}
	if objs.absent && (t.op == admission.Update || t.op == admission.Delete) && ev.Code() >= 200 && ev.Code() < 300 {
		// The server wrote an object the State holds to be absent: the State missed its
		// creation (an audit policy that does not log it), and does not know it.
		objs.absent = false
	}
	if t.op != admission.Delete || t.sub != "" || ev.Verb != "delete" || (j.prior.Found && j.prior.Raw != nil) || objs.absent {
		return objs, undecided{}
	}
	var oldUnknown undecided
	switch {
	case !j.prior.Kept:
		oldUnknown = because(ReasonOldObjectUnknown, gr.String()+" is not kept")
	case j.prior.Found:
		oldUnknown = because(ReasonOldObjectUnknown, fmt.Sprintf("%s %s: %s", gr, state.JoinKey(t.namespace, t.name), state.ShortReason(j.prior.Unknown)))
	default:
		oldUnknown = because(ReasonOldObjectUnknown, fmt.Sprintf("%s %s is not in the snapshot or earlier in the log", gr, state.JoinKey(t.namespace, t.name)))
	}
	objs.standIn = standInJSON(t, ev.RequestObject)
	return objs, oldUnknown
}

// retriedOnMarked says, of a DELETE evaluated again on what a DELETE the log records after it,
// which ran concurrently with it, stored (the object marked deleted: reviseConcurrent), where
// the log's annotations show admission ran (ranAdmission), the version it read first (first:
// unmarked). A DELETE that read
// the marked object would complete without admission (a pending graceful deletion); one whose
// Get read it unmarked ran admission on it first and, its update conflicting with the other's
// mark, ran admission again on the marked object (updateForGracefulDeletionAndFinalizers'
// GuaranteedUpdate runs deleteValidation before BeforeDelete), which is the decision.
func retriedOnMarked(j *job, ranAdmission bool) (first state.Prior, ok bool) {
	ev, t, p := j.ev, j.t, j.prior
	if j.revise.concurrent == nil || t.op != admission.Delete || t.sub != "" || ev.Verb != "delete" || !ranAdmission ||
		p.Raw == nil || len(p.Stale) == 0 || p.Stale[0].Raw == nil {
		return state.Prior{}, false
	}
	marked, err := auditlog.DecodeHeader(p.Raw)
	if err != nil || marked.GetDeletionTimestamp() == nil {
		return state.Prior{}, false
	}
	if before, err := auditlog.DecodeHeader(p.Stale[0].Raw); err != nil || before.GetDeletionTimestamp() != nil {
		return state.Prior{}, false
	}
	return p.Stale[0], true
}

// passUnknowns is what the replay does not know of the admissions of a pass through the
// request pipeline: the stored object's unknown fields and what an export lost of the
// request (prior), those of each object a deletecollection listed, and with a stand-in for
// the old object (old), all of it and the delete options derived from it.
type passUnknowns struct {
	prior  []vapccel.Unknown
	listed map[state.ObjectKey][]vapccel.Unknown
	old    undecided
}

// withUnknowns adds to the admissions of a pass what the replay does not know of them (u),
// and what the MutatingAdmissionPolicies changed when that is not known (returned).
func (r *Replayer) withUnknowns(u passUnknowns, s *served, policies []string) (mutationUnknown string) {
	mutationUnknown = r.mutationUnknown(s.mutation, append(slices.Clip(s.mutationInputs), u.prior...), policies)
	for i := range s.calls {
		c := &s.calls[i]
		if mutationUnknown != "" {
			c.unknowns = append(c.unknowns, mutationUnknownField(mutationUnknown))
		}
		c.unknowns = append(c.unknowns, u.prior...)
		if len(u.listed) > 0 {
			// A deletecollection's admissions are named by the oldObject only.
			if m, err := meta.Accessor(c.attrs.GetOldObject()); err == nil {
				c.unknowns = append(c.unknowns, rooted(u.listed[state.ObjectKey{Namespace: m.GetNamespace(), Name: m.GetName()}], false)...)
			}
		}
		if u.old.is() {
			c.unknowns = append(c.unknowns,
				vapccel.Unknown{Path: vapccel.FieldPath{Root: "oldObject"}, Why: u.old.String()},
				vapccel.Unknown{Path: vapccel.FieldPath{Root: "request", Steps: []string{"options"}}, Why: u.old.String()})
		}
	}
	return mutationUnknown
}

// mutationUndecided settles a request when what the MutatingAdmissionPolicies did decides it
// indeterminate; it notes on the record when validation saw an object they changed in ways
// not known. It says whether it settled the job.
func (r *Replayer) mutationUndecided(j *job, out *Record, s served, mutationUnknown string, refusedByMutation bool) bool {
	j.result.mutationRan = s.mutation.Acted()
	if j.result.mutationRan && j.result.schemaRefreshing != "" {
		out.indeterminate(because(ReasonMutationUnknown, j.result.schemaRefreshing))
		return true
	}
	switch {
	case s.mutation == nil, mutationUnknown == "":
	case refusedByMutation:
		out.indeterminate(because(ReasonMutationUnknown, "replayed on what the replay knows, a MutatingAdmissionPolicy refused the request (which the log may show refused by another), and "+mutationUnknown))
		return true
	default:
		// What the policies changed is not known: neither is the object validation saw.
		out.Notes = append(out.Notes, "what the MutatingAdmissionPolicies changed is not known: "+mutationUnknown)
	}
	return false
}

// notAdmitted settles a request that, sent through the pipeline over the State, did not reach
// validating admission: skipped, or indeterminate where the log shows the server did
// otherwise.
func (r *Replayer) notAdmitted(j *job, out *Record, s served) {
	ev, t, gr := j.ev, j.t, j.t.gvr.GroupResource()
	code := ev.Code()
	switch {
	case s.unknown != nil && (!state.SameStorage(s.unknown.Resource, gr) || s.unknown.Namespace != t.namespace || s.unknown.Name != t.name):
		out.indeterminate(because(ReasonStateUnknown, "the server read "+s.unknown.Error()))
	case s.unknown != nil:
		out.indeterminate(because(ReasonOldObjectUnknown, fmt.Sprintf("%s %s: %v", gr, state.JoinKey(t.namespace, t.name), s.unknown.Err)))
	case s.pluginMisses != "" && code >= 200 && code < 300:
		out.indeterminate(because(ReasonPluginInputUnknown, "an admission plugin read "+s.pluginMisses))
	case code >= 200 && code < 300 && s.resp.Code < 300 && j.prior.Unsettled != "" && t.op == admission.Delete:
		// Whether the object's graceful deletion was pending is not known.
		out.indeterminate(because(ReasonOldObjectUnknown, j.prior.Unsettled))
	case code >= 200 && code < 300 && s.resp.Code < 300 && t.op == admission.Delete && j.revise.concurrent == nil && j.prior.RacedFrom == nil && r.ranAdmission(j.ev):
		out.indeterminate(because(ReasonOldObjectUnknown, pendingButAdmitted(j)))
	case code >= 200 && code < 300 && s.resp.Code < 300:
		j.result.skip = SkipPendingDeletion
	case code >= 200 && code < 300:
		out.indeterminate(because(ReasonRebuild, "kube-apiserver completed the request, but sent through its pipeline over the state the replay knows it is "+describeServed(s)))
	case j.rec.vapRan && j.rec.policy != "":
		// The log shows a policy refused it: the state the replay knows is not the server's.
		out.indeterminate(because(ReasonRebuild, "a policy refused the request in kube-apiserver, but sent through its pipeline over the state the replay knows it is "+describeServed(s)))
	case s.pluginMisses != "" && (j.rec.outcome == RecordedUnknown || (j.rec.skip == SkipBeforeAdmission && !j.rec.sure)):
		// The log does not tell what refused the request (an export lost its message), and
		// the pipeline's refusal rests on what a plugin read that the replay does not know: a
		// policy may have denied it.
		out.indeterminate(because(ReasonPluginInputUnknown, "an admission plugin read "+s.pluginMisses+", and the request "+j.rec.note))
	case !j.rec.sure && r.ranAdmission(j.ev):
		// The log's annotations show validating admission ran: the state the replay knows,
		// over which the pipeline refused it before, is not the server's.
		out.indeterminate(because(ReasonRebuild, "the log's annotations show validating admission ran, but sent through its pipeline over the state the replay knows it is "+describeServed(s)))
	default:
		j.result.skip, j.result.skipNote = SkipBeforeAdmission, j.rec.note
		if j.result.skipNote == "" && s.resp.Status != nil {
			j.result.skipNote = string(s.resp.Status.Reason)
		}
	}
}

// notReached says why the log shows a request the pipeline took to admission did not reach it
// in the server, or that admission's answer was not the server's, as the note of its skip; ""
// when neither:
//   - a 409 whose first attempt admission refused on the version the State holds: the store ran
//     it again on the live object, whose resourceVersion failed the request's;
//   - a refusal by a plugin before validating admission, which the pipeline's, over what the
//     replay knows, did not make (an export lost the user's groups, by which NodeRestriction
//     knows a node).
func notReached(j *job, s served, refusedByMutation bool) string {
	switch {
	case j.ev.Code() == http.StatusConflict && j.rec.skip == SkipBeforeAdmission && (refusedByMutation || len(s.calls) > 0 && !combineCalls(j.ev.Verb, s.calls).Allowed):
		return "the live attempt failed its resourceVersion precondition; the first, on the version the State holds, was refused by admission, and the store ran the request again"
	case len(s.calls) > 0 && j.rec.byPlugin:
		return j.rec.note
	}
	return ""
}

// failedInUnreplayedMutation says why a request the server refused, not by a policy, which the
// pipeline took to validating admission, did not reach it in the server: a
// MutatingAdmissionPolicy the replay does not run matches it, which may have refused it, or
// written what the server could not convert or validate (a 500, a 422), before validating
// admission; and the log shows none of the verdicts of the policies it shows installed that
// validating admission gives the request (silent). "" when the pipeline's reaching validating
// admission stands: no such policy, or no such evidence (the request's refusal is then not
// taken as after admission either: admittedBeforeFailing).
func (r *Replayer) failedInUnreplayedMutation(j *job, s served) string {
	if !refusedUnexplained(j) {
		return ""
	}
	why := j.mutators.mayMutate(r.replayedMutation(mutatedBy(j.t, s.calls[0].attrs, j.view)))
	if why == "" {
		return ""
	}
	if _, silent := j.verdictsShown(combineCalls(j.ev.Verb, s.calls)); !silent {
		j.mutationUnexplained = why
		return ""
	}
	return "refused before validating admission, the log showing none of its verdicts: " + why
}

// refusedUnexplained says whether the server refused the request otherwise than a policy did,
// where validating admission may have run before what refused it: not a failure whose message
// an export lost (it may have been a policy's denial), nor the server's timeout filter's
// answer (given while the handler still ran, before, during or after admission, whose answer
// it then drops: what admission decided is not known).
func refusedUnexplained(j *job) bool {
	ev := j.ev
	return !messageLost(ev) && ev.Code() != http.StatusGatewayTimeout && reasonOf(ev) != string(metav1.StatusReasonTimeout) &&
		(j.rec.skip == SkipBeforeAdmission || (j.rec.outcome == RecordedUnknown && ev.Code() >= 300))
}

// admittedBeforeFailing records a request that reached validating admission in the pipeline
// and that the log shows refused, not by a policy, as admitted: the server's pipeline runs
// validating admission before what refused it. Where a MutatingAdmissionPolicy the replay does
// not run may have refused it first (failedInUnreplayedMutation), whether validating admission
// ran is not known.
func admittedBeforeFailing(j *job, out *Record) {
	if !refusedUnexplained(j) {
		return
	}
	ev := j.ev
	if ev.Loss.Lost.Has(auditlog.LostMessage) && slices.ContainsFunc(recordedWebhooks(ev), func(c webhookCall) bool { return c.hasMutation }) {
		// The message would name a mutating webhook whose call failed (a 500, failurePolicy
		// Fail) or that denied it, before validating admission (helper exAA, GKE's sink).
		j.rec = recording{outcome: RecordedUnknown, note: "failed with " + reasonOr(reasonOf(ev), httpCode(ev.Code())) + ", and " + ev.Loss.Of(auditlog.LostMessage) + ": a mutating webhook the event shows called may have refused it, before validating admission"}
		out.Recorded, out.RecordedNote, out.recordedByVAP = RecordedUnknown, j.rec.note, false
		return
	}
	if j.mutationUnexplained != "" {
		j.rec = recording{outcome: RecordedUnknown, note: "failed with " + reasonOr(reasonOf(ev), httpCode(ev.Code())) + ", maybe before validating admission: " + j.mutationUnexplained}
		out.Recorded, out.RecordedNote, out.recordedByVAP = RecordedUnknown, j.rec.note, false
		return
	}
	j.rec = recording{outcome: RecordedAdmit, vapRan: true, note: "failed after validating admission: " + reasonOr(reasonOf(ev), httpCode(ev.Code()))}
	out.Recorded, out.RecordedNote, out.recordedByVAP = RecordedAdmit, j.rec.note, false
}

// decidedWithout settles a request whose decision depends on what the replay does not know
// (the old object a stand-in took the place of, or a field of the admissions), and returns
// the notes of one decided without it. It says whether the request is left to decide.
func (r *Replayer) decidedWithout(j *job, out *Record, calls []admitted, oldUnknown undecided) ([]string, bool) {
	if !oldUnknown.is() && j.prior.Unsettled != "" && j.t.op == admission.Delete {
		// Whether the store ran admission is not known either: only an admission that shows
		// nothing of having run can stand.
		if dec := combineCalls(j.ev.Verb, calls); !dec.Allowed || len(dec.Warnings) > 0 || len(dec.AuditAnnotations) > 0 {
			out.indeterminate(because(ReasonOldObjectUnknown, j.prior.Unsettled))
			return nil, false
		}
	}
	if oldUnknown.is() {
		// The stand-in's fields are all unknown (withUnknowns), and so are the delete options
		// the store derives from the stored object (a pod's grace period): the decision stands
		// only if none is read. Whether the server ran admission at all is not known either (a
		// graceful deletion may have been pending, a DELETE answered 404 may have found no
		// object): only an admission can stand, and only one that shows nothing of having run
		// (a warning, an audit annotation: a Warn or Audit binding's failure).
		if dec := combineCalls(j.ev.Verb, calls); !dec.Allowed || len(dec.Warnings) > 0 || len(dec.AuditAnnotations) > 0 {
			out.indeterminate(oldUnknown)
			return nil, false
		}
	}
	if why := r.dependsOnUnknownButAnnotations(j, calls); why.is() {
		if oldUnknown.is() {
			why = oldUnknown
		}
		out.indeterminate(why)
		return nil, false
	}
	if !oldUnknown.is() {
		return nil, true
	}
	out.OldObjectSource = SourceUnknown
	return []string{"decided without what is not known (" + oldUnknown.detail + "): no policy of the request reads it, or a matchCondition that does not read it skipped the policy"}, true
}

// servedDecider decides a job's request through the request pipeline in a state the server
// may have been in (an evaluator and a View): the first pass's decision for the job's own,
// a pass of its own for another, known as the first pass's decision is known or not decided.
type servedDecider struct {
	r        *Replayer
	ctx      context.Context
	w        evalWorker
	j        *job
	objs     *jobObjects
	first    *served
	unknowns passUnknowns
	// used says the first pass's decision was given.
	used bool
}

func (d *servedDecider) decide(eval Evaluator, view *state.StateView) (*verify.Decision, error) {
	ev := d.j.ev
	if !d.used && eval == d.w.eval && view == d.j.view {
		d.used = true
		return servedDecision(ev.Verb, *d.first), nil
	}
	again, ok := d.r.revalidated(d.ctx, d.w, d.j, d.first, eval, view)
	if !ok {
		var err error
		if again, err = d.r.serveOnce(d.ctx, d.w, d.j, d.objs, eval, view, false); err != nil {
			return nil, err
		}
	}
	if (ev.Verb == "deletecollection" || ev.Verb == "delete") && ev.Code() >= 400 && again.s.resp != nil && again.s.resp.Unknown == nil {
		if d.j.result.reachedOn == nil {
			d.j.result.reachedOn = map[*state.StateView]*reachedItems{}
		}
		d.j.result.reachedOn[view] = reachedBy(d.j.t, again.s.resp, servedDecision(ev.Verb, again.s))
	}
	if mu := d.r.withUnknowns(d.unknowns, &again.s, d.j.policies); mu != "" && again.s.mutation != nil && !again.s.mutation.Allowed {
		return nil, &indeterminateError{because(ReasonMutationUnknown, "replayed on what the replay knows, a MutatingAdmissionPolicy refused the request (which the log may show refused by another), and "+mu)}
	}
	if why := d.r.dependsOnUnknown(d.j, again.s.calls); why.is() {
		return nil, &indeterminateError{why}
	}
	if dec := servedDecision(ev.Verb, again.s); dec != nil {
		return dec, nil
	}
	return nil, &indeterminateError{because(ReasonRebuild, describeServed(again.s))}
}

// resultKey is a verify.Result by value, to give each result of a request's admissions once.
type resultKey struct {
	policy, binding, paramNamespace, paramName, result, message, reason, matchCondition string
	actions                                                                             string
	expression                                                                          int
	param, paramNotFound, messageByChance, outcomeByChance                              bool
}

func keyOf(r verify.Result) resultKey {
	k := resultKey{policy: r.Policy, binding: r.Binding, result: r.Result, message: r.Message, reason: string(r.Reason),
		matchCondition: r.MatchCondition, paramNotFound: r.ParamNotFound, messageByChance: r.MessageByChance, outcomeByChance: r.OutcomeByChance, expression: -1}
	if r.Param != nil {
		k.param, k.paramNamespace, k.paramName = true, r.Param.Namespace, r.Param.Name
	}
	if r.ExpressionIndex != nil {
		k.expression = *r.ExpressionIndex
	}
	for _, a := range r.Actions {
		k.actions += string(a) + ","
	}
	return k
}

// decidedMutation is what the replayed MutatingAdmissionPolicies changed in the request as it
// was decided: in the state the decision is of (the likely one of the informers', which need
// not be the one s was served on), or s's.
func decidedMutation(j *job, s served) *verify.Mutation {
	if j.result.dec != nil && j.result.dec.Mutation != nil {
		return j.result.dec.Mutation
	}
	return s.mutation
}

// servedDecision is the decision of a served request: its validating admissions', or the
// refusal of a replayed MutatingAdmissionPolicy before them; nil when neither ran.
func servedDecision(verb string, s served) *verify.Decision {
	switch {
	case len(s.calls) > 0:
		dec := combineCalls(verb, s.calls)
		dec.Mutation = s.mutation
		return dec
	case s.mutation != nil && !s.mutation.Allowed:
		m := s.mutation
		return &verify.Decision{Code: m.Code, Reason: m.Reason, Message: m.Message, Status: m.Status, Mutation: m}
	}
	return nil
}

// servedOnce is a request sent through the pipeline with one evaluator and View.
type servedOnce struct {
	s   served
	why string // how the patch types were chosen
}

// serveOnce sends the job's request through the pipeline once. byAnnotations lets the audit
// annotations the log records choose among its variants: only for the state the server
// admitted the request on as far as the replay knows (another state, the informers' or the
// watch cache's, is one the server may not have read, whose variants the log does not choose).
func (r *Replayer) serveOnce(ctx context.Context, w evalWorker, j *job, objs *jobObjects, eval Evaluator, view *state.StateView, byAnnotations bool) (servedOnce, error) {
	w.store.v = view
	defer func() { w.store.v = nil }()
	vs, err := r.serve(ctx, j.ev, j.t, j.policies, objs, eval, w.plugins, view, j.rec.vapRan || j.rec.byWebhook, j.mutators, mayRetry(j.t, j.prior))
	if err != nil {
		return servedOnce{}, err
	}
	var recorded func(served) bool
	if byAnnotations && j.byAnnotations() {
		// The log records what the loaded policies published and decided: a variant whose
		// annotations differ from it, or that a loaded policy decides otherwise (a denial
		// where the server admitted, an admission where one of them refused), is not what
		// the server ran.
		recorded = func(v served) bool {
			dec := servedDecision(j.ev.Verb, v)
			return dec != nil && len(check(j.ev, j.rec, dec, j.evidenced)) == 0
		}
	}
	if len(vs) > 1 {
		for i := range vs {
			if u := r.dependsOnUnknown(j, vs[i].calls); u.is() {
				vs[i].undecided = u.String()
			}
		}
	}
	s, ok, why, reason := pickServed(j.ev, vs, recorded)
	if !ok {
		return servedOnce{}, &indeterminateError{because(reason, why)}
	}
	if s.err != nil {
		return servedOnce{}, s.err
	}
	return servedOnce{s: s, why: why}, nil
}

// combineCalls is the decision of a request from its validating admissions, in order. Most
// requests are admitted once. The store admits a deletecollection object by object, and
// validates a deletion that is immediate once before and once after it marks the object
// deleted (Store.Delete: updateForGracefulDeletionAndFinalizers, then the storage's Delete);
// the first refusal ends the request. The decision is that refusal, or the last admission,
// with the results, warnings and audit annotations of every admission, the annotations merged
// as the audit event merges them (the first value of a key stays).
func combineCalls(verb string, calls []admitted) *verify.Decision {
	if len(calls) == 1 {
		return calls[0].dec
	}
	last := calls[len(calls)-1].dec
	out := *last
	out.Results, out.Warnings, out.AuditAnnotations, out.Notes, out.Authorizer, out.UnknownAnnotations = nil, nil, nil, nil, nil, nil
	seen := map[string]bool{}
	once := func(kind, s string) bool {
		k := kind + "\x00" + s
		if seen[k] {
			return false
		}
		seen[k] = true
		return true
	}
	results := map[resultKey][]int{} // the indexes in out.Results of the results of a key
	for _, c := range calls {
		for _, res := range c.dec.Results {
			k := keyOf(res)
			i := slices.IndexFunc(results[k], func(i int) bool { return sameValues(out.Results[i].AuditAnnotations, res.AuditAnnotations) })
			if i < 0 {
				// Another outcome, or the same one with other values of its annotations (a
				// deletecollection's objects, each named by its binding's annotation).
				results[k] = append(results[k], len(out.Results))
				out.Results = append(out.Results, res)
				continue
			}
			// The same outcome in another admission: given once, the annotations one gave
			// and the other did not joined (seed c:901: a DELETE's second admission, after
			// the deletion's mark, without the annotation its first gave, listed each
			// failure twice against the event's validation_failure once).
			if kept := &out.Results[results[k][i]]; addsAnnotations(kept.AuditAnnotations, res.AuditAnnotations) {
				kept.AuditAnnotations = addAnnotations(maps.Clone(kept.AuditAnnotations), res.AuditAnnotations)
			}
		}
		for _, w := range c.dec.Warnings {
			if once("warning", w) {
				out.Warnings = append(out.Warnings, w)
			}
		}
		out.AuditAnnotations = addAnnotations(out.AuditAnnotations, c.dec.AuditAnnotations)
		out.UnknownAnnotations = addAnnotations(out.UnknownAnnotations, c.dec.UnknownAnnotations)
		for _, a := range c.dec.Authorizer {
			if once("authorizer", fmt.Sprintf("%+v", a)) {
				out.Authorizer = append(out.Authorizer, a)
			}
		}
		for _, n := range c.dec.Notes {
			if once("note", n) {
				out.Notes = append(out.Notes, n)
			}
		}
	}
	for k := range out.UnknownAnnotations {
		// Not known in one of the admissions: the event's value may be that one's.
		delete(out.AuditAnnotations, k)
	}
	if verb == "deletecollection" {
		out.Notes = append(out.Notes, fmt.Sprintf("deletecollection: %d objects admitted one by one, as the store deletes them", len(calls)))
	}
	return &out
}

// sameValues says whether the keys a and b both hold have the same values in each.
func sameValues(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; ok && w != v {
			return false
		}
	}
	return true
}

// addsAnnotations says whether add holds a key into does not.
func addsAnnotations(into, add map[string]string) bool {
	for k := range add {
		if _, ok := into[k]; !ok {
			return true
		}
	}
	return false
}

// addAnnotations adds the audit annotations of an admission to those of the ones before it
// (into, which it may allocate), as the audit event does (audit.AddAuditAnnotation): the first
// value a key was given stays.
func addAnnotations(into, add map[string]string) map[string]string {
	for k, v := range add {
		if into == nil {
			into = map[string]string{}
		}
		if _, ok := into[k]; !ok {
			into[k] = v
		}
	}
	return into
}

// standInJSON is the stored JSON of a stand-in for an object the State does not know: its
// kind, namespace and name, and the uid and resourceVersion the request's DeleteOptions
// (body) require of it, if any.
func standInJSON(t target, body []byte) []byte {
	meta := map[string]any{"name": t.name}
	if t.namespace != "" {
		meta["namespace"] = t.namespace
	}
	var opts struct {
		Preconditions *struct {
			UID             *string `json:"uid"`
			ResourceVersion *string `json:"resourceVersion"`
		} `json:"preconditions"`
	}
	if hasBody(body) && json.Unmarshal(body, &opts) == nil && opts.Preconditions != nil {
		if p := opts.Preconditions.UID; p != nil {
			meta["uid"] = *p
		}
		if p := opts.Preconditions.ResourceVersion; p != nil {
			meta["resourceVersion"] = *p
		}
	}
	raw, _ := json.Marshal(map[string]any{"apiVersion": t.mainKind.GroupVersion().String(), "kind": t.mainKind.Kind, "metadata": meta})
	return raw
}

// pipelineSources say where the objects of a request sent through the pipeline came from.
func pipelineSources(ev *Event, t target, p state.Prior) (object, old string) {
	switch {
	case t.op == admission.Connect:
		object = SourcePipeline + " (the options of the request URI)"
	case ev.Verb == "patch" || ev.Verb == "apply":
		object = SourcePipeline + " (the patch applied to the stored object)"
	case t.op == admission.Create || t.op == admission.Update:
		object = SourcePipeline + " (the request object)"
	}
	if (t.op == admission.Update || t.op == admission.Delete) && p.Found && p.Raw != nil {
		old = SourceState + " (" + p.Source + ")"
	}
	return object, old
}

func reasonOf(ev *Event) string {
	if ev.ResponseStatus == nil {
		return ""
	}
	return ev.ResponseStatus.Reason
}

// dependsOnUnknown says why the decision of a request's admissions depends on a field the
// replay does not know; zero when it does not. A policy's part in a decision does not depend
// on unknown fields when the policy reads none of them, or when every evaluation of it was
// skipped by a matchCondition that reads none (the apiserver's matcher skips a policy on the
// first false condition, whatever the others do). What selects a policy's bindings and params
// (object selectors read labels) counts as read.
func (r *Replayer) dependsOnUnknown(j *job, calls []admitted) undecided {
	return r.dependsOnUnknownIn(j, calls, false)
}

// dependsOnUnknownButAnnotations is dependsOnUnknown for the decision of the state the log's
// order gives (the request's first pass), where what only a policy's auditAnnotations read
// leaves the decision, their values left out (unknownAnnotationsOnly). Not for another state's
// or attempt's: the annotations the log holds may be that one's (a first attempt on the watch
// cache's copy publishes the event's), which it then compares.
func (r *Replayer) dependsOnUnknownButAnnotations(j *job, calls []admitted) undecided {
	return r.dependsOnUnknownIn(j, calls, true)
}

func (r *Replayer) dependsOnUnknownIn(j *job, calls []admitted, butAnnotations bool) undecided {
	for _, c := range calls {
		if len(c.unknowns) == 0 {
			continue
		}
		unknowns := selectedNamespaceUnknowns(j.t, c.unknowns)
		var shapes []vapccel.Unknown // the unknowns whose shape is not known either (see readsOf)
		for _, u := range unknowns {
			if !u.ValueOnly {
				shapes = append(shapes, u)
			}
		}
		for _, p := range j.policies {
			reads, ok := r.readsOf(p, c.dec, shapes)
			if !ok {
				continue
			}
			read, u, dep := reads.DependsOn(unknowns)
			if !dep || r.skippedIndependently(p, c.dec, unknowns, j.t.gvr.GroupResource() == state.NamespacesGR) ||
				butAnnotations && r.unknownAnnotationsOnly(p, c.dec, unknowns, shapes) {
				continue
			}
			reason := ReasonUnknownField
			switch {
			case lostByExport(j.ev, j.t.op, u):
				reason = ReasonExportLost // exportloss.go
			case bodyUnknown(j.ev, j.t, u):
				reason = ReasonNoObject // unlogged.go
			}
			return because(reason, fmt.Sprintf("policy %s reads %s, and %s is not known: %s", p, read.Path, u.Path, u.Why))
		}
	}
	return undecided{}
}

// selectedNamespaceUnknowns are the unknowns, and for a namespace's own create or update, what
// of its object's labels is not known as the namespace's labels (namespaceObject) too: the
// apiserver's matcher reads a namespace selector on the request's object there
// (namespace.Matcher.GetNamespaceLabels), where vapccel.SelectorReads names namespaceObject.
// (A CEL read of namespaceObject, the stored namespace, then counts too: conservative.)
// Random parity c:652: a Metadata-level patch that removed the label a binding's selector
// named was decided as matched, certain.
func selectedNamespaceUnknowns(t target, unknowns []vapccel.Unknown) []vapccel.Unknown {
	if t.gvr.GroupResource() != state.NamespacesGR || t.sub != "" || (t.op != admission.Create && t.op != admission.Update) {
		return unknowns
	}
	labels := []string{"metadata", "labels"}
	var out []vapccel.Unknown
	for _, u := range unknowns {
		steps := u.Path.Steps
		n := min(len(steps), len(labels))
		if u.Path.Root == "object" && slices.Equal(steps[:n], labels[:n]) {
			if out == nil {
				out = slices.Clone(unknowns)
			}
			ns := u
			ns.Path = vapccel.FieldPath{Root: "namespaceObject", Steps: steps}
			ns.Why = u.Why + " (a namespace selector matches a namespace's own request on its object's labels)"
			out = append(out, ns)
		}
	}
	if out == nil {
		return unknowns
	}
	return out
}

// readsOf is what a policy read in a decision, of unknown fields: all it reads, but the
// messageExpressions of the validations that did not fail where what they read of the unknowns
// is only values (ValueOnly: a generated name, a uid, a token volume's suffix; shapes are the
// unknowns that are not). kube-apiserver's validator evaluates every messageExpression, but
// uses only the failed validations'; the others change the decision only by exhausting the
// cost budget, which values of a known shape do not change.
func (r *Replayer) readsOf(policy string, dec *verify.Decision, shapes []vapccel.Unknown) (vapccel.Reads, bool) {
	all, ok := r.set.reads[policy]
	base, split := r.set.butMessages[policy]
	return r.readsWithMessages(policy, dec, shapes, all, ok, base, split)
}

// readsWithMessages is readsOf over all, what the policy reads, and base, what it reads but the
// messageExpressions (split: it has some).
func (r *Replayer) readsWithMessages(policy string, dec *verify.Decision, shapes []vapccel.Unknown, all vapccel.Reads, ok bool, base vapccel.Reads, split bool) (vapccel.Reads, bool) {
	if !ok || !split || dec == nil {
		return all, ok
	}
	out := vapccel.Reads{Reads: slices.Clip(base.Reads), All: base.All}
	for i, m := range r.set.messages[policy] {
		if _, _, shape := m.DependsOn(shapes); shape || failedValidation(dec, policy, i) {
			out.Reads = append(out.Reads, m.Reads...)
			out.All = cmp.Or(out.All, m.All)
		}
	}
	return out, true
}

// annotatedPolicy is what a validating policy with auditAnnotations reads but them (reads;
// butMessages without the messageExpressions too), what each of them reads (each, by the
// keys' order), and whether its failurePolicy is Ignore.
type annotatedPolicy struct {
	reads, butMessages vapccel.Reads
	each               []vapccel.Reads
	keys               []string
	ignore             bool
}

// unknownAnnotationsOnly says whether what the policy read of the unknowns in a decision is
// read only by its auditAnnotations, whose values are then not known, and leaves the decision
// alone: it takes them out of dec (UnknownAnnotations, a note). An auditAnnotation changes a
// decision only by failing to evaluate (or by the cost it spends) under failurePolicy Fail
// (the validator's AuditAnnotationActionError: a denial); under Ignore, never. Under Fail the
// unknowns an annotation reads must be values of a known shape (ValueOnly: a uid, a generated
// name, a token volume's suffix, an allocated address), on which its evaluation fails or not
// as it did on the replay's, and it did not. A helper's observer policy, whose annotations
// recorded the token volume's name, left every refused pod's decision indeterminate.
func (r *Replayer) unknownAnnotationsOnly(policy string, dec *verify.Decision, unknowns, shapes []vapccel.Unknown) bool {
	a, ok := r.set.annotated[policy]
	if !ok || dec == nil {
		return false
	}
	_, split := r.set.butMessages[policy]
	decisive, _ := r.readsWithMessages(policy, dec, shapes, a.reads, true, a.butMessages, split)
	if _, _, dep := decisive.DependsOn(unknowns); dep {
		return false
	}
	if !a.ignore {
		for _, each := range a.each {
			if _, _, dep := each.DependsOn(shapes); dep {
				return false
			}
		}
		if slices.ContainsFunc(dec.Results, func(res verify.Result) bool { return res.Policy == policy && res.Result == verify.ResultError }) {
			return false
		}
	}
	for i, each := range a.each {
		if read, u, dep := each.DependsOn(unknowns); dep {
			dropAnnotation(dec, policy, a.keys[i], fmt.Sprintf("its valueExpression reads %s, and %s is not known: %s", read.Path, u.Path, u.Why))
		}
	}
	return true
}

// dropAnnotation takes the policy's audit annotation key, whose value is not known (why), out of
// the decision and its results, and says so.
func dropAnnotation(dec *verify.Decision, policy, key, why string) {
	dec.Forget(policy+"/"+key, why)
}

// failedValidation says whether the policy's validation i failed in the decision (for some
// binding or param).
func failedValidation(dec *verify.Decision, policy string, i int) bool {
	return slices.ContainsFunc(dec.Results, func(res verify.Result) bool {
		return res.Policy == policy && res.Result == verify.ResultDeny && res.ExpressionIndex != nil && *res.ExpressionIndex == i
	})
}

// skippedIndependently says whether every evaluation of the policy in the decision was skipped
// by a matchCondition that reads none of the unknown fields or admitted for want of params
// (parameterNotFoundAction Allow), or the policy matched none of its
// bindings (a namespace selector the namespace's labels do not match, an object selector), and
// nothing that selects it reads them either. A namespace's own request is matched on its
// object's labels by namespace selectors too: there none counts as matched on what is known.
func (r *Replayer) skippedIndependently(policy string, dec *verify.Decision, unknowns []vapccel.Unknown, namespace bool) bool {
	if _, _, dep := r.set.selects[policy].DependsOn(unknowns); dep {
		return false
	}
	// A validating policy's dispatcher gives every binding it matched a result (a config error,
	// a param not found, a matchCondition's skip too); a MutatingAdmissionPolicy's none.
	if dec != nil && !namespace && !strings.HasPrefix(policy, mutatingPrefix) && !slices.ContainsFunc(dec.Results, func(res verify.Result) bool { return res.Policy == policy }) {
		return true
	}
	seen := false
	for _, res := range dec.Results {
		if res.Policy != policy {
			continue
		}
		seen = true
		if res.Result == verify.ResultAdmit && res.ParamNotFound {
			// The binding found no params, and its parameterNotFoundAction Allow admitted:
			// the dispatcher collects params before the matchConditions and validations run,
			// and evaluated nothing of the request. (Whether the State knows every param is
			// the params' question: unknownParams.)
			continue
		}
		cond, ok := r.set.conditions[policy][res.MatchCondition]
		if res.Result != verify.ResultAdmit || res.MatchCondition == "" || !ok {
			return false
		}
		if _, _, dep := cond.DependsOn(unknowns); dep {
			return false
		}
	}
	return seen
}

// unknownName says whether the request's name is one the server generated and the log does
// not hold.
func unknownName(us []vapccel.Unknown) bool {
	for _, u := range us {
		if u.Path.Root == "request" && len(u.Path.Steps) == 1 && u.Path.Steps[0] == "name" {
			return true
		}
	}
	return false
}

// deletionMarks are the fields of a stored object the store sets when it marks it deleted
// (rest.BeforeDelete, Store.updateForGracefulDeletionAndFinalizers).
var deletionMarks = []vapccel.Unknown{
	{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"metadata", "deletionTimestamp"}}},
	{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"metadata", "deletionGracePeriodSeconds"}}},
	{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"metadata", "resourceVersion"}}},
	{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"metadata", "generation"}}},
	{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"metadata", "finalizers"}}},
}

// marksUnread says whether no policy of the request reads a deletion mark of the oldObject.
func (r *Replayer) marksUnread(policies []string) bool { return r.noneReads(policies, deletionMarks) }

// noneReads says whether none of the policies reads any of the fields (by all it reads: every
// expression, message and selector); a policy the replay does not know the reads of may.
func (r *Replayer) noneReads(policies []string, fields []vapccel.Unknown) bool {
	for _, p := range policies {
		reads, ok := r.set.reads[p]
		if !ok {
			return false
		}
		if _, _, dep := reads.DependsOn(fields); dep {
			return false
		}
	}
	return true
}

// sameButDeletionMarks says whether two admissions of one DELETE differ only in the deletion
// marks of their oldObject.
func sameButDeletionMarks(prev, cur admission.Attributes) bool {
	if prev.GetOperation() != admission.Delete || cur.GetOperation() != admission.Delete || prev.GetObject() != nil || cur.GetObject() != nil ||
		prev.GetName() != cur.GetName() || prev.GetNamespace() != cur.GetNamespace() || prev.GetSubresource() != cur.GetSubresource() ||
		prev.GetResource() != cur.GetResource() || prev.IsDryRun() != cur.IsDryRun() || !reflect.DeepEqual(prev.GetOperationOptions(), cur.GetOperationOptions()) {
		return false
	}
	po, co := prev.GetOldObject(), cur.GetOldObject()
	if po == nil || co == nil {
		return po == co
	}
	pm, err1 := meta.Accessor(po)
	cm, err2 := meta.Accessor(co)
	if err1 != nil || err2 != nil {
		return false
	}
	// Compare with the marks made alike, then put them back.
	ts, grace, rv, gen, fin := cm.GetDeletionTimestamp(), cm.GetDeletionGracePeriodSeconds(), cm.GetResourceVersion(), cm.GetGeneration(), cm.GetFinalizers()
	cm.SetDeletionTimestamp(pm.GetDeletionTimestamp())
	cm.SetDeletionGracePeriodSeconds(pm.GetDeletionGracePeriodSeconds())
	cm.SetResourceVersion(pm.GetResourceVersion())
	cm.SetGeneration(pm.GetGeneration())
	cm.SetFinalizers(pm.GetFinalizers())
	same := reflect.DeepEqual(po, co)
	cm.SetDeletionTimestamp(ts)
	cm.SetDeletionGracePeriodSeconds(grace)
	cm.SetResourceVersion(rv)
	cm.SetGeneration(gen)
	cm.SetFinalizers(fin)
	return same
}

// versioned is an object of the pipeline (internal for a built-in kind) in the version of gvk,
// unstructured; nil when it is nil or does not convert.
func versioned(obj runtime.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u
	}
	ext, err := kubescheme.Scheme.ConvertToVersion(obj, gvk.GroupVersion())
	if err != nil {
		return nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ext)
	if err != nil {
		return nil
	}
	u := &unstructured.Unstructured{Object: m}
	if kinds, _, err := kubescheme.Scheme.ObjectKinds(ext); err == nil && len(kinds) > 0 {
		u.SetGroupVersionKind(kinds[0])
	}
	return u
}

// convertPrior converts the State's copy of an object (p, decoded as u) to the version of gvk
// as kube-apiserver reads it for a request of that version: a built-in kind through the
// internal version (convertStored); a custom resource whose CRD converts with the strategy None
// as the apiextensions apiserver reads it (cel/schema Catalog.CustomResourceConversion), unless
// the snapshot holds it in another version than the storage one (a read through that version
// may have pruned what the server stores). When it does not convert, why says why, for the
// record ("" for a built-in kind).
func (r *Replayer) convertPrior(p state.Prior, u *unstructured.Unstructured, gvk schema.GroupVersionKind) (conv *unstructured.Unstructured, why string) {
	cat := r.cat.c.Schema()
	if kubescheme.Knows(gvk) || cat == nil {
		return convertStored(u, gvk), ""
	}
	return convertCustom(cat, u, gvk, p.FromSnapshot, p.RV, func(name string, rv uint64) (string, string) { return r.cat.c.StorageChanged(name, rv) })
}

// convertCustom is convertPrior of a custom resource u (its resourceVersion rv, the snapshot's
// copy when fromSnapshot) in the catalog cat, whose CRDs' storage version changes
// storageChanged gives (catalog.Catalog.StorageChanged).
func convertCustom(cat *vapcschema.Catalog, u *unstructured.Unstructured, gvk schema.GroupVersionKind, fromSnapshot bool, rv uint64, storageChanged func(name string, rv uint64) (where, was string)) (conv *unstructured.Unstructured, why string) {
	crd := cat.CustomResourceDefinitionOf(gvk)
	convert, ok := cat.CustomResourceConversion(gvk)
	switch {
	case crd != nil && crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter:
		return nil, ": its CustomResourceDefinition converts by a webhook"
	case crd == nil || !ok:
		return nil, ": the schema of its CustomResourceDefinition is not known (the log holds the CRD at level Metadata, or not at all: give it with --crd)"
	case fromSnapshot && u.GroupVersionKind().Version != vapcschema.CustomResourceStorageVersion(crd):
		return nil, ": the snapshot holds it read through that version, which may have pruned what the server stores"
	}
	if where, was := storageChanged(crd.Name, rv); where != "" {
		// Written before its CRD's storage version changed (exAK): stored in the version
		// before, which the server decodes by that version's schema, then converts. The
		// State's copy in that version is the stored one.
		decode, ok := cat.CustomResourceDecoder(u.GroupVersionKind())
		if u.GroupVersionKind().Version != was || !ok || crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
			return nil, ": it may have been written before its CustomResourceDefinition's storage version changed at " + where + ", and be stored in the version before, which the replay does not hold it in"
		}
		conv = u.DeepCopy()
		if err := decode(conv.Object); err != nil {
			return nil, ": " + err.Error()
		}
		conv.SetAPIVersion(gvk.GroupVersion().String())
		return conv, ""
	}
	conv = u.DeepCopy()
	if err := convert(conv.Object); err != nil {
		return nil, ": " + err.Error()
	}
	return conv, ""
}

// convertStored converts an object of the scheme the State holds in one version to another,
// through the internal version as the server does, or returns nil.
func convertStored(u *unstructured.Unstructured, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	if !kubescheme.Knows(gvk) {
		return nil
	}
	typed, err := kubescheme.Scheme.New(u.GroupVersionKind())
	if err != nil || runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed) != nil {
		return nil
	}
	internal, err := kubescheme.Scheme.ConvertToVersion(typed, gvk.GroupKind().WithVersion(runtime.APIVersionInternal).GroupVersion())
	if err != nil {
		return nil
	}
	return versioned(internal, gvk)
}

// unknownValue replaces, in the objects an observer sees, the values the replay does not know
// (the replay's own uid, clock and generated names).
const unknownValue = "<unknown>"

// masked replaces the values of the unknown fields of root in u.
func masked(u *unstructured.Unstructured, root string, unknowns []vapccel.Unknown) *unstructured.Unstructured {
	if u == nil {
		return nil
	}
	for _, un := range unknowns {
		if un.Path.Root == root && un.ValueOnly && len(un.Path.Steps) > 0 {
			maskPath(u.Object, un.Path.Steps)
		}
	}
	return u
}

func maskPath(v any, steps []string) {
	switch x := v.(type) {
	case map[string]any:
		if len(steps) == 1 {
			if _, ok := x[steps[0]]; ok {
				x[steps[0]] = unknownValue
			} else if steps[0] == vapccel.AnyStep {
				for k := range x {
					x[k] = unknownValue
				}
			}
			return
		}
		if steps[0] == vapccel.AnyStep {
			for _, c := range x {
				maskPath(c, steps[1:])
			}
			return
		}
		maskPath(x[steps[0]], steps[1:])
	case []any:
		if steps[0] != vapccel.AnyStep {
			return
		}
		for i := range x {
			if len(steps) == 1 {
				x[i] = unknownValue
			} else {
				maskPath(x[i], steps[1:])
			}
		}
	}
}
