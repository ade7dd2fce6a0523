package schema

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// typeConverters caches the type converters of every release, by release and group-versions.
var typeConverters sync.Map // string -> func() (managedfields.TypeConverter, error)

// TypeConverter returns the structured-merge-diff type converter kube-apiserver's field
// manager uses for the built-in kinds of the group-versions gvs, which must be served: the
// one genericapiserver.getOpenAPIModels builds from the OpenAPI definitions of the resources
// the server installs. A kind of a group-version not given (one the server does not serve)
// has no type in it, as on the server. It is built from the embedded documents of the
// release, once per release and set of group-versions, and does not know the catalog's CRDs.
func (c *Catalog) TypeConverter(gvs ...schema.GroupVersion) (managedfields.TypeConverter, error) {
	names := make([]string, len(gvs))
	for i, gv := range gvs {
		names[i] = gvString(gv)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	key := c.version + " " + strings.Join(names, " ")
	load, _ := typeConverters.LoadOrStore(key, sync.OnceValues(func() (managedfields.TypeConverter, error) {
		defs := map[string]*spec.Schema{}
		for _, gv := range gvs {
			doc := c.builtin.docs[gv]
			if doc == nil {
				return nil, fmt.Errorf("no built-in API data for %s in Kubernetes %s", gvString(gv), c.version)
			}
			schemas, err := doc.components()
			if err != nil {
				return nil, err
			}
			// The documents of a release share the definitions they both hold (ObjectMeta).
			maps.Copy(defs, schemas)
		}
		tc, err := managedfields.NewTypeConverter(defs, false)
		if err != nil {
			return nil, fmt.Errorf("type converter for %s of Kubernetes %s: %w", strings.Join(names, ", "), c.version, err)
		}
		return tc, nil
	}))
	return load.(func() (managedfields.TypeConverter, error))()
}

// CustomTypeConverter returns the structured-merge-diff type converter of the group-version of
// a kind CRDs serve, as kube-apiserver's MutatingAdmissionPolicy plugin builds it from the
// OpenAPI v3 document the server publishes for the group-version (patch.typeConverterManager);
// ok is false when no CRD of the catalog serves it. The type converter does not apply the
// schema's defaults, which the server applies after every patch (CustomResourceDefaulter).
func (c *Catalog) CustomTypeConverter(gvk schema.GroupVersionKind) (tc managedfields.TypeConverter, ok bool, err error) {
	comps := c.crdComponentsOf(gvk.GroupVersion())
	if comps == nil {
		return nil, false, nil
	}
	comps.once.Do(func() {
		comps.tc, comps.tcErr = managedfields.NewTypeConverter(comps.schemas, false)
	})
	return comps.tc, true, comps.tcErr
}
