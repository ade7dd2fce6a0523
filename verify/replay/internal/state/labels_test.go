package state

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vapccel "github.com/vapc-dev/vapc/cel"
)

func labelsState(t *testing.T) (*State, schema.GroupResource, func(team string) *unstructured.Unstructured) {
	gr := schema.GroupResource{Resource: "configmaps"}
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	s := NewState(m, func(schema.GroupResource) bool { return true }, func(g schema.GroupResource) bool { return g == gr })
	s.MarkComplete(gr, "test")
	cm := func(team string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": "ns", "name": "x", "resourceVersion": "7", "labels": map[string]any{"team": team}}, "data": map[string]any{"k": "v"}}}
	}
	if err := s.Put(gr, cm("b"), "put"); err != nil {
		t.Fatal(err)
	}
	return s, gr, cm
}

var labelsUnknown = []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object", Steps: []string{"metadata", "labels"}}, Why: "a dry run may have relabelled it"}}

// TestListLabelsUnknown: a list by a selector misses an object whose labels are not known,
// whatever its stored labels (team=b) say, once putPartly leaves them unknown: when a list
// was cached before (a View held the bucket, whose clone keeps it: setUnknowns invalidates
// it), and after a catalog change rebuilt the bucket (Rescope keeps the unknowns).
func TestListLabelsUnknown(t *testing.T) {
	for _, tc := range []struct {
		name         string
		team         string // the selector's
		cachedBefore bool
		rescope      bool
	}{
		{name: "not selected by its stored labels", team: "a"},
		{name: "selected by its stored labels", team: "b"},
		{name: "a list cached before", team: "a", cachedBefore: true},
		{name: "a list cached before, selected", team: "b", cachedBefore: true},
		{name: "after Rescope", team: "a", rescope: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, gr, cm := labelsState(t)
			gvr := gr.WithVersion("v1")
			sel := labels.SelectorFromSet(labels.Set{"team": tc.team})
			if tc.cachedBefore {
				if _, err := s.View(false).List(gvr, "", sel); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.PutPartly(gr, cm("b"), labelsUnknown, "put partly"); err != nil {
				t.Fatal(err)
			}
			if tc.rescope {
				s.Rescope(map[schema.GroupResource][]labels.Selector{gr: {sel}})
			}
			v := s.View(false)
			if _, err := v.List(gvr, "", sel); err != nil {
				t.Fatal(err)
			}
			if len(v.Misses()) == 0 {
				t.Errorf("a list by %s misses nothing: x's labels are not known", sel)
			}
			if _, err := v.Get(gvr, "ns", "x"); err != nil {
				t.Fatal(err)
			}
			if len(v.Partials) == 0 {
				t.Errorf("a Get of x is no partial use: its unknowns were dropped")
			}
		})
	}
}

// TestListCachePartials: when store keeps what the State holds (here a version older than the
// stored one) putPartly still adds the unknowns, through setUnknowns, which invalidates the
// cached lists that selected x: a list holds its partial use as a Get does.
func TestListCachePartials(t *testing.T) {
	s, gr, cm := labelsState(t)
	gvr := gr.WithVersion("v1")
	sel := labels.SelectorFromSet(labels.Set{"team": "b"})
	v1 := s.View(false)
	if _, err := v1.List(gvr, "", sel); err != nil {
		t.Fatal(err)
	}
	cur := cm("b")
	cur.SetResourceVersion("8")
	raw, _ := cur.MarshalJSON()
	if err := s.PutRaw(gr, cur, raw, nil, "at 8"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.View(false).List(gvr, "", sel); err != nil {
		t.Fatal(err)
	}
	old := cm("b")
	old.SetResourceVersion("6")
	dataUnknown := []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object", Steps: []string{"data"}}, Why: "not known"}}
	if err := s.PutPartlyAt(gr, old, dataUnknown, "older"); err != nil {
		t.Fatal(err)
	}
	v2 := s.View(false)
	if _, err := v2.Get(gvr, "ns", "x"); err != nil {
		t.Fatal(err)
	}
	v3 := s.View(false)
	if _, err := v3.List(gvr, "", sel); err != nil {
		t.Fatal(err)
	}
	if len(v2.Partials) > 0 && len(v3.Partials) == 0 {
		t.Errorf("a Get of x is a partial use, a list by %s (cached) is not", sel)
	}
}

// TestUnknownsBounded: a field that write after write leaves unknown, each write for a cause
// of its own (a status patched every ten seconds whose export cannot say it was stored, or a
// log whose writes answer with versions older than the State's), stays one unknown: the
// first cause, in the untyped entry and the evaluator's typed one.
func TestUnknownsBounded(t *testing.T) {
	s, gr, cm := labelsState(t)
	gvr := gr.WithVersion("v1")
	cur := cm("b")
	cur.SetResourceVersion("8")
	raw, _ := cur.MarshalJSON()
	if err := s.PutRaw(gr, cur, raw, nil, "at 8"); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		older := cm("b")
		older.SetResourceVersion("6")
		u := []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object", Steps: []string{"data"}}, Why: fmt.Sprintf("write %d", i)}}
		if err := s.PutPartlyAt(gr, older, u, "older"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.Objects[gr][ObjectKey{"ns", "x"}].unknowns); n != 1 {
		t.Errorf("the entry holds %d unknowns, want 1", n)
	}
	v := s.View(false)
	if _, err := v.Get(gvr, "ns", "x"); err != nil {
		t.Fatal(err)
	}
	want := []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object", Steps: []string{"data"}}, Why: "write 0"}}
	if len(v.Partials) != 1 {
		t.Fatalf("%d partial uses, want 1", len(v.Partials))
	}
	if diff := cmp.Diff(want, v.Partials[0].Unknowns); diff != "" {
		t.Errorf("the typed entry's unknowns (-want +got):\n%s", diff)
	}
}

// TestPreconditionOrders: a write received before the one logged first completed ran
// concurrently with it, and which the server committed last is not known; unless its
// precondition (Asked) is later than the other's: that one was committed first.
func TestPreconditionOrders(t *testing.T) {
	for _, tc := range []struct {
		name         string
		first, later uint64 // the writes' preconditions (0: none)
		known        bool
	}{
		{name: "no preconditions", known: false},
		{name: "the later write found a later version", first: 7, later: 8, known: true},
		{name: "the later write found the same version", first: 7, later: 7, known: false},
		{name: "only the later write gave one", later: 8, known: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, gr, cm := labelsState(t)
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			s.BeginWrite(false, t0.Add(time.Second), t0.Add(2*time.Second), "log:1")
			// Rebuilt by the pipeline: no resourceVersion the server gave.
			rebuilt := func(team string) *unstructured.Unstructured { u := cm(team); u.SetResourceVersion(""); return u }
			s.Asked(tc.first)
			if err := s.Put(gr, rebuilt("first"), "log:1"); err != nil {
				t.Fatal(err)
			}
			s.MarkDone(gr, "ns", "x", "log:1", t0.Add(2*time.Second))
			s.EndWrite()
			s.BeginWrite(false, t0, t0.Add(3*time.Second), "log:2") // received before log:1 completed
			s.Asked(tc.later)
			if err := s.Put(gr, rebuilt("later"), "log:2"); err != nil {
				t.Fatal(err)
			}
			s.EndWrite()
			p := s.Prior(gr, "ns", "x")
			if got := p.Raw != nil && p.Unknown == ""; got != tc.known {
				t.Fatalf("known = %v, want %v (%s)", got, tc.known, p.Unknown)
			}
			if tc.known && !strings.Contains(string(p.Raw), `"later"`) {
				t.Errorf("the State holds %s, want the later write's", p.Raw)
			}
		})
	}
}
