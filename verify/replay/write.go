package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/catalog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// What a successful write the log records did to the State (the follow stage): the object its
// response holds, or what the request pipeline stores when the log does not hold it
// (follow.go: replayWrite), a delete's and a deletecollection's marks, a scale's object, a
// write an export lost the dry run of; and what a CRD's write did to the catalog (crds.go).

// applyWrite applies a successful write to the State, and to the catalog when it is a CRD's.
// j is the request's evaluation, when it has one.
func (r *Replayer) applyWrite(ctx context.Context, d decoded, ev *Event, t target, j *job) {
	done := auditlog.ParseTime(ev.StageTimestamp)
	completed := done
	if completed.IsZero() {
		completed = r.currentLogTime() // when it completed is not known: not long before the next
	}
	r.state.BeginWrite(t.op == admission.Create && t.sub == "", ev.Received(), completed, d.ref().String())
	if ev.Loss.Lost.Has(auditlog.LostStageTime) {
		r.state.ToTheSecond()
	}
	defer r.state.EndWrite()
	code := ev.Code()
	if code >= 400 && ev.Verb == "deletecollection" && !isDryRun(ev) {
		r.failedDeleteCollection(d, ev, t, j)
		return
	}
	if code >= 400 && t.op == admission.Delete && !isDryRun(ev) {
		r.refusedPodDelete(d, ev, t, j)
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
		r.applyMutatorWrite(ev, t, d.ref().String())
	}
	if !r.state.Keeps(gr) {
		return
	}
	r.state.Asked(precondition(ev, t))
	src := d.ref().String()
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
	r.lacksWrites(ev, t, gr, src)
	sw := stateWrite{ev: ev, t: t, gr: gr, src: src, done: done, w: w, matched: j != nil && len(j.policies) > 0}
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

// lacksWrites withdraws the State's knowing resources whole (the log's beginning with the
// cluster's creation, a CRD's create) where a successful write of an object shows it was there
// while the State never saw it: the log lacks writes the server made (another kube-apiserver's
// log of the same cluster, an audit policy that does not log the resource), and the objects
// it does not show may be anywhere.
//
// The object's create may be logged after the write, having run concurrently with it (its
// response completed after the write's: kube-apiserver's own flow-control configuration as it
// starts): a create of it received before the write completed, logged within the lookahead,
// gives back what the State knew whole (State.Restore).
func (r *Replayer) lacksWrites(ev *Event, t target, gr schema.GroupResource, src string) {
	code := ev.Code()
	if l := r.lacking; l != nil {
		switch done := auditlog.ParseTime(ev.StageTimestamp); {
		case (ev.Verb == "create" || code == http.StatusCreated) && l.gr == state.StorageOf(gr) && l.namespace == t.namespace && l.name == t.name &&
			!ev.Received().IsZero() && !ev.Received().After(l.done):
			if r.state.Restore() {
				r.output.sum.Notes = slices.DeleteFunc(r.output.sum.Notes, func(n string) bool { return n == l.note })
			}
			r.lacking = nil
		case !done.IsZero() && done.Sub(l.done) > lookahead:
			r.state.KeepWithdrawn()
			r.lacking = nil
		}
	}
	if t.name == "" || code < 200 || code >= 300 || code == http.StatusCreated || ev.Verb == "create" || ev.Verb == "deletecollection" ||
		!r.state.Complete(gr) || !r.state.NeverSeen(gr, t.namespace, t.name) {
		return
	}
	why := fmt.Sprintf("the log lacks writes the server made: %s %s, which it never showed, was there for the %s at %s (another kube-apiserver's log, or an audit policy that does not log it)", gr, state.JoinKey(t.namespace, t.name), ev.Verb, src)
	note := why + ": no resource is taken as known whole after it; give every kube-apiserver's log"
	if r.lacking != nil {
		r.state.KeepWithdrawn() // two: the log lacks writes
		r.lacking = nil
	} else if done := auditlog.ParseTime(ev.StageTimestamp); !done.IsZero() {
		r.lacking = &lackingWrite{gr: state.StorageOf(gr), namespace: t.namespace, name: t.name, done: done, note: note}
	}
	r.state.Withdraw(why)
	r.output.sum.Notes = append(r.output.sum.Notes, note)
}

// lackingWrite is the write of an object the State never saw that withdrew what it knew whole,
// until the object's create, logged after it, shows it ran concurrently (see lacksWrites).
type lackingWrite struct {
	gr              schema.GroupResource
	namespace, name string
	done            time.Time
	note            string
}

// mayBeDryRun keeps what the State knows of an object after a write whose export lost whether
// it was a dry run (a GKE entry does not carry the query, ?dryRun=All: kubectl diff, an
// --dry-run=server apply), which stores nothing: before is the object as the State held it.
// A dry run answers with the resourceVersion the object has: a write that answered with a
// later one than the version the State knows was stored (etcd's revisions only grow, and the
// log holds the object's writes: one the State does not follow would leave its decisions
// wrong all the same); one that answered with the same and another content was a dry run, and
// the object is as it was. Otherwise the fields the write changed are not known, those it left
// as they were are. An object the State did not know is there after a write that shows it
// (existsAfter), at the version it answered with, all but its identity not known; whether
// one the State did not know otherwise, or one deleted, is there is not known.
func (r *Replayer) mayBeDryRun(sw stateWrite, before state.Prior) {
	gr, t := sw.gr, sw.t
	after := r.state.Prior(gr, t.namespace, t.name)
	why := sw.ev.Loss.Of(auditlog.LostDryRun) + ": whether the write at " + sw.src + " was a dry run, which stores nothing"
	known := before.Found && before.Raw != nil && before.RV != 0
	stored := after.Found && after.Raw != nil && after.RV != 0
	switch {
	case known && stored && after.RV > before.RV:
		return
	case stored && sw.w.isMain && sw.w.resp != nil && answeredPastPrecondition(sw.ev, state.ResourceVersion(sw.w.resp.GetResourceVersion())):
		// Its body asked for the version it read (a controller's update, a patch with a
		// precondition), which a dry run answers with: it answered with another, the one it
		// stored.
		return
	case known && stored && after.RV == before.RV:
		// Answered with the version the State knows: a no-op, or a dry run, this write or the
		// one whose answer the State took as stored (a dry run that read a version whose write
		// the log records later): what their answers differ in is not known.
		bu, err1 := auditlog.DecodeObject(before.Raw)
		var ru *unstructured.Unstructured
		err2 := errNoResponse
		if sw.w.isMain && sw.w.raw != nil {
			ru, err2 = auditlog.DecodeObject(sw.w.raw)
		}
		if err1 != nil || err2 != nil {
			r.state.Forget(gr, t.mainKind, t.namespace, t.name, why)
			return
		}
		diffs := state.Differing(bu.Object, ru.Object, nil, why)
		// At its resourceVersion still: the next write is ordered against it.
		_ = r.state.PutPartlyAt(gr, bu, append(slices.Clip(before.Unknowns), diffs...), before.Source+" (the write at "+sw.src+" answered with its resourceVersion: it or the write that stored it was a dry run)")
		return
	case (!before.Found || before.Raw == nil) && stored && existsAfter(sw.ev, sw.t):
		if au, err := auditlog.DecodeObject(after.Raw); err == nil {
			_ = r.state.PutPartlyAt(gr, au, append(slices.Clip(after.Unknowns), identityOnly(why)), after.Source+" (or, a dry run, another object of that identity and version)")
			return
		}
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, why)
		return
	case !before.Found || before.Raw == nil || !after.Found || after.Raw == nil:
		// Whether the object is there, or as what, is not known.
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, why)
		return
	}
	// Known before but for its resourceVersion (a write before that may have been a dry run
	// too: a node's status patched every few seconds), or stored over it, or a write the
	// export holds without its response (a kubelet's status update at level Request), which
	// the pipeline rebuilt: what the write left as it was is known (a status patch leaves the
	// labels), the rest not.
	bu, err1 := auditlog.DecodeObject(before.Raw)
	au, err2 := auditlog.DecodeObject(after.Raw)
	if err1 != nil || err2 != nil {
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, why)
		return
	}
	// A dry run answers with the resourceVersion the object has, a write that stored with
	// the one it stored: the response's is the stored one's either way. Without a response,
	// it is not known.
	diffs := slices.DeleteFunc(state.Differing(bu.Object, au.Object, nil, why), func(u vapccel.Unknown) bool {
		return stored && slices.Equal(u.Path.Steps, []string{"metadata", "resourceVersion"})
	})
	// A field the write cannot have changed is in its response as the server stores it,
	// whether it was a dry run or not: what was not known of it before is known now.
	var still []vapccel.Unknown
	touches := writeTouches(sw.ev)
	for _, u := range before.Unknowns {
		if touches(u.Path) && !slices.Equal(u.Path.Steps, []string{"metadata", "resourceVersion"}) {
			still = append(still, u)
		}
	}
	if len(diffs) == 0 && len(still) == 0 {
		return
	}
	unknowns := append(append(slices.Clip(after.Unknowns), still...), diffs...)
	if !stored {
		// The entry is the pipeline's rebuild, by this write (its version the pipeline's
		// own, not the server's: not known): what the write may not have done is added to
		// it, no version replaced.
		r.state.AddUnknowns(gr, t.namespace, t.name, unknowns)
		return
	}
	_ = r.state.PutPartlyAt(gr, au, unknowns, after.Source+" (or, a dry run, as it was)")
}

// errNoResponse: the write's event holds no object of its resource as its response.
var errNoResponse = errors.New("no response object")

// existsAfter says whether a successful write whose export lost whether it was a dry run and
// that answered with a resourceVersion shows its object is there after it, dry run or not: a
// write of an object created before the request can have been received found it there, and a
// patch no server-side apply could have sent never creates (the patcher answers NotFound),
// nor does an update of most resources (successMayHaveCreated says none of these); an apply that creates answers a dry run with the
// resourceVersion its body gave (Store.Update keeps the object's when it creates, which
// etcd3's store alone clears, and a dry run does not reach it), so with none where its body
// gives none. One that emptied the finalizers of an object being deleted, which the store
// deletes, the State holds as deleted already.
func existsAfter(ev *Event, t target) bool {
	if ev.Verb != "update" && ev.Verb != "patch" {
		return false
	}
	if !successMayHaveCreated(ev, t) {
		return true
	}
	body := bytes.TrimSpace(ev.RequestObject)
	return ev.Verb == "patch" && hasBody(body) && !bytes.Contains(body, []byte("resourceVersion")) && bytes.IndexByte(body, '\\') < 0
}

// precondition is the resourceVersion a successful write's body gave and the store checked
// (askedVersion), 0 for none: not a write that created its object (201, or where an export
// lost the code and it may have: not a subresource's, which never creates), which
// Store.Update creates before it compares versions.
func precondition(ev *Event, t target) uint64 {
	if ev.Verb != "update" && ev.Verb != "patch" || ev.Code() == http.StatusCreated || ev.Loss.Lost.Has(auditlog.LostCode) && t.sub == "" && successMayHaveCreated(ev, t) {
		return 0
	}
	return askedVersion(ev)
}

// answeredPastPrecondition says whether a successful write's body gave the resourceVersion it
// had to find (askedVersion: an update's object, a patch's or an apply's, a JSON patch's
// test or replace: a precondition the store checks, answering a mismatch with a Conflict)
// and it answered with another, rv. A dry run answers with the object as it would be at the version it read
// (DryRunnableStorage.GuaranteedUpdate runs the update on the current object and writes
// nothing), which is the precondition's: the write was stored.
func answeredPastPrecondition(ev *Event, rv uint64) bool {
	if ev.Verb != "update" && ev.Verb != "patch" {
		return false
	}
	want := askedVersion(ev)
	return want != 0 && rv != 0 && want != rv
}

// identityOnly is what is not known of an object a write showed is there, the State not having
// known it, where the write may have been a dry run: all but what no update changes (its
// name, namespace, uid, creation time, apiVersion and kind) and its resourceVersion, which a
// dry run answers with as the object has it and a stored write as it stored it. Not the
// fields the write left as they were: a mutating webhook or policy may have changed others
// in a dry run's answer.
func identityOnly(why string) vapccel.Unknown {
	return vapccel.Unknown{Path: vapccel.FieldPath{Root: "object"}, Why: why, Known: [][]string{
		{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "namespace"}, {"metadata", "uid"},
		{"metadata", "creationTimestamp"}, {"metadata", "resourceVersion"},
	}}
}

// writeTouches says, for a successful write (ev), whether it may have changed the object's field
// at a path: any for a write but a patch, and for a server-side apply (which removes what its
// manager owned and left out; and for a patch that may have been one, where the export lost the
// query that tells); for a JSON patch, the fields
// under its operations' containers (patchedFields); for a merge patch, its members (and
// metadata's, a strategic merge directive's the list it names); and the metadata the server keeps (resourceVersion, managedFields, generation)
// always. The body is read once, for every field asked about.
func writeTouches(ev *Event) func(vapccel.FieldPath) bool {
	all := func(vapccel.FieldPath) bool { return true }
	body := bytes.TrimSpace(ev.RequestObject)
	if ev.Verb != "patch" || len(body) == 0 {
		return all
	}
	if ev.Loss.Lost.Has(auditlog.LostQuery) && slices.Contains(patchVariants(body, ev), types.ApplyYAMLPatchType) {
		// An export that lost the query (GKE) lost what tells an apply (fieldManager, force),
		// which removes what its manager owned and left out.
		return all
	}
	var touched [][]string
	switch kind, _ := guessPatchKind(body, ev.Query()); kind {
	case patchJSON:
		fields, ok := patchedFields(body)
		if !ok {
			return all
		}
		for _, f := range fields {
			touched = append(touched, f.Steps)
		}
	case patchApply:
		return all
	default:
		var patch map[string]json.RawMessage
		if json.Unmarshal(body, &patch) != nil {
			return all
		}
		for k, v := range patch {
			var meta map[string]json.RawMessage
			switch {
			case strings.HasPrefix(k, "$"):
				return all // a strategic merge patch's directive of the whole object
			case k != "metadata" || json.Unmarshal(v, &meta) != nil:
				touched = append(touched, []string{k})
				continue
			}
			for mk := range meta {
				// A directive names the list it orders or deletes from
				// ($setElementOrder/finalizers); $patch and $retainKeys, all of metadata.
				if strings.HasPrefix(mk, "$") {
					if _, field, ok := strings.Cut(mk, "/"); ok {
						mk = field
					} else {
						mk = ""
					}
				}
				if mk == "" {
					touched = append(touched, []string{"metadata"})
					continue
				}
				touched = append(touched, []string{"metadata", mk})
			}
		}
	}
	return func(path vapccel.FieldPath) bool {
		steps := path.Steps
		if len(steps) == 0 || steps[0] == "metadata" && (len(steps) < 2 || steps[1] == "resourceVersion" || steps[1] == "managedFields" || steps[1] == "generation") {
			return true
		}
		for _, t := range touched {
			n := min(len(t), len(steps))
			if slices.Equal(t[:n], steps[:n]) {
				return true // one holds the other
			}
		}
		return false
	}
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
	// matched says the request matched given policies (its job evaluated them).
	matched bool
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
	case gr == (schema.GroupResource{Resource: "pods"}) && (t.sub == "binding" || t.sub == "eviction") && !levelLogsBody(ev.Level):
		// Its body (the node bound to, the eviction's delete options) is not known.
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, "written through "+describe(t.gvr, t.sub)+" at "+src+" "+atLevel(ev)+": the result is not in the log")
	case gr == (schema.GroupResource{Resource: "pods"}) && (t.sub == "binding" || t.sub == "eviction"):
		r.replayWrite(ctx, ev, t, "written through "+describe(t.gvr, t.sub)+" at "+src, src)
	case gr == serviceAccountsGR && t.sub == "token":
		// A TokenRequest issues a token; the ServiceAccount is not written.
	case derivesScale(t) && r.followsWrite(ev, t):
		// The ScaleREST's write, managedFields included (a manager of the scale
		// subresource), as the pipeline makes it.
		r.replayWrite(ctx, ev, t, "changed through "+describe(t.gvr, t.sub)+" at "+src, src)
	case derivesScale(t) && r.applyScale(ev, t, resp, src):
	case isMain && ev.Verb != "create" && emptiedOfFinalizers(resp, sw.w.raw):
		// The store deletes an object being deleted once an update leaves it without
		// finalizers (Store.Update, shouldDeleteDuringUpdate); the response is the
		// object as it was deleted, at the version the update read
		// (deleteWithoutFinalizers answers with it, not with the deletion's revision).
		r.state.DeleteAt(gr, t.mainKind, t.namespace, t.name, state.ResourceVersion(resp.GetResourceVersion()), false)
	case isMain:
		r.put(sw, resp, src)
	case t.name != "":
		why := "written at " + src + " " + atLevel(ev) + ": the result is not in the log"
		if ev.Level == auditlog.LevelRequestResponse {
			why = "changed through " + describe(t.gvr, t.sub) + " at " + src + ": the result is not in the log"
		}
		if r.followsWrite(ev, t) {
			r.replayWrite(ctx, ev, t, why, src)
			break
		}
		if r.statusWritten(ctx, sw) || r.followCustomCreate(sw, src) || r.followCustomUpdate(sw, src) {
			break
		}
		// The write succeeded: the object is there.
		r.state.ForgetWritten(gr, t.mainKind, t.namespace, t.name, why)
	case t.op == admission.Create:
		// A create leaves every other object as it was, and never takes the name of one that
		// exists: the objects the State knows stay, and it no longer knows them all.
		r.state.Added(gr, t.namespace, "created at "+src+" without a recorded result")
	default:
		r.state.ForgetAll(gr, t.namespace, "created at "+src+" without a recorded result")
	}
}

// applyDelete applies a delete: the object gone, or left marked deleted.
func (r *Replayer) applyDelete(ctx context.Context, sw stateWrite) {
	ev, t, gr, src, resp, isMain := sw.ev, sw.t, sw.gr, sw.src, sw.w.resp, sw.w.isMain
	if t.name != "" && t.sub == "" {
		r.state.NoteDeletion(gr, t.namespace, t.name)
	}
	removedUID := removedByStatus(ev, t)
	switch {
	case isMain && stillExists(resp) && r.markedByAnother(sw, resp):
		// What the other DELETE stored is not known.
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, "marked deleted by another DELETE before the one at "+src+", whose response is the version it first read, marked as it would have marked it")
	case isMain && stillExists(resp):
		r.put(sw, resp, src+" (deletion pending)")
	case isMain:
		r.state.DeleteAt(gr, t.mainKind, t.namespace, t.name, state.ResourceVersion(resp.GetResourceVersion()), true)
	case resp != nil && resp.GetKind() == "Status":
		uid, _, _ := unstructured.NestedString(resp.Object, "details", "uid")
		r.state.DeleteUID(gr, t.mainKind, t.namespace, t.name, uid)
	case resp == nil && removedUID != "" && optionsNotLogged(ev, t):
		// A dry run answers with the Status of the removal too, and the log does not hold
		// the options that say whether it was one (random parity seed c:770).
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, deleteMaybeDryRun(ev, src))
	case resp == nil && removedUID != "":
		// Below level RequestResponse the event's responseStatus is the Status all the same.
		r.state.DeleteUID(gr, t.mainKind, t.namespace, t.name, removedUID)
	default:
		why := "deleted at " + src + " " + atLevel(ev) + ": whether it is gone is not in the log"
		if r.followsWrite(ev, t) {
			r.replayWrite(ctx, ev, t, why, src)
			break
		}
		p := r.state.Prior(gr, t.namespace, t.name)
		if p.Raw == nil && p.IfThere != nil {
			p = *p.IfThere // the deletion found it
		}
		if u, _ := p.Decode(); u != nil && ev.Code() == http.StatusOK {
			if marked, unknowns := markedMaybe(gr, u, p.Unknowns, src); marked != nil {
				r.state.GoneOrMarked(gr, t.mainKind, t.namespace, t.name, why, marked, unknowns, sw.done)
				break
			}
		}
		r.state.Forget(gr, t.mainKind, t.namespace, t.name, why)
	}
}

// removedByStatus is the uid of the object a DELETE of it removed, as the event's
// responseStatus names it at every level (the store answers a DELETE that removes its object
// with a Status of Success whose details name it, one that leaves it marked with the object),
// or "".
func removedByStatus(ev *Event, t target) string {
	st := ev.ResponseStatus
	if ev.Verb != "delete" || t.sub != "" || t.name == "" || st == nil || st.Status != metav1.StatusSuccess || st.Details == nil || st.Details.Name != t.name {
		return ""
	}
	return st.Details.UID
}

// markedByAnother says whether a DELETE answered as the store does when another DELETE marked
// the object first (alreadyDeleting): with the version the State holds, marked otherwise.
func (r *Replayer) markedByAnother(sw stateWrite, resp *unstructured.Unstructured) bool {
	p := r.state.Prior(sw.gr, sw.t.namespace, sw.t.name)
	if p.Raw == nil || p.RV == 0 || state.ResourceVersion(resp.GetResourceVersion()) != p.RV {
		return false
	}
	old, err := auditlog.DecodeObject(p.Raw)
	return err == nil && alreadyDeleting(old, resp)
}

// showsThere says whether the request ev found its object: it succeeded, and it is neither a
// create of the object nor an update or a patch that created it (201).
func showsThere(ev *Event, t target) bool {
	code := ev.Code()
	switch {
	case code < 200 || code >= 300 || ev.Loss.Lost.Has(auditlog.LostCode):
		return false
	case t.sub == "" && t.op == admission.Create:
		return false
	case t.sub == "" && code == http.StatusCreated && (ev.Verb == "update" || ev.Verb == "patch" || ev.Verb == "apply"):
		return false
	}
	return true
}

// markedMaybe is the object u, as the State knew it before the successful DELETE ev (at src)
// whose options the log does not hold, as the DELETE left it if it did not remove it: marked
// deleted (or its grace period shortened), or as it was (a dry run, which its options say),
// with the finalizers its options may have added (orphan, foregroundDeletion), none of which
// the log shows: whether the deletion marks are there at all is not known, and u holds them as
// they were. known is what was not known of u before. Namespaces and CustomResourceDefinitions
// have delete handlers of their own that change more (a namespace's phase, a CRD's
// conditions): none is given.
func markedMaybe(gr schema.GroupResource, u *unstructured.Unstructured, known []vapccel.Unknown, src string) ([]byte, []vapccel.Unknown) {
	if gr == state.NamespacesGR || gr == catalog.CRDs {
		return nil, nil
	}
	why := "what the DELETE at " + src + " left of the object, had it not removed it: its options (a grace period, a dry run, a propagation policy), which the log does not hold, and the server's clock and storage"
	unknowns := append(slices.Clip(known),
		vapccel.Unknown{Path: objectPath("metadata", "deletionTimestamp"), Why: why},
		vapccel.Unknown{Path: objectPath("metadata", "deletionGracePeriodSeconds"), Why: why},
		vapccel.Unknown{Path: objectPath("metadata", "resourceVersion"), ValueOnly: true, Why: why},
		vapccel.Unknown{Path: objectPath("metadata", "generation"), Why: why},
		vapccel.Unknown{Path: objectPath("metadata", "finalizers"), Why: why})
	raw, err := u.MarshalJSON()
	if err != nil {
		return nil, nil
	}
	return raw, unknowns
}

// listedBy is what the deletecollection ev of gr in namespace deleted of the objects the State
// knows, decoded: those its label selector selects, as the store's list read them when the
// request was received. An object the State does not know stays so. why says why it is not
// known: a field selector, which only the resource's own attributes answer (but one that
// names the object alone), list options that page or pin the list, a level that does not log
// its delete options, a selector that does not parse, a request received at a time the log
// does not say, or what the State does not know (state.State.Selected).
func (r *Replayer) listedBy(gr schema.GroupResource, namespace string, ev *Event) (items []any, unknowns map[state.ObjectKey][]vapccel.Unknown, why string) {
	q := ev.Query()
	name, named := namedByFieldSelector(ev)
	switch {
	case exportListUnknown(ev) != "":
		return nil, nil, exportListUnknown(ev) // exportloss.go
	case q.Get("fieldSelector") != "" && !named:
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
	return r.state.Selected(gr, namespace, name, received, sel)
}

// namedByFieldSelector is the name a list request's field selector requires and nothing else,
// which the store lists by reading that object's key alone (registry.Store's ListPredicate,
// MatchesSingle). A selector with other terms is not: which objects they select of the one
// named, only the resource's own attributes answer.
func namedByFieldSelector(ev *Event) (string, bool) {
	fs := ev.Query().Get("fieldSelector")
	if fs == "" {
		return "", false
	}
	sel, err := fields.ParseSelector(fs)
	if err != nil || len(sel.Requirements()) != 1 {
		return "", false
	}
	return sel.RequiresExactMatch("metadata.name")
}

// failedDeleteCollection settles what a deletecollection that failed deleted: the store
// deletes the items it listed one by one, in the order of their keys, and stops at the first
// that fails (an admission's refusal of it, a conflict), answering with that failure; the
// items deleted before it stay deleted (genericregistry.Store.DeleteCollection, with
// kube-apiserver's --delete-collection-workers at its default, 1). When the request's
// evaluation (j) refused it for certain, as the log shows (the code and message), the replay's
// own pipeline reached the same items before the same refusal: those are deleted or marked as
// a deletecollection leaves them, the others left as they were. Otherwise which it deleted the
// log does not say: every object the request selected is not known after it. One the
// authorizer refused deleted nothing.
func (r *Replayer) failedDeleteCollection(d decoded, ev *Event, t target, j *job) {
	gr := t.gvr.GroupResource()
	if ev.Annotations["authorization.k8s.io/decision"] == "forbid" || !r.state.Keeps(gr) {
		return
	}
	src := d.ref().String()
	why := fmt.Sprintf("the deletecollection at %s failed (%d) after deleting some of the objects it listed, maybe this one: the log does not say which", src, ev.Code())
	items, itemUnknowns, unsure := r.listedBy(gr, t.namespace, ev)
	if unsure != "" {
		r.state.ForgetAll(gr, t.namespace, why+"; nor which objects it listed: "+unsure)
		return
	}
	if reached := refusedAsLogged(j, ev); reached != nil && reached.within(items) {
		// What the pipeline's store left of each: removed, or marked deleted (a graceful
		// deletion, finalizers, or the refused item itself, when admission refused the second
		// step of a deletion without a grace period), by the server's clock.
		why := "the server's clock and storage when the deletecollection at " + src + " wrote the object, which the log does not show"
		for k, obj := range reached.left {
			u := versioned(obj, t.mainKind)
			if u == nil {
				r.state.Forget(gr, t.mainKind, k.Namespace, k.Name, why)
				continue
			}
			unknowns := append(slices.Clip(itemUnknowns[k]),
				vapccel.Unknown{Path: objectPath("metadata", "deletionTimestamp"), ValueOnly: true, Why: why},
				vapccel.Unknown{Path: objectPath("metadata", "resourceVersion"), ValueOnly: true, Why: why},
				vapccel.Unknown{Path: objectPath("metadata", "generation"), Why: why})
			_ = r.state.PutPartly(gr, u, unknowns, src+" (deletion pending)")
			// When it completed: a write the log records after it that ran concurrently does
			// not make the object known (State.keptUnknown).
			r.state.MarkDone(gr, k.Namespace, k.Name, src, auditlog.ParseTime(ev.StageTimestamp))
		}
		for k := range reached.keys {
			if _, left := reached.left[k]; !left {
				r.state.Delete(gr, t.mainKind, k.Namespace, k.Name)
			}
		}
		if done := auditlog.ParseTime(ev.StageTimestamp); !done.IsZero() {
			r.state.MarkDone(gr, t.namespace, "", src, done)
		}
		return
	}
	if cause := refusalUnsettled(j); cause != "" {
		why += " (" + cause + ")"
	}
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			u := &unstructured.Unstructured{Object: m}
			r.state.Forget(gr, t.mainKind, u.GetNamespace(), u.GetName(), why)
		}
	}
}

// refusalUnsettled says why the refusal of a failed deletecollection the replay decided as
// likely is not settled: what its alternative needs, and why the replay cannot decide it
// there (the watch cache's older copies its deletions may have read first); "" otherwise.
func refusalUnsettled(j *job) string {
	if j == nil {
		return ""
	}
	<-j.done
	out := j.result.out
	if out == nil || out.Certainty != CertaintyLikely {
		return ""
	}
	for _, a := range out.Alternatives {
		if a.Detail != "" {
			return "its refusal may have been another where " + a.If + ": " + a.Detail
		}
	}
	return ""
}

// reachedItems are the objects a refused DELETE's or deletecollection's pipeline wrote before
// it failed (keys), and of those it left marked deleted, the object its last write stored
// (left).
type reachedItems struct {
	keys    map[state.ObjectKey]bool
	left    map[state.ObjectKey]k8sruntime.Object
	code    int32
	message string
	// decision is the pipeline's decision of the request, whose refusals are every one the
	// item it refused may have been refused with (in another order of the policies).
	decision *verify.Decision
}

// refusedAs says whether the pipeline refused the request with the code and message, or its
// admission of the item it refused may have (another policy, binding or param first): which
// items come before that item does not depend on the order.
func (r *reachedItems) refusedAs(code int32, message string) bool {
	return r.code == code && r.message == message || r.decision != nil && r.decision.Refuses(code, message)
}

// reachedBy is what the pipeline's response resp to the request t wrote, where it decided dec.
func reachedBy(t target, resp *apiserver.Response, dec *verify.Decision) *reachedItems {
	reached := &reachedItems{keys: map[state.ObjectKey]bool{}, left: map[state.ObjectKey]k8sruntime.Object{}, code: int32(resp.Code), decision: dec}
	if resp.Status != nil {
		reached.message = resp.Status.Message
	}
	for _, w := range resp.Writes {
		if state.SameStorage(w.Resource, t.gvr.GroupResource()) {
			k := state.ObjectKey{Namespace: w.Namespace, Name: w.Name}
			reached.keys[k] = true
			if w.Object != nil {
				reached.left[k] = w.Object
			} else {
				delete(reached.left, k)
			}
		}
	}
	return reached
}

// within says whether every object the pipeline reached is among the items the State listed
// for the request: otherwise the pipeline read what the State does not hold.
func (r *reachedItems) within(items []any) bool {
	listed := map[state.ObjectKey]bool{}
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			listed[state.ObjectKey{Namespace: stringAt(m, "metadata", "namespace"), Name: stringAt(m, "metadata", "name")}] = true
		}
	}
	for k := range r.keys {
		if !listed[k] {
			return false
		}
	}
	return true
}

// refusedAsLogged is what the failed deletecollection ev deleted before its refusal, when its
// evaluation j refused it for certain with the log's code and message in a pipeline that
// answered so; nil otherwise. It waits for the evaluation.
func refusedAsLogged(j *job, ev *Event) *reachedItems {
	if j == nil {
		return nil
	}
	<-j.done
	out, reached := j.result.out, j.result.reached
	if out == nil || reached == nil || !reached.refusedAs(ev.Code(), ev.Message()) || out.Decision != DecisionDeny || out.Certainty != CertaintyCertain ||
		out.Code != ev.Code() || ev.Message() == "" || out.Message != ev.Message() || len(out.Disagreements) > 0 || !j.reachedAlike(reached, ev) {
		return nil
	}
	j.result.reachedApplied = true
	return reached
}

// oneState says whether the job was evaluated on the one state the log's order gives: no
// informer may have lagged a write to params or namespaces, no paramKind was being resolved,
// and no other version of its object may have been read (a watch cache's copy, a write that
// ran concurrently). In another state, the same refusal may have come from another item of a
// deletecollection, or another step of a DELETE, than the pipeline's on this one.
func (j *job) oneState() bool {
	return len(j.lag.typedWrites) == 0 && len(j.lag.typedLost) == 0 && len(j.lag.aheadUnknown) == 0 && !j.resolving.is() && !j.unsettled.is() && !j.early.why.is() &&
		!j.prior.OtherVersionRead() && !j.revise.revised
}

// reachedAlike says whether the pipeline wrote what reached holds in every state kube-apiserver
// may have been in when it answered as ev shows: the one the log's order gives, or every state
// the informers may have held was decided, and in each that answered so, the pipeline wrote the
// same objects before the refusal (a state that answered otherwise was not the server's).
func (j *job) reachedAlike(reached *reachedItems, ev *Event) bool {
	if j.oneState() {
		return true
	}
	if !j.lag.settled || len(j.lag.typedLost) > 0 || len(j.lag.aheadUnknown) > 0 || j.resolving.is() || j.unsettled.is() || j.early.why.is() ||
		j.prior.OtherVersionRead() || j.revise.revised {
		return false
	}
	for _, v := range j.lag.readBy {
		if v == j.view {
			continue
		}
		other := j.result.reachedOn[v]
		switch {
		case other == nil:
			return false
		case !other.refusedAs(ev.Code(), ev.Message()):
			continue
		case !maps.Equal(other.keys, reached.keys) || !sameKeys(other.left, reached.left):
			return false
		}
	}
	return true
}

// sameKeys says whether a and b hold the same keys.
func sameKeys[V any](a, b map[state.ObjectKey]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// stringAt is the string at path in m, or "".
func stringAt(m map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedString(m, path...)
	return s
}

// applyDeleteCollection applies a deletecollection to each object it listed: gone, or left
// marked deleted.
func (r *Replayer) applyDeleteCollection(sw stateWrite) {
	t, gr, src, resp := sw.t, sw.gr, sw.src, sw.w.resp
	if why, settled := r.namespaceRemoved(sw.ev, t); why != "" {
		// Its response lists what it listed whether it deleted it or not: each item's
		// delete fails NotFound at validating admission when a policy matches it, and the
		// store ignores NotFound (helper exAL). Given policies matched it, and the namespace
		// informer no longer held the namespace: it deleted none.
		if !settled || !sw.matched {
			r.state.ForgetAll(gr, t.namespace, "deletecollection at "+src+" in a namespace the log removed: "+why)
		}
		return
	}
	var items []any
	if resp != nil {
		items, _ = resp.Object["items"].([]any)
	}
	itemUnknowns := map[state.ObjectKey][]vapccel.Unknown{}
	if items == nil {
		// The log does not hold what it deleted: what the State holds of the namespace,
		// by the request's selector, when that is all it listed.
		var why string
		items, itemUnknowns, why = r.listedBy(gr, t.namespace, sw.ev)
		if why != "" {
			r.state.ForgetAll(gr, t.namespace, "deletecollection at "+src+" without a recorded result: "+why)
			return
		}
	}
	r.deleteItems(sw, items, itemUnknowns)
}

// deleteItems applies a deletecollection's deletion of each of items: gone, or left marked
// deleted. itemUnknowns are what the State did not know of them.
func (r *Replayer) deleteItems(sw stateWrite, items []any, itemUnknowns map[state.ObjectKey][]vapccel.Unknown) {
	ev, t, gr, src := sw.ev, sw.t, sw.gr, sw.src
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
	raw, err := u.MarshalJSON()
	if err != nil {
		return apiserver.Deletion{}, err
	}
	options, err := eventDeleteOptions(ev)
	if err != nil {
		return apiserver.Deletion{}, err
	}
	return deleteLeavesRaw(gr, raw, options)
}

// deleteLeavesRaw is deleteLeaves of the stored JSON raw, with the request's options.
func deleteLeavesRaw(gr schema.GroupResource, raw []byte, options *metav1.DeleteOptions) (apiserver.Deletion, error) {
	srv, err := pipelineServer()
	if err != nil {
		return apiserver.Deletion{}, err
	}
	return srv.DeleteLeaves(gr, raw, options)
}

// eventDeleteOptions are the DeleteOptions of the DELETE ev: its body's, with its query's.
func eventDeleteOptions(ev *Event) (*metav1.DeleteOptions, error) {
	opts, err := deleteOptions(ev.RequestObject, ev.Query())
	if err != nil {
		return nil, err
	}
	options := &metav1.DeleteOptions{}
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(opts.Object, options); err != nil {
		return nil, err
	}
	return options, nil
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
// The log does not say which, but the request's evaluation (j) does when it refused the DELETE
// for certain with the log's code and message: its pipeline marked the pod, or wrote nothing.
// Otherwise the State holds the pod with those fields unknown.
func (r *Replayer) refusedPodDelete(d decoded, ev *Event, t target, j *job) {
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
	src := d.ref().String()
	// When it completed: a write the log records after it that ran concurrently does not make
	// the pod known (State.keptUnknown).
	defer r.state.MarkDone(gr, t.namespace, t.name, src, auditlog.ParseTime(ev.StageTimestamp))
	zero := int64(0)
	u.SetDeletionTimestamp(markedAt(ev))
	u.SetDeletionGracePeriodSeconds(&zero)
	if reached := refusedAsLogged(j, ev); reached != nil {
		if !reached.keys[state.ObjectKey{Namespace: t.namespace, Name: t.name}] {
			return // admission refused the first step: the store wrote nothing
		}
		// It refused the second: the pod stays marked, by the server's clock.
		why := "the server's clock and storage when the DELETE at " + src + ", which admission refused once the store had marked the pod deleted, marked it, which the log does not show"
		_ = r.state.PutPartly(gr, u, []vapccel.Unknown{
			{Path: objectPath("metadata", "deletionTimestamp"), ValueOnly: true, Why: why},
			{Path: objectPath("metadata", "resourceVersion"), ValueOnly: true, Why: why},
			{Path: objectPath("metadata", "generation"), Why: why},
		}, src+" (refused DELETE: marked deleted)")
		return
	}
	why := "the DELETE at " + src + ", which admission refused, after or before the store marked the pod deleted: the log does not say which"
	var unmarked []byte // the version it has unless marked, when the State knows it in full
	if p := r.state.Prior(gr, t.namespace, t.name); len(p.Unknowns) == 0 {
		unmarked = p.Raw
	}
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
	if resp := writtenResult(d, ev, t); resp != nil {
		return state.ResourceVersion(resp.GetResourceVersion())
	}
	return 0
}

// writtenResult is the object a successful update or patch stored, as its response shows it
// (its header at least); nil when the log does not show it.
func writtenResult(d decoded, ev *Event, t target) *unstructured.Unstructured {
	if c := ev.Code(); c < 200 || c >= 300 || isDryRun(ev) || (ev.Verb != "update" && ev.Verb != "patch" && ev.Verb != "apply") || !hasBody(ev.ResponseObject) {
		return nil
	}
	resp := (*unstructured.Unstructured)(nil)
	if d.written != nil {
		resp = d.written.resp
	} else if h, err := auditlog.DecodeHeader(ev.ResponseObject); err == nil {
		resp = h
	}
	if resp == nil || resp.GetName() != t.name || resp.GetNamespace() != t.namespace {
		return nil
	}
	return resp
}

// storedVersion is writtenVersion, and for a successful DELETE that left its object marked
// deleted (a graceful deletion, finalizers) the resourceVersion of its response: the version
// it stored, or, its deletion pending already, the one it found. 0 for a DELETE that removed
// its object (its response has the deletion's revision) or whose response the log does not
// hold.
func storedVersion(d decoded, ev *Event, t target) uint64 {
	if resp := storedResult(d, ev, t); resp != nil {
		return state.ResourceVersion(resp.GetResourceVersion())
	}
	return 0
}

// storedResult is the object whose resourceVersion storedVersion gives, nil where it gives 0.
func storedResult(d decoded, ev *Event, t target) *unstructured.Unstructured {
	if ev.Verb != "delete" {
		return writtenResult(d, ev, t)
	}
	if resp := deleteAnswer(d, ev, t); resp != nil && stillExists(resp) {
		return resp
	}
	return nil
}

// deleteAnswer is the object a successful DELETE answered with, when it answered with its
// object (not a Status): as it left it marked deleted, or as last stored when it removed it
// (at the deletion's resourceVersion: etcd3's conditionalDelete); nil otherwise. It reads
// the answer the decoding workers prepared (prepareWrite), when they did.
func deleteAnswer(d decoded, ev *Event, t target) *unstructured.Unstructured {
	if c := ev.Code(); ev.Verb != "delete" || c < 200 || c >= 300 || isDryRun(ev) || !hasBody(ev.ResponseObject) {
		return nil
	}
	w := d.written
	if w == nil || !w.isMain {
		w = writtenObject(ev, t) // not prepared, or prepared before the log taught its kind
	}
	if w.isMain && w.raw != nil && w.resp.GetName() == t.name && w.resp.GetNamespace() == t.namespace {
		return w.resp
	}
	return nil
}

// keptOtherStatus is what the old object of a successful update of an object's main resource
// (not a subresource), of a resource with a status subresource, holds otherwise than the
// version p the State gives it: the strategy keeps the status of the version it read
// (PrepareForUpdate: a node's, a pod's, a Deployment's, a custom resource's with the status
// subresource), so its response's status is that version's. Where it differs from p's, the
// old object's status is not known (a status write the log does not show: another server's
// log). Nothing when they agree, or when the State or the response does not tell.
func keptOtherStatus(ev *Event, t target, p state.Prior) []vapccel.Unknown {
	if t.op != admission.Update || t.sub != "" || (ev.Verb != "update" && ev.Verb != "patch" && ev.Verb != "apply") ||
		ev.Code() < 200 || ev.Code() >= 300 || isDryRun(ev) || p.Raw == nil || !hasBody(ev.ResponseObject) ||
		slices.ContainsFunc(p.Unknowns, func(u vapccel.Unknown) bool { return len(u.Path.Steps) == 0 || u.Path.Steps[0] == "status" }) {
		return nil
	}
	// Most agree byte for byte: decoded only where they do not.
	rs, rok := auditlog.Member(ev.ResponseObject, "status")
	if was, ook := auditlog.Member(p.Raw, "status"); rok == ook && bytes.Equal(rs, was) {
		return nil
	}
	if srv, err := pipelineServer(); err != nil || !srv.Serves(t.gvr, "status") {
		return nil
	}
	resp := auditlog.DecodeAnyObject(ev.ResponseObject)
	if resp == nil || !sameKind(resp, t.mainKind) || resp.GetName() != t.name || resp.GetNamespace() != t.namespace {
		return nil
	}
	old, err := auditlog.DecodeObject(p.Raw)
	if err != nil || old.GroupVersionKind() != resp.GroupVersionKind() {
		return nil // stored in another version: not compared
	}
	if equality.Semantic.DeepEqual(resp.Object["status"], old.Object["status"]) {
		return nil
	}
	return []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"status"}},
		Why: fmt.Sprintf("the write's response holds the status the store kept of the version it read, which differs from the version the State holds (%s): a status write the log does not show", p.Source)}}
}

// keptOtherRead is what the old object of a successful write holds otherwise than the version
// p the State gives it, as the write's response shows what the store kept of the version it
// read: a write through the status subresource keeps its spec (the status strategies'
// PrepareForUpdate: a pod's, a node's, a Deployment's), and a patch whose body touches none of
// its metadata keeps its labels (a kubelet's status patch). Where the response's differ from
// p's, those of the old object are not known: a write the log does not show (the scheduler's
// binding at level None, a request logged without its final stage; helper exV). Nothing when
// they agree, or when the State or the response does not tell.
func keptOtherRead(ev *Event, t target, p state.Prior) []vapccel.Unknown {
	if t.op != admission.Update || (ev.Verb != "update" && ev.Verb != "patch" && ev.Verb != "apply") ||
		ev.Code() < 200 || ev.Code() >= 300 || isDryRun(ev) || p.Raw == nil || !hasBody(ev.ResponseObject) {
		return nil
	}
	var out []vapccel.Unknown
	kept := func(steps ...string) {
		if slices.ContainsFunc(p.Unknowns, func(u vapccel.Unknown) bool { return state.FieldUnder(u.Path.Steps, steps...) }) {
			return
		}
		rv, rok := member(ev.ResponseObject, steps...)
		was, ook := member(p.Raw, steps...)
		if rok == ook && bytes.Equal(rv, was) {
			return
		}
		// Most agree byte for byte: decoded only where they do not.
		var a, b any
		if rok && json.Unmarshal(rv, &a) != nil || ook && json.Unmarshal(was, &b) != nil || equality.Semantic.DeepEqual(a, b) {
			return
		}
		out = append(out, vapccel.Unknown{Path: vapccel.FieldPath{Root: "oldObject", Steps: steps},
			Why: fmt.Sprintf("the write's response holds the %s the store kept of the version it read, which differs from the version the State holds (%s): a write the log does not show", strings.Join(steps, "."), p.Source)})
	}
	if t.reqKind != t.mainKind || !sameObject(ev.ResponseObject, p.Raw, t) {
		return nil // a Scale, or the object in another version than the State's
	}
	if srv, err := pipelineServer(); err != nil || !srv.Serves(t.gvr, t.sub) {
		return nil // a custom resource reads defaulted by its CRD's schema as it is now
	}
	if t.sub == "status" {
		kept("spec")
	}
	if ev.Verb != "patch" {
		return out
	}
	touched, ok := patchTouches(ev)
	if !ok {
		return out
	}
	if touched["stringData"] {
		touched["data"] = true // a Secret's stringData is written into its data (random parity r:1274)
	}
	if !touched["metadata"] {
		kept("metadata", "labels")
	}
	for _, k := range topLevelKeys(ev.ResponseObject) {
		switch {
		case k == "apiVersion" || k == "kind" || k == "metadata" || k == "status" || touched[k]:
		case k == "spec" && t.sub == "status": // compared above
		default:
			kept(k)
		}
	}
	return out
}

// topLevelKeys are the members of an object's JSON.
func topLevelKeys(raw []byte) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

// member is the JSON of the member at the path steps of an object's JSON, and whether it has
// one.
func member(raw []byte, steps ...string) ([]byte, bool) {
	for _, s := range steps {
		v, ok := auditlog.Member(raw, s)
		if !ok {
			return nil, false
		}
		raw = v
	}
	return raw, true
}

// sameObject says whether an object's JSON is of the target's object (its name and namespace)
// in the version and kind of the State's JSON of it, was.
func sameObject(raw, was []byte, t target) bool {
	h, err := auditlog.DecodeHeader(raw)
	w, werr := auditlog.DecodeHeader(was)
	return err == nil && werr == nil && h.GetName() == t.name && h.GetNamespace() == t.namespace && h.GetKind() != "Status" &&
		h.GroupVersionKind() == w.GroupVersionKind()
}

// patchTouches is the top-level members of the object a patch's body may change: those a JSON
// patch operates on or under (or from), those a merge or strategic merge patch has; false
// when it does not tell (a server-side apply's configuration, which may remove what its
// manager set before, an operation on the whole object, a body that does not decode).
func patchTouches(ev *Event) (map[string]bool, bool) {
	body := bytes.TrimSpace(ev.RequestObject)
	if len(body) == 0 {
		return nil, false
	}
	touched := map[string]bool{}
	switch body[0] {
	case '[':
		var ops []map[string]any
		if json.Unmarshal(body, &ops) != nil {
			return nil, false
		}
		for _, op := range ops {
			for _, k := range []string{"path", "from"} {
				v, ok := op[k]
				if !ok {
					continue
				}
				path, _ := v.(string)
				top, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
				if !strings.HasPrefix(path, "/") || top == "" {
					return nil, false
				}
				touched[strings.ReplaceAll(strings.ReplaceAll(top, "~1", "/"), "~0", "~")] = true
			}
		}
		return touched, true
	case '{':
		patch := mergePatchBody(ev)
		if patch == nil {
			return nil, false
		}
		for k := range patch {
			if strings.HasPrefix(k, "$") {
				return nil, false // a strategic merge patch's directive on the whole object
			}
			touched[k] = true
		}
		return touched, true
	}
	return nil, false
}

// markedOtherVersion is what the old object of a DELETE that left its object marked deleted, or
// removed it, holds otherwise than the version p the State gives it: its response is the
// object it read, marked (the store changes nothing else of it but its resourceVersion and
// generation), and
// the fields where the two differ are not known (a write the log does not show, or one it
// records later that was committed before the DELETE read the object: two apiservers' logs
// merged by the times of their events). Nothing when they agree, or when the State or the
// response does not tell.
//
// Where they differ only in values the State does not know (p's value-only unknowns: the
// second a write stamped when the log does not hold it to the second), the response tells
// them: p is given them (p.Raw), and they are known.
func markedOtherVersion(d decoded, ev *Event, t target, p *state.Prior) []vapccel.Unknown {
	if ev.Verb != "delete" || p.Raw == nil {
		return nil
	}
	answer := deleteAnswer(d, ev, t)
	if answer == nil {
		return nil
	}
	v := state.ResourceVersion(answer.GetResourceVersion())
	if v == 0 {
		return nil
	}
	// The State's version without its resourceVersion (rebuilt, or kept as it was through a
	// write the log holds without its result, a status patch at Metadata level) is compared
	// as any other: what it holds may not be what the server read.
	if v == p.RV {
		return markedByAnother(answer, *p, v)
	}
	// As logged: the written object is the one the State stores. Where only their metadata
	// differs in its bytes, the headers hold all of it that is compared (managedFields is
	// skipped); otherwise they are compared decoded.
	// A namespace's DELETE sets its phase (deleteOwnChanges): compared decoded.
	whole := t.gvr.GroupResource() == state.NamespacesGR || !auditlog.SameMembersBut(ev.ResponseObject, p.Raw, "metadata")
	resp, old := answer, (*unstructured.Unstructured)(nil)
	var stored *unstructured.Unstructured // p.Raw decoded, as the State holds it
	var err error
	if whole {
		if resp, err = auditlog.DecodeObject(ev.ResponseObject); err == nil {
			old, err = auditlog.DecodeObject(p.Raw)
		}
		stored = old
		if err == nil && old.GroupVersionKind() != resp.GroupVersionKind() {
			// Stored from a response in another version (an autoscaling/v2 status update,
			// an autoscaling/v1 DELETE): compared in the DELETE's, converted as the server
			// converts what it read; not at all when it does not convert.
			if old = convertStored(old, resp.GroupVersionKind()); old == nil {
				return nil
			}
		}
	} else {
		old, err = auditlog.DecodeHeader(p.Raw)
	}
	if err != nil {
		return nil
	}
	held := fmt.Sprintf("%d", p.RV)
	if p.RV == 0 {
		held = p.Source
	}
	why := fmt.Sprintf("the DELETE's response, the object it read marked deleted (resourceVersion %d), differs here from the version the State holds (%s): a write the log does not show, or records later, was committed before it read the object", v, held)
	old, skip := deleteOwnChanges(ev, t, old, resp)
	if old == nil {
		return nil
	}
	var out []vapccel.Unknown
	differ := func(a, b map[string]any, each func(k string)) {
		for k := range a {
			if _, ok := b[k]; !ok {
				each(k)
			}
		}
		for k, bv := range b {
			if av, ok := a[k]; !ok || !equality.Semantic.DeepEqual(av, bv) {
				each(k)
			}
		}
	}
	metadata := func() {
		rm, _ := resp.Object["metadata"].(map[string]any)
		om, _ := old.Object["metadata"].(map[string]any)
		differ(rm, om, func(f string) {
			if !skip[f] && (f != "finalizers" || !onlyDeletionFinalizers(resp.GetFinalizers(), old.GetFinalizers())) {
				out = append(out, vapccel.Unknown{Path: objectPath("metadata", f), Why: why})
			}
		})
	}
	if !whole {
		metadata()
		return out
	}
	var told []string
	differ(resp.Object, old.Object, func(k string) {
		switch {
		case k == "metadata":
			metadata()
		case onlyUnknownValues(resp.Object, old.Object, k, p.Unknowns):
			told = append(told, k)
		default:
			out = append(out, vapccel.Unknown{Path: objectPath(k), Why: why})
		}
	})
	if len(told) > 0 && stored != nil && stored.GroupVersionKind() == resp.GroupVersionKind() {
		tellUnknownValues(p, stored, resp, told)
	} else {
		for _, k := range told {
			out = append(out, vapccel.Unknown{Path: objectPath(k), Why: why})
		}
	}
	return out
}

// onlyUnknownValues says whether the field k of two objects differs only in the values unknowns
// says are not known (value-only unknowns of the object's field k).
func onlyUnknownValues(a, b map[string]any, k string, unknowns []vapccel.Unknown) bool {
	ma, mb := map[string]any{k: k8sruntime.DeepCopyJSONValue(a[k])}, map[string]any{k: k8sruntime.DeepCopyJSONValue(b[k])}
	masked := false
	for _, u := range unknowns {
		if u.Path.Root == "object" && u.ValueOnly && len(u.Path.Steps) > 1 && u.Path.Steps[0] == k {
			maskPath(ma, u.Path.Steps)
			maskPath(mb, u.Path.Steps)
			masked = true
		}
	}
	return masked && equality.Semantic.DeepEqual(ma, mb)
}

// tellUnknownValues gives p, the version a DELETE read, the fields told of its response (the
// object it read, marked): the State's version (stored, decoded) with them, and no unknowns of
// theirs.
func tellUnknownValues(p *state.Prior, stored, resp *unstructured.Unstructured, told []string) {
	obj := stored.DeepCopy()
	for _, k := range told {
		obj.Object[k] = k8sruntime.DeepCopyJSONValue(resp.Object[k])
	}
	raw, err := obj.MarshalJSON()
	if err != nil {
		return
	}
	p.Raw = raw
	p.Unknowns = slices.DeleteFunc(slices.Clone(p.Unknowns), func(u vapccel.Unknown) bool {
		return u.Path.Root == "object" && len(u.Path.Steps) > 1 && slices.Contains(told, u.Path.Steps[0])
	})
}

// changesOnDelete are the resources whose DELETE changes more of the object than its marks: a
// namespace's phase (the namespace REST's Delete), a CustomResourceDefinition's Terminating
// condition (the apiextensions REST's Delete).
var changesOnDelete = map[schema.GroupResource]bool{
	state.NamespacesGR: true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
}

// readAsAnswered gives a DELETE whose object the State does not know (p: not known, or not held
// where the State does not hold every object of the resource) the object it answered with as
// its old object: the object it read, marked deleted (or as last stored, when it removed it),
// whose marks (rest.BeforeDelete: the deletion's time and grace period, the generation; the
// garbage collector's finalizers its options ask for) and resourceVersion are not known. The
// store ran admission on the object it then marked or removed (updateForGracefulDeletionAndFinalizers,
// etcd3's conditionalDelete, which runs it again on the live object when the cached one was
// stale). An answer marked deleted is given only where the log's annotations show admission
// ran: the object may have been marked before, its graceful deletion pending, which the
// store completes without admission unless the DELETE shortens it (rest.BeforeDelete); its
// marks are left out of the old object, known to be absent where the options ask for no grace
// period and the marks have one (which only this DELETE can have given). It says whether it
// gave it.
func (r *Replayer) readAsAnswered(d decoded, ev *Event, t target, p *state.Prior) bool {
	if t.sub != "" || !p.Kept || (p.Found && p.Unknown == "" && len(p.Unknowns) == 0) || (!p.Found && p.Unknown == "" && p.Complete) || changesOnDelete[t.gvr.GroupResource()] {
		return false
	}
	if header := deleteAnswer(d, ev, t); header == nil || !sameKind(header, t.mainKind) {
		return false
	}
	answer := auditlog.DecodeAnyObject(ev.ResponseObject) // deleteAnswer's may hold only a part of it
	if p.Found && p.Unknown == "" {
		// Not the answer as the old object: what it knew the State keeps, and where the
		// answer differs from it, markedOtherVersion says so.
		answeredFields(d, p, answer)
		return false
	}
	if answer == nil || answer.GetDeletionTimestamp() == nil && len(answer.GetFinalizers()) > 0 {
		// (An object with finalizers is marked, never removed at once: such an answer is not
		// the server's.)
		return false
	}
	// Unmarked before: answered unmarked (removed at once), or marked with a grace period
	// the options did not ask for, which marks an object already marked only by shortening
	// the deletion the options ask for (a mark of period 0, or none, the store deletes, or
	// updates for its finalizers, again: rest.BeforeDelete).
	_, asked := optionsGrace(ev)
	g := answer.GetDeletionGracePeriodSeconds()
	unmarked := answer.GetDeletionTimestamp() == nil || !asked && g != nil && *g > 0
	if answer.GetDeletionTimestamp() != nil {
		if !r.ranAdmission(ev) {
			return false
		}
		answer = answer.DeepCopy()
		answer.SetDeletionTimestamp(nil)
		answer.SetDeletionGracePeriodSeconds(nil)
	}
	raw, err := json.Marshal(answer.Object)
	if err != nil {
		return false
	}
	was := p.Unknown
	if was == "" {
		was = "the object is not in the snapshot or earlier in the log"
	}
	why := "the DELETE's response is the object it read, marked deleted by it: what it marked is not known (" + was + ")"
	fields := []string{"generation", "finalizers", "resourceVersion", "managedFields"}
	if !unmarked {
		fields = append(fields, "deletionTimestamp", "deletionGracePeriodSeconds")
	}
	var unknowns []vapccel.Unknown
	for _, f := range fields {
		unknowns = append(unknowns, vapccel.Unknown{Path: objectPath("metadata", f), Why: why})
	}
	p.Found, p.Unknown, p.Raw, p.RV, p.Unknowns = true, "", raw, 0, unknowns
	p.Source = "the DELETE's response at " + d.ref().String() + " (the object it read, its deletion marks not known)"
	return true
}

// answeredFields gives the old object of a DELETE the State knows but for some fields (p's
// unknowns) those fields as its answer holds them: the object it read, which it changed only in
// its deletion marks, generation, finalizers and resourceVersion, which stay as the State has
// them (helper exV: a pod's labels after a kubelet's status write at level Metadata, which the
// kubelet's DELETE answered with).
func answeredFields(d decoded, p *state.Prior, answer *unstructured.Unstructured) {
	if answer == nil || answer.GetKind() == "Status" {
		return
	}
	old, err := auditlog.DecodeObject(p.Raw)
	if err != nil {
		return
	}
	var still []vapccel.Unknown
	for _, u := range p.Unknowns {
		steps := u.Path.Steps
		marked := len(steps) == 0 || len(steps) >= 1 && steps[0] == "metadata" && (len(steps) == 1 || slices.Contains(deletionMarked, steps[1]))
		if marked || slices.Contains(steps, vapccel.AnyStep) || u.Path.Root != "object" && u.Path.Root != "" {
			still = append(still, u)
			continue
		}
		if v, found, err := unstructured.NestedFieldCopy(answer.Object, steps...); err == nil && found {
			if unstructured.SetNestedField(old.Object, v, steps...) != nil {
				still = append(still, u)
			}
		} else if err == nil {
			unstructured.RemoveNestedField(old.Object, steps...)
		} else {
			still = append(still, u)
		}
	}
	if len(still) == len(p.Unknowns) {
		return
	}
	raw, err := json.Marshal(old.Object)
	if err != nil {
		return
	}
	p.Raw, p.Unknowns = raw, still
	p.Source += ", what it did not know of it as the DELETE's response at " + d.ref().String() + " holds it"
}

// deletionMarked are the fields of an object's metadata a DELETE changes in the object it
// read (rest.BeforeDelete, the garbage collector's finalizers, the storage's version).
var deletionMarked = []string{"deletionTimestamp", "deletionGracePeriodSeconds", "generation", "finalizers", "resourceVersion", "managedFields"}

// markedByAnother is what the old object of a DELETE whose answer (resourceVersion v) is the
// State's version p is not known of, when that answer is marked deleted but was not stored:
// another DELETE marked the object first, and admission saw it as that one left it (the
// store's errAlreadyDeleting). That one changed what a DELETE marks (rest.BeforeDelete: the
// deletion's time and grace period, the generation; the garbage collector's finalizers its
// options ask for) and the resourceVersion, not the rest.
func markedByAnother(answer *unstructured.Unstructured, p state.Prior, v uint64) []vapccel.Unknown {
	// The answer's metadata (all alreadyDeleting reads) is decoded already; the State's
	// version's only when the answer is marked.
	if answer.GetDeletionTimestamp() == nil {
		return nil
	}
	old, err := auditlog.DecodeHeader(p.Raw)
	if err != nil || !alreadyDeleting(old, answer) {
		return nil
	}
	why := fmt.Sprintf("the DELETE's response is the version the State holds (resourceVersion %d) marked deleted, but not stored: another DELETE marked the object first, and admission saw it as that one left it (the store's errAlreadyDeleting: they ran concurrently)", v)
	var out []vapccel.Unknown
	for _, f := range []string{"deletionTimestamp", "deletionGracePeriodSeconds", "generation", "finalizers", "resourceVersion", "managedFields"} {
		out = append(out, vapccel.Unknown{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"metadata", f}}, Why: why})
	}
	return out
}

// deleteOwnChanges are what a DELETE changed itself of the object it read (old) in its answer
// (resp): the metadata fields to leave out of the comparison (its resourceVersion and
// managedFields always; its generation and deletion marks where they moved as the store moves
// them), and old with the phase Terminating a namespace's DELETE sets (the namespace REST's
// Delete), or nil when it cannot be set.
func deleteOwnChanges(ev *Event, t target, old, resp *unstructured.Unstructured) (*unstructured.Unstructured, map[string]bool) {
	skip := map[string]bool{"resourceVersion": true, "managedFields": true}
	// The generation moves by one where the DELETE first marks the object, if it has one
	// (rest.BeforeDelete, markAsDeleting).
	gen := old.GetGeneration()
	if old.GetDeletionTimestamp() == nil && resp.GetDeletionTimestamp() != nil && gen > 0 {
		gen++
	}
	skip["generation"] = resp.GetGeneration() == gen
	marks := old.GetDeletionTimestamp() == nil || shortenedBy(ev, old, resp)
	skip["deletionTimestamp"], skip["deletionGracePeriodSeconds"] = marks, marks
	if old.GetDeletionTimestamp() == nil && t.gvr.GroupResource() == state.NamespacesGR {
		old = old.DeepCopy()
		if err := unstructured.SetNestedField(old.Object, string(corev1.NamespaceTerminating), "status", "phase"); err != nil {
			return nil, nil
		}
	}
	return old, skip
}

// alreadyDeleting says whether a DELETE's response, at the resourceVersion of the version the
// State holds (old), holds deletion marks that version does not: the store's
// updateForGracefulDeletionAndFinalizers answers with the object it first read, marked by
// rest.BeforeDelete, when another DELETE marked it in between (errAlreadyDeleting), and stores
// nothing of it.
func alreadyDeleting(old, resp *unstructured.Unstructured) bool {
	if resp.GetDeletionTimestamp() == nil {
		return false
	}
	if old.GetDeletionTimestamp() == nil {
		return true
	}
	g0, g1 := old.GetDeletionGracePeriodSeconds(), resp.GetDeletionGracePeriodSeconds()
	return !old.GetDeletionTimestamp().Equal(resp.GetDeletionTimestamp()) || (g0 == nil) != (g1 == nil) || (g0 != nil && *g0 != *g1)
}

// shortenedBy says whether the deletion marks a DELETE answered with (resp) are those of the
// object it read as the State holds it (old, marked deleted), shortened by the DELETE's own grace
// period as rest.BeforeDelete shortens a pending graceful deletion: the deletionTimestamp moved
// back by the difference, or to the server's clock during the request when that is later (and
// a non-zero period then 1). Like the State, it takes the log to hold every DELETE of the
// object: one it does not show may have shortened the marks before, to the same result.
func shortenedBy(ev *Event, old, resp *unstructured.Unstructured) bool {
	g0, g1r := old.GetDeletionGracePeriodSeconds(), resp.GetDeletionGracePeriodSeconds()
	ts0, ts1 := old.GetDeletionTimestamp(), resp.GetDeletionTimestamp()
	if g0 == nil || g1r == nil || ts1 == nil || *g0 <= 0 {
		return false
	}
	g1, ok := optionsGrace(ev)
	if !ok {
		return false
	}
	if g1 < 0 {
		g1 = 1
	}
	if g1 >= *g0 {
		return false // not shortened: the marks are the old ones, or another version's
	}
	moved := ts0.Add(time.Duration(g1-*g0) * time.Second).Truncate(time.Second)
	if *g1r == g1 && ts1.Time.Equal(moved) {
		return true
	}
	// Moved into the past: the server's clock during the request instead.
	received, done := ev.Received(), auditlog.ParseTime(ev.StageTimestamp)
	if received.IsZero() || done.IsZero() || !moved.Before(done) {
		return false
	}
	clamped := g1 == 0 && *g1r == 0 || g1 != 0 && *g1r == 1
	return clamped && !ts1.Time.Before(received.Truncate(time.Second)) && !ts1.Time.After(done)
}

// onlyDeletionFinalizers says whether the finalizers a DELETE answered with differ from those
// of the version it read only by those its propagation policy adds (orphan,
// foregroundDeletion: deletionFinalizersForGarbageCollection).
func onlyDeletionFinalizers(marked, read []string) bool {
	strip := func(fs []string) []string {
		return slices.DeleteFunc(slices.Clone(fs), func(f string) bool {
			return f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents
		})
	}
	return slices.Equal(strip(marked), strip(read))
}

// dryRunRead is the resourceVersion of the version a successful dry run of an update, a patch
// or a delete read, which its response holds (DryRunnableStorage reads the object from
// storage, not the watch cache, and writes nothing); 0 when the log does not show it.
func dryRunRead(ev *Event, t target) uint64 {
	if !isDryRun(ev) || (ev.Verb != "update" && ev.Verb != "patch" && ev.Verb != "apply" && ev.Verb != "delete") {
		return 0
	}
	return responseVersion(ev, t)
}

// responseVersion is the resourceVersion of a successful request's response when it is the
// request's object; 0 otherwise.
func responseVersion(ev *Event, t target) uint64 {
	if c := ev.Code(); c < 200 || c >= 300 || !hasBody(ev.ResponseObject) {
		return 0
	}
	h, err := auditlog.DecodeHeader(ev.ResponseObject)
	if err != nil || h.GroupVersionKind() != t.mainKind || h.GetName() != t.name || h.GetNamespace() != t.namespace {
		return 0
	}
	return state.ResourceVersion(h.GetResourceVersion())
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

// emptiedOfFinalizers says whether an update's result is an object the store deleted: being
// deleted with no grace period left and no finalizer (shouldDeleteDuringUpdate in
// k8s.io/apiserver's genericregistry.Store, whose update keeps the old object's
// deletionTimestamp and deletionGracePeriodSeconds). A namespace's spec.finalizers count too
// (ShouldDeleteNamespaceDuringUpdate, which its stores, finalize and status included, share):
// the namespace controller removes a namespace with the PUT of its finalize subresource that
// empties them, and no DELETE follows. raw is u's JSON when u holds only its header
// (written.raw).
func emptiedOfFinalizers(u *unstructured.Unstructured, raw []byte) bool {
	if u == nil || u.GetDeletionTimestamp() == nil || len(u.GetFinalizers()) > 0 {
		return false
	}
	if u.GetKind() == "Namespace" {
		whole := u
		if _, ok := u.Object["spec"]; !ok && raw != nil {
			var err error
			if whole, err = auditlog.DecodeObject(raw); err != nil {
				return false
			}
		}
		if f, _, _ := unstructured.NestedSlice(whole.Object, "spec", "finalizers"); len(f) > 0 {
			return false
		}
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
	if !found || unknown != "" {
		return false
	}
	stored := obj.GroupVersionKind()
	if stored != t.mainKind {
		// A custom resource scaled through another version than the one the State holds
		// it in: the apiextensions apiserver reads it in the request's version, sets the
		// replicas there, and stores it converted back (convertPrior both ways).
		if kubescheme.Knows(stored) || kubescheme.Knows(t.mainKind) {
			return false
		}
		conv, _ := r.convertPrior(r.state.Prior(gr, t.namespace, t.name), obj, t.mainKind)
		if conv == nil {
			return false
		}
		obj = conv
	}
	if !applyScale(t.scale, obj, resp) {
		return false
	}
	if stored != t.mainKind {
		back, _ := r.convertPrior(state.Prior{}, obj, stored)
		if back == nil {
			return false
		}
		obj = back
	}
	_ = r.state.Put(gr, obj, src+" ("+describe(t.gvr, t.sub)+": spec.replicas, resourceVersion and generation set; managedFields as before)")
	return true
}
