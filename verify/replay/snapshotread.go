package replay

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
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
// wrote, and the requests before it on the snapshot's params and namespaces. etcd's revisions
// say when the snapshot was read: findSnapshotRead reads the log's first events again for them.

// revisionRan is the revision of etcd a successful request ran at, shown by its response, when
// the request ran after every write completed before it was received: a create's result (its
// own, new revision) or a consistent list's (one that asks for no resourceVersion and
// continues none: served at a revision at or after the latest committed when it was received);
// 0 otherwise. Only a resource the replay knows the kind of counts: an aggregated API's
// resourceVersions are its own; so are Events' where a cluster stores them in an etcd of their
// own (kube-apiserver's --etcd-servers-overrides), and a lower one would date the snapshot
// after writes it did not hold (review).
func revisionRan(ev *Event, t target) uint64 {
	if !showsRevision(ev, t) || t.sub != "" || ev.Verb != "create" && (ev.Verb != "list" || asksVersion(ev)) {
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

// responseObjectKey is the member of an event that holds its response's object.
var responseObjectKey = []byte(`"responseObject"`)

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
		r.snapshotUnchecked = true
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
		if !bytes.Contains(l.Data, responseObjectKey) {
			// Shows no revision (showsRevision): not decoded, but its time read now and then.
			if l.Num%1024 == 1 {
				at := stageTimeOf(l.Data)
				if first.IsZero() {
					first = at
				}
				if !at.IsZero() && (!past.IsZero() && at.Sub(past) > snapshotReadSlack || at.Sub(first) > snapshotReadLimit) {
					return false
				}
			}
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
			evidence = append(evidence, shown{v, received, lineRef{l.File, l.Num, l.Item}.String()})
		case past.IsZero():
			past = done
		}
		if v := shownVersion(ev, t); v > 0 {
			gr := state.StorageOf(t.gvr.GroupResource())
			if snap := r.state.SnapshotVersionOf(gr, t.namespace, t.name); v < snap && received.After(older[gr].received) {
				older[gr] = shown{v, received, lineRef{l.File, l.Num, l.Item}.String()}
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

// showsRevision says whether a request's response may show a revision of the etcd the
// snapshot was read from: successful, not a dry run, with its object, of a resource the replay
// knows the kind of (an aggregated API's resourceVersions are its own) other than Events.
func showsRevision(ev *Event, t target) bool {
	c := ev.Code()
	return c >= 200 && c < 300 && !isDryRun(ev) && t.mainKind.Kind != "" && !isEvents(t.gvr.GroupResource()) && hasBody(ev.ResponseObject)
}

// asksVersion says whether a read asks for a resourceVersion, or continues a list: it may be
// served from a watch cache behind the object, or at the revision of the list's first page.
func asksVersion(ev *Event) bool {
	u, err := url.ParseRequestURI(ev.RequestURI)
	if err != nil {
		return true
	}
	q := u.Query()
	return q.Get("resourceVersion") != "" || q.Get("continue") != ""
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
	switch {
	case !showsRevision(ev, t) || t.name == "":
		return 0
	case ev.Verb == "get" && asksVersion(ev):
		return 0
	case ev.Verb != "get" && ev.Verb != "update" && ev.Verb != "patch" && ev.Verb != "create" && ev.Verb != "delete":
		return 0
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
		j.prior = j.prior.WithoutVersion(why(gr) + ": the version of the object this request read is not the snapshot's")
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
