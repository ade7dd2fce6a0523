package replay

import (
	"bytes"
	"context"
	"fmt"
	"maps"
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
	var committed []shownRevision
	var stop time.Time // when the requests it stopped reading at completed (zero: the log's end)
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
					stop = at
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
			stop = done
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
		if v := committedRevision(ev, t); v > 0 {
			committed = append(committed, shownRevision{done, v})
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
	if len(r.snapshotRead) > 0 {
		// Read after the log began: of the resources it shows no such request of, too, it
		// may hold what the log's first writes did.
		r.state.NoteSnapshotWrites(r.snapshotWrites(r.logWrites(ctx, srcs, stop), newRevisionFloor(committed, newest)))
	}
}

// logWrites reads the log's beginning again for its successful writes, up to those that
// completed at until (zero: to the log's end).
func (r *Replayer) logWrites(ctx context.Context, srcs []Source, until time.Time) []logWrite {
	var writes []logWrite
	_ = source.Lines(ctx, srcs, r.cfg.maxLine, func(l auditlog.Line) bool {
		if l.Err != nil {
			return false
		}
		if l.Skip != "" || l.Duplicate {
			return true
		}
		if !mayWrite(l.Data) {
			// Its time read now and then.
			at := time.Time{}
			if l.Num%1024 == 1 {
				at = stageTimeOf(l.Data)
			}
			return until.IsZero() || at.IsZero() || at.Before(until)
		}
		ev, err := auditlog.Decode(l.Data)
		if err != nil || !ev.Final() {
			return true
		}
		done := auditlog.ParseTime(ev.StageTimestamp)
		if !until.IsZero() && !done.Before(until) {
			return false
		}
		t, _ := resolveIn(r.cur().resources, ev)
		if c := ev.Code(); c >= 200 && c < 300 && t.name != "" && isWrite(ev.Verb) && !isDryRun(ev) && !ev.Received().IsZero() {
			writes = append(writes, logWrite{ev.Verb, state.ReplacedKey{GR: state.StorageOf(t.gvr.GroupResource()), Obj: state.ObjectKey{Namespace: t.namespace, Name: t.name}},
				state.SnapshotWrite{Received: ev.Received(), Done: done, By: lineRef{l.File, l.Num, l.Item}.String()}, shownVersion(ev, t)})
		}
		return true
	})
	return writes
}

// logWrite is a successful write the log's beginning records (verb, to the object key), and
// its result's resourceVersion (shownVersion, 0 when not shown).
type logWrite struct {
	verb  string
	key   state.ReplacedKey
	write state.SnapshotWrite
	rv    uint64
}

// snapshotWrites are, by object the snapshot holds, the writes of the log's beginning that may
// have been committed at or before the snapshot's version of it, or read an older one: one
// whose result is not shown, received before any response showed a revision at or past that
// version (floor); one whose result is below it (a deletion's: the version it removed); one
// whose result is that version, received before a response showed it (otherwise it changed
// nothing, and was answered with the version it read).
func (r *Replayer) snapshotWrites(writes []logWrite, floor *revisionFloor) map[state.ReplacedKey][]state.SnapshotWrite {
	out := map[state.ReplacedKey][]state.SnapshotWrite{}
	for _, w := range writes {
		v := r.state.SnapshotVersionOf(w.key.GR, w.key.Obj.Namespace, w.key.Obj.Name)
		switch {
		case v == 0:
		case w.verb == "delete" && w.key.Obj.Name != "" && !r.state.SnapshotMarked(w.key.GR, w.key.Obj.Namespace, w.key.Obj.Name):
			// It removed the object, or marked it deleted: after the snapshot was read, which
			// holds it unmarked (or a create the log records after it made that version).
		case w.rv == 0 && floor.at(w.write.Received) < v, w.rv > 0 && w.rv < v,
			w.rv == v && w.verb != "delete" && floor.at(w.write.Received) < v:
			out[w.key] = append(out[w.key], w.write)
		}
	}
	return out
}

// isWrite says whether a verb writes (a subresource's create among them).
func isWrite(verb string) bool {
	return verb == "create" || verb == "update" || verb == "patch" || verb == "delete"
}

// writeVerbs are the verbs of isWrite as an event's JSON holds them.
var writeVerbs = [][]byte{[]byte(`"verb":"patch"`), []byte(`"verb":"update"`), []byte(`"verb":"delete"`), []byte(`"verb":"create"`)}

// mayWrite says whether an event's JSON may be a write's (isWrite).
func mayWrite(data []byte) bool {
	for _, v := range writeVerbs {
		if bytes.Contains(data, v) {
			return true
		}
	}
	return false
}

// shownRevision is a revision a response completed at done showed.
type shownRevision struct {
	done time.Time
	rev  uint64
}

// revisionFloor is, by when they completed, the greatest revision the log's responses showed
// up to then: a request received after a response completed ran at a later revision than the
// one it showed. It holds the log's beginning, up to the first response that showed a revision
// at or past the snapshot's greatest (past the log's part read, it stays at its last).
type revisionFloor struct {
	done []time.Time
	rev  []uint64
}

// newRevisionFloor makes the floor of the revisions shown, up to the first at or past upTo.
func newRevisionFloor(shown []shownRevision, upTo uint64) *revisionFloor {
	slices.SortStableFunc(shown, func(a, b shownRevision) int { return a.done.Compare(b.done) })
	f := &revisionFloor{}
	var m uint64
	for _, s := range shown {
		if s.rev <= m {
			continue
		}
		m = s.rev
		f.done, f.rev = append(f.done, s.done), append(f.rev, m)
		if m >= upTo {
			break
		}
	}
	return f
}

// at is the greatest revision a response completed before at showed, 0 when none did (or at
// is not known).
func (f *revisionFloor) at(at time.Time) uint64 {
	if at.IsZero() {
		return 0
	}
	i, _ := slices.BinarySearchFunc(f.done, at, func(d, at time.Time) int {
		if d.Before(at) {
			return -1
		}
		return 1
	})
	if i == 0 {
		return 0
	}
	return f.rev[i-1]
}

// committedRevision is a revision etcd had committed when a successful request completed, as
// its response shows it (showsRevision): a list's, or its object's resourceVersion (a write's
// result, an object read, a Scale's); 0 when it shows none.
func committedRevision(ev *Event, t target) uint64 {
	if !showsRevision(ev, t) {
		return 0
	}
	h, err := auditlog.DecodeHeader(ev.ResponseObject)
	if err != nil || h.GetKind() == "Status" {
		return 0
	}
	return state.ResourceVersion(h.GetResourceVersion())
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
// namespaces of the resources the snapshot holds. So where the snapshot's version may have
// been written after it was received (State.SnapshotWrittenAfter), unless its own result shows
// the version it wrote: by another write, or by itself where it changes nothing of that
// version (mayHoldEffect).
func (r *Replayer) beforeSnapshot(j *job) {
	if len(r.snapshotRead) == 0 {
		return
	}
	done, received := auditlog.ParseTime(j.ev.StageTimestamp), receivedOf(j.ev)
	why := func(gr schema.GroupResource) string {
		return "the snapshot was read after this request completed (" + r.snapshotRead[state.StorageOf(gr)] + ")"
	}
	if gr := j.t.gvr.GroupResource(); j.prior.FromSnapshot && j.prior.Raw != nil {
		if r.state.BeforeSnapshot(gr, done) {
			j.prior = j.prior.WithoutVersion(why(gr) + ": the version of the object this request read is not the snapshot's")
		} else if after, self, other := r.state.SnapshotWrittenAfter(gr, j.t.namespace, j.t.name, received, done); shownVersion(j.ev, j.t) == 0 {
			switch {
			case other:
				j.prior = j.prior.WithoutVersion(after + ": the version of the object this request read may be an older one")
			case self && r.mayHoldEffect(j):
				j.prior = j.prior.WithoutVersion("the snapshot was read after the log began, and its version of the object may be this request's result: the request changes nothing of it, and the log does not show the version it wrote")
			}
		}
	}
	var unknown map[schema.GroupResource]string
	for _, gr := range r.state.SnapshotTyped() {
		if _, ok := j.view.Unknown[gr]; ok {
			continue
		}
		w := ""
		if r.state.BeforeSnapshot(gr, done) {
			w = why(gr)
		} else if after, ok := r.state.SnapshotTypedWrittenAfter(gr, received, done); ok {
			w = after
		} else {
			continue
		}
		if unknown == nil {
			unknown = make(map[schema.GroupResource]string, len(j.view.Unknown)+1)
			for k, w := range j.view.Unknown {
				unknown[k] = w
			}
		}
		unknown[gr] = w
	}
	if unknown != nil {
		j.view.Unknown = unknown
	}
}

// mayHoldEffect says whether the State's version of a successful write's object (the
// snapshot's) may already hold what the write did: a patch that changes nothing of it, an
// update whose object it holds all of (but what the server sets), a deletion of an object it
// holds marked deleted; any other write, and one whose body the log does not hold, may.
func (r *Replayer) mayHoldEffect(j *job) bool {
	old, _ := j.prior.Decode()
	switch {
	case old == nil:
		return true
	case j.ev.Verb == "delete" && j.t.sub == "":
		return old.GetDeletionTimestamp() != nil
	case len(bytes.TrimSpace(j.ev.RequestObject)) == 0:
		return true
	case j.ev.Verb == "patch" && (j.t.sub == "" || j.t.sub == "status"):
		patched, _, err := applyPatch(old, j.ev.RequestObject, j.ev.Query())
		return err != nil || sameContent(patched, old)
	case j.ev.Verb == "update" && (j.t.sub == "" || j.t.sub == "status"):
		body := auditlog.DecodeAnyObject(j.ev.RequestObject)
		if body == nil {
			return true
		}
		if j.t.sub == "status" {
			return holdsAll(old.Object["status"], body.Object["status"])
		}
		sent := withoutVersion(body.Object)
		delete(sent, "status")
		if meta, ok := sent["metadata"].(map[string]any); ok {
			meta = maps.Clone(meta)
			delete(meta, "generation")
			sent["metadata"] = meta
		}
		return holdsAll(old.Object, sent)
	}
	return true
}

// holdsAll says whether a value decoded from JSON holds every member of sub's objects with
// sub's values (its lists of the same length, item by item).
func holdsAll(v, sub any) bool {
	switch s := sub.(type) {
	case map[string]any:
		m, ok := v.(map[string]any)
		if !ok {
			return len(s) == 0 && v == nil
		}
		for k, sv := range s {
			if !holdsAll(m[k], sv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := v.([]any)
		if !ok || len(l) != len(s) {
			return len(s) == 0 && v == nil
		}
		for i := range s {
			if !holdsAll(l[i], s[i]) {
				return false
			}
		}
		return true
	}
	return state.ValuesEqual(v, sub)
}
