package catalog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestStorageChanged: the CRD's writes, each storing in a version, say where the log last
// changed its storage version and what an object written before (or of an unknown
// resourceVersion) is stored in: the one before, or not known once it changed twice; an object
// whose resourceVersion is after the change is stored in the current one.
func TestStorageChanged(t *testing.T) {
	storing := func(v string) apiextensionsv1.CustomResourceDefinitionSpec {
		return apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1", Served: true, Storage: v == "v1"}, {Name: "v2", Served: true, Storage: v == "v2"}}}
	}
	type got struct{ Where, Was string }
	for _, tc := range []struct {
		name   string
		stores []string // the storage version of each write, at lines 1, 2, ... (resourceVersions 10, 20, ...)
		rv     uint64
		want   got
	}{
		{name: "never changed", stores: []string{"v1", "v1"}, rv: 5},
		{name: "changed, written before", stores: []string{"v1", "v2"}, rv: 15, want: got{"log:2", "v1"}},
		{name: "changed, resourceVersion not known", stores: []string{"v1", "v2", "v2"}, want: got{"log:2", "v1"}},
		{name: "changed, written after", stores: []string{"v1", "v2"}, rv: 25},
		{name: "changed twice", stores: []string{"v1", "v2", "v1"}, rv: 15, want: got{"log:3", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cur *servedCRD
			for i, v := range tc.stores {
				next := &servedCRD{spec: storing(v)}
				next.followStorage(cur, Where("log", i+1), []string{"10", "20", "30"}[i])
				cur = next
			}
			c := &Catalog{crds: map[string]*servedCRD{"widgets.example.com": cur}}
			where, was := c.StorageChanged("widgets.example.com", tc.rv)
			if diff := cmp.Diff(tc.want, got{where, was}); diff != "" {
				t.Errorf("StorageChanged (-want +got):\n%s", diff)
			}
		})
	}
}
