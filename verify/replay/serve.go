package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
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
	// pluginMisses are the objects the admission plugins read that the View does not know.
	pluginMisses string
	// mutation is what the replayed MutatingAdmissionPolicies (--policies) did, over the
	// chain's passes; mutationInputs are the fields of the admission they ran on that the
	// replay does not know.
	mutation       *verify.Mutation
	mutationInputs []vapccel.Unknown
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

// patchVariants are the content types a PATCH body may have been sent as: a JSON array is a
// JSON patch; an object is a merge patch, a strategic merge patch (built-in kinds only) or,
// with a fieldManager and apiVersion and kind, a server-side apply. A force parameter is valid
// for apply only.
func patchVariants(body []byte, ev *Event) []types.PatchType {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return []types.PatchType{types.JSONPatchType}
	}
	q := ev.Query()
	if q.Has("force") {
		return []types.PatchType{types.ApplyYAMLPatchType}
	}
	out := []types.PatchType{types.MergePatchType, types.StrategicMergePatchType}
	if q.Get("fieldManager") != "" && bytes.Contains(body, []byte(`"apiVersion"`)) && bytes.Contains(body, []byte(`"kind"`)) {
		out = append(out, types.ApplyYAMLPatchType)
	}
	return out
}

// variantName names a patch type for notes.
func variantName(pt types.PatchType) string {
	switch pt {
	case types.JSONPatchType:
		return "json patch"
	case types.MergePatchType:
		return "merge patch"
	case types.StrategicMergePatchType:
		return "strategic merge patch"
	case types.ApplyYAMLPatchType, types.ApplyCBORPatchType:
		return "server-side apply"
	}
	return string(pt)
}

// serve sends the request through the pipeline once per content type it may have had, with
// the worker's admission plugins reading the View, deciding each admission with eval.
func (r *Replayer) serve(ctx context.Context, ev *Event, t target, policies []string, objects apiserver.Objects, eval Evaluator, plugins *apiserver.Plugins, view *stateView, passed bool, mut *mutators) ([]served, error) {
	srv, err := pipelineServer()
	if err != nil {
		return nil, err
	}
	req, ok := serveRequest(ev, t)
	if !ok {
		return nil, fmt.Errorf("the verb %q has no HTTP request", ev.Verb)
	}
	logged := req.Body
	if req.Method == http.MethodPost {
		req.Body = namedBody(ev, req.Body)
	}
	variants := sendVariants(req, ev, t)
	var out []served
	for _, v := range variants {
		s := served{variant: v.name, labels: v.labels}
		req.ContentType, req.Body = string(v.contentType), v.body
		pc := &pluginCluster{v: view, mapper: r.cur().resources.RESTMapper(), passed: passed}
		ex := &apiserver.Exchange{Objects: objects}
		if plugins != nil {
			plugins.SetCluster(pc)
			ex.Plugins = plugins
		}
		wm := newWebhookMutation(ev)
		if wm != nil {
			ex.Mutate = wm.mutate
		}
		if me, ok := eval.(mutatingEvaluator); ok && me.HasMutatingPolicies() {
			ex.MutatingPolicies = func(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
				// What the cluster's other mutating policies, which the same plugin runs in an
				// order no log records, may have changed is not known to these either.
				inputs := append(append(settle(ev, t, a, logged), pc.unknowns()...), mut.unknowns(r.replayedMutation(mutatedBy(t, a, view)))...)
				return r.runMutatingPolicies(ctx, me, &s, a, o, inputs)
			}
		}
		ex.Validate = func(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
			unknowns := append(append(append(settle(ev, t, a, logged), pc.unknowns()...), wm.unknowns()...), mut.unknowns(r.replayedMutation(mutatedBy(t, a, view)))...)
			var dec *verify.Decision
			var err error
			if n := len(s.calls); n > 0 && r.marksUnread(policies) && sameButDeletionMarks(s.calls[n-1].attrs, a) {
				// The store validates an immediate deletion again once it has marked the
				// object deleted: no policy reads the marks, so the decision is the same.
				dec = s.calls[n-1].dec
			} else if dec, err = eval.EvaluateAttributes(ctx, a, o); err != nil {
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
		s.resp, s.unknown, s.pluginMisses = resp, resp.Unknown, pc.missed()
		out = append(out, s)
	}
	return out, nil
}

// jobObjects are the stored objects a request's pipeline reads: the object it is about, as the
// State held it at the request's point of the log, and for a deletecollection the objects it
// lists.
type jobObjects struct {
	gr              schema.GroupResource
	namespace, name string
	prior           prior
	// absent says the object does not exist for sure (its resource is complete in the State).
	absent bool
	// standIn, when set, is the JSON the object is read as when the State does not know it.
	standIn []byte
	// list is what a deletecollection lists; listUnknown says why it is not known.
	list        [][]byte
	listUnknown string
	// version and uid, when set, are the resourceVersion and uid the object is read with (see
	// evaluateServed).
	version, uid string
	// body, when set, is an update's body whose values the object is read with where the
	// State does not know them (see overlayUnknown).
	body []byte
}

func (o *jobObjects) Get(gr schema.GroupResource, namespace, name string) ([]byte, bool, error) {
	if !sameStorage(gr, o.gr) || namespace != o.namespace || name != o.name {
		if sameStorage(gr, o.gr) && o.list != nil {
			for _, raw := range o.list {
				if h, err := auditlog.DecodeHeader(raw); err == nil && h.GetNamespace() == namespace && h.GetName() == name {
					return raw, true, nil
				}
			}
		}
		return nil, false, fmt.Errorf("the replay does not read it for this request")
	}
	switch {
	case o.prior.found && o.prior.raw != nil && (o.version != "" || o.uid != "" || o.body != nil):
		raw := o.prior.raw
		if o.body != nil {
			raw = overlayUnknown(raw, o.body, o.prior.unknowns)
		}
		return withMeta(raw, o.version, o.uid), true, nil
	case o.prior.found && o.prior.raw != nil:
		return o.prior.raw, true, nil
	case o.standIn != nil:
		return o.standIn, true, nil
	case o.prior.found:
		return nil, false, errors.New(shortReason(o.prior.unknown))
	case o.absent:
		return nil, false, nil
	case !o.prior.kept:
		return nil, false, errors.New("the replay does not keep " + gr.String())
	}
	return nil, false, errors.New("not in the snapshot or earlier in the log")
}

func (o *jobObjects) List(gr schema.GroupResource, namespace string) ([][]byte, error) {
	if !sameStorage(gr, o.gr) || o.listUnknown != "" || (o.list == nil && namespace != o.namespace) {
		why := o.listUnknown
		if why == "" {
			why = "the replay does not list them for this request"
		}
		return nil, errors.New(why)
	}
	return o.list, nil
}

// describeServed says what a served request did, for notes and reasons.
func describeServed(s served) string {
	var b strings.Builder
	if s.variant != "" {
		b.WriteString("as a " + s.variant + ": ")
	}
	switch {
	case s.err != nil:
		b.WriteString("the evaluator failed: " + s.err.Error())
	case len(s.calls) == 0 && s.resp.Code >= 300:
		fmt.Fprintf(&b, "refused before validating admission (%d", s.resp.Code)
		if s.resp.Status != nil {
			fmt.Fprintf(&b, " %s: %s", s.resp.Status.Reason, firstLine(s.resp.Status.Message))
		}
		b.WriteString(")")
	case len(s.calls) == 0:
		fmt.Fprintf(&b, "completed without validating admission (%d)", s.resp.Code)
	default:
		var ds []string
		for _, c := range s.calls {
			ds = append(ds, c.dec.Summary())
		}
		b.WriteString(strings.Join(ds, "; "))
	}
	return b.String()
}

// sameServed says whether two served variants lead to the same outcome: the same changes of
// the replayed mutating policies, then the same admissions with the same decisions, or the
// same refusal before admission.
func sameServed(a, b served) bool { return servedDiff(a, b) == "" }

// servedDiff names what of the outcome of b differs from a's (see sameServed), for people:
// empty when nothing does.
func servedDiff(a, b served) string {
	switch {
	case a.err != nil || b.err != nil:
		return "whether they evaluate"
	case len(a.calls) != len(b.calls):
		return "whether they reach validating admission"
	case !sameMutation(a.mutation, b.mutation):
		return "what the MutatingAdmissionPolicies changed"
	case len(a.calls) == 0 && a.resp.Code != b.resp.Code:
		return "the response"
	}
	for i := range a.calls {
		if d := outcomeDiff(a.calls[i].dec, b.calls[i].dec); d != "" {
			return d
		}
	}
	return ""
}

// sendVariants are the ways the request may have been sent: a patch as each content type its
// body is valid for, a Job create with its labels and without (see jobLabelVariants), or as
// it is.
func sendVariants(req apiserver.Request, ev *Event, t target) []sendVariant {
	switch {
	case req.Method == http.MethodPatch:
		var variants []sendVariant
		for _, ct := range patchVariants(req.Body, ev) {
			variants = append(variants, sendVariant{contentType: ct, body: req.Body, name: variantName(ct)})
		}
		return variants
	case req.Method == http.MethodPost && t.gvr.GroupResource() == jobsResource && t.sub == "":
		return jobLabelVariants(req.Body, ev)
	}
	return []sendVariant{{body: req.Body}}
}

// sendVariant is one way a request may have been sent: a patch's content type, or a Job's
// labels.
type sendVariant struct {
	contentType types.PatchType
	body        []byte
	name        string
	labels      bool
}

var jobsResource = schema.GroupResource{Group: "batch", Resource: "jobs"}

// jobLabelVariants are the bodies a Job create whose logged request has the labels of its pod
// template may have been sent with. The log records a request object after its defaults, and
// batch/v1 SetDefaults_Job gives a Job without labels its template's labels map itself: the
// job strategy then adds the job-name and controller-uid labels to the template, and so to the
// Job's own labels too, which it does not when the client sent the labels. The Job the log
// returns for a create the server completed says which: otherwise both are sent.
func jobLabelVariants(body []byte, ev *Event) []sendVariant {
	logged := []sendVariant{{body: body}}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if d.Decode(&m) != nil {
		return logged
	}
	labels, found, _ := unstructured.NestedFieldNoCopy(m, "metadata", "labels")
	tmpl, _, _ := unstructured.NestedFieldNoCopy(m, "spec", "template", "metadata", "labels")
	if lm, ok := labels.(map[string]any); !found || !ok || len(lm) == 0 || !reflect.DeepEqual(labels, tmpl) {
		return logged
	}
	unstructured.RemoveNestedField(m, "metadata", "labels")
	alt, err := json.Marshal(m)
	if err != nil {
		return logged
	}
	if resp := decodeObject(ev.ResponseObject); resp != nil && ev.Code() >= 200 && ev.Code() < 300 && resp.GetKind() == "Job" {
		if _, defaulted := resp.GetLabels()["batch.kubernetes.io/controller-uid"]; defaulted {
			return []sendVariant{{body: alt}}
		}
		return logged
	}
	return []sendVariant{
		{body: body, name: "Job sent with its labels", labels: true},
		{body: alt, name: "Job sent without labels (defaulted to its template's)", labels: true},
	}
}

// pickServed chooses among the variants of a request what the replay can say: the variants
// the log rules out dropped (a request the server completed, or a policy refused, cannot have
// been refused before admission; one the server refused before admission with the message the
// log records was), then the outcome when all that remain agree. When they do
// not, and recorded is not nil (checking against the log), those whose audit annotations the
// log does not record are dropped too. ok is false when they disagree; reason then says why.
func pickServed(ev *Event, vs []served, recorded func(served) bool) (s served, ok bool, why string, reason Reason) {
	if len(vs) == 1 {
		return vs[0], true, "", ""
	}
	// The server ran admission when it completed the request or a policy refused it.
	ran := ev.Code() >= 200 && ev.Code() < 300 || vapDenied.MatchString(ev.Message())
	var kept []served
	for _, v := range vs {
		if ran && len(v.calls) == 0 && v.resp.Code >= 300 && v.err == nil && v.unknown == nil {
			continue
		}
		kept = append(kept, v)
	}
	if len(kept) == 0 {
		kept = vs
	}
	if !ran && ev.Code() >= 300 {
		// A refusal before admission the log records word for word (a merge patch replacing
		// a list the strategy forbids to change, where a strategic merge patch merges into
		// it) is the variant that was sent: the others ran admission, or refused otherwise.
		var same []served
		for _, v := range kept {
			if len(v.calls) == 0 && v.err == nil && v.unknown == nil && int32(v.resp.Code) == ev.Code() && v.resp.Status != nil && v.resp.Status.Message == ev.Message() {
				same = append(same, v)
			}
		}
		if len(same) > 0 {
			kept = same
		}
	}
	byAnnotations := false
	if recorded != nil && slices.ContainsFunc(kept[1:], func(v served) bool { return !sameServed(kept[0], v) }) {
		var agree []served
		for _, v := range kept {
			if recorded(v) {
				agree = append(agree, v)
			}
		}
		if len(agree) > 0 && len(agree) < len(kept) {
			kept, byAnnotations = agree, true
		}
	}
	for _, v := range kept[1:] {
		if diff := servedDiff(kept[0], v); diff != "" {
			var ds []string
			for _, k := range kept {
				ds = append(ds, describeServed(k))
			}
			sort.Strings(ds)
			if kept[0].labels {
				return served{}, false, "the audit log records a Job's create after its defaults, and whether its labels were sent or are its pod template's (which the job strategy then labels with the job's name and uid) leads to different outcomes (" + diff + "): " + strings.Join(ds, "; "), ReasonDefaultedLabels
			}
			return served{}, false, "the audit log does not record the patch's content type, and the types it may have been sent as lead to different outcomes (" + diff + "): " + strings.Join(ds, "; "), ReasonPatchType
		}
	}
	if len(kept) < len(vs) || len(kept) > 1 {
		var names []string
		for _, k := range kept {
			names = append(names, k.variant)
		}
		switch {
		case byAnnotations && kept[0].labels:
			why = "the audit annotations the log records are those of the " + strings.Join(names, " and the ")
		case byAnnotations:
			why = "the audit annotations the log records are those of the patch applied as a " + strings.Join(names, " or a ")
		case kept[0].labels:
			why = "the outcome is the same for the " + strings.Join(names, " and the ")
		default:
			why = "the patch is applied alike as a " + strings.Join(names, " or a ")
		}
	}
	return kept[0], true, why, ""
}

// usesPipeline says whether a request is decided through kube-apiserver's request pipeline:
// a request of a built-in resource the pipeline serves, whose admission object the log does
// not hold as the response of a successful create or update, at a level that logs its body
// (a connect has none).
func (r *Replayer) usesPipeline(ev *Event, t target) bool {
	if t.reqKind.Empty() || ev.Verb == "" {
		return false
	}
	srv, err := pipelineServer()
	if err != nil || !srv.Serves(t.gvr, t.sub) {
		return false
	}
	if t.op == admission.Connect {
		return true
	}
	if ev.Level == auditlog.LevelMetadata || ev.Level == auditlog.LevelNone || ev.Level == "" {
		return false
	}
	if (t.op == admission.Create || t.op == admission.Update) && ev.Code() >= 200 && ev.Code() < 300 && !defaultedOnRead[t.gvr.GroupResource()] {
		if resp := decodeKind(ev.ResponseObject); resp != nil && sameKind(resp, t.reqKind) {
			return false // the stored result is the admission object (see rebuild)
		}
	}
	return true
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

// defaultedOnRead are the resources whose stored object the server's defaulting changes when it
// reads it back, because a defaulter reads a field the registry strategy set after the request
// was decoded: the response of a write is then not the object admission saw. A Job gets the
// labels of its pod template (batch/v1 SetDefaults_Job), which the job strategy sets.
var defaultedOnRead = map[schema.GroupResource]bool{
	{Group: "batch", Resource: "jobs"}: true,
}

// evaluateServed decides a request through kube-apiserver's request pipeline, on a worker.
func (r *Replayer) evaluateServed(ctx context.Context, w evalWorker, j *job) {
	ev, t := j.ev, j.t
	gr := t.gvr.GroupResource()
	objs := &jobObjects{gr: gr, namespace: t.namespace, name: t.name, prior: j.prior,
		absent: !j.prior.found && j.prior.complete, list: j.list, listUnknown: j.listUnknown}
	if j.rec.vapRan || j.rec.byWebhook {
		// The log shows the request got past the storage's check of the resourceVersion and
		// uid it asked for: they are those stored, where the replay does not know them.
		objs.version, objs.uid = fromRequest(ev, j.prior.unknowns)
		objs.body = updateBody(ev, j.prior.unknowns)
	}
	if objs.absent && (t.op == admission.Update || t.op == admission.Delete) && ev.Code() >= 200 && ev.Code() < 300 {
		// The server wrote an object the State holds to be absent: the State missed its
		// creation (an audit policy that does not log it), and does not know it.
		objs.absent = false
	}
	var oldUnknown undecided
	if t.op == admission.Delete && t.sub == "" && ev.Verb == "delete" && !(j.prior.found && j.prior.raw != nil) && !objs.absent {
		// The old object is not known: a stand-in holding its kind and name takes its place,
		// and the decision stands only if it does not depend on it (see requestOnly).
		switch {
		case !j.prior.kept:
			oldUnknown = because(ReasonOldObjectUnknown, gr.String()+" is not kept")
		case j.prior.found:
			oldUnknown = because(ReasonOldObjectUnknown, fmt.Sprintf("%s %s: %s", gr, joinKey(t.namespace, t.name), shortReason(j.prior.unknown)))
		default:
			oldUnknown = because(ReasonOldObjectUnknown, fmt.Sprintf("%s %s is not in the snapshot or earlier in the log", gr, joinKey(t.namespace, t.name)))
		}
		objs.standIn = standInJSON(t, ev.RequestObject)
	}

	b := rebuilt{req: verify.Request{Operation: t.op, Resource: t.gvr, SubResource: t.sub, Kind: t.reqKind,
		Namespace: t.namespace, Name: t.name, UserInfo: ev.Requester(), DryRun: isDryRun(ev)}}
	b.objectSource, b.oldObjectSource = pipelineSources(ev, t, j.prior)
	out := newRecord(j.d, ev, t, j.rec, b)
	j.out = out
	if u := j.undecidable(w); u.is() {
		out.indeterminate(u)
		return
	}

	// The first pass: with the worker's evaluator over the request's View. Whether admission
	// ran at all, and where the pipeline could not follow the server, is decided here.
	first, err := r.serveOnce(ctx, w, j, objs, w.eval, j.view, true)
	if err != nil {
		var ind *indeterminateError
		if errors.As(err, &ind) {
			out.indeterminate(ind.why)
		} else {
			out.indeterminate(because(ReasonRequest, err.Error()))
		}
		return
	}
	if first.why != "" {
		out.Notes = append(out.Notes, first.why)
	}
	s := first.s
	var priorUnknowns []vapccel.Unknown
	if len(j.prior.unknowns) > 0 && (t.op == admission.Update || t.op == admission.Delete) {
		priorUnknowns = rooted(knownFrom(j.prior.unknowns, objs.version, objs.uid), t.op == admission.Update)
	}
	// What the export the event was read from lost of the request (exportloss.go): unknown
	// to each admission of every pass, and to the mutating policies.
	priorUnknowns = append(priorUnknowns, exportUnknowns(ev)...)
	// withUnknowns adds to the admissions of a pass what the replay does not know of them:
	// what the MutatingAdmissionPolicies changed when that is not known (returned), the
	// stored object's unknown fields, those of each object a deletecollection listed, and
	// with a stand-in for the old object, all of it and the delete options derived from it.
	withUnknowns := func(s *served) (mutationUnknown string) {
		mutationUnknown = r.mutationUnknown(s.mutation, append(slices.Clip(s.mutationInputs), priorUnknowns...), j.policies)
		for i := range s.calls {
			c := &s.calls[i]
			if mutationUnknown != "" {
				c.unknowns = append(c.unknowns, mutationUnknownField(mutationUnknown))
			}
			c.unknowns = append(c.unknowns, priorUnknowns...)
			if len(j.listUnknowns) > 0 {
				// A deletecollection's admissions are named by the oldObject only.
				if m, err := meta.Accessor(c.attrs.GetOldObject()); err == nil {
					c.unknowns = append(c.unknowns, rooted(j.listUnknowns[objectKey{m.GetNamespace(), m.GetName()}], false)...)
				}
			}
			if oldUnknown.is() {
				c.unknowns = append(c.unknowns,
					vapccel.Unknown{Path: vapccel.FieldPath{Root: "oldObject"}, Why: oldUnknown.String()},
					vapccel.Unknown{Path: vapccel.FieldPath{Root: "request", Steps: []string{"options"}}, Why: oldUnknown.String()})
			}
		}
		return mutationUnknown
	}
	mutationUnknown := withUnknowns(&s)
	refusedByMutation := len(s.calls) == 0 && s.mutation != nil && !s.mutation.Allowed
	j.mutationRan = s.mutation.Acted()
	if j.mutationRan && j.schemaRefreshing != "" {
		out.indeterminate(because(ReasonMutationUnknown, j.schemaRefreshing))
		return
	}
	switch {
	case s.mutation == nil, mutationUnknown == "":
	case refusedByMutation:
		out.indeterminate(because(ReasonMutationUnknown, "a MutatingAdmissionPolicy refused the request, and "+mutationUnknown))
		return
	default:
		// What the policies changed is not known: neither is the object validation saw.
		out.Notes = append(out.Notes, "what the MutatingAdmissionPolicies changed is not known: "+mutationUnknown)
	}
	if len(s.calls) == 0 && !refusedByMutation {
		code := ev.Code()
		switch {
		case s.unknown != nil && (!sameStorage(s.unknown.Resource, gr) || s.unknown.Namespace != t.namespace || s.unknown.Name != t.name):
			out.indeterminate(because(ReasonStateUnknown, "the server read "+s.unknown.Error()))
		case s.unknown != nil:
			out.indeterminate(because(ReasonOldObjectUnknown, fmt.Sprintf("%s %s: %v", gr, joinKey(t.namespace, t.name), s.unknown.Err)))
		case s.pluginMisses != "" && code >= 200 && code < 300:
			out.indeterminate(because(ReasonPluginInputUnknown, "an admission plugin read "+s.pluginMisses))
		case code >= 200 && code < 300 && s.resp.Code < 300:
			j.skip = SkipPendingDeletion
		case code >= 200 && code < 300:
			out.indeterminate(because(ReasonRebuild, "kube-apiserver completed the request, but sent through its pipeline over the state the replay knows it is "+describeServed(s)))
		case j.rec.vapRan && j.rec.policy != "":
			// The log shows a policy refused it: the state the replay knows is not the server's.
			out.indeterminate(because(ReasonRebuild, "a policy refused the request in kube-apiserver, but sent through its pipeline over the state the replay knows it is "+describeServed(s)))
		default:
			j.skip, j.skipNote = SkipBeforeAdmission, j.rec.note
			if j.skipNote == "" && s.resp.Status != nil {
				j.skipNote = string(s.resp.Status.Reason)
			}
		}
		return
	}
	if j.rec.skip == SkipBeforeAdmission || (j.rec.outcome == RecordedUnknown && ev.Code() >= 300) {
		// The log's refusal is not a policy's, and the server's pipeline runs validating
		// admission before it: the request failed after admission admitted it.
		j.rec = recording{outcome: RecordedAdmit, vapRan: true, note: "failed after validating admission: " + reasonOr(reasonOf(ev), httpCode(ev.Code()))}
		out.Recorded, out.RecordedNote, out.recordedByVAP = RecordedAdmit, j.rec.note, false
	}
	if len(s.calls) > 0 {
		if name := s.calls[0].attrs.GetName(); out.Name == "" && ev.Verb != "deletecollection" && !unknownName(s.calls[0].unknowns) {
			out.Name = name
		}
	}
	var notes []string
	if r.observed() && len(s.calls) > 0 {
		// What an observer (the HTML report) shows of the request: its objects in the
		// version of the request.
		out.Object = masked(versioned(s.calls[0].attrs.GetObject(), t.reqKind), "object", s.calls[0].unknowns)
		if !oldUnknown.is() {
			out.OldObject = masked(versioned(s.calls[0].attrs.GetOldObject(), t.reqKind), "oldObject", s.calls[0].unknowns)
		}
	}
	if oldUnknown.is() {
		// The stand-in's fields are all unknown (withUnknowns), and so are the delete options
		// the store derives from the stored object (a pod's grace period): the decision stands
		// only if none is read. Whether the server ran admission at all is not known either (a
		// graceful deletion may have been pending): only an admission can stand.
		if dec := combineCalls(ev.Verb, s.calls); !dec.Allowed {
			out.indeterminate(oldUnknown)
			return
		}
	}
	if why := r.dependsOnUnknown(j.policies, s.calls); why.is() {
		if oldUnknown.is() {
			why = oldUnknown
		}
		out.indeterminate(why)
		return
	}
	if oldUnknown.is() {
		notes = append(notes, "decided without what is not known ("+oldUnknown.detail+"): no policy of the request reads it, or a matchCondition that does not read it skipped the policy")
		out.OldObjectSource = SourceUnknown
	}
	cached := true
	decide := func(eval Evaluator, view *stateView) (*verify.Decision, error) {
		if cached && eval == w.eval && view == j.view {
			cached = false
			return servedDecision(ev.Verb, first.s), nil
		}
		again, err := r.serveOnce(ctx, w, j, objs, eval, view, false)
		if err != nil {
			return nil, err
		}
		// Known as the first pass's decision is known, or not decided.
		if mu := withUnknowns(&again.s); mu != "" && again.s.mutation != nil && !again.s.mutation.Allowed {
			return nil, &indeterminateError{because(ReasonMutationUnknown, "a MutatingAdmissionPolicy refused the request, and "+mu)}
		}
		if why := r.dependsOnUnknown(j.policies, again.s.calls); why.is() {
			return nil, &indeterminateError{why}
		}
		if dec := servedDecision(ev.Verb, again.s); dec != nil {
			return dec, nil
		}
		return nil, &indeterminateError{because(ReasonRebuild, describeServed(again.s))}
	}
	r.conclude(w, j, out, undecided{}, decide, notes...)
	r.firstAttempt(j, out, j.dec, func(p prior) (*verify.Decision, error) { return r.decideServedOn(ctx, w, j, p) })
	if mutationUnknown == "" && s.mutation != nil && out.Decision != DecisionIndeterminate {
		out.Mutations = s.mutation.Changes
	}
	if r.check && out.Decision == DecisionAdmit && len(out.Mutations) > 0 {
		if diffs, checked := checkMutated(ev, t, s.resp, out.Mutations, j.mutators); checked {
			out.Disagreements = append(slices.Clip(out.Disagreements), diffs...)
			if out.Disagreements == nil {
				out.Disagreements = []string{}
			}
		}
	}
}

// resultKey is a verify.Result by value, to give each result of a request's admissions once.
type resultKey struct {
	policy, binding, paramNamespace, paramName, result, message, reason, matchCondition string
	actions, annotations                                                                string
	expression                                                                          int
	param, paramNotFound                                                                bool
}

func keyOf(r verify.Result) resultKey {
	k := resultKey{policy: r.Policy, binding: r.Binding, result: r.Result, message: r.Message, reason: string(r.Reason),
		matchCondition: r.MatchCondition, paramNotFound: r.ParamNotFound, expression: -1}
	if r.Param != nil {
		k.param, k.paramNamespace, k.paramName = true, r.Param.Namespace, r.Param.Name
	}
	if r.ExpressionIndex != nil {
		k.expression = *r.ExpressionIndex
	}
	for _, a := range r.Actions {
		k.actions += string(a) + ","
	}
	if len(r.AuditAnnotations) > 0 {
		keys := slices.Sorted(maps.Keys(r.AuditAnnotations))
		var b strings.Builder
		for _, key := range keys {
			b.WriteString(key + "\x00" + r.AuditAnnotations[key] + "\x00")
		}
		k.annotations = b.String()
	}
	return k
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
func (r *Replayer) serveOnce(ctx context.Context, w evalWorker, j *job, objs *jobObjects, eval Evaluator, view *stateView, byAnnotations bool) (servedOnce, error) {
	w.store.v = view
	defer func() { w.store.v = nil }()
	vs, err := r.serve(ctx, j.ev, j.t, j.policies, objs, eval, w.plugins, view, j.rec.vapRan || j.rec.byWebhook, j.mutators)
	if err != nil {
		return servedOnce{}, err
	}
	var recorded func(served) bool
	if byAnnotations && r.check && (j.rec.vapRan || j.ev.Annotations[ValidationFailureAnnotation] != "") {
		// The log records what the loaded policies published: a variant whose annotations
		// differ from it is not what the server ran.
		recorded = func(v served) bool {
			dec := servedDecision(j.ev.Verb, v)
			return dec != nil && len(checkAnnotations(j.ev, dec.AuditAnnotations, dec, r.loadedPolicies)) == 0
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
	out.Results, out.Warnings, out.AuditAnnotations, out.Notes, out.Authorizer = nil, nil, nil, nil, nil
	seen := map[string]bool{}
	once := func(kind, s string) bool {
		k := kind + "\x00" + s
		if seen[k] {
			return false
		}
		seen[k] = true
		return true
	}
	results := map[resultKey]bool{}
	for _, c := range calls {
		for _, res := range c.dec.Results {
			if k := keyOf(res); !results[k] {
				results[k] = true
				out.Results = append(out.Results, res)
			}
		}
		for _, w := range c.dec.Warnings {
			if once("warning", w) {
				out.Warnings = append(out.Warnings, w)
			}
		}
		out.AuditAnnotations = addAnnotations(out.AuditAnnotations, c.dec.AuditAnnotations)
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
	if verb == "deletecollection" {
		out.Notes = append(out.Notes, fmt.Sprintf("deletecollection: %d objects admitted one by one, as the store deletes them", len(calls)))
	}
	return &out
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
func pipelineSources(ev *Event, t target, p prior) (object, old string) {
	switch {
	case t.op == admission.Connect:
		object = SourcePipeline + " (the options of the request URI)"
	case ev.Verb == "patch" || ev.Verb == "apply":
		object = SourcePipeline + " (the patch applied to the stored object)"
	case t.op == admission.Create || t.op == admission.Update:
		object = SourcePipeline + " (the request object)"
	}
	if (t.op == admission.Update || t.op == admission.Delete) && p.found && p.raw != nil {
		old = SourceState + " (" + p.source + ")"
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
func (r *Replayer) dependsOnUnknown(policies []string, calls []admitted) undecided {
	for _, c := range calls {
		if len(c.unknowns) == 0 {
			continue
		}
		for _, p := range policies {
			reads, ok := r.reads[p]
			if !ok {
				continue
			}
			read, u, dep := reads.DependsOn(c.unknowns)
			if !dep || r.skippedIndependently(p, c.dec, c.unknowns) {
				continue
			}
			reason := ReasonUnknownField
			if lostByExport(u) {
				reason = ReasonExportLost // exportloss.go
			}
			return because(reason, fmt.Sprintf("policy %s reads %s, and %s is not known: %s", p, read.Path, u.Path, u.Why))
		}
	}
	return undecided{}
}

// skippedIndependently says whether every evaluation of the policy in the decision was skipped
// by a matchCondition that reads none of the unknown fields, and nothing that selects it reads
// them either.
func (r *Replayer) skippedIndependently(policy string, dec *verify.Decision, unknowns []vapccel.Unknown) bool {
	if _, _, dep := r.selects[policy].DependsOn(unknowns); dep {
		return false
	}
	seen := false
	for _, res := range dec.Results {
		if res.Policy != policy {
			continue
		}
		seen = true
		cond, ok := r.conditions[policy][res.MatchCondition]
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
func (r *Replayer) marksUnread(policies []string) bool {
	for _, p := range policies {
		reads, ok := r.reads[p]
		if !ok {
			return false
		}
		if _, _, dep := reads.DependsOn(deletionMarks); dep {
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

// replayWrite follows, in the State, what a successful write did to its object when the log
// does not show the result: a write logged at level Request, a pod's eviction (the pod marked
// deleted with its DisruptionTarget condition, or deleted at once) and its binding (its node,
// the binding's and the node's topology labels, the PodScheduled condition). The ordered stage
// sends the request through the pipeline again, with the built-in admission plugins and the
// recorded webhook patches, over the object as the State holds it, and keeps what the
// storage wrote. What the server generated or read from its clock and storage, and what a
// plugin set from an object the replay does not know, are not known; so is what was not known
// of the object before. A write the replay cannot follow is forgotten, and says why.
func (r *Replayer) replayWrite(ctx context.Context, ev *Event, t target, why, src string) {
	gr := t.gvr.GroupResource()
	what := describe(t.gvr, t.sub)
	forget := func(reason string) {
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, why+": "+reason)
	}
	p := r.state.prior(gr, t.namespace, t.name)
	create := t.op == admission.Create && t.sub == ""
	if !create && (!p.found || p.raw == nil) {
		forget("the object was not known before")
		return
	}

	srv, err := pipelineServer()
	if err != nil {
		forget(err.Error())
		return
	}
	req, ok := serveRequest(ev, t)
	if !ok {
		forget("the request is not one the pipeline takes")
		return
	}
	if r.orderedPlugins == nil {
		if r.orderedPlugins, err = apiserver.NewPlugins(r.admissionPlugins); err != nil {
			forget(err.Error())
			return
		}
	}
	objs := &jobObjects{gr: gr, namespace: t.namespace, name: t.name, prior: p}
	if create {
		// The log shows the create succeeded: there was no such object.
		objs.prior, objs.absent = prior{kept: p.kept}, true
	} else {
		// The log shows the write succeeded: it asked for the stored resourceVersion and
		// uid, if any.
		objs.version, objs.uid = fromRequest(ev, p.unknowns)
		objs.body = updateBody(ev, p.unknowns)
	}
	logged := req.Body
	if req.Method == http.MethodPost {
		req.Body = namedBody(ev, req.Body)
	}
	variants := sendVariants(req, ev, t)
	type result struct {
		deleted  bool
		obj      *unstructured.Unstructured
		unknowns []vapccel.Unknown
	}
	var results []result
	var failures []string
	for _, v := range variants {
		req.ContentType, req.Body = string(v.contentType), v.body
		// The log shows the request succeeded: it got past the plugins.
		pc := &pluginCluster{v: r.state.view(false), mapper: r.cur().resources.RESTMapper(), passed: true}
		ex := &apiserver.Exchange{Objects: objs, Plugins: r.orderedPlugins}
		wm := newWebhookMutation(ev)
		if wm != nil {
			ex.Mutate = wm.mutate
		}
		// What the storage writes is the object validating admission saw (plus its
		// resourceVersion) when it is of the resource's own kind: settle puts the server's
		// clock back in it and says what is not known of it.
		var settled []vapccel.Unknown
		sameKind, mutated := false, ""
		view := r.state.view(false)
		ex.Validate = func(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
			if why := r.mutators.mayMutate(mutatedBy(t, a, view)); why != "" {
				mutated = why
			}
			if a.GetKind().GroupKind() == t.mainKind.GroupKind() {
				sameKind = true
				for _, u := range settle(ev, t, a, logged) {
					if u.Path.Root == "object" {
						settled = append(settled, u)
					}
				}
			}
			return nil
		}
		r.orderedPlugins.SetCluster(pc)
		resp, err := srv.Do(ctx, req, ex)
		r.orderedPlugins.SetCluster(nil)
		name := v.name
		switch {
		case err != nil:
			failures = append(failures, name+": "+err.Error())
			continue
		case resp.Unknown != nil:
			failures = append(failures, name+": the server read "+resp.Unknown.Error())
			continue
		case resp.Code >= 300:
			failures = append(failures, name+": replayed, the request fails: "+describeStatus(resp))
			continue
		case wm != nil && wm.unknown != "":
			forget(wm.unknown)
			return
		case mutated != "":
			forget(mutated)
			return
		}
		var last *apiserver.Write
		for i := range resp.Writes {
			if w := &resp.Writes[i]; sameStorage(w.Resource, gr) && w.Namespace == t.namespace && w.Name == t.name {
				last = w
			}
		}
		switch {
		case last == nil:
			// The request left the object as it was (a pod being deleted already).
			if !create {
				results = append(results, result{obj: nil})
			}
			continue
		case last.Object == nil:
			results = append(results, result{deleted: true})
			continue
		}
		u := versioned(last.Object, t.mainKind)
		if u == nil {
			failures = append(failures, name+": the written object does not convert")
			continue
		}
		var unknowns []vapccel.Unknown
		if scale := decodeObject(ev.ResponseObject); derivesScale(t) && scale != nil && scale.GetResourceVersion() != "" {
			// A Scale carries the resourceVersion of the object it scaled.
			u.SetResourceVersion(scale.GetResourceVersion())
		} else {
			unknowns = append(unknowns, vapccel.Unknown{Path: objectPath("metadata", "resourceVersion"), ValueOnly: true,
				Why: "the server's storage when " + what + " wrote the object, which the log does not show"})
		}
		if gr == podsGR && (t.op == admission.Delete || t.sub == "eviction") {
			unknowns = append(unknowns, shortenedGrace(u, p.raw, p.unknowns, ev, t)...)
		}
		switch second, ok := serverSecond(ev); {
		case sameKind && t.op != admission.Delete:
			// Validating admission saw a copy of what the storage wrote: settle's clock is
			// put in the written object too.
			unknowns = append(unknowns, settled...)
			if ok {
				setClock(u, p.raw, second)
				if create {
					u.SetCreationTimestamp(second)
				}
			}
		case ok:
			// The clock read the second the log holds: the replay's own clock's readings are
			// put back to it.
			setClock(u, p.raw, second)
		default:
			why := "the server's clock when " + what + " wrote the object, which the log does not hold to the second"
			for _, steps := range [][]string{{"metadata", "deletionTimestamp"},
				{"metadata", "managedFields", vapccel.AnyStep, "time"}, {"status", "conditions", vapccel.AnyStep, "lastTransitionTime"}} {
				unknowns = append(unknowns, vapccel.Unknown{Path: objectPath(steps...), ValueOnly: true, Why: why})
			}
		}
		unknowns = append(unknowns, pc.unknowns()...)
		if !create {
			// What was not known of the object before is not known after.
			for _, pu := range knownFrom(p.unknowns, objs.version, objs.uid) {
				if !isMeta(pu, "resourceVersion") {
					unknowns = append(unknowns, pu)
				}
			}
		}
		results = append(results, result{obj: u, unknowns: unknowns})
	}
	if len(results) == 0 {
		if u, err := auditlog.DecodeObject(p.unmarked); err == nil && p.unmarked != nil {
			// The write succeeded, which it does not on the version a refused DELETE may have
			// marked deleted: that DELETE left the object as it was.
			_ = r.state.Put(gr, u, p.source+" (not marked deleted: the write at "+src+" succeeded)")
			r.replayWrite(ctx, ev, t, why, src)
			return
		}
		forget(strings.Join(failures, "; "))
		return
	}
	first := results[0]
	ways := "the log does not record the patch's content type, and the types it may have been sent as"
	if len(variants) > 0 && variants[0].labels {
		ways = "the log records a Job's create after its defaults, and whether its labels were sent or are its pod template's, the two ways it may have been sent,"
	}
	for _, o := range results[1:] {
		if o.deleted != first.deleted || (o.obj == nil) != (first.obj == nil) {
			forget(ways + " write different objects")
			return
		}
		if o.obj == nil {
			continue
		}
		// The fields the ways write alike are known; the others are not.
		first.unknowns = append(first.unknowns, differing(first.obj.Object, o.obj.Object, nil, ways+" write it differently")...)
	}
	switch {
	case first.deleted:
		r.state.Delete(gr, t.mainKind, t.namespace, t.name)
	case first.obj != nil:
		_ = r.state.putPartly(gr, first.obj, first.unknowns, src+" ("+what+", replayed: "+why+")")
	}
}

// describeStatus is a response's status for a reason.
func describeStatus(resp *apiserver.Response) string {
	if resp.Status == nil {
		return fmt.Sprintf("%d", resp.Code)
	}
	return fmt.Sprintf("%d %s: %s", resp.Code, resp.Status.Reason, firstLine(resp.Status.Message))
}

// isMeta says whether an unknown is the stored object's metadata field (resourceVersion, uid).
func isMeta(u vapccel.Unknown, field string) bool {
	return len(u.Path.Steps) == 2 && u.Path.Steps[0] == "metadata" && u.Path.Steps[1] == field
}

// unknownMeta says whether the stored object's metadata field is among the unknowns.
func unknownMeta(unknowns []vapccel.Unknown, field string) bool {
	return slices.ContainsFunc(unknowns, func(u vapccel.Unknown) bool { return isMeta(u, field) })
}

// requestMeta is the resourceVersion and uid a request asked for: its body's, or a delete's
// preconditions.
func requestMeta(ev *Event) (version, uid string) {
	var o struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
			UID             string `json:"uid"`
		} `json:"metadata"`
		Preconditions *struct {
			ResourceVersion *string `json:"resourceVersion"`
			UID             *string `json:"uid"`
		} `json:"preconditions"`
	}
	if !hasBody(ev.RequestObject) || json.Unmarshal(ev.RequestObject, &o) != nil {
		return "", ""
	}
	version, uid = o.Metadata.ResourceVersion, o.Metadata.UID
	if p := o.Preconditions; p != nil {
		if p.ResourceVersion != nil {
			version = *p.ResourceVersion
		}
		if p.UID != nil {
			uid = *p.UID
		}
	}
	return version, uid
}

// fromRequest are the resourceVersion and uid of a stored object the replay does not know
// (unknowns) that a request the storage let through asked for.
func fromRequest(ev *Event, unknowns []vapccel.Unknown) (version, uid string) {
	unknownVersion, unknownUID := unknownMeta(unknowns, "resourceVersion"), unknownMeta(unknowns, "uid")
	if !unknownVersion && !unknownUID {
		return "", ""
	}
	version, uid = requestMeta(ev)
	if !unknownVersion {
		version = ""
	}
	if !unknownUID {
		uid = ""
	}
	return version, uid
}

// knownFrom drops the resourceVersion and uid from unknowns when a request gave them.
func knownFrom(unknowns []vapccel.Unknown, version, uid string) []vapccel.Unknown {
	if version == "" && uid == "" {
		return unknowns
	}
	return slices.DeleteFunc(slices.Clone(unknowns), func(u vapccel.Unknown) bool {
		return version != "" && isMeta(u, "resourceVersion") || uid != "" && isMeta(u, "uid")
	})
}

// withMeta is a stored object's JSON with another resourceVersion and uid (when not empty).
func withMeta(raw []byte, version, uid string) []byte {
	u, err := auditlog.DecodeObject(raw)
	if err != nil {
		return raw
	}
	if version != "" {
		u.SetResourceVersion(version)
	}
	if uid != "" {
		u.SetUID(types.UID(uid))
	}
	out, err := u.MarshalJSON()
	if err != nil {
		return raw
	}
	return out
}

// shortenedGrace puts back what kube-apiserver's store made of a pod's deletion when the request
// shortened the grace period of a deletion already pending: rest.BeforeDelete moves the
// deletionTimestamp back by the old grace period and forward by the new one, unless that is
// before the server's clock, in which case the timestamp is the clock and the grace period one
// second (or zero). The replay's pipeline reads its own clock, long after the log's: it always
// takes the second way. The server's clock lies between the request's receipt and completion;
// when the new timestamp lies between them too, which way it went is not known (unknowns).
func shortenedGrace(u *unstructured.Unstructured, before []byte, beforeUnknowns []vapccel.Unknown, ev *Event, t target) []vapccel.Unknown {
	prev, _ := auditlog.DecodeMetadata(before)
	if prev == nil || prev.GetDeletionTimestamp() == nil || u.GetDeletionTimestamp() == nil {
		return nil
	}
	g0 := prev.GetDeletionGracePeriodSeconds()
	if g0 == nil || *g0 == 0 {
		return nil
	}
	var opts map[string]any
	if t.sub == "eviction" {
		if body := decodeObject(ev.RequestObject); body != nil {
			opts, _ = body.Object["deleteOptions"].(map[string]any)
		}
	} else if o, err := deleteOptions(ev.RequestObject, ev.Query()); err == nil {
		opts = o.Object
	}
	period, ok := intValue(opts["gracePeriodSeconds"])
	if !ok {
		return nil // pending: the deletion is left as it is
	}
	if period < 0 {
		period = 1
	}
	// The deletion it shortens, when the State does not know it: whether it is shorter
	// (the grace period), and where it moved to (the timestamp).
	unknownPrev := func(field string) []vapccel.Unknown {
		for _, un := range beforeUnknowns {
			if fieldUnder(un.Path.Steps, "metadata", field) {
				why := "the deletion it shortened, which is not known: " + un.Why
				return []vapccel.Unknown{
					{Path: objectPath("metadata", "deletionTimestamp"), ValueOnly: true, Why: why},
					{Path: objectPath("metadata", "deletionGracePeriodSeconds"), ValueOnly: true, Why: why},
				}
			}
		}
		return nil
	}
	if unknown := unknownPrev("deletionGracePeriodSeconds"); unknown != nil {
		return unknown
	}
	if period >= *g0 {
		return nil
	}
	if unknown := unknownPrev("deletionTimestamp"); unknown != nil {
		return unknown
	}
	moved := prev.GetDeletionTimestamp().Add(-time.Duration(*g0) * time.Second).Add(time.Duration(period) * time.Second)
	received, done := ev.Received(), auditlog.ParseTime(ev.StageTimestamp)
	switch {
	case received.IsZero() || done.IsZero():
	case !moved.Before(done):
		// After the server's clock: the timestamp moved, the grace period is the new one.
		ts := metav1.NewTime(moved)
		u.SetDeletionTimestamp(&ts)
		u.SetDeletionGracePeriodSeconds(&period)
		return nil
	case moved.Before(received):
		// Before it: the server's clock, and one second (or zero).
		if period != 0 {
			period = 1
		}
		u.SetDeletionGracePeriodSeconds(&period)
		if second, ok := serverSecond(ev); ok {
			u.SetDeletionTimestamp(&second)
			return nil
		}
		return []vapccel.Unknown{{Path: objectPath("metadata", "deletionTimestamp"), ValueOnly: true,
			Why: "the server's clock when the shortened deletion was before it, which the log does not hold to the second"}}
	}
	why := fmt.Sprintf("whether the shortened deletion (at %s) was before kube-apiserver's clock, which read between %s and %s", moved.UTC().Format(time.RFC3339), received.UTC().Format(time.RFC3339Nano), done.UTC().Format(time.RFC3339Nano))
	return []vapccel.Unknown{
		{Path: objectPath("metadata", "deletionTimestamp"), ValueOnly: true, Why: why},
		{Path: objectPath("metadata", "deletionGracePeriodSeconds"), ValueOnly: true, Why: why},
	}
}

// setClock puts the server's clock (second) where the replay's pipeline read its own while it
// changed the stored object before (raw): the deletion timestamp (the clock plus the grace
// period), and the times of the managers and conditions it wrote.
func setClock(u *unstructured.Unstructured, before []byte, second metav1.Time) {
	prev, _ := auditlog.DecodeMetadata(before, "conditions")
	if ts := u.GetDeletionTimestamp(); ts != nil && (prev == nil || prev.GetDeletionTimestamp() == nil) {
		t := second
		if g := u.GetDeletionGracePeriodSeconds(); g != nil {
			t = metav1.NewTime(second.Add(time.Duration(*g) * time.Second))
		}
		u.SetDeletionTimestamp(&t)
	}
	stamp := second.UTC().Format(time.RFC3339)
	prevTimes := map[string]bool{}
	if prev != nil {
		for _, m := range prev.GetManagedFields() {
			if m.Time != nil {
				prevTimes[m.Manager+"\x00"+m.Time.UTC().Format(time.RFC3339)] = true
			}
		}
	}
	mfs := u.GetManagedFields()
	for i := range mfs {
		if mfs[i].Time != nil && !prevTimes[mfs[i].Manager+"\x00"+mfs[i].Time.UTC().Format(time.RFC3339)] {
			mfs[i].Time = &second
		}
	}
	sortManagedFields(mfs)
	u.SetManagedFields(mfs)
	prevConds := map[string]string{}
	if prev != nil {
		cs, _, _ := unstructured.NestedSlice(prev.Object, "status", "conditions")
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				t, _ := m["type"].(string)
				lt, _ := m["lastTransitionTime"].(string)
				prevConds[t] = lt
			}
		}
	}
	if cs, ok, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); ok {
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				t, _ := m["type"].(string)
				if lt, had := prevConds[t]; !had || lt != m["lastTransitionTime"] {
					if _, set := m["lastTransitionTime"]; set {
						m["lastTransitionTime"] = stamp
					}
				}
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, cs, "status", "conditions")
	}
}

// differing are the fields two versions of an object hold different values in, as unknowns
// (a list that differs is unknown as a whole).
func differing(a, b any, steps []string, why string) []vapccel.Unknown {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if equality.Semantic.DeepEqual(a, b) {
			return nil
		}
		return []vapccel.Unknown{{Path: objectPath(slices.Clone(steps)...), Why: why}}
	}
	var out []vapccel.Unknown
	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		out = append(out, differing(am[k], bm[k], append(steps, k), why)...)
	}
	return out
}

// updateBody is the body of an update (the whole object, as the client read it) when the State
// does not know some fields of the stored object, for overlayUnknown.
func updateBody(ev *Event, unknowns []vapccel.Unknown) []byte {
	if ev.Verb != "update" || len(unknowns) == 0 || !hasBody(ev.RequestObject) {
		return nil
	}
	return ev.RequestObject
}

// overlayUnknown is a stored object's JSON with the values an update's body holds where the
// State does not know them (the random suffix of a pod's token volume, the clock): the client
// sent back what it read, and the log shows the server let the update through its validation,
// which holds immutable fields to the stored values. The fields stay unknown in the request's
// oldObject; this only lets the pipeline validate the update as the server did.
func overlayUnknown(raw, body []byte, unknowns []vapccel.Unknown) []byte {
	var stored, sent map[string]any
	if json.Unmarshal(raw, &stored) != nil || json.Unmarshal(body, &sent) != nil {
		return raw
	}
	for _, u := range unknowns {
		if u.Path.Root == "object" && len(u.Path.Steps) > 0 && u.Path.Steps[0] != "metadata" {
			overlayPath(stored, sent, u.Path.Steps)
		}
	}
	out, err := json.Marshal(stored)
	if err != nil {
		return raw
	}
	return out
}

// overlayPath copies the value at steps from sent into stored, element by element of lists of
// the same length (AnyStep).
func overlayPath(stored, sent any, steps []string) {
	switch s := stored.(type) {
	case map[string]any:
		b, ok := sent.(map[string]any)
		if !ok || steps[0] == vapccel.AnyStep {
			return
		}
		v, has := b[steps[0]]
		if !has {
			return
		}
		if len(steps) == 1 {
			s[steps[0]] = v
			return
		}
		if _, ok := s[steps[0]]; ok {
			overlayPath(s[steps[0]], v, steps[1:])
		}
	case []any:
		b, ok := sent.([]any)
		if !ok || steps[0] != vapccel.AnyStep || len(b) != len(s) {
			return
		}
		for i := range s {
			if len(steps) == 1 {
				s[i] = b[i]
			} else {
				overlayPath(s[i], b[i], steps[1:])
			}
		}
	}
}
