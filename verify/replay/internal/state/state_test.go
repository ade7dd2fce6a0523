package state

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vapccel "github.com/vapc-dev/vapc/cel"
)

// TestStateVersions builds the State directly from writes of one object and asks it which
// version a request read (priorOf): the log records a request when its response completes, so
// the version the State holds may be one a request received earlier did not read, and a
// write the log records late may have been stored before one it records earlier.
func TestStateVersions(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type write struct {
		rv   uint64
		done int // ms after t0
	}
	// got is what a test reads of a prior: the resourceVersion of the version it holds (0:
	// none), whether it is known, and the version a concurrent write replaced.
	type got struct {
		RV        uint64
		Unknown   bool
		Raced     bool
		RacedFrom uint64
	}
	for _, tc := range []struct {
		name     string
		writes   []write
		rv       uint64 // the request's result's resourceVersion, 0 when the log does not show it
		received int
		want     got
	}{
		{"received after the write completed", []write{{10, 100}}, 0, 200,
			got{RV: 10}},
		{"received before the latest write completed: the version it replaced is the alternative", []write{{10, 100}, {11, 300}}, 0, 200,
			got{RV: 11, Raced: true, RacedFrom: 10}},
		{"received before the only write completed: no version before it is known", []write{{11, 300}}, 0, 200,
			got{RV: 11, Raced: true}},
		{"a result after the State's version orders the request after the write", []write{{10, 100}, {11, 300}}, 12, 200,
			got{RV: 11}},
		{"logged after a later write, stored before it: the version the later write replaced", []write{{10, 100}, {12, 300}}, 11, 200,
			got{RV: 10}},
		{"logged after a later write, the version it changed not kept", []write{{12, 300}}, 11, 200,
			got{Unknown: true}},
		{"a write logged after a later one changes nothing", []write{{10, 100}, {12, 300}, {11, 350}}, 0, 400,
			got{RV: 12}},
		{"a no-op update restates the version: not a concurrent write", []write{{10, 100}, {10, 300}}, 0, 200,
			got{RV: 10}},
		{"a no-op logged after a later write: the version it read, which that write replaced", []write{{10, 100}, {11, 300}}, 10, 200,
			got{RV: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := NewState(meta.NewDefaultRESTMapper(nil), func(schema.GroupResource) bool { return true }, func(schema.GroupResource) bool { return false })
			for i, w := range tc.writes {
				u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"namespace": "ns", "name": "cm", "resourceVersion": fmt.Sprint(w.rv)},
					"data":     map[string]any{"write": fmt.Sprint(i)}}}
				raw, err := u.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				source := fmt.Sprintf("audit.log:%d", i+1)
				if err := s.PutRaw(gr, u, raw, nil, source); err != nil {
					t.Fatal(err)
				}
				s.MarkDone(gr, "ns", "cm", source, at(w.done))
			}
			p := s.PriorOf(gr, "ns", "cm", tc.rv, ReceivedAt(at(tc.received)), false)
			rvOf := func(raw []byte) uint64 {
				if raw == nil {
					return 0
				}
				u, _ := (Prior{Found: true, Raw: raw}).Decode()
				return ResourceVersion(u.GetResourceVersion())
			}
			g := got{RV: rvOf(p.Raw), Unknown: p.Unknown != "", Raced: p.RacedBy != ""}
			if p.RacedFrom != nil {
				g.RacedFrom = rvOf(p.RacedFrom.Raw)
			}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("priorOf(rv %d, received %dms) mismatch (-want +got):\n%s", tc.rv, tc.received, diff)
			}
		})
	}
}

// TestReceivedSince: a write that completed after the request was received says so, not a
// negative time before. Where the request's export lost when it was received (GKE), At is the
// earliest it can have been, a minute before it completed: the write is placed against the
// request's response, and the text says why (it said "59.99s before this request was
// received" of a write that completed moments before it).
func TestReceivedSince(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	const lost = "the GKE Cloud Logging export does not carry when the request was received"
	gke := Received{At: t0.Add(-time.Minute), Completed: t0, Lost: lost}
	for _, tc := range []struct {
		name                 string
		rc                   Received
		done                 time.Time
		since, completeAfter string
	}{
		{name: "before", rc: ReceivedAt(t0), done: t0.Add(-4 * time.Millisecond),
			since: "4ms before this request was received", completeAfter: "which completed after this request was received (2026-11-20T10:00:00Z, 2026-11-20T09:59:59.996Z)"},
		{name: "after", rc: ReceivedAt(t0), done: t0.Add(3990 * time.Microsecond),
			since: "3.99ms after this request was received", completeAfter: "which completed after this request was received (2026-11-20T10:00:00Z, 2026-11-20T10:00:00.00399Z)"},
		{name: "at once", rc: ReceivedAt(t0), done: t0,
			since: "0s before this request was received", completeAfter: "which completed after this request was received (2026-11-20T10:00:00Z, 2026-11-20T10:00:00Z)"},
		{name: "lost: before it completed", rc: gke, done: t0.Add(-10 * time.Millisecond),
			since: "10ms before this request completed (" + lost + ")", completeAfter: "which completed 10ms before this request completed (" + lost + "), and may have after it was received"},
		{name: "lost: after it completed", rc: gke, done: t0.Add(2 * time.Millisecond),
			since: "2ms after this request completed (" + lost + ")", completeAfter: "which completed 2ms after this request completed (" + lost + "), and may have after it was received"},
	} {
		if got := tc.rc.Since(tc.done); got != tc.since {
			t.Errorf("%s: Since = %q, want %q", tc.name, got, tc.since)
		}
		if got := tc.rc.completedAfter(tc.done); got != tc.completeAfter {
			t.Errorf("%s: completedAfter = %q, want %q", tc.name, got, tc.completeAfter)
		}
		// after is completedAfter without the times.
		want, _, _ := strings.Cut(tc.completeAfter, " (2026")
		if got := tc.rc.after(tc.done); got != want {
			t.Errorf("%s: after = %q, want %q", tc.name, got, want)
		}
	}
}

// TestRecentWriteNamesTheLast: of the writes that completed within the lag before a
// deletecollection was received, RecentWrite names the last, whatever order the State's map
// gives them in (random parity seed c:753's log gave another of two from one replay to the
// next).
func TestRecentWriteNamesTheLast(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	s := &State{Lag: time.Second, Objects: map[schema.GroupResource]map[ObjectKey]*entry{gr: {
		{"ns1", "a"}: {Source: "log:1", done: t0, follows: true},
		{"ns1", "b"}: {Source: "log:2", done: t0.Add(200 * time.Millisecond), follows: true},
		{"ns1", "c"}: {Source: "log:3", done: t0.Add(100 * time.Millisecond), follows: true},
		{"ns1", "d"}: {Source: "log:4", done: t0.Add(300 * time.Millisecond)}, // created: no version before it
		{"ns2", "e"}: {Source: "log:5", done: t0.Add(400 * time.Millisecond), follows: true},
	}}}
	want := "the write at log:2 completed 100ms before this request was received, and the versions before it are not followed for a deletecollection"
	for range 20 {
		if got := s.RecentWrite(gr, "ns1", ReceivedAt(t0.Add(300*time.Millisecond))); got != want {
			t.Fatalf("RecentWrite = %q, want %q", got, want)
		}
	}
}

// TestWritesLoggedLate: a write the log records after another it ran concurrently with does not
// make its object known again where the other left it unknown, nor bring back an object a
// deletion the log records first removed after it.
func TestWritesLoggedLate(t *testing.T) {
	gr, gvk, at := cmGR, cmGVK, msAt
	type got struct {
		Found, Known bool
		RV           uint64
	}
	put := func(s *State, rv uint64, received, done int, source string) error {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": "ns", "name": "cm", "resourceVersion": fmt.Sprint(rv)}}}
		raw, err := u.MarshalJSON()
		if err != nil {
			return err
		}
		s.BeginWrite(false, at(received), at(done), source)
		defer s.EndWrite()
		return s.PutRaw(gr, u, raw, nil, source)
	}
	forget := func(s *State, done int) {
		s.BeginWrite(false, at(done-5), at(done), "audit.log:1")
		defer s.EndWrite()
		s.Forget(gr, gvk, "ns", "cm", "written at audit.log:1: the result is not in the log")
	}
	deleteAt := func(s *State, gone uint64) {
		s.BeginWrite(false, at(90), at(100), "audit.log:1")
		defer s.EndWrite()
		s.DeleteAt(gr, gvk, "ns", "cm", gone, true)
	}
	for _, tc := range []struct {
		name   string
		before func(s *State)
		rv     uint64
		want   got
	}{
		{"left unknown by a write that completed after this one was received", func(s *State) { forget(s, 300) }, 10, got{Found: true}},
		{"left unknown by a write that completed before this one was received", func(s *State) { forget(s, 150) }, 10, got{Found: true, Known: true, RV: 10}},
		// The replay rebuilt the version (a write followed through the pipeline: its
		// resourceVersion is not known), and this one ran concurrently with it.
		{"rebuilt by a write that completed after this one was received", func(s *State) {
			s.BeginWrite(false, at(250), at(300), "audit.log:1")
			defer s.EndWrite()
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"namespace": "ns", "name": "cm"}, "data": map[string]any{"bound": "yes"}}}
			if err := s.Put(gr, u, "audit.log:1"); err != nil {
				t.Fatal(err)
			}
			s.MarkDone(gr, "ns", "cm", "audit.log:1", at(300))
		}, 10, got{Found: true}},
		{"stored before a deletion the log records first", func(s *State) { deleteAt(s, 20) }, 15, got{}},
		{"stored at the version an update that deleted the object read", func(s *State) {
			s.BeginWrite(false, at(90), at(100), "audit.log:1")
			defer s.EndWrite()
			s.DeleteAt(gr, gvk, "ns", "cm", 15, false)
		}, 15, got{}},
		// W1 left it unknown (done 150), W2 ran concurrently (received 100, done 300) and kept
		// it so; this one, received 200, ran concurrently with W2.
		{"a third write concurrent with the second", func(s *State) {
			forget(s, 150)
			if err := put(s, 12, 100, 300, "audit.log:3"); err != nil {
				t.Fatal(err)
			}
		}, 10, got{Found: true}},
		{"created after that deletion", func(s *State) { deleteAt(s, 20) }, 25, got{Found: true, Known: true, RV: 25}},
		{"a deletion whose revision the log does not show", func(s *State) { deleteAt(s, 0) }, 15, got{Found: true, Known: true, RV: 15}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newTestState()
			tc.before(s)
			if err := put(s, tc.rv, 200, 400, "audit.log:2"); err != nil {
				t.Fatal(err)
			}
			p := s.Prior(gr, "ns", "cm")
			g := got{Found: p.Found, Known: p.Raw != nil}
			if u, _ := p.Decode(); u != nil {
				g.RV = ResourceVersion(u.GetResourceVersion())
			}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("the object after the write (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeletionsLoggedLate: a deletion the log records after a create of its object's next
// incarnation leaves that one; one that ran concurrently with a write that left the object
// unknown leaves it unknown; an update's deletion, at the version it read, below the one the
// State holds, leaves it unknown.
func TestDeletionsLoggedLate(t *testing.T) {
	gr, gvk, at := cmGR, cmGVK, msAt
	type got = presence
	for _, tc := range []struct {
		name   string
		before func(s *State) // the write logged first, done at 300
		gone   uint64
		exact  bool
		want   got
	}{
		{"the next incarnation, created after the deletion", func(s *State) { putCM(t, s, gr, 30) }, 20, true, got{Found: true, Known: true}},
		{"the version the deletion removed", func(s *State) { putCM(t, s, gr, 18) }, 20, true, got{}},
		{"left unknown by a concurrent create", func(s *State) {
			s.current.creating = true
			s.Forget(gr, gvk, "ns", "cm", "created at audit.log:1 at level Metadata")
		}, 20, true, got{Found: true}},
		// Whether the write was a create is not known of an unknown entry (an export that
		// lost its 201).
		{"left unknown by a concurrent update", func(s *State) { s.Forget(gr, gvk, "ns", "cm", "written at audit.log:1 at level Metadata") }, 20, true, got{Found: true}},
		// A rebuilt update before the deletion removed the object: committed before it.
		{"rebuilt by a concurrent update", func(s *State) {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"namespace": "ns", "name": "cm"}}}
			if err := s.Put(gr, u, "audit.log:1"); err != nil {
				t.Fatal(err)
			}
			s.MarkDone(gr, "ns", "cm", "audit.log:1", at(300))
		}, 20, true, got{}},
		{"an update's deletion below the State's version", func(s *State) { putCM(t, s, gr, 30) }, 20, false, got{Found: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestState()
			s.BeginWrite(false, at(250), at(300), "audit.log:1")
			tc.before(s)
			s.EndWrite()
			s.BeginWrite(false, at(200), at(400), "audit.log:2")
			s.DeleteAt(gr, gvk, "ns", "cm", tc.gone, tc.exact)
			s.EndWrite()
			if g := presenceOf(s); g != tc.want {
				t.Errorf("after the deletion: %+v, want %+v", g, tc.want)
			}
		})
	}
}

// putCM stores the ConfigMap ns/cm at resourceVersion rv.
func putCM(t *testing.T, s *State, gr schema.GroupResource, rv uint64) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ns", "name": "cm", "resourceVersion": fmt.Sprint(rv)}}}
	raw, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutRaw(gr, u, raw, nil, "audit.log:1"); err != nil {
		t.Fatal(err)
	}
}

// TestDeletedByUID: a deletion answered with a Status names the uid of what it removed: where
// a create the log records first ran concurrently with it, the same uid removed what the
// create made, another an earlier object the create then replaced, none says neither.
func TestDeletedByUID(t *testing.T) {
	gr, gvk, at := cmGR, cmGVK, msAt
	type got = presence
	for _, tc := range []struct {
		name     string
		received int // the deletion's; the create completed at 300
		uid      string
		rebuilt  bool // the replay rebuilt what the create made
		want     got
	}{
		{"the object the create made", 200, "u-new", false, got{}},
		{"an earlier object", 200, "u-old", false, got{Found: true, Known: true}},
		{"no uid", 200, "", false, got{Found: true}},
		{"received after the create completed", 400, "u-old", false, got{}},
		// Its uid is the replay's pipeline's, not the server's: which object the deletion
		// removed is not known.
		{"the object a rebuilt create made", 200, "u-new", true, got{Found: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestState()
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"namespace": "ns", "name": "cm", "uid": "u-new", "resourceVersion": "30"}}}
			raw, err := u.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			s.BeginWrite(true, at(100), at(300), "audit.log:1")
			if tc.rebuilt {
				err = s.Put(gr, u, "audit.log:1")
			} else {
				err = s.PutRaw(gr, u, raw, nil, "audit.log:1")
			}
			if err != nil {
				t.Fatal(err)
			}
			s.MarkDone(gr, "ns", "cm", "audit.log:1", at(300))
			s.EndWrite()
			s.BeginWrite(false, at(tc.received), at(500), "audit.log:2")
			s.DeleteUID(gr, gvk, "ns", "cm", tc.uid)
			s.EndWrite()
			if g := presenceOf(s); g != tc.want {
				t.Errorf("after the deletion: %+v, want %+v", g, tc.want)
			}
		})
	}
}

// The ConfigMap ns/cm the tests of writes logged late write, and their clock.
var (
	cmGR  = schema.GroupResource{Resource: "configmaps"}
	cmGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// msAt is ms milliseconds into the tests' clock.
func msAt(ms int) time.Time {
	return time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond)
}

// newTestState is a State that keeps every resource.
func newTestState() *State {
	return NewState(meta.NewDefaultRESTMapper(nil), func(schema.GroupResource) bool { return true }, func(schema.GroupResource) bool { return false })
}

// presence is what a test reads of ns/cm: whether the State has an entry, and knows it.
type presence struct {
	Found, Known bool
}

func presenceOf(s *State) presence {
	p := s.Prior(cmGR, "ns", "cm")
	return presence{Found: p.Found, Known: p.Raw != nil}
}

// TestAskedFor: a request that asked for a resourceVersion reached admission only on that
// version: the other versions it may have read first are dropped, but those whose version is
// not known.
func TestAskedFor(t *testing.T) {
	stale := func(rvs ...uint64) []Prior {
		var out []Prior
		for _, rv := range rvs {
			out = append(out, Prior{Found: true, RV: rv})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		prior Prior
		asked uint64
		want  Prior
	}{
		{name: "none asked", prior: Prior{RV: 12, Stale: stale(11), RacedBy: "w"}, want: Prior{RV: 12, Stale: stale(11), RacedBy: "w"}},
		{name: "the State's version", prior: Prior{RV: 12, Stale: stale(11, 10), StaleUnknown: "x", RacedBy: "w", RacedFrom: &Prior{RV: 11}}, asked: 12, want: Prior{RV: 12}},
		{name: "an older version", prior: Prior{RV: 12, Stale: stale(11, 0, 10), StaleUnknown: "x"}, asked: 11, want: Prior{RV: 12, Stale: stale(11, 0), StaleUnknown: "x"}},
		{name: "no other version read", prior: Prior{RV: 12}, asked: 11, want: Prior{RV: 12}},
	} {
		if diff := cmp.Diff(tc.want, tc.prior.AskedFor(tc.asked)); diff != "" {
			t.Errorf("%s: AskedFor(%d) (-want +got):\n%s", tc.name, tc.asked, diff)
		}
	}
}

// TestPutPartlyAtReplaces: an object put back at the resourceVersion the State holds replaces
// what the State holds there (the answer of a dry run a write whose export lost whether it was
// one stored over an entry with unknown fields), with the unknowns given.
func TestPutPartlyAtReplaces(t *testing.T) {
	s := newTestState()
	gr := schema.GroupResource{Resource: "configmaps"}
	cm := func(v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": "ns", "name": "c", "resourceVersion": "7"}, "data": map[string]any{"k": v}}}
	}
	unknown := []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object", Steps: []string{"data"}}, Why: "not logged"}}
	if err := s.PutPartlyAt(gr, cm("before"), unknown, "before"); err != nil {
		t.Fatal(err)
	}
	// The dry run's answer, stored as the log's response at the version the State holds.
	dry := cm("dryrun")
	raw, err := json.Marshal(dry.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutRaw(gr, dry, raw, nil, "the dry run"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPartlyAt(gr, cm("before"), unknown, "put back"); err != nil {
		t.Fatal(err)
	}
	p := s.Prior(gr, "ns", "c")
	if !strings.Contains(string(p.Raw), `"before"`) || len(p.Unknowns) != 1 {
		t.Errorf("the State holds %s with %d unknowns, want the object put back with its one", p.Raw, len(p.Unknowns))
	}
}

// TestDeletedVersionRead: a write the log records after a deletion, whose result's
// resourceVersion is after the deleted version's, read that version (it committed before the
// deletion) unless its result is after the deletion's own revision or of another uid: then it
// created the object again.
func TestDeletedVersionRead(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name      string
		deletedAt uint64 // the deletion's revision its response shows; 0: a Status
		rv        uint64 // the write's result
		uid       string
		wantFound bool
	}{
		{"committed before the deletion", 0, 11, "u1", true},
		{"the uid not said", 0, 11, "", true},
		{"another uid: created again", 0, 11, "u2", false},
		{"before the deletion's revision", 12, 11, "u1", true},
		{"after the deletion's revision: created again", 12, 13, "u1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewState(meta.NewDefaultRESTMapper(nil), func(schema.GroupResource) bool { return true }, func(schema.GroupResource) bool { return false })
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"namespace": "ns", "name": "cm", "uid": "u1", "resourceVersion": "10"}}}
			raw, err := u.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if err := s.PutRaw(gr, u, raw, nil, "audit.log:1"); err != nil {
				t.Fatal(err)
			}
			s.BeginWrite(false, time.Time{}, time.Time{}, "audit.log:2")
			s.DeleteAt(gr, u.GroupVersionKind(), "ns", "cm", tc.deletedAt, tc.deletedAt > 0)
			s.EndWrite()
			p := s.PriorOfResult(gr, "ns", "cm", tc.rv, tc.uid, Received{}, false)
			if p.Found != tc.wantFound {
				t.Errorf("PriorOfResult(rv %d, uid %q) after a deletion at %d: found %v (%s), want %v", tc.rv, tc.uid, tc.deletedAt, p.Found, p.Source, tc.wantFound)
			}
		})
	}
}
