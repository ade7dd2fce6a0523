package replay

import (
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
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
		<-j.done
		r.forgetReached(j, d)
		e.snapshotHeld = slices.DeleteFunc(e.snapshotHeld, func(o *job) bool { return o == j })
		if !isDryRun(j.ev) {
			// The State holds the write applied to the snapshot's version again.
			r.state.Unwrite(j.revise.key.GR, j.revise.key.Obj.Namespace, j.revise.key.Obj.Name, lineRef{j.d.file, j.d.num}.String(), j.prior.Raw, j.prior.RV)
		}
		j.again()
		j.revise.revised, j.revise.concurrent = true, nil
		j.prior.Raw, j.prior.Unknowns, j.prior.Stale, j.prior.StaleUnknown, j.prior.RacedBy, j.prior.RacedFrom = nil, nil, nil, "", "", nil
		j.prior.Unknown = fmt.Sprintf("the snapshot was read after this request completed: the request at %s, received after it (%s, %s), ran at resourceVersion %d, at or below the snapshot's greatest of %s (%d), so the snapshot holds what this request left, not the version it read",
			lineRef{d.file, d.num}, received.UTC().Format(time.RFC3339Nano), j.revise.completed.UTC().Format(time.RFC3339Nano), rev, j.revise.key.GR, newest)
		e.jobs <- j
	}
}

// revisionRan is the revision of etcd a successful request ran at, shown by its response, when
// the request ran after every write completed before it was received: a create's result (its
// own, new revision) or a consistent list's (one that asks for no resourceVersion and
// continues none: served at a revision at or after the latest committed when it was received);
// 0 otherwise. Only a resource the replay knows the kind of counts: an aggregated API's
// resourceVersions are its own; so are those of Events where a cluster stores them in an etcd
// of their own (kube-apiserver's --etcd-servers-overrides, which large clusters set for them).
func revisionRan(ev *Event, t target) uint64 {
	if c := ev.Code(); c < 200 || c >= 300 || isDryRun(ev) || t.sub != "" || t.mainKind.Kind == "" || t.gvr.Resource == "events" || !hasBody(ev.ResponseObject) {
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
