package state

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// A snapshot read after the log began may hold the effect of the log's first writes. By
// resource, SnapshotRead says when the log shows it read that resource; but a resource whose
// writes the log records without their results never shows it, and an object's version in the
// snapshot may have been written by one of them. Those writes (SnapshotWrite) are known by
// reading the log's beginning again (Replayer.findSnapshotRead): a request received before one
// of them completed may have read a version older than the snapshot's.

// SnapshotWrite is a successful write of the log to an object the snapshot holds that may
// have been committed at or before the snapshot's version of it: its result is not shown, and
// no response completed before it was received showed a revision at or past that version; or
// its result is shown at or below that version. By is where the log records it.
type SnapshotWrite struct {
	Received, Done time.Time
	By             string
}

// NoteSnapshotWrites records, by object, the writes that may have written the snapshot's
// version of it (or one before it).
func (s *State) NoteSnapshotWrites(ws map[ReplacedKey][]SnapshotWrite) {
	s.snapshotWrites, s.snapshotWritesDone = ws, map[schema.GroupResource]time.Time{}
	for k, writes := range ws {
		for _, w := range writes {
			if w.Done.After(s.snapshotWritesDone[k.GR]) {
				s.snapshotWritesDone[k.GR] = w.Done
			}
		}
	}
}

// SnapshotWrittenAfter says whether the snapshot's version of an object may have been written
// after a request received at received (zero: not known), which completed at done: a write
// that may have written it, or one before it, completed after the request was received; and
// whether the request is itself one (self), which may have written the snapshot's version.
func (s *State) SnapshotWrittenAfter(gr schema.GroupResource, namespace, name string, rc Received, done time.Time) (why string, self, after bool) {
	received := rc.At
	for _, w := range s.snapshotWrites[ReplacedKey{StorageOf(gr), ObjectKey{namespace, name}}] {
		switch {
		case w.Received.Equal(received) && w.Done.Equal(done):
			self = true
		case received.IsZero() || !w.Done.Before(received):
			after = true
			why = fmt.Sprintf("the snapshot was read after the log began, and its version of %s may have been written by the write at %s, %s", describeKey(gr, namespace, name), w.By, rc.after(w.Done))
		}
	}
	return why, self, after
}

// SnapshotTypedWrittenAfter is SnapshotWrittenAfter for any object of gr, a resource of params
// or namespaces, but one written by the request itself.
func (s *State) SnapshotTypedWrittenAfter(gr schema.GroupResource, rc Received, done time.Time) (string, bool) {
	received := rc.At
	gr = StorageOf(gr)
	if last, ok := s.snapshotWritesDone[gr]; !ok || !received.IsZero() && last.Before(received) {
		return "", false
	}
	for k := range s.snapshotWrites {
		if k.GR != gr {
			continue
		}
		if why, _, after := s.SnapshotWrittenAfter(gr, k.Obj.Namespace, k.Obj.Name, rc, done); after {
			return why, true
		}
	}
	return "", false
}

// describeKey names an object of a resource.
func describeKey(gr schema.GroupResource, namespace, name string) string {
	if namespace == "" {
		return gr.String() + " " + name
	}
	return gr.String() + " " + namespace + "/" + name
}

// snapshotMayHoldWrite says whether the snapshot's version of an object (old) may hold the
// effect of the write being applied, which the log holds without its result (u: its result on
// that version): the object is that version, or u, and what they differ in is not known. Where
// they do not differ, either way it is that version; where the write is the last that may
// have written it and changes it, the snapshot was read before it.
func (s *State) snapshotMayHoldWrite(gr schema.GroupResource, old *entry, u *unstructured.Unstructured) ([]vapccel.Unknown, bool) {
	why, self, after := s.SnapshotWrittenAfter(gr, u.GetNamespace(), u.GetName(), ReceivedAt(s.current.received), s.current.writeDone)
	if !self {
		return nil, false
	}
	was, err := auditlog.DecodeObject(old.Raw)
	if err != nil {
		return []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object"}, Why: err.Error()}}, true
	}
	diffs := Differing(was.Object, u.Object, nil, "")
	if len(diffs) == 0 || !after {
		return nil, len(diffs) == 0
	}
	for i := range diffs {
		diffs[i].Why = why + ": the write at " + s.current.writeBy + " changed it, or the snapshot holds what it wrote"
	}
	return diffs, true
}

// SnapshotMarked says whether the snapshot holds an object marked deleted (a
// deletionTimestamp).
func (s *State) SnapshotMarked(gr schema.GroupResource, namespace, name string) bool {
	e := s.Objects[StorageOf(gr)][ObjectKey{namespace, name}]
	if e == nil || !e.fromSnapshot() || e.Raw == nil {
		return false
	}
	h, err := auditlog.DecodeHeader(e.Raw)
	return err == nil && h.GetDeletionTimestamp() != nil
}
