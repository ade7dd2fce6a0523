package state

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// State is the cluster as a replay knows it at a point of the log: a snapshot, then every
// write the log shows, for the resources some policy can read (params, namespaces, old
// objects). Its Views (StateView) serve params and namespaces to the evaluator
// (verify.ObjectStore) as they were at one point of the log, and record every read they could
// not answer for sure, so that a decision that rests on a guess is reported as indeterminate.
//
// An object's state is known (its JSON), unknown (a write the log shows without the result, an
// object changed by a subresource whose result the log does not hold), or absent. A resource is
// complete when every object of it is known: it came in a snapshot, or the log begins with the
// cluster's creation. A miss in a resource that is not complete is not evidence of absence.
//
// The State is changed and read by one goroutine (the replay's ordered stage); Views may be read
// by others.
type State struct {
	mapper meta.RESTMapper
	keep   func(schema.GroupResource) bool
	// Lag is how long after a write completed kube-apiserver's informers and watch cache
	// may not hold it yet (the replay's DefaultLag unless set).
	Lag time.Duration
	// buckets hold params and namespaces in the form the evaluator reads them (see View);
	// prepare converts objects to that form.
	buckets    map[schema.GroupResource]*bucket
	selectors  map[schema.GroupResource][]labels.Selector // indexed in the buckets
	prepare    *verify.MemoryStore
	typedKinds func(schema.GroupResource) bool

	Objects  map[schema.GroupResource]map[ObjectKey]*entry
	complete map[schema.GroupResource]string // replaced, never changed: Views share it
	AllSince string                          // "the log begins with the cluster's creation" or a reason; empty if not
	// incomplete are the resources allSince does not hold for any more (a write the log shows
	// without its effect); replaced, never changed: Views share it.
	incomplete map[schema.GroupResource]string // why
	// withdrawn is what the State knew whole before the first Withdraw, until Restore or
	// KeepWithdrawn.
	withdrawn *completeness

	// replaced are the entries the latest writes replaced (see priorOf), at most
	// maxReplaced of them, oldest first in replacedOrder.
	replaced      map[ReplacedKey][]replacedEntry
	replacedOrder []ReplacedKey
	replacedSeq   uint64
	// deleted are the versions the latest deletions removed (see deletedVersion).
	deleted latest[*entry]
	// gone are the resourceVersions of the latest deletions whose results the log shows (the
	// revision of the deletion): a write the log records after a deletion whose result is
	// below it was stored before it (store).
	gone latest[uint64]
	// deletions are when and where the latest deletions of objects completed, of objects
	// the State knew or not (DeletedAfter).
	deletions latest[deletion]
	// snapshotNewest is, by resource, the greatest resourceVersion of the snapshot's objects
	// (see Seeded).
	snapshotNewest map[schema.GroupResource]uint64
	// SnapshotRead is, by resource, when the log shows the snapshot listed it, when its first
	// lines came before (see Replayer.findSnapshotRead). A write that completed before it does
	// not replace the snapshot's version of its object (keepsSnapshot).
	SnapshotRead map[schema.GroupResource]time.Time
	// snapshotWrites are, by object, the log's writes that may have written the snapshot's
	// version of it, when the log shows the snapshot read after it began (SnapshotWrittenAfter).
	snapshotWrites map[ReplacedKey][]SnapshotWrite
	// snapshotWritesDone is, by resource, when the latest of snapshotWrites completed.
	snapshotWritesDone map[schema.GroupResource]time.Time
	// lastDone is when the latest write to an object of a resource completed, by namespace
	// (and across namespaces, the empty one), for list.
	lastDone map[ReplacedKey]time.Time
	// liveLookupDone is lastDone by namespace for the resources an admission plugin looks up
	// live (LiveLookupCached), copied on write: the Views hold it.
	liveLookupDone map[ReplacedKey]time.Time
	// typedWrites are the latest writes to params and namespaces, oldest first, with what
	// they replaced (see recentTyped). typedLost is, by resource, when the latest of those the
	// State no longer remembers completed.
	typedWrites []TypedWrite
	typedLost   map[schema.GroupResource]time.Time
	// current is the request being applied, between beginWrite and endWrite.
	current currentRequest
}

// currentRequest is the request a State is applying, between BeginWrite and EndWrite:
// it completed at writeDone (logged at writeBy), creating says it creates its object.
type currentRequest struct {
	received  time.Time
	writeDone time.Time
	// writeSecond says it completed in the second before writeDone (see TypedWrite.Second).
	writeSecond bool
	writeBy     string
	creating    bool
	// asked is the resourceVersion the write found, where its body gave it (Asked).
	asked uint64
	// commuted says the write stores what it stores whichever of it and the write the log
	// records before it, which ran concurrently with it, the server committed last
	// (Commuted).
	commuted bool
	// written are the objects of params and namespaces the request wrote, in order, and
	// writtenUnknown the resources of which it may have written objects the State does not
	// know (see aheadWrites).
	written        []readKey
	writtenUnknown []schema.GroupResource
}

// BeginWrite starts following the writes of one request of the log, received at received
// (zero when not known) and completed at done (when its writes to params and namespaces
// completed, a deletecollection's items too); create says it creates its object (which did
// not exist before it).
func (s *State) BeginWrite(create bool, received, done time.Time, by string) {
	s.current = currentRequest{creating: create, received: received, writeDone: done, writeBy: by,
		written: s.current.written[:0], writtenUnknown: s.current.writtenUnknown[:0]}
}

// Asked says the write being applied gave, in its body, the resourceVersion it had to find
// (an update's, a patch's precondition, which the store checks), and succeeded: the write
// that stored that version, or an older one, was committed before it, whatever their times
// (see committedBefore).
func (s *State) Asked(rv uint64) { s.current.asked = rv }

// ToTheSecond says the request being applied completed in the second before its done, not at
// it (see TypedWrite.Second).
func (s *State) ToTheSecond() { s.current.writeSecond = true }

// As runs fn as the write logged at by, which completed at done, that the replay revises
// after the log's order applied it: what fn leaves unknown carries when that write completed
// (see keptUnknown). The request being applied, if any, is as it was after.
func (s *State) As(by string, done time.Time, fn func()) {
	saved := s.current
	s.current.writeBy, s.current.writeDone, s.current.writeSecond, s.current.received, s.current.asked = by, done, false, time.Time{}, 0
	fn()
	s.current = saved
}

// EndWrite ends following the writes of one request: what is written outside a request (the
// snapshot) is no write of the log.
func (s *State) EndWrite() {
	s.current.creating, s.current.received, s.current.writeDone, s.current.writeBy, s.current.writeSecond, s.current.commuted, s.current.asked = false, time.Time{}, time.Time{}, "", false, false, 0
}

// Commuted says the write being applied stores what it stores whichever of it and the write
// the log records before it, which ran concurrently with it (ConcurrentBase), the server
// committed last: the object stays known.
func (s *State) Commuted() { s.current.commuted = true }

// ConcurrentBase is, for the write being applied to an object whose version the State rebuilt
// from a write the log records before it that ran concurrently with it (logged at by), the
// version that write replaced (base); ok false otherwise, when that version is not known, or
// when the write that stored it ran concurrently with this one too (three orders or more).
func (s *State) ConcurrentBase(gr schema.GroupResource, namespace, name string) (base Prior, by string, ok bool) {
	gr = StorageOf(gr)
	k := ObjectKey{namespace, name}
	e := s.Objects[gr][k]
	if e == nil || e.Raw == nil || e.rv != 0 || e.by == "" || !s.ranConcurrently(e) {
		return Prior{}, "", false
	}
	for _, r := range s.replaced[ReplacedKey{gr, k}] {
		// The write that stored the base completed before this one was received: this one
		// was not committed before it.
		if r.by == e && r.e.Raw != nil && r.e.Unknown == "" && !s.ranConcurrently(r.e) {
			return Prior{Kept: s.keep(gr), Complete: s.Complete(gr), Found: true, Raw: r.e.Raw, RV: r.e.rv, Unknowns: r.e.unknowns, Source: r.e.Source}, e.by, true
		}
	}
	return Prior{}, "", false
}

// ConcurrentWriters are, for the write being applied to an object whose version the State
// rebuilt from writes the log records before it, those of them that ran concurrently with it
// (where the log records them), newest first: the order the server committed it among them
// in is not known. ok false where the State does not know one of the versions they replaced,
// or the object's version is not one the replay rebuilt (see ConcurrentBase).
func (s *State) ConcurrentWriters(gr schema.GroupResource, namespace, name string) (by []string, ok bool) {
	gr = StorageOf(gr)
	k := ObjectKey{namespace, name}
	cur := s.Objects[gr][k]
	if cur == nil || cur.Raw == nil || cur.rv != 0 || cur.by == "" || !s.ranConcurrently(cur) {
		return nil, false
	}
	for cur != nil && s.ranConcurrently(cur) {
		if cur.Raw == nil || cur.Unknown != "" || cur.by == "" || len(by) == maxReplacedPerObject {
			return nil, false
		}
		by = append(by, cur.by)
		var before *entry
		for _, r := range s.replaced[ReplacedKey{gr, k}] {
			if r.by == cur {
				before = r.e
			}
		}
		if before == nil || before.Raw == nil {
			return nil, false
		}
		cur = before
	}
	return by, true
}

// lose remembers that the State no longer remembers the write w (see recentTyped).
func (s *State) lose(w TypedWrite) {
	if s.typedLost == nil {
		s.typedLost = map[schema.GroupResource]time.Time{}
	}
	if w.Done.After(s.typedLost[w.GR]) {
		s.typedLost[w.GR] = w.Done
	}
}

// TypedWrite is a write to an object the evaluator reads (a param, a namespace): the entry it
// replaced (had says there was one), and when it completed (zero for the snapshot's).
type TypedWrite struct {
	GR   schema.GroupResource
	Obj  ObjectKey
	Prev typedEntry
	Had  bool
	// Created says the write created the object; unknownBefore that whether it existed
	// before is not known (the State did not hold it, and does not hold every object of gr).
	Created, UnknownBefore bool
	Done                   time.Time
	// Second says the write completed in the second before Done, not at Done: its export
	// gives its time within a second (auditlog.LostStageTime).
	Second bool
	// Ahead says the write is one the log records after the request it concerns, which may
	// have read what it wrote (see Replayer.reviseAhead): prev and had are then the entry it
	// wrote. by is where the log records the write.
	Ahead bool
	By    string
}

// maxTypedWrites bounds the writes to params and namespaces remembered.
const maxTypedWrites = 4096

type ReplacedKey struct {
	GR  schema.GroupResource
	Obj ObjectKey
}

type replacedEntry struct {
	e   *entry
	seq uint64
	by  *entry // the entry that replaced it
}

// maxReplaced bounds the replaced entries kept: a write the log records out of the storage's
// order is one made concurrently with another, moments apart.
const maxReplaced = 1024

// maxReplacedPerObject bounds the replaced entries kept of one object: clients that write one
// object many times a second (four, each every few milliseconds, in an explorer's run) ask for
// versions four writes old. (maxReplaced bounds them all.)
const maxReplacedPerObject = 16

type ObjectKey struct{ Namespace, Name string }

type entry struct {
	Raw []byte // JSON of the object; nil when unknown
	// rv is the object's resourceVersion when the entry is the log's own JSON of it (0 when
	// not known, or when the replay rebuilt the object).
	rv uint64
	// done is when the write that stored it completed (its event's stageTimestamp), when the
	// log says; by is where the log records that write (empty for the snapshot's).
	done time.Time
	by   string
	// received is when the write that stored it was received, when the log says.
	received time.Time
	// created says that write created the object.
	created bool
	// asked is the resourceVersion that write found, where its body gave it (State.Asked).
	asked uint64
	// follows says the write that stored it replaced a version of the object (it was not
	// created): the server may still have read that version from its watch cache (staleOf).
	follows bool
	// keptBut says the write that stored it changed nothing of the object but its unknowns
	// (PutKept).
	keptBut bool
	// unknowns are fields of a known object whose values the replay does not know (the clock
	// of a write the log does not show), with paths from the object ("object" root).
	unknowns []vapccel.Unknown
	// Unknown says why the object's state is not known.
	Unknown string
	// deletedDone and deletedBy, for an entry the State keeps of a deleted object (deleted),
	// are when the deletion completed and where the log records it.
	deletedDone time.Time
	deletedBy   string
	// deletedRV is the deletion's own revision, when its response shows it (DeleteAt, exact):
	// a write whose result is after it was committed after the deletion.
	deletedRV uint64
	// unmarked is the JSON of the version the object has unless a refused DELETE left it
	// marked deleted, which raw is (see Replayer.refusedPodDelete); nil otherwise.
	unmarked []byte
	// ifThere is the JSON of the version the object has if it is there at all, with what is
	// not known of it (ifThereUnknowns): a deletion whose result the log does not show (level
	// Metadata) removed it, or left it marked deleted (a graceful deletion, finalizers), and
	// the entry's state is not known (Unknown); nil otherwise (see GoneOrMarked).
	ifThere         []byte
	ifThereUnknowns []vapccel.Unknown
	// Labels of a known object, for selectors.
	Labels labels.Set
	// Source says where the state came from (a line of the log, the snapshot).
	Source string
}

// NewState returns an empty State for the resources keep accepts; typedKinds are the resources
// the evaluator reads (params and namespaces).
func NewState(mapper meta.RESTMapper, keep, typedKinds func(schema.GroupResource) bool) *State {
	return &State{
		mapper: mapper, keep: keep, typedKinds: typedKinds,
		buckets:  map[schema.GroupResource]*bucket{},
		prepare:  verify.NewMemoryStore(mapper, verify.StoreDropUnknownFields()),
		Objects:  map[schema.GroupResource]map[ObjectKey]*entry{},
		complete: map[schema.GroupResource]string{},
	}
}

// IndexSelectors makes the State index the objects of the resource the selectors match, for
// Views to list them without matching every object. Call it before any object of the
// resource is put.
func (s *State) IndexSelectors(gr schema.GroupResource, selectors []labels.Selector) {
	if s.selectors == nil {
		s.selectors = map[schema.GroupResource][]labels.Selector{}
	}
	s.selectors[gr] = append(s.selectors[gr], selectors...)
}

// Rescope follows a change of what the State keeps and reads, after a change of the catalog:
// selectors are the selectors of the bindings' paramRefs by param resource. A resource the
// evaluator reads now, or with other selectors, gets its bucket rebuilt from the objects the
// State holds; one it no longer reads loses its bucket.
func (s *State) Rescope(selectors map[schema.GroupResource][]labels.Selector) {
	if s.selectors == nil {
		s.selectors = map[schema.GroupResource][]labels.Selector{}
	}
	rebuild := map[schema.GroupResource]bool{}
	for gr, sels := range selectors {
		if !sameSelectors(s.selectors[gr], sels) {
			s.selectors[gr] = sels
			rebuild[gr] = true
		}
	}
	for gr := range s.buckets {
		if !s.typedKinds(gr) {
			delete(s.buckets, gr)
		}
	}
	for gr, objs := range s.Objects {
		if !s.typedKinds(gr) || (s.buckets[gr] != nil && !rebuild[gr]) {
			continue
		}
		b := newBucket(s.selectors[gr])
		s.buckets[gr] = b
		for k, e := range objs {
			if e.Raw == nil {
				b.set(k, typedEntry{unknown: e.Unknown})
				continue
			}
			u, err := auditlog.DecodeObject(e.Raw)
			if err != nil {
				b.set(k, typedEntry{unknown: fmt.Sprintf("%s: %v", e.Source, err)})
				continue
			}
			p := s.PrepareTyped(u, e.Raw)
			if p.err != nil {
				b.set(k, typedEntry{unknown: fmt.Sprintf("%s: %v", e.Source, p.err)})
				continue
			}
			b.set(ObjectKey{p.loc.Namespace, p.loc.Name}, typedEntry{gvr: p.loc.Resource, Obj: p.obj, labels: p.loc.Labels, Unknowns: slices.Clip(e.unknowns)})
		}
	}
}

func sameSelectors(a, b []labels.Selector) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].String() != b[i].String() {
			return false
		}
	}
	return true
}

// Clear forgets every object of the resource: the apiserver deleted them without the log
// showing it (the deletion of their CustomResourceDefinition).
func (s *State) Clear(gr schema.GroupResource) {
	gr = StorageOf(gr)
	delete(s.Objects, gr)
	if _, ok := s.buckets[gr]; ok {
		s.buckets[gr] = newBucket(s.selectors[gr])
	}
}

// MarkComplete records that every object of the resource is known from now on.
func (s *State) MarkComplete(gr schema.GroupResource, why string) {
	gr = StorageOf(gr)
	if _, ok := s.complete[gr]; !ok {
		c := make(map[schema.GroupResource]string, len(s.complete)+1)
		for k, v := range s.complete {
			c[k] = v
		}
		c[gr] = why
		s.complete = c
	}
	if s.incomplete[gr] != "" {
		s.incomplete = withoutKey(s.incomplete, gr)
	}
}

// withoutKey is a copy of the map without the key.
func withoutKey[V any](m map[schema.GroupResource]V, key schema.GroupResource) map[schema.GroupResource]V {
	c := make(map[schema.GroupResource]V, len(m))
	for k, v := range m {
		if k != key {
			c[k] = v
		}
	}
	return c
}

// MarkAllComplete records that every object of every resource is known from now on.
func (s *State) MarkAllComplete(why string) {
	if s.AllSince == "" {
		s.AllSince = why
	}
}

// Withdraw records that the log lacks writes the server made (why: the evidence, a write of an
// object the State held to be absent): no resource is taken as known whole from then on, as
// the log's beginning with the cluster's creation or a CRD's create had made some.
func (s *State) Withdraw(why string) {
	if s.withdrawn == nil && (s.AllSince != "" || len(s.complete) > 0) {
		s.withdrawn = &completeness{complete: s.complete, incomplete: s.incomplete, allSince: s.AllSince, why: why}
	}
	s.AllSince = ""
	if len(s.complete) == 0 {
		return
	}
	inc := make(map[schema.GroupResource]string, len(s.incomplete)+len(s.complete))
	for k, v := range s.incomplete {
		inc[k] = v
	}
	for gr := range s.complete {
		if inc[gr] == "" {
			inc[gr] = why
		}
	}
	s.incomplete, s.complete = inc, map[schema.GroupResource]string{}
}

// DeletedPrior is the version of the object its latest deletion the State remembers removed,
// when the State knows it whole.
func (s *State) DeletedPrior(gr schema.GroupResource, namespace, name string) (Prior, bool) {
	e := s.deleted.m[ReplacedKey{StorageOf(gr), ObjectKey{namespace, name}}]
	if e == nil || e.Raw == nil || e.Unknown != "" {
		return Prior{}, false
	}
	return Prior{Kept: true, Found: true, Raw: e.Raw, RV: e.rv, Unknowns: e.unknowns, Source: e.Source + ", the version its deletion removed"}, true
}

// DeletedAfter is where the version of the object the latest deletion removed was written,
// when that deletion completed after a request received at received: the request may have
// read that version first; "" otherwise.
func (s *State) DeletedAfter(gr schema.GroupResource, namespace, name string, rc Received) string {
	received := rc.At
	k := ReplacedKey{StorageOf(gr), ObjectKey{namespace, name}}
	d, ok := s.deletions.m[k]
	if e := s.Objects[k.GR][k.Obj]; !ok || received.IsZero() || !d.done.After(received) || e != nil && e.Raw != nil {
		return "" // (a version the State holds was written after the deletion)
	}
	return "the version the deletion at " + cmp.Or(d.by, "a request the log records before it") + " removed, " + rc.completedAfter(d.done)
}

// Removed says where and when the log removed the object, when the State holds none of it
// since (not created again, not merely marked deleted); "" when it did not.
func (s *State) Removed(gr schema.GroupResource, namespace, name string) (by string, done time.Time) {
	k := ReplacedKey{StorageOf(gr), ObjectKey{namespace, name}}
	d, ok := s.deletions.m[k]
	if !ok || s.Objects[k.GR][k.Obj] != nil {
		return "", time.Time{}
	}
	return cmp.Or(d.by, "a request the log records"), d.done
}

// NoteDeletion records that the latest write (see BeginWrite) deleted the object, or may have
// (a DELETE whose result the log does not show), for DeletedAfter.
func (s *State) NoteDeletion(gr schema.GroupResource, namespace, name string) {
	s.deletions.put(ReplacedKey{StorageOf(gr), ObjectKey{namespace, name}}, deletion{done: s.current.writeDone, by: s.current.writeBy})
}

// deletion is when a deletion completed, and where the log records it.
type deletion struct {
	done time.Time
	by   string
}

// DeletedStale says why a request received at received that read the version of the object a
// deletion removed (DeletedPrior, Prior.RacedFrom) may have read an older one first: the write
// that stored that version completed less than the lag before it was received (or after), and
// the server's first attempt may have read the watch cache's copy of the version before it
// (see staleOf); "" otherwise.
func (s *State) DeletedStale(gr schema.GroupResource, namespace, name string, rc Received) string {
	received := rc.At
	d := s.deleted.m[ReplacedKey{StorageOf(gr), ObjectKey{namespace, name}}]
	if d == nil || received.IsZero() || d.done.IsZero() || received.Sub(d.done) >= s.Lag {
		return ""
	}
	return fmt.Sprintf("the write at %s, which stored the version the deletion removed, completed %s: kube-apiserver's first attempt may have read the watch cache's copy of the version before it", d.Source, rc.Since(d.done))
}

// completeness is what the State knows whole.
type completeness struct {
	complete, incomplete map[schema.GroupResource]string
	allSince             string
	why                  string // the Withdraw's
}

// Restore gives the State back what it knew whole before Withdraw, and says whether it did: the
// write that withdrew it turned out to be the log's after all (a create logged after it that
// ran concurrently with it). What it took as incomplete since stays incomplete.
func (s *State) Restore() bool {
	w := s.withdrawn
	if w == nil {
		return false
	}
	s.withdrawn = nil
	inc := make(map[schema.GroupResource]string, len(w.incomplete))
	for k, v := range w.incomplete {
		inc[k] = v
	}
	for k, v := range s.incomplete {
		if v != w.why {
			inc[k] = v // taken as incomplete since, for another reason
		}
	}
	s.complete, s.incomplete, s.AllSince = w.complete, inc, w.allSince
	return true
}

// KeepWithdrawn forgets what the State knew whole before Withdraw: Restore does nothing after it.
func (s *State) KeepWithdrawn() { s.withdrawn = nil }

// NeverSeen says whether the State holds nothing of the object: no version, no deletion.
func (s *State) NeverSeen(gr schema.GroupResource, namespace, name string) bool {
	gr = StorageOf(gr)
	k := ObjectKey{namespace, name}
	if _, ok := s.Objects[gr][k]; ok {
		return false
	}
	rk := ReplacedKey{gr, k}
	_, deleted := s.deleted.m[rk]
	_, gone := s.gone.m[rk]
	return !deleted && !gone
}

// Complete says whether every object of the resource is known.
func (s *State) Complete(gr schema.GroupResource) bool {
	gr = StorageOf(gr)
	_, ok := s.complete[gr]
	return s.incomplete[gr] == "" && (ok || s.AllSince != "")
}

// Keeps says whether the State keeps objects of the resource.
func (s *State) Keeps(gr schema.GroupResource) bool { return s.keep(StorageOf(gr)) }

// Put records the object as the current state of its key.
func (s *State) Put(gr schema.GroupResource, u *unstructured.Unstructured, source string) error {
	gr = StorageOf(gr)
	if !s.keep(gr) {
		return nil
	}
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	return s.store(gr, u, raw, nil, source, 0, false)
}

// PutPartly is Put for an object the replay rebuilt itself, some of whose fields it does not
// know (unknowns, from the object's root).
func (s *State) PutPartly(gr schema.GroupResource, u *unstructured.Unstructured, unknowns []vapccel.Unknown, source string) error {
	return s.putPartly(gr, u, unknowns, source, 0)
}

// PutPartlyAt is PutPartly for an object whose resourceVersion is known to be the stored
// one's (u's), though some of its fields are not: the write after it is ordered against it.
func (s *State) PutPartlyAt(gr schema.GroupResource, u *unstructured.Unstructured, unknowns []vapccel.Unknown, source string) error {
	return s.putPartly(gr, u, unknowns, source, ResourceVersion(u.GetResourceVersion()))
}

// putPartly stores u, at resourceVersion rv (0: not known), with the fields unknowns; at a
// known rv it replaces what the State holds at that version (a dry run's answer, which a
// write whose export lost whether it was one stored there: mayBeDryRun puts the object back).
func (s *State) putPartly(gr schema.GroupResource, u *unstructured.Unstructured, unknowns []vapccel.Unknown, source string, rv uint64) error {
	gr = StorageOf(gr)
	if !s.keep(gr) || s.keepsSnapshot(gr, s.Objects[gr][ObjectKey{u.GetNamespace(), u.GetName()}]) {
		return nil
	}
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	if err := s.store(gr, u, raw, nil, source, rv, rv != 0); err != nil {
		return err
	}
	s.AddUnknowns(gr, u.GetNamespace(), u.GetName(), unknowns) // and what a concurrent status write left unknown (store)
	return nil
}

// AddUnknowns adds unknowns to what the State does not know of the object it holds, where it
// holds it (the write that left it stays its writer: no version is replaced).
func (s *State) AddUnknowns(gr schema.GroupResource, namespace, name string, unknowns []vapccel.Unknown) {
	gr = StorageOf(gr)
	k := ObjectKey{namespace, name}
	if e := s.Objects[gr][k]; e != nil && e.Raw != nil {
		e.unknowns = addUnknowns(e.unknowns, unknowns)
	}
	if s.typedKinds(gr) && len(unknowns) > 0 {
		// The evaluator reads it as a param or namespace: what it does not know of it too.
		b := s.writable(gr)
		if te, ok := b.objs.get(k); ok && te.Obj != nil {
			te.Unknowns = addUnknowns(te.Unknowns, unknowns)
			b.setUnknowns(k, te)
		}
	}
}

// addUnknowns is have (not changed) and those of more it does not hold already: a field that
// write after write leaves unknown (a status patched every ten seconds by writes an export
// cannot say were stored) stays one unknown, its first cause, however many writes follow.
func addUnknowns(have, more []vapccel.Unknown) []vapccel.Unknown {
	out := slices.Clip(have)
	for _, u := range more {
		if !slices.ContainsFunc(out, func(h vapccel.Unknown) bool { return sameUnknown(h, u) }) {
			out = append(out, u)
		}
	}
	return out
}

// sameUnknown says whether a and b leave the same of an object unknown, whatever their causes.
func sameUnknown(a, b vapccel.Unknown) bool {
	return a.Path.Root == b.Path.Root && slices.Equal(a.Path.Steps, b.Path.Steps) && a.ValueOnly == b.ValueOnly &&
		a.Prefix == b.Prefix && slices.EqualFunc(a.Known, b.Known, slices.Equal)
}

// PutKept is PutPartly for a write the log holds without its result that changed no field of
// the object but the unknowns (a status write, which keeps the rest as it was): a write the
// log records after it, that ran concurrently with it, leaves its own result with those fields
// unknown, whichever of the two the server committed last.
func (s *State) PutKept(gr schema.GroupResource, u *unstructured.Unstructured, unknowns []vapccel.Unknown, source string) error {
	if err := s.PutPartly(gr, u, unknowns, source); err != nil {
		return err
	}
	if e := s.Objects[StorageOf(gr)][ObjectKey{u.GetNamespace(), u.GetName()}]; e != nil && e.Raw != nil {
		e.keptBut = true
	}
	return nil
}

// PutRaw is Put with the object's JSON already made, and for the resources the evaluator
// reads, optionally its typed form (prepared by prepareTyped).
func (s *State) PutRaw(gr schema.GroupResource, u *unstructured.Unstructured, raw []byte, typed *PreparedTyped, source string) error {
	gr = StorageOf(gr)
	return s.store(gr, u, raw, typed, source, ResourceVersion(u.GetResourceVersion()), false)
}

// ResourceVersion is a resourceVersion as a number, 0 when it is not one. An etcd-backed
// server's resourceVersions are etcd revisions: a later write has a greater one.
func ResourceVersion(v string) uint64 {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// store records the object (its JSON raw) as the current state of its key; rv is its
// resourceVersion when raw is the log's own. A write the log records after a later one to the
// same object (both resourceVersions known, the stored greater) changes nothing: the State
// already holds what followed it; one that returned the version the State holds restates it
// (its JSON taken where the State knew less of it, or, replace, where the State's is not what
// that version held).
func (s *State) store(gr schema.GroupResource, u *unstructured.Unstructured, raw []byte, typed *PreparedTyped, source string, rv uint64, replace bool) error {
	gr = StorageOf(gr)
	if !s.keep(gr) {
		return nil
	}
	k := ObjectKey{u.GetNamespace(), u.GetName()}
	e := &entry{Raw: raw, rv: rv, Labels: labels.Set(u.GetLabels()), Source: source, by: s.current.writeBy, received: s.current.received, created: s.current.creating, asked: s.current.asked}
	old := s.bucket(gr)[k]
	if old == nil && rv > 0 && rv <= s.gone.m[ReplacedKey{gr, k}] {
		// Stored before a deletion the log records first (etcd's revisions order them):
		// the object is gone.
		return nil
	}
	if old != nil {
		if old.rv > 0 && rv > 0 && old.rv > rv || (rv == 0 || rv <= old.rv) && s.keepsSnapshot(gr, old) {
			s.snapshotAfter(old, true)
			return nil
		}
		if old.keptBut && old.Raw != nil && raw != nil && !s.typedKinds(gr) && s.ranConcurrently(old) {
			// The write the log records before this one, which ran concurrently with it,
			// changed nothing of the object but what it left unknown (a status write): what
			// this one stored holds, with those unknown, whichever the server committed last.
			e.unknowns = slices.Clip(old.unknowns)
		} else if s.keptUnknown(gr, k, old, "the write") {
			return nil
		}
		if rv == 0 && old.fromSnapshot() && old.Raw != nil {
			held, mayHold := s.snapshotMayHoldWrite(gr, old, u)
			if mayHold && len(held) == 0 {
				return nil // either way, the snapshot's version
			}
			e.unknowns = append(e.unknowns, held...)
		}
		if old.rv > 0 && old.rv == rv && old.Raw != nil && old.Unknown == "" {
			s.snapshotAfter(old, !s.current.creating)
			// A write that changed nothing: the store answers a no-op update with the stored
			// object, resourceVersion and all. It restates the version the State holds: that
			// version's write (its source), and when it completed, are what a concurrent
			// request may have read. The entry takes the newer JSON only where it knew less
			// (a log may omit at one level what it keeps at another).
			if len(old.unknowns) == 0 && !replace {
				return nil // its typed form, if any, is the same (and where it knew less)
			}
			old.Raw, old.Labels, old.unknowns = raw, e.Labels, nil
			if replace && s.typedKinds(gr) {
				if typed == nil {
					typed = s.PrepareTyped(u, raw)
				}
				if typed.err == nil {
					loc := typed.loc
					s.setTyped(gr, ObjectKey{loc.Namespace, loc.Name}, typedEntry{gvr: loc.Resource, Obj: typed.obj, labels: loc.Labels}, true)
				}
			}
			return nil
		}
		e.follows = true
		if old.Raw != nil {
			s.remember(ReplacedKey{gr, k}, old, e)
		}
	}
	s.bucket(gr)[k] = e
	if s.typedKinds(gr) {
		if typed == nil {
			typed = s.PrepareTyped(u, raw)
		}
		if typed.err != nil {
			why := fmt.Sprintf("%s: %v", source, typed.err)
			s.bucket(gr)[k] = &entry{Unknown: why, Source: source}
			s.setTyped(gr, k, typedEntry{unknown: why}, true)
			return typed.err
		}
		loc := typed.loc
		s.setTyped(gr, ObjectKey{loc.Namespace, loc.Name}, typedEntry{gvr: loc.Resource, Obj: typed.obj, labels: loc.Labels, Unknowns: slices.Clip(e.unknowns)}, true)
	}
	return nil
}

// Seeded notes that the snapshot holds an object of gr at resourceVersion rv, or listed gr at
// revision rv (vapc snapshot writes it). The snapshot listed gr at a revision at or after the
// greatest such rv (SnapshotNewest): a write committed at or before it is one the snapshot
// already holds the effect of.
func (s *State) Seeded(gr schema.GroupResource, rv uint64) {
	gr = StorageOf(gr)
	if s.snapshotNewest == nil {
		s.snapshotNewest = map[schema.GroupResource]uint64{}
	}
	s.snapshotNewest[gr] = max(s.snapshotNewest[gr], rv)
}

// SnapshotMax is the greatest of SnapshotNewest over every resource.
func (s *State) SnapshotMax() uint64 {
	var m uint64
	for _, v := range s.snapshotNewest {
		m = max(m, v)
	}
	return m
}

// SnapshotVersionOf is the resourceVersion of the snapshot's version of an object, when the
// State holds it; 0 otherwise.
func (s *State) SnapshotVersionOf(gr schema.GroupResource, namespace, name string) uint64 {
	if e := s.Objects[StorageOf(gr)][ObjectKey{namespace, name}]; e != nil && e.fromSnapshot() {
		return e.rv
	}
	return 0
}

// SnapshotResources are the resources the snapshot holds objects of or listed.
func (s *State) SnapshotResources() []schema.GroupResource {
	return slices.Collect(maps.Keys(s.snapshotNewest))
}

// SnapshotTyped are the params and namespaces resources the snapshot holds objects of.
func (s *State) SnapshotTyped() []schema.GroupResource {
	var out []schema.GroupResource
	for gr := range s.snapshotNewest {
		if s.typedKinds(gr) {
			out = append(out, gr)
		}
	}
	return out
}

// BeforeSnapshot says whether a request that completed at done did so before the snapshot
// listed gr (SnapshotRead).
func (s *State) BeforeSnapshot(gr schema.GroupResource, done time.Time) bool {
	at := s.SnapshotRead[StorageOf(gr)]
	return !at.IsZero() && !done.IsZero() && done.Before(at)
}

// keepsSnapshot says whether the write being applied to an object of gr, which completed
// before the snapshot listed gr, leaves the snapshot's version of the object (e) as it is: the
// snapshot holds what it and the writes after it left.
func (s *State) keepsSnapshot(gr schema.GroupResource, e *entry) bool {
	if e == nil || !e.fromSnapshot() || e.Raw == nil || !s.BeforeSnapshot(gr, s.current.writeDone) {
		return false
	}
	s.snapshotAfter(e, true)
	return true
}

// SnapshotNewest is the greatest resourceVersion of the snapshot's objects of gr and of the
// revision it listed gr at, 0 when it says neither.
func (s *State) SnapshotNewest(gr schema.GroupResource) uint64 {
	return s.snapshotNewest[StorageOf(gr)]
}

// fromSnapshot says the entry is the snapshot's version: no write of the log stored it.
func (e *entry) fromSnapshot() bool { return e.by == "" }

// snapshotAfter records, of the snapshot's version of an object (e: no write of the log stored
// it), that the write being applied, which the log records after the snapshot was read but whose
// result is that version or an older one, completed before that version was stored: the
// snapshot was taken after it. A request received moments later may have read a version older
// than the snapshot's from kube-apiserver's watch cache or informers, one the State does not
// know (staleOf, concurrent): the snapshot's version is taken as stored when that write
// completed, over a version not known (replaced: the write is not the one that created it).
func (s *State) snapshotAfter(e *entry, replaced bool) {
	if !e.fromSnapshot() || s.current.writeBy == "" || s.current.writeDone.IsZero() {
		return
	}
	if s.current.writeDone.After(e.done) {
		e.done = s.current.writeDone
	}
	e.follows = e.follows || replaced
}

// PreparedTyped is where an object of a resource the evaluator reads is kept and the object
// to convert when it is read, or why it cannot be kept.
type PreparedTyped struct {
	loc verify.Location
	obj *lazyObject
	err error
}

// PrepareTyped prepares an object of a resource the evaluator reads, from its metadata (u may
// hold only that) and its JSON. It changes nothing and may run on any goroutine.
func (s *State) PrepareTyped(u *unstructured.Unstructured, raw []byte) *PreparedTyped {
	loc, err := s.prepare.Locate(u)
	return &PreparedTyped{loc: loc, obj: &lazyObject{raw: raw, prepare: s.prepare}, err: err}
}

// StandInParams returns, for the paramKind of each policy but Namespace, an object of that
// kind that holds nothing but a name, as the evaluator reads params.
func (s *State) StandInParams(policies []*admissionregistrationv1.ValidatingAdmissionPolicy) map[schema.GroupResource]runtime.Object {
	out := map[schema.GroupResource]runtime.Object{}
	for _, p := range policies {
		pk := p.Spec.ParamKind
		if pk == nil {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(pk.APIVersion)
		u.SetKind(pk.Kind)
		u.SetName("vapc-stand-in")
		prepared, err := s.prepare.Prepare(u)
		if err != nil || prepared.Resource().GroupResource() == NamespacesGR {
			continue
		}
		out[prepared.Resource().GroupResource()] = prepared.Object()
	}
	return out
}

// setTyped sets (has) or deletes the object k of a resource the evaluator reads, copying its
// bucket first when a View holds it.
func (s *State) setTyped(gr schema.GroupResource, k ObjectKey, e typedEntry, has bool) {
	b := s.writable(gr)
	old, had := b.objs.get(k)
	if len(s.typedWrites) == maxTypedWrites {
		// More writes than recentTyped has dropped: the requests within the lag of the
		// latest of those dropped here do not know them (see recentTyped).
		half := maxTypedWrites / 2
		for _, w := range s.typedWrites[:half] {
			s.lose(w)
		}
		s.typedWrites = append(s.typedWrites[:0:0], s.typedWrites[half:]...)
	}
	s.typedWrites = append(s.typedWrites, TypedWrite{GR: gr, Obj: k, Prev: old, Had: had, Created: s.current.creating && !had,
		UnknownBefore: !had && !s.current.creating && !s.Complete(gr), Done: s.current.writeDone, Second: s.current.writeSecond, By: s.current.writeBy})
	if !s.current.writeDone.IsZero() {
		s.current.written = append(s.current.written, readKey{gr, k})
	}
	b.invalidate(k, old, had, e, has)
	if has {
		b.set(k, e)
	} else {
		b.drop(k)
	}
}

// writable returns the bucket of the resource, to change.
func (s *State) writable(gr schema.GroupResource) *bucket {
	b := s.buckets[gr]
	switch {
	case b == nil:
		b = newBucket(s.selectors[gr])
		s.buckets[gr] = b
	case b.frozen:
		b = b.clone()
		s.buckets[gr] = b
	}
	return b
}

// View returns the params and namespaces as they are now, for one evaluation; readsNamespaces
// says whether the request's policies read namespaces (only then is an unknown namespace a
// miss). The View does not change when the State does.
func (s *State) View(readsNamespaces bool) *StateView {
	v := &StateView{buckets: make(map[schema.GroupResource]*bucket, len(s.buckets)), complete: s.complete, incomplete: s.incomplete, allSince: s.AllSince, readsNamespaces: readsNamespaces,
		liveLookupDone: s.liveLookupDone, secrets: &servedSecrets{}}
	for gr, b := range s.buckets {
		if !b.frozen {
			b.frozen = true // before any reader has it: Views only ever read it
		}
		v.buckets[gr] = b
	}
	return v
}

// Forget records that the object's state is not known from now on, and why.
func (s *State) Forget(gr schema.GroupResource, gvk schema.GroupVersionKind, namespace, name, why string) {
	s.forget(gr, namespace, name, why, false)
}

// ForgetWritten is Forget for an object a write the log shows succeeded left in place (an
// update or patch whose result the log does not hold): it exists, its content is not known.
func (s *State) ForgetWritten(gr schema.GroupResource, gvk schema.GroupVersionKind, namespace, name, why string) {
	s.forget(gr, namespace, name, why, true)
}

func (s *State) forget(gr schema.GroupResource, namespace, name, why string, exists bool) {
	gr = StorageOf(gr)
	if !s.keep(gr) {
		return
	}
	if s.keepsSnapshot(gr, s.bucket(gr)[ObjectKey{namespace, name}]) {
		return
	}
	// done: a write the log records later that ran concurrently does not make it known
	// (store).
	s.bucket(gr)[ObjectKey{namespace, name}] = &entry{Unknown: why, Source: why, done: s.current.writeDone, by: s.current.writeBy, created: s.current.creating}
	if s.typedKinds(gr) {
		s.setTyped(gr, ObjectKey{namespace, name}, typedEntry{unknown: why, exists: exists}, true)
	}
}

// GoneOrMarked records that a deletion whose result the log does not show either removed the
// object or left it marked deleted as marked holds it, with unknowns (from the object's root)
// not known of it: the object is not known (why), unless a request shows it was there
// (Prior.IfThere).
// done is when the deletion completed: a request received before it may have read the object
// as it was, and is not given IfThere.
func (s *State) GoneOrMarked(gr schema.GroupResource, gvk schema.GroupVersionKind, namespace, name, why string, marked []byte, unknowns []vapccel.Unknown, done time.Time) {
	if s.keepsSnapshot(StorageOf(gr), s.Objects[StorageOf(gr)][ObjectKey{namespace, name}]) {
		return
	}
	s.Forget(gr, gvk, namespace, name, why)
	if e := s.Objects[StorageOf(gr)][ObjectKey{namespace, name}]; e != nil && !done.IsZero() {
		e.ifThere, e.ifThereUnknowns, e.done = marked, unknowns, done
	}
}

// Delete records that the object no longer exists.
func (s *State) Delete(gr schema.GroupResource, gvk schema.GroupVersionKind, namespace, name string) {
	s.DeleteAt(gr, gvk, namespace, name, 0, false)
}

// keptUnknown keeps the object k unknown where a write the log records before the one being
// applied (what) left it unknown and completed after that one was received: the two ran
// concurrently, and which the server committed last is not known (a create's, never: the
// other wrote the object it created). False where the write applies.
func (s *State) keptUnknown(gr schema.GroupResource, k ObjectKey, old *entry, what string) bool {
	if s.current.commuted {
		return false
	}
	// An entry the replay rebuilt (its resourceVersion not known: a write followed through
	// the pipeline) is ordered against no other write either.
	rebuilt := old.Raw != nil && old.rv == 0 && old.by != ""
	if !rebuilt && (old.Raw != nil || old.Unknown == "") || !s.ranConcurrently(old) {
		return false
	}
	s.unknownAfter(gr, k, old, what)
	return true
}

// unknownAfter makes the object k unknown: a write the log records before the one being
// applied (what) left it as old holds it, and which of the two the server committed last is
// not known.
func (s *State) unknownAfter(gr schema.GroupResource, k ObjectKey, old *entry, what string) {
	was := old.Unknown
	if old.Raw != nil {
		was = "as the write at " + old.by + " left it"
	}
	why := was + "; " + what + " at " + s.current.writeBy + ", which the log records after it, ran concurrently with it, and which the server committed last is not known"
	// Until the later of the two completed: a third write received before that ran
	// concurrently with it.
	done := old.done
	if s.current.writeDone.After(done) {
		done = s.current.writeDone
	}
	s.bucket(gr)[k] = &entry{Unknown: why, Source: why, done: done, by: s.current.writeBy, created: old.created || s.current.creating}
	if s.typedKinds(gr) {
		s.setTyped(gr, k, typedEntry{unknown: why}, true)
	}
}

// DeleteUID is Delete where the deletion's result is a Status that names the uid of the object
// it removed (the generic store's answer for most resources, finalizeDelete): where a create
// the log records first ran concurrently with the deletion, the deletion removed the object it
// created when the uids are the same, and an earlier one otherwise, which the create then
// replaced; when either uid is not known, which one is not known.
func (s *State) DeleteUID(gr schema.GroupResource, gvk schema.GroupVersionKind, namespace, name, uid string) {
	k := ObjectKey{namespace, name}
	if old := s.Objects[StorageOf(gr)][k]; old != nil && old.Raw != nil && old.created && s.ranConcurrently(old) {
		var m struct {
			Metadata struct {
				UID string `json:"uid"`
			} `json:"metadata"`
		}
		if old.rv > 0 {
			// Rebuilt by the replay (no resourceVersion), its uid is its pipeline's, not the
			// server's: not known.
			_ = json.Unmarshal(old.Raw, &m)
		}
		switch {
		case uid != "" && m.Metadata.UID != "" && uid != m.Metadata.UID:
			return // the create came after the deletion
		case uid == "" || m.Metadata.UID == "":
			s.unknownAfter(StorageOf(gr), k, old, "the deletion")
		case s.keep(StorageOf(gr)):
			s.remove(StorageOf(gr), k, old, 0) // what the create made
		}
		return
	}
	s.DeleteAt(gr, gvk, namespace, name, 0, false)
}

// ranConcurrently says whether the write that left the entry completed after the write being
// applied was received (the log records it first).
func (s *State) ranConcurrently(old *entry) bool {
	return old.by != "" && old.by != s.current.writeBy && !s.current.received.IsZero() && old.done.After(s.current.received) && !s.committedBefore(old)
}

// committedBefore says whether the write being applied found (Asked) the version the write that
// left old stored, or a later one, or one later than that write found: etcd's revisions only
// grow, so that write was committed first (had this one been, that one's precondition would
// have failed), however close their times (an export's receipt bound: GKE's entries).
func (s *State) committedBefore(old *entry) bool {
	a := s.current.asked
	return a != 0 && (old.rv != 0 && a >= old.rv || old.asked != 0 && a > old.asked)
}

// DeleteAt is Delete where the deletion's result shows a resourceVersion, gone: the deletion's
// own revision where exact (the store answers a DELETE with the object it removed at the
// revision of the deletion), or the version the deletion removed (an update that left an
// object being deleted without finalizers answers with the version it read). A write the log
// records after it whose result is at or below gone was stored before it, and does not bring
// the object back (a create whose response completed after a controller deleted what it
// created); a version the State holds above an exact gone was created after it, and stays.
func (s *State) DeleteAt(gr schema.GroupResource, gvk schema.GroupVersionKind, namespace, name string, gone uint64, exact bool) {
	gr = StorageOf(gr)
	if !s.keep(gr) {
		return
	}
	k := ObjectKey{namespace, name}
	if gone > 0 {
		s.gone.put(ReplacedKey{gr, k}, gone)
	}
	old := s.Objects[gr][k]
	switch {
	case !(exact && gone > 0 && old != nil && gone > old.rv) && s.keepsSnapshot(gr, old):
		// Deleted before the snapshot was read, which holds it again; a deletion whose
		// revision is after the snapshot's version came after the snapshot listed it.
		return
	case old != nil && exact && gone > 0 && old.rv > gone:
		return // the State holds the object a create the log records first made after it
	case old != nil && !exact && gone > 0 && old.rv > gone:
		// A version after the one the deletion read: stored before the deletion, or made by a
		// create after it.
		s.Forget(gr, gvk, namespace, name, fmt.Sprintf("deleted at %s with the version it read (resourceVersion %d), before the one the State holds (%d, %s), which may have been stored before the deletion or created after it", s.current.writeBy, gone, old.rv, old.Source))
		return
	}
	// A write the deletion ran concurrently with committed before it (the object was gone
	// after it), unless it created the object again: which one an unknown entry's writes
	// were (an export that lost a 201 hides a create) is not known; a rebuilt one's, known.
	if old != nil && (old.Raw == nil || old.created) && s.keptUnknown(gr, k, old, "the deletion") {
		return
	}
	if !exact {
		gone = 0
	}
	s.remove(gr, k, old, gone)
}

// remove removes the object k, whose entry is old (nil when the State has none), by a
// deletion whose own revision is rv (0 when not known).
func (s *State) remove(gr schema.GroupResource, k ObjectKey, old *entry, rv uint64) {
	s.deletions.put(ReplacedKey{gr, k}, deletion{done: s.current.writeDone, by: s.current.writeBy})
	if old != nil && old.Raw != nil && old.rv > 0 {
		// A request the log records after the deletion may have read it (deletedVersion, or a
		// request that ran concurrently with the deletion: concurrent).
		d := *old
		d.deletedDone, d.deletedBy, d.deletedRV = s.current.writeDone, s.current.writeBy, rv
		s.deleted.put(ReplacedKey{gr, k}, &d)
	}
	delete(s.Objects[gr], k)
	if s.typedKinds(gr) {
		s.setTyped(gr, k, typedEntry{}, false)
	}
}

// ForgetAll records that no object of the resource in the namespace ("" for all) is known,
// after a write whose effect the log does not show (a deletecollection without a response).
func (s *State) ForgetAll(gr schema.GroupResource, namespace, why string) {
	gr = StorageOf(gr)
	if !s.keep(gr) {
		return
	}
	for k, e := range s.Objects[gr] {
		if (namespace == "" || k.Namespace == namespace) && !s.keepsSnapshot(gr, e) {
			*e = entry{Unknown: why, Source: why, done: s.current.writeDone, by: s.current.writeBy}
			if s.typedKinds(gr) {
				s.setTyped(gr, k, typedEntry{unknown: why}, true)
			}
		}
	}
	s.Added(gr, namespace, why)
}

// ForgetEverything records that the log lacks what the server wrote for a while (a rotated file
// missing from those given): no object the State held is known after it, nor any resource
// whole.
func (s *State) ForgetEverything(why string) {
	for gr := range s.Objects {
		s.ForgetAll(gr, "", why)
	}
	s.Withdraw(why)
}

// Added records that a write added an object of gr (in namespace) the State does not know (a
// create whose generated name the log does not hold): the objects it knows stay as they are,
// and it no longer knows every object of gr.
func (s *State) Added(gr schema.GroupResource, namespace, why string) {
	gr = StorageOf(gr)
	if !s.keep(gr) {
		return
	}
	if s.typedKinds(gr) && !s.current.writeDone.IsZero() && !slices.Contains(s.current.writtenUnknown, gr) {
		s.current.writtenUnknown = append(s.current.writtenUnknown, gr)
	}
	if _, ok := s.complete[gr]; ok {
		c := make(map[schema.GroupResource]string, len(s.complete))
		for k, v := range s.complete {
			if k != gr {
				c[k] = v
			}
		}
		s.complete = c
	}
	if s.incomplete[gr] == "" {
		c := make(map[schema.GroupResource]string, len(s.incomplete)+1)
		for k, v := range s.incomplete {
			c[k] = v
		}
		c[gr] = cmp.Or(why, "a write whose effect the log does not show")
		s.incomplete = c
	}
}

func (s *State) bucket(gr schema.GroupResource) map[ObjectKey]*entry {
	gr = StorageOf(gr)
	m := s.Objects[gr]
	if m == nil {
		m = map[ObjectKey]*entry{}
		s.Objects[gr] = m
	}
	return m
}

// Lookup returns the stored object: found is false when there is no such object (for sure
// when complete is true), and unknown says why the object's state is not known.
func (s *State) Lookup(gr schema.GroupResource, namespace, name string) (u *unstructured.Unstructured, source, unknown string, found bool) {
	gr = StorageOf(gr)
	p := s.Prior(gr, namespace, name)
	u, unknown = p.Decode()
	return u, p.Source, unknown, p.Found
}

// Prior is an object as the State holds it at one point of the log, undecoded: what a
// request's oldObject is rebuilt from, on another goroutine.
type Prior struct {
	Kept, Found bool
	// Complete says the State knows every object of the resource: one it does not hold does
	// not exist.
	Complete        bool
	Raw             []byte // never changed once stored
	RV              uint64 // its resourceVersion, when the log's JSON of it says (see entry.rv)
	Source, Unknown string
	// Unknowns are the fields of the known object whose values are not known.
	Unknowns []vapccel.Unknown
	// Unmarked is the version the object has unless a refused DELETE marked it (see
	// entry.unmarked).
	Unmarked []byte
	// Stale are the versions the object had before the write that stored this one, newest
	// first, when the server may have admitted the request on one of them first (see
	// staleOf); staleUnknown says why a version it may have read is not known. Both are
	// empty when it read this one.
	Stale        []Prior
	StaleUnknown string
	// FirstRead is which version the request's first attempt most likely read: 0 for this
	// one, k for Stale[k-1], when the writes that stored the newer ones were all received
	// after the request was: it read the object before they could have been committed (the
	// store's first attempt reads its watch cache's copy as it begins).
	FirstRead int
	// IfThere is the object a request that shows it was there read (see GoneOrMarked): nil
	// unless a deletion the log does not show the result of may have removed it.
	IfThere *Prior
	// IfThereAfter is when the deletion IfThere follows completed: a request received before
	// it ran concurrently with it.
	IfThereAfter time.Time
	// Unsettled says why, the object being IfThere, what a DELETE of it does is not known: a
	// graceful deletion may be pending on it, and the store completes a DELETE without
	// admission unless its options shorten the grace period.
	Unsettled string
	// RacedBy says a write completed after the request was received and before it completed,
	// and racedFrom is the version it replaced (nil when not known): the request may have
	// read that one (see Replayer.raced).
	RacedBy   string
	RacedFrom *Prior
	// FromSnapshot says the object is the snapshot's version: no write of the log stored it.
	FromSnapshot bool
	// Asked is the resourceVersion a request that reached admission asked for when the
	// State's version is another (see AdmittedOn): the version it read is not known.
	Asked uint64
}

// maxDeleted bounds the deleted versions kept (see deletedVersion).
const maxDeleted = 1024

// latest holds what the latest deletions left of their objects, at most maxDeleted of them
// (the oldest go first).
type latest[V any] struct {
	m     map[ReplacedKey]V
	order []ReplacedKey
}

// put keeps v for the object k.
func (l *latest[V]) put(k ReplacedKey, v V) {
	if l.m == nil {
		l.m = map[ReplacedKey]V{}
	}
	if _, had := l.m[k]; !had {
		l.order = append(l.order, k)
	}
	l.m[k] = v
	if len(l.order) > maxDeleted {
		delete(l.m, l.order[0])
		l.order = l.order[1:]
	}
}

// deletedVersion is the version of a deleted object at or before rv, for a request the log
// records after the deletion whose result has resourceVersion rv: it was committed before the
// deletion, or changed nothing (a dry run, a write of what was stored), and read that
// version. nil when the State does not remember one, or when rv is after the deletion's own
// revision: the write was committed after the deletion, and created the object again (an
// apply, an update of a kind that creates on update, whose 201 an export may have lost).
func (s *State) deletedVersion(gr schema.GroupResource, k ObjectKey, rv uint64) *entry {
	if e := s.deleted.m[ReplacedKey{gr, k}]; e != nil && e.rv > 0 && e.rv <= rv && (e.deletedRV == 0 || rv < e.deletedRV) {
		return e
	}
	return nil
}

// remember keeps the entry a write replaced (by is the entry it stored), for priorOf and
// staleOf; the oldest go beyond maxReplaced, and beyond maxReplacedPerObject of one object.
func (s *State) remember(k ReplacedKey, e, by *entry) {
	if s.replaced == nil {
		s.replaced = map[ReplacedKey][]replacedEntry{}
	}
	s.replacedSeq++
	rs := append(s.replaced[k], replacedEntry{e: e, seq: s.replacedSeq, by: by})
	if len(rs) > maxReplacedPerObject {
		rs = append(rs[:0:0], rs[len(rs)-maxReplacedPerObject:]...)
	}
	s.replaced[k] = rs
	s.replacedOrder = append(s.replacedOrder, k)
	if len(s.replacedOrder) > maxReplaced {
		oldest := s.replacedOrder[0]
		s.replacedOrder = s.replacedOrder[1:]
		rs := s.replaced[oldest]
		for len(rs) > 0 && rs[0].seq <= s.replacedSeq-maxReplaced {
			rs = rs[1:]
		}
		if len(rs) == 0 {
			delete(s.replaced, oldest)
		} else {
			s.replaced[oldest] = rs
		}
	}
}

// restatedVersion is the version of the object (at k) that a successful write whose result has
// resourceVersion rv, received at received, answered with having changed nothing: a version
// the State replaced since (its current one, e, is another), which the log shows a write
// stored that completed before the request was received. That version existed throughout the
// request, so the request did not store it; the store answers a write that changes nothing
// with the object it read, and reads the live object before it skips the write (etcd3's
// GuaranteedUpdate): its last attempt's admission read that version. nil otherwise.
func (s *State) restatedVersion(gr schema.GroupResource, k ObjectKey, e *entry, rv uint64, received time.Time) *entry {
	if rv == 0 || e == nil || e.rv == rv || received.IsZero() {
		return nil
	}
	for _, r := range s.replaced[ReplacedKey{gr, k}] {
		if r.e.rv == rv && r.e.Raw != nil && r.e.by != "" && !r.e.done.IsZero() && received.After(r.e.done) {
			return r.e
		}
	}
	return nil
}

// PriorOf is prior for a write whose result has resourceVersion rv (0 when the log does not
// show it). The log records a request when its response completes, not when its write is
// stored: of two concurrent writes to an object, the one stored first may be logged last.
// When the State holds a later version than rv, the write changed the version before it: the
// one the later write replaced when its resourceVersion is below rv, and otherwise not known.
//
// Otherwise, a request received before the write that stored the State's version completed
// ran concurrently with it (see concurrent): a write retried after a conflict with it, too,
// which admission saw on its first attempt as well. With firstAttempt, it also says which
// versions the server's first attempt may have read from its watch cache (staleOf).
func (s *State) PriorOf(gr schema.GroupResource, namespace, name string, rv uint64, received Received, firstAttempt bool) Prior {
	return s.PriorOfResult(gr, namespace, name, rv, "", received, firstAttempt)
}

// PriorOfResult is PriorOf where the write's result also shows the object's uid: a deleted
// version of another uid is not the one it read (it created the object again).
func (s *State) PriorOfResult(gr schema.GroupResource, namespace, name string, rv uint64, uid string, rc Received, firstAttempt bool) Prior {
	received := rc.At
	gr = StorageOf(gr)
	p := s.Prior(gr, namespace, name)
	e := s.Objects[gr][ObjectKey{namespace, name}]
	if e == nil && rv != 0 {
		if d := s.deletedVersion(gr, ObjectKey{namespace, name}, rv); d != nil && (uid == "" || sameUID(d.Raw, uid)) {
			p.Found, p.Raw, p.Unknowns, p.RV, p.Unknown = true, d.Raw, d.unknowns, d.rv, ""
			p.Source = d.Source + fmt.Sprintf(" (deleted by a request the log records before this one; this one's result, resourceVersion %d, says it read this version, or changed it before the deletion)", rv)
			return p
		}
	}
	if e != nil && e.fromSnapshot() && e.Raw != nil && rv != 0 && e.rv == rv {
		// The snapshot holds this write's result: it was taken after the write, and the
		// version the write changed is not known (unless the write changed nothing, which
		// the log does not say).
		p.Raw, p.Unknowns = nil, nil
		p.Unknown = fmt.Sprintf("the snapshot holds this write's result (resourceVersion %d): it was taken after the write, and the version the write changed is not known", rv)
		return p
	}
	if restated := s.restatedVersion(gr, ObjectKey{namespace, name}, e, rv, received); restated != nil {
		p.Source, p.Unknown, p.Raw, p.Unknowns, p.RV = restated.Source+fmt.Sprintf(" (this request's result, resourceVersion %d, is that version, which existed before this request was received: it changed nothing, and the store answers a write that changes nothing with the version it read)", rv), restated.Unknown, restated.Raw, restated.unknowns, restated.rv
		if firstAttempt && p.Raw != nil {
			s.staleFrom(&p, ReplacedKey{gr, ObjectKey{namespace, name}}, restated, rc)
		}
		return p
	}
	if rv == 0 || e == nil || e.rv == 0 || e.rv <= rv {
		if rv == 0 || (e != nil && rv == e.rv) {
			// A result at or after the State's version was written after it: the request's
			// last attempt read it (its first may not have: staleOf). A result that is the
			// State's version, which another write of the log answered with, is the one of
			// the two that wrote it, on the version before (the other changed nothing and
			// answered with what it read): when the two ran concurrently, either.
			p = s.concurrent(p, gr, namespace, name, rc)
		}
		if firstAttempt && p.Raw != nil {
			s.staleOf(&p, gr, namespace, name, rc)
		}
		return p
	}
	// The version it changed is the one whose replacement came after it: a write between them
	// the State did not keep (at Metadata level, or itself logged late) leaves a gap. A write
	// that changed nothing (the store skips it) answers with the version it read: that one.
	for _, r := range s.replaced[ReplacedKey{gr, ObjectKey{namespace, name}}] {
		if r.e.rv > 0 && r.e.rv <= rv && r.by.rv > rv {
			p.Source, p.Unknown, p.Raw, p.Unknowns, p.RV = r.e.Source+" (the log records the write that replaced it, at "+r.by.Source+", before this one, which the server stored first)", r.e.Unknown, r.e.Raw, r.e.unknowns, r.e.rv
			if firstAttempt && p.Raw != nil {
				// Its last attempt read that version; its first may have read one before it,
				// when the write that stored it completed after this request was received
				// (or less than the lag before).
				s.staleFrom(&p, ReplacedKey{gr, ObjectKey{namespace, name}}, r.e, rc)
			}
			return p
		}
	}
	p.Raw, p.Unknowns = nil, nil
	p.Unknown = fmt.Sprintf("the log records this write (resourceVersion %d) after a later one to the object (%s, resourceVersion %d), and the version it changed is not known", rv, e.Source, e.rv)
	return p
}

// PriorRead is prior for a dry run whose result has resourceVersion rv: a dry run answers
// with the version it read (from storage, not the watch cache, and without writing). When
// the State holds that version, or a later one, or deleted the object after it, it is the one
// read; otherwise the dry run read a version the log records later or not at all, and
// PriorOf without rv says what it may have read.
func (s *State) PriorRead(gr schema.GroupResource, namespace, name string, rv uint64, received Received) Prior {
	gr = StorageOf(gr)
	e := s.Objects[gr][ObjectKey{namespace, name}]
	switch {
	case rv == 0 || (e != nil && e.rv < rv) || (e == nil && s.deletedVersion(gr, ObjectKey{namespace, name}, rv) == nil):
		return s.PriorOf(gr, namespace, name, 0, received, false)
	case e != nil && e.rv == rv:
		return s.Prior(gr, namespace, name)
	}
	return s.PriorOf(gr, namespace, name, rv, received, false)
}

// LiveLookupCached are the resources an admission plugin lists live when its informer holds
// none of a namespace's, keeping what it found for LiveLookupTTL, which it reads again while
// its informer holds none: LimitRanger's LimitRanges (liveLookupCache). The server's informer
// may hold none after a deletion, or before a create, while its cache still holds them.
var LiveLookupCached = map[schema.GroupResource]bool{{Resource: "limitranges"}: true}

// LiveLookupTTL is how long an admission plugin keeps what it looked up live (LimitRanger's
// liveTTL).
const LiveLookupTTL = 30 * time.Second

// MarkDone records when the write at source, which stored the object, completed (an empty
// name: a write to objects of the namespace, a deletecollection).
func (s *State) MarkDone(gr schema.GroupResource, namespace, name, source string, done time.Time) {
	gr = StorageOf(gr)
	if s.lastDone == nil {
		s.lastDone = map[ReplacedKey]time.Time{}
	}
	if k := (ReplacedKey{gr, ObjectKey{Namespace: namespace}}); done.After(s.lastDone[k]) {
		s.lastDone[k] = done
	}
	if k := (ReplacedKey{GR: gr}); done.After(s.lastDone[k]) {
		s.lastDone[k] = done
	}
	if k := (ReplacedKey{gr, ObjectKey{Namespace: namespace}}); LiveLookupCached[gr] && done.After(s.liveLookupDone[k]) {
		m := maps.Clone(s.liveLookupDone)
		if m == nil {
			m = map[ReplacedKey]time.Time{}
		}
		m[k] = done
		s.liveLookupDone = m
	}
	if e := s.Objects[gr][ObjectKey{namespace, name}]; e != nil && strings.HasPrefix(e.Source, source) {
		e.done = done
	}
}

// concurrent is p for a request received at received: when the write that stored the object
// completed after that (the two ran concurrently, and the log records each when its response
// completes), the request may have read the version before that write as well as after it,
// and the log does not say which.
func (s *State) concurrent(p Prior, gr schema.GroupResource, namespace, name string, rc Received) Prior {
	received := rc.At
	gr = StorageOf(gr)
	k := ObjectKey{namespace, name}
	e := s.Objects[gr][k]
	if d := s.deleted.m[ReplacedKey{gr, k}]; e == nil && d != nil && d.Raw != nil && !received.IsZero() && d.deletedDone.After(received) {
		// Deleted by a write that completed after this request was received: the log's order
		// gives it gone (likely), the version the deletion removed the alternative.
		p.RacedBy = "the deletion at " + cmp.Or(d.deletedBy, "a request the log records before it") + ", " + rc.completedAfter(d.deletedDone)
		p.RacedFrom = &Prior{Kept: p.Kept, Found: true, Complete: p.Complete, Raw: d.Raw, RV: d.rv, Unknowns: d.unknowns,
			Source: d.Source + " (the version " + p.RacedBy + ", removed)"}
		return p
	}
	if e == nil || e.Raw == nil || e.done.IsZero() || received.IsZero() || !e.done.After(received) {
		return p
	}
	// The log's order gives the version the write stored: the likely one (both completed, the
	// write first). The version before it is the alternative, when the State remembers it.
	p.RacedBy = "the write at " + e.Source + ", " + rc.completedAfter(e.done)
	for _, r := range s.replaced[ReplacedKey{gr, k}] {
		if r.by == e && r.e.Raw != nil {
			p.RacedFrom = &Prior{Kept: p.Kept, Found: true, Complete: p.Complete, Raw: r.e.Raw, RV: r.e.rv, Unknowns: r.e.unknowns,
				Source: r.e.Source + " (the version " + p.RacedBy + ", replaced)"}
		}
	}
	return p
}

// WroteTyped says whether the latest request (see beginWrite) wrote params or namespaces.
func (s *State) WroteTyped() bool {
	return len(s.current.written) > 0 || len(s.current.writtenUnknown) > 0
}

// AheadWrites are the writes to params and namespaces of the latest request (see beginWrite),
// which completed at done, each with the entry it wrote, as a request the log records earlier but which ran
// concurrently with it may have read them (see Replayer.reviseAhead); by is where the log
// records it. unknown are the resources of which it may have written objects the State does
// not know.
func (s *State) AheadWrites(by string, done time.Time, second bool) (ws []TypedWrite, unknown []schema.GroupResource) {
	for i, rk := range s.current.written {
		if slices.Contains(s.current.written[i+1:], rk) {
			continue // the last write of the object gives what it wrote
		}
		e, has := s.buckets[rk.gr].get(rk.k)
		ws = append(ws, TypedWrite{GR: rk.gr, Obj: rk.k, Prev: e, Had: has, Done: done, Second: second, Ahead: true, By: by})
	}
	return ws, slices.Clone(s.current.writtenUnknown)
}

// LostAfter are the resources of grs of which the State no longer remembers a write that
// completed after t (see RecentTyped's lost).
func (s *State) LostAfter(grs []schema.GroupResource, t time.Time) []schema.GroupResource {
	var out []schema.GroupResource
	for _, gr := range grs {
		if s.typedLost[gr].After(t) {
			out = append(out, gr)
		}
	}
	return out
}

// RecentTyped are the writes to params and namespaces that completed less than the lag
// before a request received at received, or after (see Replayer.informerLag), newest first;
// lost are the resources whose writes the State no longer remembers may be among them (for a
// request received at a time the log does not say, every resource written).
func (s *State) RecentTyped(received time.Time) (out []TypedWrite, lost []schema.GroupResource) {
	if received.IsZero() {
		for _, w := range s.typedWrites {
			if !w.Done.IsZero() && !slices.Contains(lost, w.GR) {
				lost = append(lost, w.GR)
			}
		}
		// And those whose writes it dropped already (a long-running request, logged as
		// it ended, may have begun before any of them).
		for gr := range s.typedLost {
			if !slices.Contains(lost, gr) {
				lost = append(lost, gr)
			}
		}
		slices.SortFunc(lost, func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
		return nil, lost
	}
	// The writes long before are dropped: they hold the versions they replaced. A request
	// logged later but received before this one may still need them: it finds them lost.
	cutoff := received.Add(-s.Lag - 2*time.Second)
	drop := 0
	for drop < len(s.typedWrites) && (s.typedWrites[drop].Done.IsZero() || s.typedWrites[drop].Done.Before(cutoff)) {
		s.lose(s.typedWrites[drop])
		s.typedWrites[drop] = TypedWrite{}
		drop++
	}
	s.typedWrites = s.typedWrites[drop:]
	for i := len(s.typedWrites) - 1; i >= 0; i-- {
		w := s.typedWrites[i]
		if w.Done.IsZero() {
			continue // not a write of a request of the log
		}
		if received.Sub(w.Done) >= s.Lag {
			// The log holds requests in the order they completed: the older ones are older
			// still, but for a moment of slack.
			if received.Sub(w.Done) >= s.Lag+time.Second {
				break
			}
			continue
		}
		out = append(out, w)
	}
	for gr, at := range s.typedLost {
		if received.Sub(at) < s.Lag {
			lost = append(lost, gr)
		}
	}
	slices.SortFunc(lost, func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
	return out, lost
}

// staleOf sets p.stale (or p.staleUnknown) for a request received at received, when the write
// that stored the State's version of the object replaced another version and completed less
// than the lag before: the server's first attempt may have read the version before it,
// or, when that one's write completed as recently, the one before that, and so on.
func (s *State) staleOf(p *Prior, gr schema.GroupResource, namespace, name string, received Received) {
	gr = StorageOf(gr)
	k := ReplacedKey{gr, ObjectKey{namespace, name}}
	s.staleFrom(p, k, s.Objects[gr][k.Obj], received)
}

// staleFrom is staleOf from the version cur, the one the request's last attempt read.
func (s *State) staleFrom(p *Prior, k ReplacedKey, cur *entry, rc Received) {
	received := rc.At
	before := true // every write from cur on was received after the request
	for cur != nil && cur.follows && !cur.done.IsZero() && !received.IsZero() && received.Sub(cur.done) < s.Lag {
		before = before && cur.received.After(received)
		var r *replacedEntry
		for i, c := range s.replaced[k] {
			if c.by == cur {
				r = &s.replaced[k][i]
			}
		}
		if r == nil || r.e.Raw == nil || len(p.Stale) == maxReplacedPerObject {
			p.Stale, p.FirstRead = nil, 0
			p.StaleUnknown = fmt.Sprintf("the write at %s completed %s, and the version it replaced is not known", cur.Source, rc.Since(cur.done))
			return
		}
		p.Stale = append(p.Stale, Prior{Kept: p.Kept, Found: true, Complete: p.Complete, Raw: r.e.Raw, RV: r.e.rv, Unknowns: r.e.unknowns,
			Source: fmt.Sprintf("%s (the version the write at %s, completed %s, replaced)", r.e.Source, cur.Source, rc.Since(cur.done))})
		if before {
			p.FirstRead = len(p.Stale)
		}
		cur = r.e
	}
}

// Received is when the request the State reads for was received: At; or, where its export
// lost when it was received (Lost says so: GKE's entries), the earliest it can have been, a
// minute before it completed (Completed). What the State says of when a write completed is
// then said against the request's response, which the export gives.
type Received struct {
	At, Completed time.Time
	Lost          string
}

// ReceivedAt is a Received the log gives.
func ReceivedAt(at time.Time) Received { return Received{At: at} }

// bound says whether At is only the earliest the request can have been received.
func (r Received) bound() bool { return r.Lost != "" && !r.Completed.IsZero() }

// Since says when a write that completed at done did against the request.
func (r Received) Since(done time.Time) string {
	if r.bound() {
		d := r.Completed.Sub(done).Round(time.Microsecond)
		if d < 0 {
			return fmt.Sprintf("%s after this request completed (%s)", -d, r.Lost)
		}
		return fmt.Sprintf("%s before this request completed (%s)", d, r.Lost)
	}
	gap := r.At.Sub(done).Round(time.Microsecond)
	if gap < 0 {
		return fmt.Sprintf("%s after this request was received", -gap)
	}
	return fmt.Sprintf("%s before this request was received", gap)
}

// completedAfter says that a write that completed at done did so after the request was
// received, and when each was (or that it may have, where the export lost when it was).
func (r Received) completedAfter(done time.Time) string {
	if r.bound() {
		return r.after(done)
	}
	return fmt.Sprintf("which completed after this request was received (%s, %s)", r.At.UTC().Format(time.RFC3339Nano), done.UTC().Format(time.RFC3339Nano))
}

// after is completedAfter without the times.
func (r Received) after(done time.Time) string {
	if r.bound() {
		return "which completed " + r.Since(done) + ", and may have after it was received"
	}
	return "which completed after this request was received"
}

// RecentWrite says why an object of the resource in the namespace (every namespace when it is
// empty) a request received at received deleted may have been read as an older version than
// the State's (see staleOf): a write that replaced a version of it completed less than
// the lag before; "" when none did. It names the last such write (of those completed at the
// same time, the first by its key): the same on every replay of the log.
func (s *State) RecentWrite(gr schema.GroupResource, namespace string, rc Received) string {
	received := rc.At
	gr = StorageOf(gr)
	if received.IsZero() {
		return ""
	}
	var last *entry
	var lastKey ObjectKey
	for k, e := range s.Objects[gr] {
		if (namespace == "" || k.Namespace == namespace) && e.follows && !e.done.IsZero() && !e.done.After(received) && received.Sub(e.done) < s.Lag {
			if last == nil || e.done.After(last.done) || e.done.Equal(last.done) && (k.Namespace < lastKey.Namespace || k.Namespace == lastKey.Namespace && k.Name < lastKey.Name) {
				last, lastKey = e, k
			}
		}
	}
	if last == nil {
		return ""
	}
	return fmt.Sprintf("the write at %s completed %s, and the versions before it are not followed for a deletecollection", last.Source, rc.Since(last.done))
}

func (s *State) Prior(gr schema.GroupResource, namespace, name string) Prior {
	gr = StorageOf(gr)
	p := Prior{Kept: s.keep(gr), Complete: s.Complete(gr)}
	e, ok := s.Objects[gr][ObjectKey{namespace, name}]
	if !ok {
		return p
	}
	p.Found, p.Source, p.Unknown, p.Raw, p.Unknowns, p.RV, p.Unmarked = true, e.Source, e.Unknown, e.Raw, e.unknowns, e.rv, e.unmarked
	p.FromSnapshot = e.fromSnapshot()
	if e.ifThere != nil {
		p.IfThere = &Prior{Kept: p.Kept, Complete: p.Complete, Found: true, Raw: e.ifThere, Unknowns: e.ifThereUnknowns,
			Source:    e.Source + " (it was not gone: the deletion left it marked deleted)",
			Unsettled: e.Source + ": the deletion marks it left are not known, and a DELETE of an object whose graceful deletion is pending reaches admission only when its options shorten the grace period"}
		p.IfThereAfter = e.done
	}
	return p
}

// MarkedMaybe records that the object's entry, as stored last, is the version a refused DELETE
// may have left marked deleted, and unmarked the version it has otherwise.
func (s *State) MarkedMaybe(gr schema.GroupResource, namespace, name string, unmarked []byte) {
	if e := s.Objects[StorageOf(gr)][ObjectKey{namespace, name}]; e != nil && e.Raw != nil && !s.keepsSnapshot(StorageOf(gr), e) {
		e.unmarked = unmarked
	}
}

// OtherVersionRead says whether the request may have read another version of the object
// first than this one: the watch cache's older copy (Stale, StaleUnknown), or the one a write
// that completed while it ran replaced (RacedBy). Its store then ran admission again on the
// live object: the response is that attempt's, the audit annotations may be the first's.
func (p Prior) OtherVersionRead() bool {
	return len(p.Stale) > 0 || p.StaleUnknown != "" || p.RacedBy != ""
}

// AskedFor is p for a request that asked for resourceVersion rv (0: none), in its body's
// metadata or a delete's preconditions. The store checks it before validating admission (the
// update's resourceVersion check in registry.Store.Update's GuaranteedUpdate, a delete's
// preconditions in conditionalDelete), so an attempt on another version fails there and
// publishes nothing: when p is that version, no other was read; otherwise only the older ones
// of that version, or whose version is not known, may have been.
func (p Prior) AskedFor(rv uint64) Prior {
	switch {
	case rv == 0 || !p.OtherVersionRead():
		return p
	case p.RV == rv:
		p.Stale, p.StaleUnknown, p.RacedBy, p.RacedFrom, p.FirstRead = nil, "", "", nil, 0
		return p
	}
	p.Stale, p.FirstRead = slices.DeleteFunc(slices.Clone(p.Stale), func(sp Prior) bool { return sp.RV != 0 && sp.RV != rv }), 0
	return p
}

// AdmittedOn is p for a request that reached validating admission having asked for
// resourceVersion rv (0: none): the store checked rv against the object it admitted the
// request on (registry.Store.Update's resourceVersion check, a delete's preconditions), on
// its last attempt. When p holds another version, that attempt read the version the watch
// cache may have held first (Stale), or one the State does not hold: the log does not hold
// the write that stored it (a snapshot older than the log's first line), or the State holds a
// later one (a snapshot read after it, a write the log records before this one that the
// server stored after).
func (p Prior) AdmittedOn(rv uint64) Prior {
	if rv == 0 || p.RV == 0 || p.Raw == nil || p.RV == rv {
		return p
	}
	for _, sp := range p.Stale {
		if sp.RV == rv && sp.Raw != nil {
			sp.FromSnapshot = false
			return sp
		}
	}
	p = p.WithoutVersion(fmt.Sprintf("the request asked for resourceVersion %d, which the store checks before admission, and the State holds %d (%s): the log does not hold the write that stored the version it read, or the State holds a later one", rv, p.RV, p.Source))
	p.Asked = rv
	return p
}

// WithoutVersion is p where the version of the object the request read is not known, and why:
// neither the State's nor any other it may have read first (Stale, RacedFrom, IfThere).
func (p Prior) WithoutVersion(why string) Prior {
	p.Raw, p.Unknowns, p.Stale, p.StaleUnknown, p.RacedBy, p.RacedFrom, p.IfThere, p.FirstRead = nil, nil, nil, "", "", nil, nil, 0
	p.Unknown = why
	return p
}

// Decode returns the object, or why its state is not known; nil and "" when there is none.
func (p Prior) Decode() (*unstructured.Unstructured, string) {
	if !p.Found || p.Raw == nil {
		return nil, p.Unknown
	}
	u, err := auditlog.DecodeObject(p.Raw)
	if err != nil {
		return nil, fmt.Sprintf("stored object does not decode: %v", err)
	}
	return u, ""
}

// List returns the JSON of every object of the resource in the namespace (every namespace
// when it is empty), or of the one named name when it is not empty (a list the store reads one
// key of: a field selector on metadata.name, registry.Store's ListPredicate, MatchesSingle), in
// no order, or why the State does not know them all: for a request received at received, they
// are not known when a write to one of them completed after it.
func (s *State) List(gr schema.GroupResource, namespace, name string, received time.Time) ([][]byte, map[ObjectKey][]vapccel.Unknown, string) {
	gr = StorageOf(gr)
	objects := s.objectsNamed(gr, namespace, name)
	switch {
	case !s.keep(gr):
		return nil, nil, "the replay does not keep " + gr.String()
	case !s.Complete(gr) && (name == "" || len(objects) == 0):
		return nil, nil, "the snapshot and the log do not hold every object of " + gr.String()
	case !received.IsZero() && s.lastDone[ReplacedKey{gr, ObjectKey{Namespace: namespace}}].After(received):
		return nil, nil, fmt.Sprintf("a write to %s completed after this request was received (%s): they ran concurrently, and the log does not say which objects it listed", gr, received.UTC().Format(time.RFC3339Nano))
	}
	out := [][]byte{}
	var unknowns map[ObjectKey][]vapccel.Unknown
	var unknown *ObjectKey // the first, by key, of the objects not known: the reason is stable
	for k, e := range objects {
		if namespace != "" && k.Namespace != namespace {
			continue
		}
		if e.Raw == nil {
			if unknown == nil || JoinKey(k.Namespace, k.Name) < JoinKey(unknown.Namespace, unknown.Name) {
				unknown = &k
			}
			continue
		}
		out = append(out, e.Raw)
		if len(e.unknowns) > 0 {
			if unknowns == nil {
				unknowns = map[ObjectKey][]vapccel.Unknown{}
			}
			unknowns[k] = e.unknowns
		}
	}
	if unknown != nil {
		return nil, nil, fmt.Sprintf("%s %s: %s", gr, JoinKey(unknown.Namespace, unknown.Name), ShortReason(s.Objects[gr][*unknown].Unknown))
	}
	return out, unknowns, ""
}

// objectsNamed are the entries of gr a list reads: all, or the one named name in namespace
// when name is not empty (none when the State holds none).
func (s *State) objectsNamed(gr schema.GroupResource, namespace, name string) map[ObjectKey]*entry {
	if name == "" {
		return s.Objects[gr]
	}
	k := ObjectKey{Namespace: namespace, Name: name}
	if e := s.Objects[gr][k]; e != nil {
		return map[ObjectKey]*entry{k: e}
	}
	return nil
}

// Selected is what a deletecollection of gr in namespace (of the one named name, when it is
// not empty: see List) received at received deleted of the objects the State knows, decoded:
// those sel selects, as the store's list read them when the request was received. An object
// the State does not know stays so. why says why it is not known: a write to the namespace
// concurrent with the request, or labels the State does not know.
func (s *State) Selected(gr schema.GroupResource, namespace, name string, received time.Time, sel labels.Selector) (items []any, unknowns map[ObjectKey][]vapccel.Unknown, why string) {
	gr = StorageOf(gr)
	if !s.keep(gr) {
		return nil, nil, "the replay does not keep " + gr.String()
	}
	if s.lastDone[ReplacedKey{gr, ObjectKey{Namespace: namespace}}].After(received) {
		return nil, nil, fmt.Sprintf("a write to %s completed after it was received (%s): they ran concurrently", gr, received.UTC().Format(time.RFC3339Nano))
	}
	unknowns = map[ObjectKey][]vapccel.Unknown{}
	objects := s.objectsNamed(gr, namespace, name)
	keys := slices.SortedFunc(maps.Keys(objects), func(a, b ObjectKey) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for _, k := range keys { // in a fixed order, not the map's
		e := objects[k]
		if (namespace != "" && k.Namespace != namespace) || e.Raw == nil {
			continue
		}
		for _, un := range e.unknowns {
			if labelsUnder(un.Path.Steps) {
				return nil, nil, fmt.Sprintf("the labels of %s %s are not known: %s", gr, JoinKey(k.Namespace, k.Name), un.Why)
			}
		}
		if !sel.Matches(e.Labels) {
			continue
		}
		u := auditlog.DecodeAnyObject(e.Raw)
		if u == nil {
			return nil, nil, fmt.Sprintf("%s %s does not decode", gr, JoinKey(k.Namespace, k.Name))
		}
		items = append(items, u.Object)
		if len(e.unknowns) > 0 {
			unknowns[k] = e.unknowns
		}
	}
	return items, unknowns, ""
}

// labelsUnder says whether a field at steps holds metadata.labels or is in it.
func labelsUnder(steps []string) bool { return FieldUnder(steps, "metadata", "labels") }

// FieldUnder says whether a field at steps holds the field at want or is in it.
func FieldUnder(steps []string, want ...string) bool {
	for i := 0; i < len(steps) && i < len(want); i++ {
		if steps[i] != want[i] && steps[i] != vapccel.AnyStep {
			return false
		}
	}
	return true
}

// SameStorage says whether the storage of one resource holds the objects of the other.
func SameStorage(a, b schema.GroupResource) bool { return StorageOf(a) == StorageOf(b) }

// StorageOf is the resource whose storage holds the objects of gr: kube-apiserver serves
// events.k8s.io's Events from core's (the two cohabit), so a write through one is read through
// the other.
func StorageOf(gr schema.GroupResource) schema.GroupResource {
	if gr == EventsK8sIOGR {
		return EventsGR
	}
	return gr
}

var (
	EventsGR      = schema.GroupResource{Resource: "events"}
	EventsK8sIOGR = schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
)

// Len is the number of objects the State holds.
func (s *State) Len() int {
	n := 0
	for _, m := range s.Objects {
		n += len(m)
	}
	return n
}

var NamespacesGR = schema.GroupResource{Resource: "namespaces"}

// SecretsGR is the resource of Secrets, whose values the replay's outputs scrub.
var SecretsGR = schema.GroupResource{Resource: "secrets"}

func JoinKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func Dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// ShortReason trims a reason to its first line.
func ShortReason(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Same says whether two typed writes are the same write.
func (tw TypedWrite) Same(o TypedWrite) bool {
	return tw.GR == o.GR && tw.Obj == o.Obj && tw.Done.Equal(o.Done) && tw.Ahead == o.Ahead
}

// Version names the version of its object the write gives a state it is undone in.
func (tw TypedWrite) Version() string {
	if tw.Ahead {
		return "the version it wrote"
	}
	return "the version before it"
}

// sameUID says whether the object whose JSON raw is has the uid, or none the JSON says.
func sameUID(raw []byte, uid string) bool {
	var o struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	return json.Unmarshal(raw, &o) != nil || o.Metadata.UID == "" || o.Metadata.UID == uid
}
