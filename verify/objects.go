package verify

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
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

// DefaultJSON returns an object of a built-in kind (JSON) with the defaults kube-apiserver's
// scheme sets when the server decodes it; an object of another kind is returned as it is. A
// field the kind does not have is an error, as the server's strict field validation makes it.
func DefaultJSON(data []byte) ([]byte, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	typed, err := toTyped(u, true)
	if err != nil || typed == nil {
		return data, err
	}
	kubescheme.Scheme.Default(typed)
	return json.Marshal(typed)
}

// objectInterfaces is the admission.ObjectInterfaces the apiserver's request scope provides:
// here kube-apiserver's own scheme for the built-in kinds, unstructured objects for the others,
// and the Resources for equivalent resources.
type objectInterfaces struct {
	resources Resources
}

var _ admission.ObjectInterfaces = objectInterfaces{}

func (o objectInterfaces) GetObjectCreater() runtime.ObjectCreater     { return creater{} }
func (o objectInterfaces) GetObjectTyper() runtime.ObjectTyper         { return kubescheme.Scheme }
func (o objectInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter { return defaulter(o) }
func (o objectInterfaces) GetObjectConvertor() runtime.ObjectConvertor { return convertor{} }
func (o objectInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return equivalents{o.resources}
}

// defaulter defaults an object as the request scope's defaulter does: a built-in kind by
// kube-apiserver's scheme, a custom resource by its CRD's schema (the apiextensions
// apiserver's unstructuredDefaulter) when the Resources are a catalog that holds it.
type defaulter objectInterfaces

func (d defaulter) Default(obj runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if cat := CatalogOf(d.resources); cat != nil {
			if def, ok := cat.CustomResourceDefaulter(u.GroupVersionKind()); ok {
				def(u.Object)
				return
			}
		}
	}
	kubescheme.Scheme.Default(obj)
}

type equivalents struct{ r Resources }

func (e equivalents) EquivalentResourcesFor(gvr schema.GroupVersionResource, subresource string) []schema.GroupVersionResource {
	return e.r.EquivalentResources(gvr, subresource)
}

func (e equivalents) KindFor(gvr schema.GroupVersionResource, subresource string) schema.GroupVersionKind {
	return e.r.KindFor(gvr, subresource)
}

// creater makes typed objects for the kinds kube-apiserver's scheme knows and unstructured
// ones otherwise.
type creater struct{}

func (creater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if kubescheme.Knows(gvk) {
		return kubescheme.Scheme.New(gvk)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// convertor converts between versions of a kind when a policy matched the request through an
// equivalent resource of another version (matchPolicy Equivalent): a built-in kind with the
// conversion functions of kube-apiserver's scheme, through the internal version as the server
// does; an object of another kind (a custom resource) by changing its apiVersion, as the
// apiserver's conversion of a CRD with conversion strategy None does.
type convertor struct{}

func (convertor) Convert(in, out interface{}, _ interface{}) error {
	inObj, ok := in.(runtime.Object)
	if !ok {
		return fmt.Errorf("cannot convert %T", in)
	}
	outObj, ok := out.(runtime.Object)
	if !ok {
		return fmt.Errorf("cannot convert to %T", out)
	}
	if u, ok := inObj.(*unstructured.Unstructured); ok && kubescheme.Knows(u.GroupVersionKind()) {
		// A built-in object admission was given as it was encoded (Request.Encoded):
		// converted as its typed object, which it is a form of.
		typed, err := toTyped(u, false)
		if err != nil {
			return err
		}
		if typed != nil {
			inObj = typed
		}
	}
	_, inUnstructured := inObj.(*unstructured.Unstructured)
	outU, outUnstructured := outObj.(*unstructured.Unstructured)
	if !inUnstructured && !outUnstructured {
		return kubescheme.Convert(inObj, outObj)
	}
	gvk := outObj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		kinds, _, err := kubescheme.Scheme.ObjectKinds(outObj)
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
	if outUnstructured {
		outU.Object = content
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
