package apiserver

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	informerscore "k8s.io/client-go/informers/core"
	coreinformers "k8s.io/client-go/informers/core/v1"
	informersnetworking "k8s.io/client-go/informers/networking"
	networkinginformers "k8s.io/client-go/informers/networking/v1"
	informersnode "k8s.io/client-go/informers/node"
	nodeinformers "k8s.io/client-go/informers/node/v1"
	informersscheduling "k8s.io/client-go/informers/scheduling"
	schedulinginformers "k8s.io/client-go/informers/scheduling/v1"
	informersstorage "k8s.io/client-go/informers/storage"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	nodelisters "k8s.io/client-go/listers/node/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
)

// Cluster is what kube-apiserver's built-in admission plugins read at one point of the log,
// through their informers' listers and their client: objects in their external version.
type Cluster interface {
	// Get returns the object; a NotFound error when it does not exist, another error when
	// whether it exists is not known.
	Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
	// List returns the objects of the resource in the namespace (every namespace when it is
	// empty); an error when they are not all known.
	List(gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error)
}

// clusterRef is the Cluster a set of plugins reads now: the caller sets it before each
// request and the plugins' listers and client read it.
type clusterRef struct {
	mu  sync.RWMutex
	cur Cluster
}

func (r *clusterRef) set(c Cluster) {
	r.mu.Lock()
	r.cur = c
	r.mu.Unlock()
}

func (r *clusterRef) get() Cluster {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.cur == nil {
		return emptyCluster{}
	}
	return r.cur
}

type emptyCluster struct{}

func (emptyCluster) Get(gvr schema.GroupVersionResource, _, name string) (runtime.Object, error) {
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}
func (emptyCluster) List(schema.GroupVersionResource, string) ([]runtime.Object, error) {
	return nil, nil
}

// clusterIndexer is the cache.Indexer of an informer whose objects are the Cluster's: the
// listers the plugins hold read it. Only reads are supported.
type clusterIndexer struct {
	ref *clusterRef
	gvr schema.GroupVersionResource
}

var _ cache.Indexer = clusterIndexer{}

func (i clusterIndexer) list(namespace string) []interface{} {
	objs, err := i.ref.get().List(i.gvr, namespace)
	if err != nil {
		// A lister cannot fail: the Cluster records what it did not know.
		return nil
	}
	out := make([]interface{}, len(objs))
	for k, o := range objs {
		out[k] = o
	}
	return out
}

func (i clusterIndexer) List() []interface{} { return i.list("") }
func (i clusterIndexer) ListKeys() []string {
	var keys []string
	for _, o := range i.List() {
		if k, err := cache.MetaNamespaceKeyFunc(o); err == nil {
			keys = append(keys, k)
		}
	}
	return keys
}
func (i clusterIndexer) Get(obj interface{}) (interface{}, bool, error) {
	k, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, err
	}
	return i.GetByKey(k)
}
func (i clusterIndexer) GetByKey(key string) (interface{}, bool, error) {
	ns, name, _ := strings.Cut(key, "/")
	if name == "" {
		ns, name = "", key
	}
	o, err := i.ref.get().Get(i.gvr, ns, name)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return o, true, nil
}
func (i clusterIndexer) Index(indexName string, obj interface{}) ([]interface{}, error) {
	if indexName != cache.NamespaceIndex {
		return nil, fmt.Errorf("index %q does not exist", indexName)
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return i.list(a.GetNamespace()), nil
}
func (i clusterIndexer) ByIndex(indexName, value string) ([]interface{}, error) {
	if indexName != cache.NamespaceIndex {
		return nil, fmt.Errorf("index %q does not exist", indexName)
	}
	return i.list(value), nil
}
func (i clusterIndexer) IndexKeys(indexName, value string) ([]string, error) {
	objs, err := i.ByIndex(indexName, value)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, o := range objs {
		if k, err := cache.MetaNamespaceKeyFunc(o); err == nil {
			keys = append(keys, k)
		}
	}
	return keys, nil
}
func (i clusterIndexer) ListIndexFuncValues(string) []string { return nil }
func (i clusterIndexer) GetIndexers() cache.Indexers {
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
}
func (i clusterIndexer) AddIndexers(cache.Indexers) error     { return nil }
func (i clusterIndexer) Add(interface{}) error                { return errReadOnly }
func (i clusterIndexer) Update(interface{}) error             { return errReadOnly }
func (i clusterIndexer) Delete(interface{}) error             { return errReadOnly }
func (i clusterIndexer) Replace([]interface{}, string) error  { return errReadOnly }
func (i clusterIndexer) Resync() error                        { return nil }
func (i clusterIndexer) LastStoreSyncResourceVersion() string { return "" }
func (i clusterIndexer) Bookmark(string)                      {}

var errReadOnly = fmt.Errorf("vapc: the admission plugins' informers are read-only")

// syncedInformer is an informer that has synced, over a clusterIndexer: the plugins wait for
// their informers before they admit anything.
type syncedInformer struct {
	cache.SharedIndexInformer
	indexer clusterIndexer
}

func (s syncedInformer) HasSynced() bool                 { return true }
func (s syncedInformer) GetIndexer() cache.Indexer       { return s.indexer }
func (s syncedInformer) GetStore() cache.Store           { return s.indexer }
func (s syncedInformer) LastSyncResourceVersion() string { return "" }

// clusterInformers is the informer factory of a set of plugins: the informers of the kinds
// the default plugins read answer from the Cluster; the others are the real factory's, over an
// empty client, never started.
type clusterInformers struct {
	informers.SharedInformerFactory
	ref *clusterRef
}

func (f clusterInformers) informer(gvr schema.GroupVersionResource, real cache.SharedIndexInformer) (syncedInformer, clusterIndexer) {
	idx := clusterIndexer{ref: f.ref, gvr: gvr}
	return syncedInformer{SharedIndexInformer: real, indexer: idx}, idx
}

var (
	namespacesGVR      = corev1.SchemeGroupVersion.WithResource("namespaces")
	limitRangesGVR     = corev1.SchemeGroupVersion.WithResource("limitranges")
	serviceAccountsGVR = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	nodesGVR           = corev1.SchemeGroupVersion.WithResource("nodes")
	podsGVR            = corev1.SchemeGroupVersion.WithResource("pods")
	pvcsGVR            = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	pvsGVR             = corev1.SchemeGroupVersion.WithResource("persistentvolumes")
	priorityClassesGVR = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}
	runtimeClassesGVR  = schema.GroupVersionResource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"}
	storageClassesGVR  = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}
	csiDriversGVR      = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "csidrivers"}
	ingressClassesGVR  = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasses"}
)

func (f clusterInformers) Core() informerscore.Interface {
	return coreGroup{f.SharedInformerFactory.Core(), f}
}

type coreGroup struct {
	informerscore.Interface
	f clusterInformers
}

func (g coreGroup) V1() coreinformers.Interface { return coreV1{g.Interface.V1(), g.f} }

type coreV1 struct {
	coreinformers.Interface
	f clusterInformers
}

type namespaceInformer struct {
	coreinformers.TypedNamespaceInformer
	inf syncedInformer
	idx clusterIndexer
}

func (i namespaceInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i namespaceInformer) Lister() corelisters.NamespaceLister {
	return corelisters.NewNamespaceLister(i.idx)
}

func (v coreV1) Namespaces() coreinformers.TypedNamespaceInformer {
	real := v.Interface.Namespaces()
	inf, idx := v.f.informer(namespacesGVR, real.Informer())
	return namespaceInformer{real, inf, idx}
}

type limitRangeInformer struct {
	coreinformers.TypedLimitRangeInformer
	inf syncedInformer
	idx clusterIndexer
}

func (i limitRangeInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i limitRangeInformer) Lister() corelisters.LimitRangeLister {
	return corelisters.NewLimitRangeLister(i.idx)
}

func (v coreV1) LimitRanges() coreinformers.TypedLimitRangeInformer {
	real := v.Interface.LimitRanges()
	inf, idx := v.f.informer(limitRangesGVR, real.Informer())
	return limitRangeInformer{real, inf, idx}
}

type serviceAccountInformer struct {
	coreinformers.TypedServiceAccountInformer
	inf syncedInformer
	idx clusterIndexer
}

func (i serviceAccountInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i serviceAccountInformer) Lister() corelisters.ServiceAccountLister {
	return corelisters.NewServiceAccountLister(i.idx)
}

func (v coreV1) ServiceAccounts() coreinformers.TypedServiceAccountInformer {
	real := v.Interface.ServiceAccounts()
	inf, idx := v.f.informer(serviceAccountsGVR, real.Informer())
	return serviceAccountInformer{real, inf, idx}
}

type nodeInformer struct {
	coreinformers.TypedNodeInformer
	inf syncedInformer
	idx clusterIndexer
}

func (i nodeInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i nodeInformer) Lister() corelisters.NodeLister      { return corelisters.NewNodeLister(i.idx) }

func (v coreV1) Nodes() coreinformers.TypedNodeInformer {
	real := v.Interface.Nodes()
	inf, idx := v.f.informer(nodesGVR, real.Informer())
	return nodeInformer{real, inf, idx}
}

type podInformer struct {
	coreinformers.TypedPodInformer
	inf syncedInformer
	idx clusterIndexer
}

func (i podInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i podInformer) Lister() corelisters.PodLister       { return corelisters.NewPodLister(i.idx) }

func (v coreV1) Pods() coreinformers.TypedPodInformer {
	real := v.Interface.Pods()
	inf, idx := v.f.informer(podsGVR, real.Informer())
	return podInformer{real, inf, idx}
}

type pvcInformer struct {
	coreinformers.TypedPersistentVolumeClaimInformer
	inf syncedInformer
	idx clusterIndexer
}

func (i pvcInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i pvcInformer) Lister() corelisters.PersistentVolumeClaimLister {
	return corelisters.NewPersistentVolumeClaimLister(i.idx)
}

func (v coreV1) PersistentVolumeClaims() coreinformers.TypedPersistentVolumeClaimInformer {
	real := v.Interface.PersistentVolumeClaims()
	inf, idx := v.f.informer(pvcsGVR, real.Informer())
	return pvcInformer{real, inf, idx}
}

type pvInformer struct {
	coreinformers.TypedPersistentVolumeInformer
	inf syncedInformer
	idx clusterIndexer
}

func (i pvInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i pvInformer) Lister() corelisters.PersistentVolumeLister {
	return corelisters.NewPersistentVolumeLister(i.idx)
}

func (v coreV1) PersistentVolumes() coreinformers.TypedPersistentVolumeInformer {
	real := v.Interface.PersistentVolumes()
	inf, idx := v.f.informer(pvsGVR, real.Informer())
	return pvInformer{real, inf, idx}
}

func (f clusterInformers) Scheduling() informersscheduling.Interface {
	return schedulingGroup{f.SharedInformerFactory.Scheduling(), f}
}

type schedulingGroup struct {
	informersscheduling.Interface
	f clusterInformers
}

func (g schedulingGroup) V1() schedulinginformers.Interface {
	return schedulingV1{g.Interface.V1(), g.f}
}

type schedulingV1 struct {
	schedulinginformers.Interface
	f clusterInformers
}

type priorityClassInformer struct {
	schedulinginformers.TypedPriorityClassInformer
	inf syncedInformer
	idx clusterIndexer
}

func (i priorityClassInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i priorityClassInformer) Lister() schedulinglisters.PriorityClassLister {
	return schedulinglisters.NewPriorityClassLister(i.idx)
}

func (v schedulingV1) PriorityClasses() schedulinginformers.TypedPriorityClassInformer {
	real := v.Interface.PriorityClasses()
	inf, idx := v.f.informer(priorityClassesGVR, real.Informer())
	return priorityClassInformer{real, inf, idx}
}

func (f clusterInformers) Node() informersnode.Interface {
	return nodeGroup{f.SharedInformerFactory.Node(), f}
}

type nodeGroup struct {
	informersnode.Interface
	f clusterInformers
}

func (g nodeGroup) V1() nodeinformers.Interface { return nodeV1{g.Interface.V1(), g.f} }

type nodeV1 struct {
	nodeinformers.Interface
	f clusterInformers
}

type runtimeClassInformer struct {
	nodeinformers.TypedRuntimeClassInformer
	inf syncedInformer
	idx clusterIndexer
}

func (i runtimeClassInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i runtimeClassInformer) Lister() nodelisters.RuntimeClassLister {
	return nodelisters.NewRuntimeClassLister(i.idx)
}

func (v nodeV1) RuntimeClasses() nodeinformers.TypedRuntimeClassInformer {
	real := v.Interface.RuntimeClasses()
	inf, idx := v.f.informer(runtimeClassesGVR, real.Informer())
	return runtimeClassInformer{real, inf, idx}
}

func (f clusterInformers) Storage() informersstorage.Interface {
	return storageGroup{f.SharedInformerFactory.Storage(), f}
}

type storageGroup struct {
	informersstorage.Interface
	f clusterInformers
}

func (g storageGroup) V1() storageinformers.Interface { return storageV1{g.Interface.V1(), g.f} }

type storageV1 struct {
	storageinformers.Interface
	f clusterInformers
}

type storageClassInformer struct {
	storageinformers.TypedStorageClassInformer
	inf syncedInformer
	idx clusterIndexer
}

func (i storageClassInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i storageClassInformer) Lister() storagelisters.StorageClassLister {
	return storagelisters.NewStorageClassLister(i.idx)
}

func (v storageV1) StorageClasses() storageinformers.TypedStorageClassInformer {
	real := v.Interface.StorageClasses()
	inf, idx := v.f.informer(storageClassesGVR, real.Informer())
	return storageClassInformer{real, inf, idx}
}

type csiDriverInformer struct {
	storageinformers.TypedCSIDriverInformer
	inf syncedInformer
	idx clusterIndexer
}

func (i csiDriverInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i csiDriverInformer) Lister() storagelisters.CSIDriverLister {
	return storagelisters.NewCSIDriverLister(i.idx)
}

func (v storageV1) CSIDrivers() storageinformers.TypedCSIDriverInformer {
	real := v.Interface.CSIDrivers()
	inf, idx := v.f.informer(csiDriversGVR, real.Informer())
	return csiDriverInformer{real, inf, idx}
}

func (f clusterInformers) Networking() informersnetworking.Interface {
	return networkingGroup{f.SharedInformerFactory.Networking(), f}
}

type networkingGroup struct {
	informersnetworking.Interface
	f clusterInformers
}

func (g networkingGroup) V1() networkinginformers.Interface {
	return networkingV1{g.Interface.V1(), g.f}
}

type networkingV1 struct {
	networkinginformers.Interface
	f clusterInformers
}

type ingressClassInformer struct {
	networkinginformers.TypedIngressClassInformer
	inf syncedInformer
	idx clusterIndexer
}

func (i ingressClassInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i ingressClassInformer) Lister() networkinglisters.IngressClassLister {
	return networkinglisters.NewIngressClassLister(i.idx)
}

func (v networkingV1) IngressClasses() networkinginformers.TypedIngressClassInformer {
	real := v.Interface.IngressClasses()
	inf, idx := v.f.informer(ingressClassesGVR, real.Informer())
	return ingressClassInformer{real, inf, idx}
}
