package apiserver

import (
	"context"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	kapitesting "k8s.io/kubernetes/pkg/api/testing"
)

// TestDefaultedOnRead: the resources whose strategy leaves an object the server's defaulting
// changes when it reads it back (a write's response that is not its admission object) are
// defaultedOnRead's, found with upstream's API fuzzer over every store the pipeline serves:
// an object decoded as the server decodes a request (converted to the served version and
// defaulted), given to the store's PrepareForCreate, or to its PrepareForUpdate over another
// such object, then defaulted again in the served version. Found before: a
// ReplicationController's or a CustomResourceDefinition's status update (the status strategy
// keeps the stored spec, from which defaulting fills labels or storedVersions the request
// left empty).
func TestDefaultedOnRead(t *testing.T) {
	infos, err := groups()
	if err != nil {
		t.Fatal(err)
	}
	found := map[schema.GroupResource]string{}
	for _, info := range infos {
		group := info.PrioritizedVersions[0].Group
		internalGV := schema.GroupVersion{Group: group, Version: runtime.APIVersionInternal}
		for version, storages := range info.VersionedResourcesStorageMap {
			gv := schema.GroupVersion{Group: group, Version: version}
			names := make([]string, 0, len(storages))
			for n := range storages {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, name := range names {
				st := storeOf(storages[name])
				if st == nil {
					continue
				}
				gr := schema.GroupResource{Group: group, Resource: st.DefaultQualifiedResource.Resource}
				for seed := int64(0); seed < 120 && found[gr] == ""; seed++ {
					f := fuzzer.FuzzerFor(kapitesting.FuzzerFuncs, rand.NewSource(seed), legacyscheme.Codecs)
					// decoded is an object as the server decodes a request's body.
					decoded := func() runtime.Object {
						obj := st.NewFunc()
						f.Fill(obj)
						ext, err := legacyscheme.Scheme.ConvertToVersion(obj, gv)
						if err != nil {
							return nil
						}
						legacyscheme.Scheme.Default(ext)
						in, err := legacyscheme.Scheme.ConvertToVersion(ext, internalGV)
						if err != nil {
							return nil
						}
						return in
					}
					if diff := defaultedAfter(st, gv, seed%2 == 1, decoded); diff != "" {
						found[gr] = name + ": " + diff
					}
				}
			}
		}
	}
	for gr, diff := range found {
		if !defaultedOnRead[gr] {
			t.Errorf("%s: the server's defaulting changes the stored object when it reads it back (-written +read):\n%s", gr, diff)
		}
	}
	for gr := range defaultedOnRead {
		if found[gr] == "" {
			t.Errorf("%s is in defaultedOnRead, but no fuzzed object of it changes when read back", gr)
		}
	}
}

// defaultedAfter is what defaulting changes, in version gv, of an object the store's create
// strategy (or update strategy, over another object) prepared; "" when nothing, or when the
// fuzzed objects do not convert or the strategy refuses them (a panic).
func defaultedAfter(st *genericregistry.Store, gv schema.GroupVersion, update bool, decoded func() runtime.Object) (diff string) {
	defer func() {
		if recover() != nil {
			diff = ""
		}
	}()
	ctx := genericapirequest.WithNamespace(context.Background(), "ns")
	obj := decoded()
	switch {
	case obj == nil:
		return ""
	case update && st.UpdateStrategy != nil:
		old := decoded()
		if old == nil {
			return ""
		}
		st.UpdateStrategy.PrepareForUpdate(ctx, obj, old)
	case !update && st.CreateStrategy != nil && !reflect.ValueOf(st.CreateStrategy).IsZero():
		st.CreateStrategy.PrepareForCreate(ctx, obj)
	default:
		return ""
	}
	written, err := legacyscheme.Scheme.ConvertToVersion(obj, gv)
	if err != nil {
		return ""
	}
	read := written.DeepCopyObject()
	legacyscheme.Scheme.Default(read)
	if apiequality.Semantic.DeepEqual(written, read) {
		return ""
	}
	return cmp.Diff(written, read)
}

// storeOf is the registry Store a REST storage is, or embeds; nil when it has none.
func storeOf(s rest.Storage) *genericregistry.Store {
	if st, ok := s.(*genericregistry.Store); ok {
		return st
	}
	v := reflect.ValueOf(s)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	for i := range v.NumField() {
		if f := v.Field(i); f.Type() == reflect.TypeFor[*genericregistry.Store]() && !f.IsNil() {
			return (*genericregistry.Store)(f.UnsafePointer())
		}
	}
	return nil
}
