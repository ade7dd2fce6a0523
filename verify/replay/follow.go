package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

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
	forget := func(reason string) {
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, why+": "+reason)
	}
	p := r.state.Prior(gr, t.namespace, t.name)
	first, reason, unmarked := r.followWrite(ctx, ev, t, p)
	switch {
	case unmarked != nil:
		// The write succeeded, which it does not on the version a refused DELETE may have
		// marked deleted: that DELETE left the object as it was.
		_ = r.state.Put(gr, unmarked, p.Source+" (not marked deleted: the write at "+src+" succeeded)")
		r.replayWrite(ctx, ev, t, why, src)
	case reason != "":
		forget(reason)
	case first.deleted:
		r.state.Delete(gr, t.mainKind, t.namespace, t.name)
	case first.obj == nil:
		r.noopSets(ev, t, p, src, why)
	case first.obj != nil:
		if unknowns, ok := r.commutes(ctx, ev, t, first); ok {
			// Whichever of it and the write before it was committed last: the same.
			first.unknowns = unknowns
			r.state.Commuted()
		} else if unknowns, ok := r.concurrentFields(ev, t, first); ok {
			// Committed in an order not known among several: what they write is not known.
			first.unknowns = unknowns
			r.state.Commuted()
		}
		source := src + " (" + describe(t.gvr, t.sub) + ", replayed: " + why + ")"
		at := false // stored at the resourceVersion the server answered with
		if derivesScale(t) {
			scale := auditlog.DecodeAnyObject(ev.ResponseObject)
			if old, _ := p.Decode(); old != nil && scaleAnswered(t.scale, old, first.obj, scale) {
				source += ", with the spec.replicas of the Scale the server answered, which the cluster's admission changed"
			}
			// The Scale carries the resourceVersion the server stored the object at
			// (writtenUnknowns): the writes after it are ordered against it.
			at = scale != nil && scale.GetResourceVersion() != "" && scale.GetResourceVersion() == first.obj.GetResourceVersion()
		}
		if at {
			_ = r.state.PutPartlyAt(gr, first.obj, first.unknowns, source)
		} else {
			_ = r.state.PutPartly(gr, first.obj, first.unknowns, source)
		}
		r.noteFollowed(ev, t, src, auditlog.ParseTime(ev.StageTimestamp))
	}
}

// followWrite is what a successful write (ev) whose result the log does not show stored, sent
// through the ordered stage's pipeline over p, the object as the State holds it: the object
// written (or deleted, or left as it was), or why the replay cannot follow it; or, where the
// write fails on p, a version a refused DELETE may have marked deleted, the unmarked version
// it succeeds on (the caller puts it back and follows the write again).
func (r *Replayer) followWrite(ctx context.Context, ev *Event, t target, p state.Prior) (first writeResult, reason string, unmarked *unstructured.Unstructured) {
	gr := t.gvr.GroupResource()
	w := writeReplay{ev: ev, t: t, p: p, create: t.op == admission.Create && t.sub == "", what: describe(t.gvr, t.sub)}
	if !w.create && (!p.Found || p.Raw == nil) {
		return writeResult{}, "the object was not known before", nil
	}
	srv, err := pipelineServer()
	if err != nil {
		return writeResult{}, err.Error(), nil
	}
	req, ok := serveRequest(ev, t)
	if !ok {
		return writeResult{}, "the request is not one the pipeline takes", nil
	}
	if r.orderedPlugins == nil {
		if r.orderedPlugins, err = apiserver.NewPlugins(r.cfg.admissionPlugins); err != nil {
			return writeResult{}, err.Error(), nil
		}
	}
	w.objs = &jobObjects{gr: gr, namespace: t.namespace, name: t.name, prior: p}
	if w.create {
		// The log shows the create succeeded: there was no such object.
		w.objs.prior, w.objs.absent = state.Prior{Kept: p.Kept}, true
	} else {
		// The log shows the write succeeded: it asked for the stored resourceVersion and
		// uid, if any.
		w.objs.version, w.objs.uid = fromRequest(ev, p.Unknowns)
		w.objs.body = updateBody(ev, p.Unknowns)
	}
	w.logged = req.Body
	if req.Method == http.MethodPost {
		req.Body, _ = namedBody(ev, req.Body)
	}
	variants := sendVariants(req, ev, t)
	var results []writeResult
	var failures []string
	for _, v := range variants {
		req.ContentType, req.Body = string(v.contentType), v.body
		res, failure, unfollowable := r.sendWrite(ctx, srv, req, w)
		switch {
		case unfollowable != "":
			return writeResult{}, unfollowable, nil
		case failure != "" && v.name == "": // the one way the request was sent
			failures = append(failures, failure)
		case failure != "":
			failures = append(failures, v.name+": "+failure)
		case res != nil:
			results = append(results, *res)
		}
	}
	if len(results) == 0 {
		if u, err := auditlog.DecodeObject(p.Unmarked); err == nil && p.Unmarked != nil {
			return writeResult{}, "", u
		}
		return writeResult{}, strings.Join(failures, "; "), nil
	}
	// The ways whose object the log's response shows (a PartialObjectMetadata's finalizers).
	results = matchingResponse(ev, results, func(w writeResult) runtime.Object {
		if w.obj == nil {
			return nil
		}
		return w.obj
	})
	first, unfollowable := agreeingWrites(results, variants)
	if unfollowable != "" {
		return writeResult{}, unfollowable, nil
	}
	return first, "", nil
}

// writeReplay is a write the ordered stage sends through the pipeline again (replayWrite):
// the request, the object as the State holds it (p), and what the pipeline reads of it.
type writeReplay struct {
	ev     *Event
	t      target
	p      state.Prior
	objs   *jobObjects
	create bool
	// logged is the request's body as the log holds it; what describes the write.
	logged []byte
	what   string
}

// writeResult is what one way of sending a write left of its object: deleted, the object
// written and what is not known of it, or left as it was (neither).
type writeResult struct {
	deleted  bool
	obj      *unstructured.Unstructured
	unknowns []vapccel.Unknown
}

// sendWrite sends one way of a write through the ordered stage's pipeline. It returns what
// the write left of its object (nil when a create left none), or why that way failed, or why
// the write cannot be followed at all.
func (r *Replayer) sendWrite(ctx context.Context, srv *apiserver.Server, req apiserver.Request, w writeReplay) (res *writeResult, failure, unfollowable string) {
	ev, t := w.ev, w.t
	gr := t.gvr.GroupResource()
	// The log shows the request succeeded: it got past the plugins.
	pc := &pluginCluster{v: r.state.View(false), mapper: r.cur().resources.RESTMapper(), passed: true}
	pc.setAt(ev)
	ex := &apiserver.Exchange{Objects: w.objs, Plugins: r.orderedPlugins}
	wm := newWebhookMutation(ev, mayRetry(t, w.p))
	if wm != nil {
		ex.Mutate = wm.mutate
	}
	// What the storage writes is the object validating admission saw (plus its
	// resourceVersion) when it is of the resource's own kind: settle puts the server's
	// clock back in it and says what is not known of it.
	var settled []vapccel.Unknown
	sameKind, mutated, scaled := false, "", ""
	view := r.state.View(false)
	cluster := r.mutatorsAt(ev.Received())
	// The replayed MutatingAdmissionPolicies the cluster ran as given change the object as
	// they did on the server (followmutating.go).
	var fm *followMutation
	if len(r.set.mutatingPolicies) > 0 {
		ex.MutatingPolicies = func(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
			if fm == nil {
				me, run, err := r.followingMutators(cluster, mutatedBy(t, a, view))
				fm = &followMutation{me: me, run: run, err: err, view: r.state.View(true), received: ev.Received()}
				fm.view.Track = true
				fm.view.Reread = r.paramRereads(slices.Sorted(maps.Keys(run)), ev)
			}
			if fm.me == nil {
				return nil
			}
			r.following.store.v = fm.view
			defer func() { r.following.store.v = nil }()
			inputs := followInputs(ev, t, a, w.logged, w.p) // settles the object's times
			var before runtime.Object
			if recent, _ := r.state.RecentTyped(ev.Received()); len(recent) > 0 && a.GetObject() != nil {
				before = a.GetObject().DeepCopyObject()
			}
			err := fm.admit(ctx, a, o, inputs)
			r.followLagged(ctx, fm, a, o, before, err)
			return err
		}
	}
	ex.Validate = func(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
		req := mutatedBy(t, a, view)
		req.following = r.set.replayedMAPs
		if fm != nil {
			req.replayed = fm.run
		}
		if why := cluster.mayMutate(req); why != "" {
			mutated = why
		}
		if a.GetKind().GroupKind() == t.mainKind.GroupKind() {
			sameKind = true
			for _, u := range settle(ev, t, a, w.logged) {
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
	resp, mutatedUnknown, err := fm.scrubbed(t, resp, r.followUnknown(fm), err)
	switch {
	case err != nil:
		return nil, err.Error(), ""
	case resp.Unknown != nil:
		return nil, "the server read " + resp.Unknown.Error(), ""
	case resp.Code >= 300:
		return nil, "replayed, the request fails: " + describeStatus(resp), ""
	case answeredScale(ev, t):
		// Whatever the cluster's admission changed of the Scale, the object takes only its
		// spec.replicas, which the answered Scale gives (replayWrite, scaleAnswered).
	case wm != nil && wm.unknown != "":
		return nil, "", wm.unknown
	case mutatedUnknown != "":
		return nil, "", mutatedUnknown
	case mutated != "" && derivesScale(t):
		// Whatever a cluster's mutating policy changed of the Scale, the object takes only its
		// replicas (ScaleREST's update): those are not known, nor whether the object changed
		// at all (its generation, resourceVersion and managedFields).
		scaled = mutated
	case mutated != "":
		return nil, "", mutated
	}
	return w.stored(resp, scaled, sameKind, settled, pc.unknowns(gr))
}

// stored is what the write stored of its object, by the writes of the pipeline's response:
// the object and what is not known of it (the times settle gave, what the plugins set, what a
// mutating policy's change of the Scale leaves unknown: scaled), deleted, left as it was, or
// why it is not known.
func (w writeReplay) stored(resp *apiserver.Response, scaled string, sameKind bool, settled, plugins []vapccel.Unknown) (res *writeResult, failure, unfollowable string) {
	t := w.t
	gr := t.gvr.GroupResource()
	var last *apiserver.Write
	for i := range resp.Writes {
		if wr := &resp.Writes[i]; state.SameStorage(wr.Resource, gr) && wr.Namespace == t.namespace && wr.Name == t.name {
			last = wr
		}
	}
	switch {
	case last == nil && w.create:
		return nil, "", ""
	case last == nil && scaled != "":
		old, _ := w.p.Decode()
		if old == nil {
			return nil, "", scaled
		}
		return &writeResult{obj: old, unknowns: scaledUnknowns(t, scaled)}, "", ""
	case last == nil:
		// The request left the object as it was (a pod being deleted already), unless the
		// server's response says it wrote it (restated).
		return w.restated()
	case last.Object == nil:
		return &writeResult{deleted: true}, "", ""
	}
	u := versioned(last.Object, t.mainKind)
	if u == nil {
		return nil, "the written object does not convert", ""
	}
	unknowns := w.writtenUnknowns(u, sameKind, settled, plugins)
	if scaled != "" {
		unknowns = append(unknowns, scaledUnknowns(t, scaled)...)
	}
	return &writeResult{obj: u, unknowns: unknowns}, "", ""
}

// scaledUnknowns are the fields of an object written through its scale subresource that a
// cluster's mutating policy (why) may have changed through the Scale: its replicas, and
// whether it was written (its generation, resourceVersion and managedFields).
func scaledUnknowns(t target, why string) []vapccel.Unknown {
	return []vapccel.Unknown{
		{Path: objectPath(t.scale.specReplicas...), ValueOnly: true, Why: why},
		{Path: objectPath("metadata", "generation"), ValueOnly: true, Why: why},
		{Path: objectPath("metadata", "resourceVersion"), ValueOnly: true, Why: why},
		{Path: objectPath("metadata", "managedFields"), Why: why},
	}
}

// restated is what a write the replay's pipeline left unchanged left of its object when the
// response the log holds (the object, or the Scale of it) has another resourceVersion than the
// State's: the server wrote it all the same. Where the State holds the object without the
// managedFields the field manager tracks (an audit policy's omitManagedFields, a snapshot from
// kubectl get), the manager's entry is what the server wrote, which the replay's field manager
// does not track on an object without them; otherwise what differs is not known.
func (w writeReplay) restated() (*writeResult, string, string) {
	resp := auditlog.DecodeAnyObject(w.ev.ResponseObject)
	old, _ := w.p.Decode()
	if resp == nil && old != nil && w.p.FromSnapshot && len(old.GetManagedFields()) == 0 && !isDryRun(w.ev) {
		// Without the response, whether the server wrote the snapshot's object all the same,
		// for its manager's managedFields entry (a kubectl scale to the replicas it had,
		// random parity seed m:980), is not known: its resourceVersion, nor the entry.
		why := "whether the server wrote the object for its manager's managedFields entry, which the snapshot's copy does not hold, and the log does not show the response"
		unknowns := append([]vapccel.Unknown{{Path: objectPath("metadata", "resourceVersion"), ValueOnly: true, Why: why},
			{Path: objectPath("metadata", "managedFields"), Why: why}}, w.carried()...)
		return &writeResult{obj: old, unknowns: unknowns}, "", ""
	}
	// The State's resourceVersion of the object: the log's, or the one a version the replay
	// rebuilt holds where it knows it (a Scale's answer gave it); 0 when not known.
	held := w.p.RV
	if held == 0 && old != nil && !unknownMeta(w.p.Unknowns, "resourceVersion") {
		held = state.ResourceVersion(old.GetResourceVersion())
	}
	if resp == nil || old == nil || held == 0 && w.p.RV == 0 && old.GetResourceVersion() == "" || resp.GetResourceVersion() == "" ||
		state.ResourceVersion(resp.GetResourceVersion()) == held || !(derivesScale(w.t) || sameKind(resp, w.t.mainKind)) {
		return &writeResult{}, "", ""
	}
	if apiserver.DefaultedOnRead(w.t.gvr.GroupResource()) && len(w.p.Unknowns) == 0 && len(old.GetManagedFields()) > 0 && !isApply(w.ev) {
		// The State holds the object as the server reads it, which its defaulting fills where
		// the stored bytes lack (a status update's body without labels stores an RC without
		// them): the server's update of what it read, the replay's pipeline's, writes it when
		// the bytes differ, the object it read at the new resourceVersion (random parity seed
		// r:1561).
		old.SetResourceVersion(resp.GetResourceVersion())
		return &writeResult{obj: old}, "", ""
	}
	if len(old.GetManagedFields()) > 0 || isApply(w.ev) {
		// What else it wrote is not known: a server-side apply removes what the managers it
		// read the managedFields of owned alone.
		return nil, "", "the server wrote the object (resourceVersion " + resp.GetResourceVersion() + ") where its pipeline, replayed, changes nothing"
	}
	old.SetResourceVersion(resp.GetResourceVersion())
	why := "the managedFields entry of the manager the server wrote, which the log omits"
	unknowns := append([]vapccel.Unknown{{Path: objectPath("metadata", "managedFields"), Why: why}}, w.carried()...)
	return &writeResult{obj: old, unknowns: unknowns}, "", ""
}

// writtenUnknowns puts the server's clock back in the object a replayed write stored (u),
// and returns what is not known of it: what the server generated or read from its clock and
// storage, what the admission plugins set from objects the State does not know (plugins), and
// what was not known of the object before.
func (w writeReplay) writtenUnknowns(u *unstructured.Unstructured, sameKind bool, settled, plugins []vapccel.Unknown) []vapccel.Unknown {
	ev, t, p := w.ev, w.t, w.p
	var unknowns []vapccel.Unknown
	if scale := auditlog.DecodeAnyObject(ev.ResponseObject); derivesScale(t) && scale != nil && scale.GetResourceVersion() != "" {
		// A Scale carries the resourceVersion of the object it scaled.
		u.SetResourceVersion(scale.GetResourceVersion())
	} else {
		unknowns = append(unknowns, vapccel.Unknown{Path: objectPath("metadata", "resourceVersion"), ValueOnly: true,
			Why: "the server's storage when " + w.what + " wrote the object, which the log does not show"})
	}
	if t.gvr.GroupResource() == podsGR && (t.op == admission.Delete || t.sub == "eviction") {
		unknowns = append(unknowns, shortenedGrace(u, p.Raw, p.Unknowns, ev, t)...)
	}
	switch second, ok := serverSecond(ev); {
	case sameKind && t.op != admission.Delete:
		// Validating admission saw a copy of what the storage wrote: settle's clock is
		// put in the written object too.
		unknowns = append(unknowns, settled...)
		if ok {
			setClock(u, p.Raw, w.logged, second)
			if w.create {
				u.SetCreationTimestamp(second)
			}
		}
	case ok:
		// The clock read the second the log holds: the replay's own clock's readings are
		// put back to it.
		setClock(u, p.Raw, w.logged, second)
	default:
		// Where the pipeline read the replay's own clock: the fields the write stamped.
		why := "the server's clock when " + w.what + " wrote the object, which the log does not hold to the second"
		for _, steps := range clockStamped(u, p.Raw, w.logged) {
			unknowns = append(unknowns, vapccel.Unknown{Path: objectPath(steps...), ValueOnly: true, Why: why})
		}
	}
	unknowns = append(unknowns, plugins...)
	if !w.create {
		unknowns = append(unknowns, w.carried()...)
	}
	return unknowns
}

// noopSets follows a write whose replay changed nothing of the State's version p: where it is
// a merge or strategic merge patch that sets fields the State did not know to a value (the
// value the replay's copy held), they hold that value after it whatever they held before
// (helper exW: a param's key patched to the value the replay's copy held stayed unknown to
// every request after it). Its resourceVersion is then not known (the server's copy may have
// differed, and the write stored it). Nothing changes otherwise.
func (r *Replayer) noopSets(ev *Event, t target, p state.Prior, src, why string) {
	patch := mergePatchBody(ev)
	if patch == nil || len(p.Unknowns) == 0 || p.Raw == nil {
		return
	}
	var kept []vapccel.Unknown
	for _, pu := range p.Unknowns {
		if !isMeta(pu, "resourceVersion") && patchSets(patch, pu) {
			continue
		}
		kept = append(kept, pu)
	}
	if len(kept) == len(p.Unknowns) {
		return
	}
	u, _ := p.Decode()
	if u == nil {
		return
	}
	kept = append(kept, vapccel.Unknown{Path: objectPath("metadata", "resourceVersion"), ValueOnly: true,
		Why: "the server's storage when " + describe(t.gvr, t.sub) + " wrote the object, which the log does not show"})
	_ = r.state.PutPartly(t.gvr.GroupResource(), u, kept, src+" ("+describe(t.gvr, t.sub)+", replayed: "+why+"; it set what the State did not know of "+p.Source+")")
	r.noteFollowed(ev, t, src, auditlog.ParseTime(ev.StageTimestamp))
}

// concurrentFields is what a write (first, followed over the State's version) and the writes
// the log records before it that ran concurrently with it (State.ConcurrentWriters) leave
// unknown, whichever order the server committed them in: every field one of them writes, where
// each is a merge patch (its fields known from its body); the rest is as the log's order
// leaves it. ok false otherwise (helper exY: three concurrent patches of a param's key left the
// whole ConfigMap unknown to every request after them).
func (r *Replayer) concurrentFields(ev *Event, t target, first writeResult) ([]vapccel.Unknown, bool) {
	bys, ok := r.state.ConcurrentWriters(t.gvr.GroupResource(), t.namespace, t.name)
	if !ok {
		return nil, false
	}
	paths, ok := mergePatchPaths(ev)
	if !ok {
		return nil, false
	}
	for _, by := range bys {
		other, found := r.followed[by]
		if !found || other.t.namespace != t.namespace || other.t.name != t.name || other.t.gvr.GroupResource() != t.gvr.GroupResource() {
			return nil, false
		}
		more, ok := mergePatchPaths(other.ev)
		if !ok {
			return nil, false
		}
		paths = append(paths, more...)
	}
	why := "the writes at " + strings.Join(bys, ", ") + " and the one after them ran concurrently, and the order the server committed them in is not known: each writes it"
	unknowns := slices.Clone(first.unknowns)
	for _, p := range paths {
		unknowns = append(unknowns, vapccel.Unknown{Path: objectPath(p...), Why: why})
	}
	return unknowns, true
}

// mergePatchPaths are the fields a merge patch's body writes (a strategic merge patch without
// directives writes the same fields): the paths to its values that are not objects, and to its
// empty objects. ok false for any other write.
func mergePatchPaths(ev *Event) ([][]string, bool) {
	patch := mergePatchBody(ev)
	if patch == nil || bytes.Contains(ev.RequestObject, []byte(`"$`)) {
		return nil, false
	}
	var out [][]string
	var walk func(prefix []string, m map[string]any)
	walk = func(prefix []string, m map[string]any) {
		for k, v := range m {
			path := append(slices.Clip(prefix), k)
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walk(path, sub)
				continue
			}
			out = append(out, path)
		}
	}
	walk(nil, patch)
	if len(out) == 0 {
		return nil, false
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return out, true
}

// carried is what was not known of the object before the write, and is not known after: all
// but its resourceVersion, which the write gave it.
func (w writeReplay) carried() []vapccel.Unknown {
	var out []vapccel.Unknown
	patch := w.mergePatch()
	for _, pu := range knownFrom(w.p.Unknowns, w.objs.version, w.objs.uid) {
		if !isMeta(pu, "resourceVersion") && !patchSets(patch, pu) {
			out = append(out, pu)
		}
	}
	return append(out, entriesOrderUnknown(w.p.Unknowns)...)
}

// mergePatch is the body of a patch that is an object (a merge or strategic merge patch, not a
// JSON patch nor a server-side apply), decoded; nil for any other write.
func (w writeReplay) mergePatch() map[string]any {
	if len(w.p.Unknowns) == 0 {
		return nil
	}
	return mergePatchBody(w.ev)
}

// mergePatchBody is the body of a patch sent as a merge or a strategic merge patch (an object:
// not a JSON patch, nor a server-side apply's configuration, which names its kind), decoded;
// nil for any other write.
func mergePatchBody(ev *Event) map[string]any {
	body := bytes.TrimSpace(ev.RequestObject)
	if ev.Verb != "patch" || isApply(ev) || len(body) == 0 || body[0] != '{' {
		return nil
	}
	var patch map[string]any
	if json.Unmarshal(body, &patch) != nil || patch["kind"] != nil {
		return nil
	}
	return patch
}

// patchSets says whether a merge or strategic merge patch sets the unknown field to a value
// (not null, not an object or a list: the same whichever of those it was sent as, and whatever
// the field held): what it holds after the write is known.
func patchSets(patch map[string]any, u vapccel.Unknown) bool {
	if patch == nil || u.Path.Root != "object" || len(u.Path.Steps) == 0 {
		return false
	}
	var v any = patch
	for _, step := range u.Path.Steps {
		m, ok := v.(map[string]any)
		if !ok || step == vapccel.AnyStep {
			return false
		}
		if v, ok = m[step]; !ok {
			return false
		}
	}
	return v != nil && isScalar(v)
}

// isScalar says whether a JSON value is a string, a number or a boolean.
func isScalar(v any) bool {
	switch v.(type) {
	case string, bool, float64, json.Number:
		return true
	}
	return false
}

// agreeingWrites returns what the ways a write may have been sent (variants) left of its
// object, the fields they write alike known and the others not, or why they do not agree.
func agreeingWrites(results []writeResult, variants []sendVariant) (writeResult, string) {
	first := results[0]
	ways := "the log does not record the patch's content type, and the types it may have been sent as"
	if len(variants) > 0 && variants[0].labels {
		ways = "the log records a Job's create after its defaults, and whether its labels were sent or are its pod template's, the two ways it may have been sent,"
	}
	for _, o := range results[1:] {
		if o.deleted != first.deleted || (o.obj == nil) != (first.obj == nil) {
			return first, ways + " write different objects"
		}
		if o.obj == nil {
			continue
		}
		// The fields the ways write alike are known; the others are not.
		first.unknowns = append(first.unknowns, state.Differing(first.obj.Object, o.obj.Object, nil, ways+" write it differently")...)
	}
	return first, ""
}

// describeStatus is a response's status for a reason.
func describeStatus(resp *apiserver.Response) string {
	if resp.Status == nil {
		return fmt.Sprintf("%d", resp.Code)
	}
	return fmt.Sprintf("%d %s: %s", resp.Code, resp.Status.Reason, firstLine(resp.Status.Message))
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
		if body := auditlog.DecodeAnyObject(ev.RequestObject); body != nil {
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
			if state.FieldUnder(un.Path.Steps, "metadata", field) {
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
func setClock(u *unstructured.Unstructured, before, body []byte, second metav1.Time) {
	stampClock(u, before, body, &second)
}

// clockStamped are the fields of the object u where the replay's pipeline read its own clock
// while it changed the stored object before (raw), as setClock finds them, and changes nothing.
func clockStamped(u *unstructured.Unstructured, before, body []byte) [][]string {
	return stampClock(u, before, body, nil)
}

// stampClock is setClock where second is given; it returns the fields it finds stamped:
// the deletion timestamp, the managers' times, the conditions' transition times.
func stampClock(u *unstructured.Unstructured, before, body []byte, second *metav1.Time) (stamped [][]string) {
	prev, _ := auditlog.DecodeMetadata(before, "conditions")
	if ts := u.GetDeletionTimestamp(); ts != nil && (prev == nil || prev.GetDeletionTimestamp() == nil) {
		stamped = append(stamped, []string{"metadata", "deletionTimestamp"})
		if second != nil {
			t := *second
			if g := u.GetDeletionGracePeriodSeconds(); g != nil {
				t = metav1.NewTime(second.Add(time.Duration(*g) * time.Second))
			}
			u.SetDeletionTimestamp(&t)
		}
	}
	prevTimes := map[string]bool{}
	if prev != nil {
		for _, m := range prev.GetManagedFields() {
			if m.Time != nil {
				prevTimes[m.Manager+"\x00"+m.Time.UTC().Format(time.RFC3339)] = true
			}
		}
	}
	mfs := u.GetManagedFields()
	managers := false
	for i := range mfs {
		if mfs[i].Time != nil && !prevTimes[mfs[i].Manager+"\x00"+mfs[i].Time.UTC().Format(time.RFC3339)] && !clientTime(body, *mfs[i].Time) {
			managers = true
			if second != nil {
				mfs[i].Time = second
			}
		}
	}
	if managers {
		stamped = append(stamped, []string{"metadata", "managedFields", vapccel.AnyStep, "time"})
	}
	if second != nil {
		sortManagedFields(mfs)
		u.SetManagedFields(mfs)
	}
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
	conditions := false
	if cs, ok, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); ok {
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				t, _ := m["type"].(string)
				if lt, had := prevConds[t]; !had || lt != m["lastTransitionTime"] {
					if _, set := m["lastTransitionTime"]; set {
						conditions = true
						if second != nil {
							m["lastTransitionTime"] = second.UTC().Format(time.RFC3339)
						}
					}
				}
			}
		}
		if second != nil {
			_ = unstructured.SetNestedSlice(u.Object, cs, "status", "conditions")
		}
	}
	if conditions {
		stamped = append(stamped, []string{"status", "conditions", vapccel.AnyStep, "lastTransitionTime"})
	}
	return stamped
}
