package verify

import (
	"fmt"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// ObjectStore is the cluster state an admission decision can read: the params of policies and
// the namespaces of requests. Reads must be synchronous (no informer that syncs in the
// background) and safe for concurrent use, so that a replay can change the store between two
// requests and the next decision sees the change.
//
// Objects are returned as an informer would hold them, since that is what the apiserver hands
// to CEL: typed (k8s.io/api) objects without apiVersion and kind for the built-in kinds,
// *unstructured.Unstructured for custom resources.
type ObjectStore interface {
	// Get returns the object of the resource with the namespace ("" for cluster-scoped
	// resources) and name, or an error for which apierrors.IsNotFound is true.
	Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
	// List returns the objects of the resource in the namespace ("" for every namespace)
	// whose labels match the selector, sorted by namespace and name.
	List(gvr schema.GroupVersionResource, namespace string, selector labels.Selector) ([]runtime.Object, error)
}

// MemoryStore is an ObjectStore held in memory. Its zero value is not usable; call
// NewMemoryStore. It is safe for concurrent use.
type MemoryStore struct {
	mapper meta.RESTMapper

	dropUnknown bool

	mu      sync.RWMutex
	objects map[schema.GroupVersionResource]map[objectKey]storedObject
}

type objectKey struct{ namespace, name string }

type storedObject struct {
	obj    runtime.Object
	labels labels.Set
}

// NewMemoryStore returns an empty store. The RESTMapper maps the kind of an object put in the
// store to its resource (a *schema.Catalog's RESTMapper does).
func NewMemoryStore(mapper meta.RESTMapper, opts ...StoreOption) *MemoryStore {
	s := &MemoryStore{mapper: mapper, objects: map[schema.GroupVersionResource]map[objectKey]storedObject{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// StoreOption configures a MemoryStore.
type StoreOption func(*MemoryStore)

// StoreDropUnknownFields makes the store drop the fields an object's kind does not have, as
// the apiserver's decoder drops them, instead of refusing the object (see
// WithDropUnknownFields).
func StoreDropUnknownFields() StoreOption {
	return func(s *MemoryStore) { s.dropUnknown = true }
}

// Put adds or replaces an object, found by its apiVersion, kind, namespace and name. An object
// of a namespaced kind without a namespace is put in "default", as the apiserver does for a
// create without a namespace. Built-in kinds are converted to their typed form once, here;
// unknown fields are an error, as they are on a strict create.
func (s *MemoryStore) Put(obj *unstructured.Unstructured) error {
	p, err := s.Prepare(obj)
	if err != nil {
		return err
	}
	s.PutPrepared(p)
	return nil
}

// Prepared is an object converted to the form a MemoryStore holds, by Prepare.
type Prepared struct {
	gvr    schema.GroupVersionResource
	key    objectKey
	stored storedObject
}

// Location is where a store keeps an object and the labels selectors match it by.
type Location struct {
	Resource        schema.GroupVersionResource
	Namespace, Name string
	Labels          labels.Set
}

// Locate checks an object and says where the store keeps it, reading only its apiVersion, kind
// and metadata: an object of a namespaced kind without a namespace is in "default", and a
// namespace has the kubernetes.io/metadata.name label the apiserver gives every namespace.
func (s *MemoryStore) Locate(obj *unstructured.Unstructured) (Location, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return Location{}, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	if obj.GetName() == "" {
		return Location{}, fmt.Errorf("%s without metadata.name", gvk.Kind)
	}
	ns := obj.GetNamespace()
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if ns == "" {
			ns = "default"
		}
	} else if ns != "" {
		return Location{}, fmt.Errorf("%s %s: metadata.namespace %q set on a cluster-scoped kind", gvk.Kind, obj.GetName(), ns)
	}
	l := labels.Set(obj.GetLabels())
	if gvk == namespaceGVK {
		l = labels.Merge(l, labels.Set{namespaceNameLabel: obj.GetName()})
	}
	return Location{Resource: mapping.Resource, Namespace: ns, Name: obj.GetName(), Labels: l}, nil
}

// Prepare does the costly part of Put (checks, defaults, the conversion to the typed form)
// without changing the store, so that it can run on another goroutine than the one that puts
// objects in order. It does not keep obj.
func (s *MemoryStore) Prepare(obj *unstructured.Unstructured) (*Prepared, error) {
	loc, err := s.Locate(obj)
	if err != nil {
		return nil, err
	}
	// obj is the caller's: copied when it is changed, or kept as it is (a kind without a typed
	// form). The typed conversion neither changes it nor keeps what it holds (the typed kinds
	// have no interface{} fields, which would share its values).
	given := obj
	if gvk := obj.GroupVersionKind(); obj.GetNamespace() != loc.Namespace || gvk == namespaceGVK {
		obj = obj.DeepCopy()
		obj.SetNamespace(loc.Namespace)
		if gvk == namespaceGVK {
			setNamespaceDefaults(obj)
		}
	}
	stored, err := informerForm(obj, !s.dropUnknown)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	if u, ok := stored.(*unstructured.Unstructured); ok && u == given {
		stored = given.DeepCopy()
	}
	return &Prepared{gvr: loc.Resource, key: objectKey{loc.Namespace, loc.Name}, stored: storedObject{obj: stored, labels: labels.Set(obj.GetLabels())}}, nil
}

// PutPrepared adds or replaces the prepared object.
func (s *MemoryStore) PutPrepared(p *Prepared) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.objects[p.gvr]
	if m == nil {
		m = map[objectKey]storedObject{}
		s.objects[p.gvr] = m
	}
	m[p.key] = p.stored
}

// Resource is the resource the object is stored under.
func (p *Prepared) Resource() schema.GroupVersionResource { return p.gvr }

// Namespace is the object's namespace ("default" for a namespaced object without one).
func (p *Prepared) Namespace() string { return p.key.namespace }

// Name is the object's name.
func (p *Prepared) Name() string { return p.key.name }

// Object is the object as the store returns it.
func (p *Prepared) Object() runtime.Object { return p.stored.obj }

// Labels are the object's labels.
func (p *Prepared) Labels() labels.Set { return p.stored.labels }

// Delete removes an object; removing an object that is not there is not an error.
func (s *MemoryStore) Delete(gvk schema.GroupVersionKind, namespace, name string) error {
	mapping, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects[mapping.Resource], objectKey{namespace, name})
	return nil
}

// Get implements ObjectStore.
func (s *MemoryStore) Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.objects[gvr][objectKey{namespace, name}]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return o.obj, nil
}

// List implements ObjectStore.
func (s *MemoryStore) List(gvr schema.GroupVersionResource, namespace string, selector labels.Selector) ([]runtime.Object, error) {
	s.mu.RLock()
	var keys []objectKey
	for k, o := range s.objects[gvr] {
		if (namespace == "" || k.namespace == namespace) && (selector == nil || selector.Matches(o.labels)) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].namespace != keys[j].namespace {
			return keys[i].namespace < keys[j].namespace
		}
		return keys[i].name < keys[j].name
	})
	out := make([]runtime.Object, len(keys))
	for i, k := range keys {
		out[i] = s.objects[gvr][k].obj
	}
	s.mu.RUnlock()
	return out, nil
}

// informerForm converts an object to the form an informer holds: typed, without apiVersion and
// kind, for the kinds client-go knows; unstructured otherwise.
func informerForm(u *unstructured.Unstructured, strict bool) (runtime.Object, error) {
	typed, err := toTyped(u, strict)
	if err != nil || typed == nil {
		return u, err
	}
	typed.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return typed, nil
}

// toTyped converts an unstructured object of a kind that client-go knows into its typed form,
// refusing unknown fields when strict, else dropping them. It returns nil for other kinds.
func toTyped(u *unstructured.Unstructured, strict bool) (runtime.Object, error) {
	gvk := u.GroupVersionKind()
	if !clientgoscheme.Scheme.Recognizes(gvk) {
		return nil, nil
	}
	typed, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return nil, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.UnstructuredContent(), typed, strict); err != nil {
		return nil, err
	}
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	return typed, nil
}

// namespaceNameLabel is the label kube-apiserver sets on every namespace to its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

var (
	namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// setNamespaceDefaults sets what the apiserver sets on every namespace it stores: the
// kubernetes.io/metadata.name label, the kubernetes finalizer and phase Active (the namespace
// strategy's PrepareForCreate and the name label defaulting of k8s.io/kubernetes).
func setNamespaceDefaults(ns *unstructured.Unstructured) {
	l := ns.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[namespaceNameLabel] = ns.GetName()
	ns.SetLabels(l)
	if _, found, _ := unstructured.NestedFieldNoCopy(ns.Object, "spec", "finalizers"); !found {
		_ = unstructured.SetNestedStringSlice(ns.Object, []string{"kubernetes"}, "spec", "finalizers")
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(ns.Object, "status", "phase"); !found {
		_ = unstructured.SetNestedField(ns.Object, "Active", "status", "phase")
	}
}
