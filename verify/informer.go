package verify

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// The apiserver reads params through an informer's lister and namespaces through a namespace
// lister with a live GET as fallback. These adapters give it the same interfaces over an
// ObjectStore, always synced.

// storeInformer is an informers.GenericInformer over one resource of a store.
type storeInformer struct {
	store      ObjectStore
	gvr        schema.GroupVersionResource
	gvk        schema.GroupVersionKind // the paramKind
	paramCache *paramViews
}

var _ informers.GenericInformer = storeInformer{}

// Informer returns an informer that is always synced; CollectParams only asks HasSynced.
func (i storeInformer) Informer() cache.SharedIndexInformer { return syncedInformer{} }

// Lister returns a lister that reads the store.
func (i storeInformer) Lister() cache.GenericLister { return storeLister(i) }

// syncedInformer reports HasSynced; every other method of the interface is absent and the
// apiserver code the evaluator calls does not use them.
type syncedInformer struct{ cache.SharedIndexInformer }

func (syncedInformer) HasSynced() bool { return true }

type storeLister storeInformer

func (l storeLister) List(selector labels.Selector) ([]runtime.Object, error) {
	return l.views(l.store.List(l.gvr, "", selector))
}

func (l storeLister) Get(name string) (runtime.Object, error) {
	return l.view(l.store.Get(l.gvr, "", name))
}

func (l storeLister) view(obj runtime.Object, err error) (runtime.Object, error) {
	if err != nil || l.paramCache == nil {
		return obj, err
	}
	return l.paramCache.view(obj, l.gvk), nil
}

func (l storeLister) views(objs []runtime.Object, err error) ([]runtime.Object, error) {
	if err != nil || l.paramCache == nil {
		return objs, err
	}
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		out[i] = l.paramCache.view(o, l.gvk)
	}
	return out, nil
}

func (l storeLister) ByNamespace(namespace string) cache.GenericNamespaceLister {
	return storeNamespaceLister{storeLister: l, namespace: namespace}
}

type storeNamespaceLister struct {
	storeLister
	namespace string
}

func (l storeNamespaceLister) List(selector labels.Selector) ([]runtime.Object, error) {
	return l.views(l.store.List(l.gvr, l.namespace, selector))
}

func (l storeNamespaceLister) Get(name string) (runtime.Object, error) {
	return l.view(l.store.Get(l.gvr, l.namespace, name))
}

// namespaceLister is a listersv1.NamespaceLister over a store. implicit, when set, is a
// namespace the request names that the store does not hold: it exists in any real cluster.
type namespaceLister struct {
	store    ObjectStore
	implicit *corev1.Namespace
}

var _ listersv1.NamespaceLister = namespaceLister{}

func (l namespaceLister) List(selector labels.Selector) ([]*corev1.Namespace, error) {
	objs, err := l.store.List(namespaceGVR, "", selector)
	if err != nil {
		return nil, err
	}
	var out []*corev1.Namespace
	for _, o := range objs {
		if ns, err := asNamespace(o); err == nil {
			out = append(out, ns)
		}
	}
	if l.implicit != nil && (selector == nil || selector.Matches(labels.Set(l.implicit.Labels))) {
		out = append(out, l.implicit)
	}
	return out, nil
}

func (l namespaceLister) Get(name string) (*corev1.Namespace, error) {
	if l.implicit != nil && l.implicit.Name == name {
		return l.implicit, nil
	}
	o, err := l.store.Get(namespaceGVR, "", name)
	if err != nil {
		return nil, err
	}
	return asNamespace(o)
}

func asNamespace(o runtime.Object) (*corev1.Namespace, error) {
	switch t := o.(type) {
	case *corev1.Namespace:
		return t, nil
	case runtime.Unstructured:
		ns := &corev1.Namespace{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(t.UnstructuredContent(), ns); err != nil {
			return nil, err
		}
		return ns, nil
	}
	return nil, apierrors.NewInternalError(errUnexpectedNamespace)
}

var errUnexpectedNamespace = apierrors.NewBadRequest("namespace of an unexpected type in the store")

// implicitNamespace is the namespace a real cluster would have for a request in a namespace
// that the store does not hold: no labels but the name label the apiserver always sets.
func implicitNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{namespaceNameLabel: name}},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

// namespaceClient is the kubernetes.Interface the namespace matcher falls back to when its
// lister misses: the apiserver asks etcd; the store is the whole truth here, so it answers
// from the same lister.
type namespaceClient struct {
	kubernetes.Interface
	lister listersv1.NamespaceLister
}

func (c namespaceClient) CoreV1() typedcorev1.CoreV1Interface { return coreV1{lister: c.lister} }

type coreV1 struct {
	typedcorev1.CoreV1Interface
	lister listersv1.NamespaceLister
}

func (c coreV1) Namespaces() typedcorev1.NamespaceInterface { return namespaces{lister: c.lister} }

type namespaces struct {
	typedcorev1.NamespaceInterface
	lister listersv1.NamespaceLister
}

func (n namespaces) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Namespace, error) {
	return n.lister.Get(name)
}
