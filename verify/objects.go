package verify

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Resources is what the evaluator needs to know of the cluster's API: the kind a request for a
// resource carries, the resources matchPolicy Equivalent treats as the same, and the mapping
// of kinds to resources and scopes. *schema.Catalog (package cel/schema) implements it.
type Resources interface {
	// KindFor returns the kind of the object a request for the resource (or subresource)
	// carries, or the zero kind when the resource is unknown or not served.
	KindFor(gvr schema.GroupVersionResource, subresource string) schema.GroupVersionKind
	// EquivalentResources returns the resources equivalent to gvr for matchPolicy
	// Equivalent, in the order the apiserver's EquivalentResourceRegistry gives them.
	EquivalentResources(gvr schema.GroupVersionResource, subresource string) []schema.GroupVersionResource
	// RESTMapper maps kinds to resources and scopes.
	RESTMapper() meta.RESTMapper
}

// objectInterfaces is the admission.ObjectInterfaces the apiserver's request scope provides:
// here the client-go scheme for the built-in kinds, unstructured objects for the others, and
// the Resources for equivalent resources.
type objectInterfaces struct {
	resources Resources
}

var _ admission.ObjectInterfaces = objectInterfaces{}

func (o objectInterfaces) GetObjectCreater() runtime.ObjectCreater     { return creater{} }
func (o objectInterfaces) GetObjectTyper() runtime.ObjectTyper         { return clientgoscheme.Scheme }
func (o objectInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter { return clientgoscheme.Scheme }
func (o objectInterfaces) GetObjectConvertor() runtime.ObjectConvertor { return convertor{} }
func (o objectInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return equivalents{o.resources}
}

type equivalents struct{ r Resources }

func (e equivalents) EquivalentResourcesFor(gvr schema.GroupVersionResource, subresource string) []schema.GroupVersionResource {
	return e.r.EquivalentResources(gvr, subresource)
}

func (e equivalents) KindFor(gvr schema.GroupVersionResource, subresource string) schema.GroupVersionKind {
	return e.r.KindFor(gvr, subresource)
}

// creater makes typed objects for the kinds client-go knows and unstructured ones otherwise.
type creater struct{}

func (creater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if clientgoscheme.Scheme.Recognizes(gvk) {
		return clientgoscheme.Scheme.New(gvk)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// convertor converts between versions of a kind when a policy matched the request through an
// equivalent resource of another version (matchPolicy Equivalent). kube-apiserver converts
// with the kind's conversion functions through its internal version; client-go has none, so
// the object's fields are carried over as they are and only apiVersion changes. The evaluator
// notes every decision that needed it.
type convertor struct{}

func (convertor) Convert(in, out, _ interface{}) error {
	inObj, ok := in.(runtime.Object)
	if !ok {
		return fmt.Errorf("cannot convert %T", in)
	}
	outObj, ok := out.(runtime.Object)
	if !ok {
		return fmt.Errorf("cannot convert to %T", out)
	}
	gvk := outObj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		kinds, _, err := clientgoscheme.Scheme.ObjectKinds(outObj)
		if err != nil || len(kinds) == 0 {
			return fmt.Errorf("cannot convert to %T: unknown kind", out)
		}
		gvk = kinds[0]
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(inObj)
	if err != nil {
		return err
	}
	content = runtime.DeepCopyJSON(content)
	content["apiVersion"] = gvk.GroupVersion().String()
	content["kind"] = gvk.Kind
	if u, ok := outObj.(*unstructured.Unstructured); ok {
		u.Object = content
		return nil
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(content, outObj)
}

func (c convertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	kind, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{in.GetObjectKind().GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("cannot convert %v to %v", in.GetObjectKind().GroupVersionKind(), gv)
	}
	out, err := creater{}.New(kind)
	if err != nil {
		return nil, err
	}
	if err := c.Convert(in, out, nil); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(kind)
	return out, nil
}

func (convertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}
