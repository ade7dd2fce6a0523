package state

import (
	"testing"

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

// TestListCacheSetUnknowns: a list cached before putPartly leaves an object's labels
// unknown (their stored value the same), which the bucket's clone keeps, is invalidated by
// setUnknowns: the later View's list misses the object.
func TestListCacheSetUnknowns(t *testing.T) {
	s, gr, cm := labelsState(t)
	gvr := gr.WithVersion("v1")
	sel := labels.SelectorFromSet(labels.Set{"team": "a"})
	v1 := s.View(false)
	if _, err := v1.List(gvr, "", sel); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPartly(gr, cm("b"), labelsUnknown, "put partly"); err != nil {
		t.Fatal(err)
	}
	// Without the cache (a fresh bucket), the list misses x.
	v2 := s.View(false)
	if _, err := v2.List(gvr, "", sel); err != nil {
		t.Fatal(err)
	}
	if len(v2.Misses()) == 0 {
		t.Errorf("a list by %s after x's labels became unknown misses nothing (the list cached before)", sel)
	}
}

// TestRescopeKeepsUnknowns: a catalog change that rebuilds the bucket (Rescope) keeps the
// typed entries' unknowns.
func TestRescopeKeepsUnknowns(t *testing.T) {
	s, gr, cm := labelsState(t)
	gvr := gr.WithVersion("v1")
	if err := s.PutPartly(gr, cm("b"), labelsUnknown, "put partly"); err != nil {
		t.Fatal(err)
	}
	sel := labels.SelectorFromSet(labels.Set{"team": "a"})
	s.Rescope(map[schema.GroupResource][]labels.Selector{gr: {sel}})
	v := s.View(false)
	if _, err := v.List(gvr, "", sel); err != nil {
		t.Fatal(err)
	}
	if len(v.Misses()) == 0 {
		t.Errorf("after Rescope, a list by %s misses nothing: x's unknown labels were dropped", sel)
	}
	if _, err := v.Get(gvr, "ns", "x"); err != nil {
		t.Fatal(err)
	}
	if len(v.Partials) == 0 {
		t.Errorf("after Rescope, a Get of x is no partial use: its unknowns were dropped")
	}
}

// TestListLabelsUnknown: a list by a selector misses an object whose labels are not known.
func TestListLabelsUnknown(t *testing.T) {
	s, gr, cm := labelsState(t)
	gvr := gr.WithVersion("v1")
	sel := labels.SelectorFromSet(labels.Set{"team": "a"})
	if err := s.PutPartly(gr, cm("b"), labelsUnknown, "put partly"); err != nil {
		t.Fatal(err)
	}
	v2 := s.View(false)
	if _, err := v2.List(gvr, "", sel); err != nil {
		t.Fatal(err)
	}
	if len(v2.Misses()) == 0 {
		t.Errorf("a list by %s misses nothing: x's labels are not known", sel)
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
