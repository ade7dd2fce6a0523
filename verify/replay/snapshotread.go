package replay

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/source"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// The replay takes a snapshot as the state of the cluster before the log's first request (the
// README: take it when the log begins). A log that begins before the snapshot was read holds
// requests whose effect the snapshot already shows: a write whose result the log holds says so
// by its resourceVersion (state.PriorOf, State.snapshotAfter); one logged without its result
// (at level Request or Metadata) does not, and the replay would decide it on the version it
// wrote. etcd's revisions say it: a request received after the write completed that shows the
// revision it ran at — a create's result, a consistent list's — ran at a revision after the
// write was committed; when that revision is at or below the greatest resourceVersion of the
// snapshot's objects of the write's resource, or the revision `vapc snapshot` listed it at
// (its List's resourceVersion), the snapshot listed the resource after the write,
// and holds what the write left, not what it read. Such a write, held for lookahead, is
// evaluated again without its old object (reviseSnapshotRead).

// holdForSnapshot keeps, among the jobs held for lookahead, one whose evaluation read the
// snapshot's version of its object and whose result the log does not show.
func (r *Replayer) holdForSnapshot(j *job) {
	if !j.revise.tracked || !j.prior.FromSnapshot || j.prior.Raw == nil || j.ev.Verb == "deletecollection" ||
		r.state.SnapshotNewest(j.revise.key.GR) == 0 || resultVersion(j.ev, j.t) > 0 {
		return
	}
	r.running.snapshotHeld = append(r.running.snapshotHeld, j)
}

// reviseSnapshotRead evaluates again, without their old objects, the held jobs that read the
// snapshot's version of their object (holdForSnapshot) when ev, received after they completed,
// ran at a revision at or below the snapshot's greatest resourceVersion of their resource: the
// snapshot was read after them.
func (r *Replayer) reviseSnapshotRead(d decoded, ev *Event, t target) {
	e := r.running
	if len(e.snapshotHeld) == 0 {
		return
	}
	received, completed := ev.Received(), auditlog.ParseTime(ev.StageTimestamp)
	if received.IsZero() || completed.IsZero() {
		return
	}
	var rev uint64 // decoded once, when a held job may need it
	for _, j := range slices.Clone(e.snapshotHeld) {
		if j.ev == ev || !received.After(j.revise.completed) || completed.Sub(j.revise.completed) >= lookahead {
			continue
		}
		newest := r.state.SnapshotNewest(j.revise.key.GR)
		if rev == 0 {
			if rev = revisionRan(ev, t); rev == 0 {
				return
			}
		}
		if rev > newest {
			continue
		}
		// The job, and the writes to its object after it that completed before ev was
		// received (they read what the replay's write left): the snapshot holds what they
		// left, not what they read.
		snap := j.prior
		victims := []*job{j}
		for _, o := range e.byKey[j.revise.key] {
			if o != j && !o.revise.completed.IsZero() && received.After(o.revise.completed) && o.revise.completed.After(j.revise.completed) {
				victims = append(victims, o)
			}
		}
		why := fmt.Sprintf("the snapshot was read after this request completed: the request at %s, received after it (%s), ran at resourceVersion %d, at or below the snapshot's greatest of %s (%d), so the snapshot holds what this request left, not the version it read",
			lineRef{d.file, d.num}, received.UTC().Format(time.RFC3339Nano), rev, j.revise.key.GR, newest)
		for _, v := range victims {
			<-v.done
			r.forgetReached(v, d)
			e.snapshotHeld = slices.DeleteFunc(e.snapshotHeld, func(o *job) bool { return o == v })
			if !isDryRun(v.ev) {
				// The State holds the write applied to the snapshot's version again.
				r.state.Unwrite(v.revise.key.GR, v.revise.key.Obj.Namespace, v.revise.key.Obj.Name, lineRef{v.d.file, v.d.num}.String(), snap.Raw, snap.RV)
			}
			v.again()
			v.revise.revised, v.revise.concurrent = true, nil
			v.prior.Raw, v.prior.Unknowns, v.prior.Stale, v.prior.StaleUnknown, v.prior.RacedBy, v.prior.RacedFrom = nil, nil, nil, "", "", nil
			v.prior.Unknown = why
			e.jobs <- v
		}
	}
}

// revisionRan is the revision of etcd a successful request ran at, shown by its response, when
// the request ran after every write completed before it was received: a create's result (its
// own, new revision) or a consistent list's (one that asks for no resourceVersion and
// continues none: served at a revision at or after the latest committed when it was received);
// 0 otherwise. Only a resource the replay knows the kind of counts: an aggregated API's
// resourceVersions are its own; so are Events' where a cluster stores them in an etcd of their
// own (kube-apiserver's --etcd-servers-overrides), and a lower one would date the snapshot
// after writes it did not hold (review).
func revisionRan(ev *Event, t target) uint64 {
	if c := ev.Code(); c < 200 || c >= 300 || isDryRun(ev) || t.sub != "" || t.mainKind.Kind == "" || isEvents(t.gvr.GroupResource()) || !hasBody(ev.ResponseObject) {
		return 0
	}
	switch ev.Verb {
	case "create":
	case "list":
		u, err := url.ParseRequestURI(ev.RequestURI)
		if err != nil {
			return 0
		}
		if q := u.Query(); q.Get("resourceVersion") != "" || q.Get("continue") != "" {
			return 0
		}
	default:
		return 0
	}
	h, err := auditlog.DecodeHeader(ev.ResponseObject)
	if err != nil {
		return 0
	}
	if ev.Verb == "create" && (h.GetName() != t.name && t.name != "" || h.GroupVersionKind() != t.mainKind) {
		return 0 // not the object created (a Status)
	}
	return state.ResourceVersion(h.GetResourceVersion())
}

// snapshotReadLimit bounds how far into the log findSnapshotRead reads: a snapshot is taken
// when the log begins, or soon after.
const snapshotReadLimit = time.Hour

// snapshotReadSlack is how long findSnapshotRead reads on after the log first shows a revision
// after the snapshot's: the log holds requests in the order they completed, within a moment.
const snapshotReadSlack = 10 * time.Second

// findSnapshotRead reads the log's first events again for when the snapshot was read, when the
// log begins before it: the latest request received that ran at a revision at or below the
// snapshot's greatest (revisionRan: a create's result, a consistent list's, the snapshot's own
// lists among them) was received before the snapshot was read, and every request completed
// before it, too. Those requests read what the snapshot does not hold (beforeSnapshot), and
// their writes do not replace what it holds (State.SnapshotRead). It needs the log's files
// (not standard input); without a request that shows a revision, the snapshot is taken as read
// before the log's first line.
func (r *Replayer) findSnapshotRead(ctx context.Context) {
	newest := r.state.SnapshotMax()
	if newest == 0 {
		return
	}
	srcs := r.cat.ahead.readable()
	if len(srcs) == 0 {
		return
	}
	type shown struct {
		rev      uint64
		received time.Time
		by       string
	}
	var evidence []shown
	// By resource, the latest request received that saw an object at a version older than the
	// snapshot's: the snapshot listed the resource after it.
	older := map[schema.GroupResource]shown{}
	var first, past time.Time
	_ = source.Lines(ctx, srcs, r.cfg.maxLine, func(l auditlog.Line) bool {
		if l.Err != nil {
			return false
		}
		if l.Skip != "" || l.Duplicate {
			return true
		}
		ev, err := auditlog.Decode(l.Data)
		if err != nil || !ev.Final() {
			return true
		}
		done := auditlog.ParseTime(ev.StageTimestamp)
		if first.IsZero() {
			first = done
		}
		if !past.IsZero() && done.Sub(past) > snapshotReadSlack || done.Sub(first) > snapshotReadLimit {
			return false
		}
		received := ev.Received()
		if received.IsZero() {
			return true
		}
		t, _ := resolveIn(r.cur().resources, ev)
		switch v := revisionRan(ev, t); {
		case v == 0:
		case v <= newest:
			evidence = append(evidence, shown{v, received, lineRef{l.File, l.Num}.String()})
		case past.IsZero():
			past = done
		}
		if v := shownVersion(ev, t); v > 0 {
			gr := state.StorageOf(t.gvr.GroupResource())
			if snap := r.state.SnapshotVersionOf(gr, t.namespace, t.name); v < snap && received.After(older[gr].received) {
				older[gr] = shown{v, received, lineRef{l.File, l.Num}.String()}
			}
		}
		return true
	})
	// By resource, the latest request received before the snapshot listed it: one that ran at
	// or below the snapshot's revision of it, or that saw one of its objects at a version
	// older than the snapshot's.
	for _, gr := range r.state.SnapshotResources() {
		latest, why := older[gr], ""
		if !latest.received.IsZero() {
			why = fmt.Sprintf("the request at %s, received at %s, saw an object of %s at resourceVersion %d, older than the snapshot's", latest.by, latest.received.UTC().Format(time.RFC3339Nano), gr, latest.rev)
		}
		for _, e := range evidence {
			if e.rev <= r.state.SnapshotNewest(gr) && e.received.After(latest.received) {
				latest = e
				why = fmt.Sprintf("the request at %s, received at %s, ran at resourceVersion %d, at or below the snapshot's %d for %s", e.by, e.received.UTC().Format(time.RFC3339Nano), e.rev, r.state.SnapshotNewest(gr), gr)
			}
		}
		if latest.received.IsZero() {
			continue
		}
		if r.state.SnapshotRead == nil {
			r.state.SnapshotRead = map[schema.GroupResource]time.Time{}
			r.snapshotRead = map[schema.GroupResource]string{}
		}
		r.state.SnapshotRead[gr] = latest.received
		r.snapshotRead[gr] = why
	}
}

// isEvents says whether gr is Events' (core's or events.k8s.io's), which a cluster may store in
// an etcd of their own.
func isEvents(gr schema.GroupResource) bool {
	return gr.Resource == "events" && (gr.Group == "" || gr.Group == "events.k8s.io")
}

// shownVersion is the resourceVersion of the request's own object its successful response
// shows (a write's, a get's that asks for no resourceVersion: one that does may be served from
// a watch cache behind the object), 0 otherwise.
func shownVersion(ev *Event, t target) uint64 {
	if c := ev.Code(); c < 200 || c >= 300 || isDryRun(ev) || t.name == "" || t.mainKind.Kind == "" || isEvents(t.gvr.GroupResource()) || !hasBody(ev.ResponseObject) || (ev.Verb != "get" && ev.Verb != "update" && ev.Verb != "patch" && ev.Verb != "create" && ev.Verb != "delete") {
		return 0
	}
	if ev.Verb == "get" {
		u, err := url.ParseRequestURI(ev.RequestURI)
		if err != nil || u.Query().Get("resourceVersion") != "" {
			return 0
		}
	}
	h, err := auditlog.DecodeHeader(ev.ResponseObject)
	if err != nil || h.GroupVersionKind() != t.mainKind || h.GetName() != t.name || h.GetNamespace() != t.namespace {
		return 0
	}
	return state.ResourceVersion(h.GetResourceVersion())
}

// beforeSnapshot makes what a job completed before the snapshot was read would read of it
// unknown: its old object, where the State holds the snapshot's version, and the params and
// namespaces of the resources the snapshot holds.
func (r *Replayer) beforeSnapshot(j *job) {
	if len(r.snapshotRead) == 0 {
		return
	}
	done := auditlog.ParseTime(j.ev.StageTimestamp)
	why := func(gr schema.GroupResource) string {
		return "the snapshot was read after this request completed (" + r.snapshotRead[state.StorageOf(gr)] + ")"
	}
	if gr := j.t.gvr.GroupResource(); j.prior.FromSnapshot && j.prior.Raw != nil && r.state.BeforeSnapshot(gr, done) {
		j.prior.Raw, j.prior.Unknowns, j.prior.Stale, j.prior.StaleUnknown, j.prior.RacedBy, j.prior.RacedFrom, j.prior.IfThere = nil, nil, nil, "", "", nil, nil
		j.prior.Unknown = why(gr) + ": the version of the object this request read is not the snapshot's"
	}
	var unknown map[schema.GroupResource]string
	for _, gr := range r.state.SnapshotTyped() {
		if _, ok := j.view.Unknown[gr]; ok || !r.state.BeforeSnapshot(gr, done) {
			continue
		}
		if unknown == nil {
			unknown = make(map[schema.GroupResource]string, len(j.view.Unknown)+1)
			for k, w := range j.view.Unknown {
				unknown[k] = w
			}
		}
		unknown[gr] = why(gr)
	}
	if unknown != nil {
		j.view.Unknown = unknown
	}
}
