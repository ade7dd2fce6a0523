package apiserver

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
)

// Objects is what a request's storage reads before it writes: the stored objects of the
// cluster at the request's point of the log. The registry's stores read them through the
// request's Exchange, in the stored version's JSON, and decode them as kube-apiserver decodes
// what it reads from etcd: converted to the internal version and defaulted.
type Objects interface {
	// Get returns the stored JSON of an object; found is false when the object does not
	// exist. err says the object is not known (its existence or its content).
	Get(gr schema.GroupResource, namespace, name string) (raw []byte, found bool, err error)
	// List returns the stored JSON of every object of the resource in the namespace (every
	// namespace when it is empty); err says they are not all known.
	List(gr schema.GroupResource, namespace string) ([][]byte, error)
}

// Rereads are Objects of which a request reads one object, after the store's Get of it, as
// another version: one a write committed between that Get and the store's update or delete (a
// graceful DELETE's GuaranteedUpdate, etcd3's conditional delete, retried on the live object
// after a conflict).
type Rereads interface {
	// Reread returns the JSON the object is read as after its first Get; ok is false when it
	// is read as that Get gave it.
	Reread(gr schema.GroupResource, namespace, name string) (raw []byte, ok bool)
}

// NoObjects is an empty cluster that knows it is empty.
type NoObjects struct{}

// Get finds nothing.
func (NoObjects) Get(schema.GroupResource, string, string) ([]byte, bool, error) {
	return nil, false, nil
}

// List finds nothing.
func (NoObjects) List(schema.GroupResource, string) ([][]byte, error) { return nil, nil }

// UnknownError says the storage of a request needed an object the Objects do not know: what
// kube-apiserver did with it cannot be rebuilt.
type UnknownError struct {
	Resource  schema.GroupResource
	Namespace string
	Name      string // empty for a list
	Err       error
}

func (e *UnknownError) Error() string {
	what := e.Resource.String()
	if e.Namespace != "" {
		what += " " + e.Namespace + "/"
	} else {
		what += " "
	}
	if e.Name == "" {
		what += "(list)"
	} else {
		what += e.Name
	}
	return fmt.Sprintf("%s: %v", what, e.Err)
}

// Write is an object a request's storage created, updated or deleted.
type Write struct {
	Resource  schema.GroupResource
	Namespace string
	Name      string
	// Object is the stored object after the write, in the internal version; nil when it was
	// deleted.
	Object runtime.Object
}

// world is the storage of one request: the Objects, decoded on first read, and the writes
// the request made over them, in order.
type world struct {
	objects Objects
	decode  func(gr schema.GroupResource, raw []byte) (runtime.Object, error)

	mu      sync.Mutex
	overlay map[string]runtime.Object // by storage key; nil value: deleted
	writes  []Write
	nextRV  uint64
	unknown *UnknownError
	// reread are the keys whose object a Get has made the version the Objects read it as
	// after it (Rereads).
	reread map[string]bool
}

// miss records that the request needed an object the Objects do not know, and returns the
// error the storage fails with: a status, as the handlers expect of every error.
func (w *world) miss(u *UnknownError) error {
	if w.unknown == nil {
		w.unknown = u
	}
	return apierrors.NewServiceUnavailable("vapc: the replay does not know " + u.Error())
}

type worldKey struct{}

func withWorld(ctx context.Context, w *world) context.Context {
	return context.WithValue(ctx, worldKey{}, w)
}

func worldFrom(ctx context.Context) (*world, error) {
	w, ok := ctx.Value(worldKey{}).(*world)
	if !ok {
		return nil, fmt.Errorf("vapc: a storage call outside of a replayed request")
	}
	return w, nil
}

// memStorage is the storage.Interface of one resource over the world of the request in the
// context: it behaves as the etcd3 store does (preconditions, validateDeletion, the update
// loop, resource versions) for the reads and writes of one request.
type memStorage struct {
	gr          schema.GroupResource
	prefix      string
	namespaced  bool
	newFunc     func() runtime.Object
	newListFunc func() runtime.Object
	versioner   storage.APIObjectVersioner
}

var _ storage.Interface = (*memStorage)(nil)

// restOptions is the generic.RESTOptionsGetter of the registry: every store gets a memStorage.
type restOptions struct {
	namespaced func(gr schema.GroupResource) bool
}

func (o restOptions) GetRESTOptions(gr schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{
		StorageConfig: &storagebackend.ConfigForResource{GroupResource: gr, Config: storagebackend.Config{Codec: storageCodec}},
		Decorator: func(config *storagebackend.ConfigForResource, prefix string, _ func(runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object, _ storage.AttrFunc, _ storage.IndexerFuncs, _ *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
			return &memStorage{gr: config.GroupResource, prefix: prefix, newFunc: newFunc, newListFunc: newListFunc}, func() {}, nil
		},
		// kube-apiserver's defaults: --enable-garbage-collector, --delete-collection-workers.
		EnableGarbageCollection: true,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          "/" + gr.String(),
	}, nil
}

// storageCodec is what the registry encodes objects with when it copies them (a dry run's
// result): to the preferred version of their group and back to the internal version.
var storageCodec = kubescheme.Codecs.LegacyCodec(kubescheme.Scheme.PrioritizedVersionsAllGroups()...)

// split parses a storage key of this resource: PREFIX/NAMESPACE/NAME or PREFIX/NAME.
func (s *memStorage) split(key string) (namespace, name string, err error) {
	rest, ok := strings.CutPrefix(key, s.prefix+"/")
	if !ok {
		return "", "", fmt.Errorf("key %q is not under %q", key, s.prefix)
	}
	if ns, n, ok := strings.Cut(rest, "/"); ok {
		return ns, n, nil
	}
	return "", rest, nil
}

// load returns the current object of a key, or nil when it does not exist. The object is the
// world's, and one read from the Objects is shared with every world that reads the same JSON
// (storedCache): callers copy it before they change it or hand it out.
// loadFrom is load in the request's world.
func (s *memStorage) loadFrom(ctx context.Context, key string) (*world, runtime.Object, error) {
	w, err := worldFrom(ctx)
	if err != nil {
		return nil, nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	existing, err := s.load(w, key)
	return w, existing, err
}

func (s *memStorage) load(w *world, key string) (runtime.Object, error) {
	if obj, ok := w.overlay[key]; ok {
		return obj, nil
	}
	ns, name, err := s.split(key)
	if err != nil {
		return nil, err
	}
	raw, found, err := w.objects.Get(s.gr, ns, name)
	if err != nil {
		return nil, w.miss(&UnknownError{Resource: s.gr, Namespace: ns, Name: name, Err: err})
	}
	if !found {
		w.overlay[key] = nil
		return nil, nil
	}
	obj, err := w.decode(s.gr, raw)
	if err != nil {
		return nil, fmt.Errorf("decoding the stored %s %s: %w", s.gr, joinKey(ns, name), err)
	}
	w.overlay[key] = obj
	return obj, nil
}

// store records a write; obj becomes the world's (see load).
func (s *memStorage) store(w *world, key string, obj runtime.Object) {
	ns, name, _ := s.split(key)
	w.overlay[key] = obj
	w.writes = append(w.writes, Write{Resource: s.gr, Namespace: ns, Name: name, Object: obj})
}

func (s *memStorage) Versioner() storage.Versioner { return s.versioner }

func (s *memStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	w, err := worldFrom(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if v, err := s.versioner.ObjectResourceVersion(obj); err == nil && v != 0 {
		return storage.ErrResourceVersionSetOnCreate
	}
	if err := s.versioner.PrepareObjectForStorage(obj); err != nil {
		return fmt.Errorf("PrepareObjectForStorage failed: %v", err)
	}
	existing, err := s.load(w, key)
	if err != nil {
		return err
	}
	if existing != nil {
		return storage.NewKeyExistsError(key, 0)
	}
	stored := obj.DeepCopyObject()
	w.nextRV++
	if err := s.versioner.UpdateObject(stored, w.nextRV); err != nil {
		return err
	}
	s.store(w, key, stored)
	return copyInto(stored, out)
}

func (s *memStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions, validateDeletion storage.ValidateObjectFunc, _ runtime.Object, _ storage.DeleteOptions) error {
	w, existing, err := s.loadFrom(ctx, key)
	if err != nil {
		return err
	}
	if existing == nil {
		return storage.NewKeyNotFoundError(key, 0)
	}
	if preconditions != nil {
		if err := preconditions.Check(key, existing); err != nil {
			return err
		}
	}
	// validateDeletion runs validating admission, which reads the world too: not under the lock.
	// Admission keeps the object it is given (its attributes): a copy.
	if err := validateDeletion(ctx, existing.DeepCopyObject()); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s.store(w, key, nil)
	return copyInto(existing, out)
}

func (s *memStorage) Watch(context.Context, string, storage.ListOptions) (watch.Interface, error) {
	return nil, apierrors.NewMethodNotSupported(s.gr, "watch")
}

func (s *memStorage) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	w, err := worldFrom(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	existing, err := s.load(w, key)
	if err != nil {
		return err
	}
	if existing == nil {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(out)
		}
		return storage.NewKeyNotFoundError(key, 0)
	}
	if err := copyInto(existing, out); err != nil {
		return err
	}
	return s.rereadAfterGet(w, key)
}

// rereadAfterGet makes the object of key, after a Get of it, the version the world's Objects
// read it as after one (Rereads), once.
func (s *memStorage) rereadAfterGet(w *world, key string) error {
	rr, ok := w.objects.(Rereads)
	if !ok || w.reread[key] {
		return nil
	}
	ns, name, err := s.split(key)
	if err != nil {
		return err
	}
	raw, ok := rr.Reread(s.gr, ns, name)
	if !ok {
		return nil
	}
	obj, err := w.decode(s.gr, raw)
	if err != nil {
		return fmt.Errorf("decoding the stored %s %s: %w", s.gr, joinKey(ns, name), err)
	}
	if w.reread == nil {
		w.reread = map[string]bool{}
	}
	w.reread[key] = true
	w.overlay[key] = obj
	return nil
}

func (s *memStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	w, err := worldFrom(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !opts.Recursive {
		// One object's key: the store lists so where a field selector names it
		// (ListPredicate's MatchesSingle), and etcd reads that key alone.
		obj, err := s.load(w, key)
		if err != nil {
			return err
		}
		var items []runtime.Object
		if obj != nil {
			if ok, err := opts.Predicate.Matches(obj); err != nil {
				return err
			} else if ok {
				items = append(items, obj.DeepCopyObject())
			}
		}
		if err := meta.SetList(listObj, items); err != nil {
			return err
		}
		return s.versioner.UpdateList(listObj, w.nextRV, "", nil)
	}
	namespace := ""
	if rest, ok := strings.CutPrefix(key, s.prefix+"/"); ok {
		namespace = strings.TrimSuffix(rest, "/")
	}
	raws, err := w.objects.List(s.gr, namespace)
	if err != nil {
		return w.miss(&UnknownError{Resource: s.gr, Namespace: namespace, Err: err})
	}
	byKey := map[string]runtime.Object{}
	for _, raw := range raws {
		obj, err := w.decode(s.gr, raw)
		if err != nil {
			return fmt.Errorf("decoding a stored %s: %w", s.gr, err)
		}
		a, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		k := s.prefix + "/" + joinKey(a.GetNamespace(), a.GetName())
		if _, ok := w.overlay[k]; !ok {
			w.overlay[k] = obj
		}
		byKey[k] = nil
	}
	root := s.prefix + "/"
	if namespace != "" {
		root += namespace + "/"
	}
	for k := range w.overlay {
		if strings.HasPrefix(k, root) {
			byKey[k] = nil
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	// etcd lists in key order.
	sort.Strings(keys)
	var items []runtime.Object
	for _, k := range keys {
		obj := w.overlay[k]
		if obj == nil {
			continue
		}
		if ok, err := opts.Predicate.Matches(obj); err != nil {
			return err
		} else if !ok {
			continue
		}
		items = append(items, obj.DeepCopyObject())
	}
	if err := meta.SetList(listObj, items); err != nil {
		return err
	}
	return s.versioner.UpdateList(listObj, w.nextRV, "", nil)
}

func (s *memStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool, preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, _ runtime.Object) error {
	w, existing, err := s.loadFrom(ctx, key)
	if err != nil {
		return err
	}
	var meta storage.ResponseMeta
	if existing == nil {
		if !ignoreNotFound {
			return storage.NewKeyNotFoundError(key, 0)
		}
		existing = s.newFunc()
	} else {
		rv, err := s.versioner.ObjectResourceVersion(existing)
		if err != nil {
			return err
		}
		meta.ResourceVersion = rv
	}
	if preconditions != nil {
		if err := preconditions.Check(key, existing); err != nil {
			return err
		}
	}
	// tryUpdate runs admission, which reads the world too: not under the lock. It may change
	// the object it is given: a copy.
	updated, _, err := tryUpdate(existing.DeepCopyObject(), meta)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if meta.ResourceVersion != 0 && semanticallyUnchanged(existing, updated) {
		// etcd3 skips a write that does not change the stored bytes.
		return copyInto(existing, destination)
	}
	// The update function's result is not used again by the store: it becomes the world's.
	stored := updated
	if err := s.versioner.PrepareObjectForStorage(stored); err != nil {
		return err
	}
	w.nextRV++
	if err := s.versioner.UpdateObject(stored, w.nextRV); err != nil {
		return err
	}
	s.store(w, key, stored)
	return copyInto(stored, destination)
}

// semanticallyUnchanged says whether an update leaves the stored object as it was, apart from
// its resourceVersion (which the etcd3 store clears before it compares the encoded bytes).
func semanticallyUnchanged(existing, updated runtime.Object) bool {
	a, errA := meta.Accessor(existing)
	b, errB := meta.Accessor(updated)
	if errA != nil || errB != nil {
		return false
	}
	rv := b.GetResourceVersion()
	b.SetResourceVersion(a.GetResourceVersion())
	same := reflect.DeepEqual(existing, updated)
	b.SetResourceVersion(rv)
	return same
}

func (s *memStorage) Stats(context.Context) (storage.Stats, error) { return storage.Stats{}, nil }
func (s *memStorage) ReadinessCheck() error                        { return nil }
func (s *memStorage) RequestWatchProgress(context.Context) error   { return nil }
func (s *memStorage) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	w, err := worldFrom(ctx)
	if err != nil {
		return 0, err
	}
	return w.nextRV, nil
}
func (s *memStorage) EnableResourceSizeEstimation(storage.KeysFunc) error { return nil }
func (s *memStorage) CompactRevision() int64                              { return 0 }

// copyInto sets out to a deep copy of in (both the same Go type).
func copyInto(in, out runtime.Object) error {
	iv, ov := reflect.ValueOf(in), reflect.ValueOf(out)
	if iv.Type() != ov.Type() {
		return fmt.Errorf("vapc storage: cannot copy %T into %T", in, out)
	}
	ov.Elem().Set(reflect.ValueOf(in.DeepCopyObject()).Elem())
	return nil
}

func joinKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
