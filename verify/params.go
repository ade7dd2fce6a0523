package verify

import (
	"encoding/json"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// paramView is a built-in param as the dispatcher hands it to CEL, converted once.
//
// The apiserver's validating dispatcher wraps a typed param (an informer's object has no
// TypeMeta) in its wrappedParam, whose ToUnstructured converts the whole object by reflection
// and adds the paramKind's apiVersion and kind, on every evaluation: for a selector that
// matches many Nodes, that conversion is most of the cost of a request. paramView carries the
// same TypeMeta, so the dispatcher does not wrap it again, and returns the same content
// (runtime.DefaultUnstructuredConverter of the object plus apiVersion and kind) from a map
// converted once per stored object. CEL only reads it.
type paramView struct {
	metav1.Object // the param's metadata, for meta.Accessor (names, namespaces, labels)
	typeMeta      metav1.TypeMeta
	nested        runtime.Object
	content       map[string]any
}

// ToUnstructured returns the param's content, as wrappedParam.ToUnstructured does. With
// MarshalJSON it makes paramView a structured-merge-diff value.UnstructuredConverter, which is
// how the apiserver's CEL activation (common.SchemalessTypedToVal) converts params.
func (p *paramView) ToUnstructured() interface{} { return p.content }

// MarshalJSON returns the param's content as JSON.
func (p *paramView) MarshalJSON() ([]byte, error) { return json.Marshal(p.content) }

// GetObjectKind returns the paramKind's apiVersion and kind.
func (p *paramView) GetObjectKind() schema.ObjectKind { return &p.typeMeta }

// DeepCopyObject implements runtime.Object.
func (p *paramView) DeepCopyObject() runtime.Object {
	nested := p.nested.DeepCopyObject()
	obj, _ := nested.(metav1.Object)
	return &paramView{Object: obj, typeMeta: p.typeMeta, nested: nested, content: runtime.DeepCopyJSON(p.content)}
}

// paramViews caches the views of the params an evaluator has handed out, by stored object.
// Stores never change an object they hold (Put stores a new one), so the object's identity is
// its version. It keeps two generations of at most paramViewLimit views: a view found in the
// older one moves to the newer, and when the newer is full the older is dropped, so the params
// requests keep reading stay while the versions a store has replaced go.
type paramViews struct {
	mu        sync.Mutex
	cur, prev map[runtime.Object]*paramView
}

const paramViewLimit = 512

// view returns the object as the dispatcher gives it to CEL: unchanged when it has a kind
// (unstructured custom resources, which the dispatcher does not wrap either), else a paramView
// with the paramKind's apiVersion and kind.
func (c *paramViews) view(obj runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	if obj == nil || !obj.GetObjectKind().GroupVersionKind().Empty() {
		return obj
	}
	meta, ok := obj.(metav1.Object)
	if !ok {
		return obj
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.cur[obj]; ok && v.typeMeta.GroupVersionKind() == gvk {
		return v
	}
	if v, ok := c.prev[obj]; ok && v.typeMeta.GroupVersionKind() == gvk {
		c.keep(obj, v)
		return v
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return obj // let the dispatcher convert it, and fail, as it would
	}
	tm := metav1.TypeMeta{}
	tm.SetGroupVersionKind(gvk)
	content["apiVersion"], content["kind"] = tm.APIVersion, tm.Kind
	v := &paramView{Object: meta, typeMeta: tm, nested: obj, content: content}
	c.keep(obj, v)
	return v
}

// keep adds the view to the newer generation, which becomes the older when it is full.
func (c *paramViews) keep(obj runtime.Object, v *paramView) {
	if c.cur == nil || len(c.cur) >= paramViewLimit {
		c.prev, c.cur = c.cur, make(map[runtime.Object]*paramView, paramViewLimit)
	}
	c.cur[obj] = v
}
