package verify

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/cel/common"
)

// TestParamView: a cached param reads in CEL exactly as the dispatcher's wrappedParam makes a
// typed param read: the object's fields plus the paramKind's apiVersion and kind.
func TestParamView(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "edge-1", Labels: map[string]string{"kosmos.io/node": "true"}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}},
	}
	gvk := corev1.SchemeGroupVersion.WithKind("Node")
	var views paramViews
	got := views.view(node, gvk)

	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(node)
	if err != nil {
		t.Fatal(err)
	}
	want["apiVersion"], want["kind"] = "v1", "Node"
	if diff := cmp.Diff(want, got.(*paramView).content); diff != "" {
		t.Errorf("content mismatch (-wrappedParam +paramView):\n%s", diff)
	}
	// CEL converts it as the apiserver's activation does.
	if v := common.SchemalessTypedToVal(got); v.Value() == nil {
		t.Errorf("SchemalessTypedToVal(paramView) = %v", v)
	} else if m, ok := v.Value().(map[string]any); !ok || m["kind"] != "Node" {
		t.Errorf("SchemalessTypedToVal(paramView) = %#v, want the converted map", v.Value())
	}
	if gotGVK := got.GetObjectKind().GroupVersionKind(); gotGVK != gvk {
		t.Errorf("GroupVersionKind() = %v, want %v: the dispatcher would wrap it again", gotGVK, gvk)
	}
	if acc, err := meta.Accessor(got); err != nil || acc.GetName() != "edge-1" || acc.GetLabels()["kosmos.io/node"] != "true" {
		t.Errorf("meta.Accessor(view) = %v, %v; want the node's metadata", acc, err)
	}
	if again := views.view(node, gvk); again != got {
		t.Errorf("the same stored object converted twice")
	}
	if other := views.view(node.DeepCopy(), gvk); other == got {
		t.Errorf("a new stored object returned the old view")
	}
	if u := views.view(got, gvk); u != got {
		t.Errorf("an object with a kind must be returned as it is")
	}
}

// TestParamViewsGenerations: the views a request keeps reading survive any number of others
// (versions a store replaced), and the others are dropped.
func TestParamViewsGenerations(t *testing.T) {
	gvk := corev1.SchemeGroupVersion.WithKind("Node")
	var views paramViews
	kept := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kosmos-1"}}
	first := views.view(kept, gvk)
	var stale runtime.Object
	for i := range 5 * paramViewLimit {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
		if i == 0 {
			stale = n
		}
		views.view(n, gvk)
		if i%(paramViewLimit/2) == 0 {
			if again := views.view(kept, gvk); again != first {
				t.Fatalf("after %d other views, the kept param was converted again", i+1)
			}
		}
	}
	if n := len(views.cur) + len(views.prev); n > 2*paramViewLimit {
		t.Errorf("%d views held, want at most %d", n, 2*paramViewLimit)
	}
	if _, ok := views.cur[stale]; ok {
		t.Errorf("a view not read again was kept")
	} else if _, ok := views.prev[stale]; ok {
		t.Errorf("a view not read again was kept")
	}
}
