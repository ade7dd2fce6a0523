package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"

	"github.com/vapc-dev/vapc/cel/manifest"
)

// crdScheme converts and defaults CustomResourceDefinitions as the apiextensions-apiserver does.
var crdScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	apiextensionsinstall.Install(s)
	return s
}()

// crdInfo is what EquivalentResources needs of a CRD: the apiserver keeps one
// EquivalentResourceRegistry per CRD and registers every spec.versions entry in order.
type crdInfo struct {
	name         string
	versions     []string
	subresources map[string]map[string]bool
}

// crdComponents are the component schemas the CRD OpenAPI builder produced for one
// group-version, merged across the CRDs that share it, the kinds each declares (read once,
// when the CRD is added: indexing them again cannot fail), and the schema of each kind.
type crdComponents struct {
	schemas map[string]*spec.Schema
	kinds   map[string][]schema.GroupVersionKind
	gvkRefs map[schema.GroupVersionKind]string

	// served are the kinds' CRDs and serving schemas, by kind (see CustomResourceDefinitionOf,
	// CustomResourceSchema).
	served map[string]servedKind
	// The type converter of the schemas, built on first use (typeConverter).
	once  sync.Once
	tc    managedfields.TypeConverter
	tcErr error
	// resolved are the kinds' schemas the resolver returned, as the built-in data's: a
	// change of the catalog's CRDs makes new components, and their schemas resolve anew.
	resolved sync.Map
}

// servedKind is a kind's CRD, as the catalog took it (defaulted), and the structural schema the
// apiextensions apiserver serves its version with (nil without one).
type servedKind struct {
	crd        *apiextensionsv1.CustomResourceDefinition
	structural *structuralschema.Structural
}

// crdEntry is one CustomResourceDefinition as the catalog serves it, built once when it is
// added and never changed: catalogs and their clones share it.
type crdEntry struct {
	name           string
	gr             schema.GroupResource
	kind, singular string
	info           *crdInfo
	// gvs are the CRD's group-versions by version, each holding its one resource.
	gvs map[string]*groupVersionData
	// components are the schemas of its served versions.
	components map[schema.GroupVersion]*crdComponents
}

// crdIndex is what lookups read of a catalog's CRDs, built from its entries by buildCRDIndex
// and replaced, never changed, when they change.
type crdIndex struct {
	// gvs are the group-versions added by CRDs, by group-version.
	gvs map[schema.GroupVersion]*groupVersionData
	// groups lists CRD groups in the order they were first added.
	groups []string
	// schemas holds the component schemas the CRD OpenAPI builder produced, by group-version.
	schemas map[schema.GroupVersion]*crdComponents
	// byGroupResource finds the CRD that owns a group-resource.
	byGroupResource map[schema.GroupResource]*crdInfo
}

// AddCRD adds a CustomResourceDefinition: its resources (scope, versions, the status and scale
// subresources) and, for each served version, the schema the apiextensions-apiserver publishes
// in OpenAPI v3, which is where the apiserver's type checker resolves CRD kinds from (through
// resolver.ClientDiscoveryResolver). That schema is built by the apiextensions-apiserver's own
// OpenAPI builder (BuildOpenAPIV3 in k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder,
// with the options its openapiv3 controller uses), which embeds ObjectMeta, apiVersion and kind. The CRD is defaulted and validated as a create
// request is, with the apiserver's own strategy; every validation error is reported. The CRD is
// taken as established with the names in its spec.
func (c *Catalog) AddCRD(in *apiextensionsv1.CustomResourceDefinition) error {
	if in == nil {
		return errors.New("nil CustomResourceDefinition")
	}
	crd := in.DeepCopy()
	crdScheme.Default(crd)
	if err := validateCRD(crd); err != nil {
		return err
	}
	e, err := newCRDEntry(crd, crd.Spec.Names)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := c.crd.byGroupResource[e.gr]; prev != nil {
		return fmt.Errorf("CustomResourceDefinition %s is already in the catalog", prev.name)
	}
	return c.installCRD(e)
}

// SetCRD adds a CustomResourceDefinition as kube-apiserver serves it once it has accepted its
// names, or replaces the one of the same name (a CRD updated): its resources carry the names of
// status.acceptedNames, as the apiextensions-apiserver's crdHandler serves them
// (getOrCreateServingInfoFor), or of spec.names when the status has none; the published schemas
// are built from the CRD as it is, as the openapiv3 controller builds them. Unlike AddCRD it
// does not validate the CRD as a create: it is for CRDs the server stored (an audit log's, a
// snapshot's), which it validated, maybe as an update. It refuses a CRD whose names clash with
// another's of the catalog.
func (c *Catalog) SetCRD(in *apiextensionsv1.CustomResourceDefinition) error {
	if in == nil {
		return errors.New("nil CustomResourceDefinition")
	}
	crd := in.DeepCopy()
	crdScheme.Default(crd)
	names := crd.Spec.Names
	if acc := crd.Status.AcceptedNames; acc.Plural != "" && acc.Kind != "" {
		names = acc
	}
	if crd.Name != names.Plural+"."+crd.Spec.Group {
		return fmt.Errorf("CustomResourceDefinition %s: the name is not %s.%s", crd.Name, names.Plural, crd.Spec.Group)
	}
	e, err := newCRDEntry(crd, names)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.installCRD(e)
}

// RemoveCRD removes the CustomResourceDefinition of the name, as the apiserver stops serving a
// deleted CRD; it reports whether the catalog had it.
func (c *Catalog) RemoveCRD(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crds[name] == nil {
		return false
	}
	crds := make(map[string]*crdEntry, len(c.crds))
	for n, e := range c.crds {
		if n != name {
			crds[n] = e
		}
	}
	order := make([]string, 0, len(c.crdOrder))
	for _, n := range c.crdOrder {
		if n != name {
			order = append(order, n)
		}
	}
	// What remains indexes again, from the kinds each schema declared when it was added.
	c.crds, c.crdOrder, c.crd, c.mapper = crds, order, buildCRDIndex(crds, order), nil
	return true
}

// CRDs lists the names of the catalog's CustomResourceDefinitions, sorted.
func (c *Catalog) CRDs() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := append([]string(nil), c.crdOrder...)
	sort.Strings(out)
	return out
}

// newCRDEntry builds the resources of a defaulted CRD with the names it is served under, and
// the schemas of its served versions.
func newCRDEntry(crd *apiextensionsv1.CustomResourceDefinition, names apiextensionsv1.CustomResourceDefinitionNames) (*crdEntry, error) {
	gr := schema.GroupResource{Group: crd.Spec.Group, Resource: names.Plural}
	e := &crdEntry{
		name: crd.Name, gr: gr, kind: names.Kind, singular: names.Singular,
		info:       &crdInfo{name: crd.Name, subresources: map[string]map[string]bool{}},
		gvs:        map[string]*groupVersionData{},
		components: map[schema.GroupVersion]*crdComponents{},
	}
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	for _, v := range crd.Spec.Versions {
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
		kind := gv.WithKind(names.Kind)
		res := &resourceData{
			gvr:            gv.WithResource(names.Plural),
			kind:           kind,
			singular:       names.Singular,
			namespaced:     namespaced,
			verbs:          []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
			shortNames:     append([]string(nil), names.ShortNames...),
			categories:     append([]string(nil), names.Categories...),
			equivalenceKey: "crd:" + gr.String(),
			notServed:      !v.Served,
			crd:            crd.Name,
		}
		e.info.versions = append(e.info.versions, v.Name)
		e.info.subresources[v.Name] = map[string]bool{}
		if v.Subresources != nil && v.Subresources.Status != nil {
			res.addSubresource("status", kind, []string{"get", "patch", "update"})
			e.info.subresources[v.Name]["status"] = true
		}
		if v.Subresources != nil && v.Subresources.Scale != nil {
			res.addSubresource("scale", schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, []string{"get", "patch", "update"})
			e.info.subresources[v.Name]["scale"] = true
		}
		e.gvs[v.Name] = &groupVersionData{gv: gv, custom: true, resources: map[string]*resourceData{res.gvr.Resource: res}}
		if !v.Served {
			continue
		}
		// Built before the catalog's lock is taken: the builder is slow.
		comps, err := buildCRDComponents(crd, v.Name)
		if err != nil {
			return nil, fmt.Errorf("CustomResourceDefinition %s: building the OpenAPI schema of version %s: %w", crd.Name, v.Name, err)
		}
		e.components[gv] = comps
	}
	return e, nil
}

// installCRD adds the entry, or replaces the one of the same name, and indexes the catalog's
// CRDs again; on an error the catalog is unchanged. The caller holds c.mu for writing.
func (c *Catalog) installCRD(e *crdEntry) error {
	if err := c.crdConflicts(e); err != nil {
		return err
	}
	crds := make(map[string]*crdEntry, len(c.crds)+1)
	for n, prev := range c.crds {
		crds[n] = prev
	}
	order := c.crdOrder
	if crds[e.name] == nil {
		order = append(append([]string(nil), c.crdOrder...), e.name)
	}
	crds[e.name] = e
	c.crds, c.crdOrder, c.crd, c.mapper = crds, order, buildCRDIndex(crds, order), nil
	return nil
}

// buildCRDIndex indexes the CRDs in the order they were added: CRDs that share a group-version
// share its resources and its component schemas (the first CRD's schema of a name wins). It
// cannot fail: what could (reading the kinds a schema declares) was done when each CRD was
// added, so that removing one never leaves the catalog without an index.
func buildCRDIndex(crds map[string]*crdEntry, order []string) *crdIndex {
	idx := &crdIndex{
		gvs:             map[schema.GroupVersion]*groupVersionData{},
		schemas:         map[schema.GroupVersion]*crdComponents{},
		byGroupResource: map[schema.GroupResource]*crdInfo{},
	}
	for _, name := range order {
		e := crds[name]
		if !contains(idx.groups, e.gr.Group) {
			idx.groups = append(idx.groups, e.gr.Group)
		}
		idx.byGroupResource[e.gr] = e.info
		for _, gvd := range e.gvs {
			m := idx.gvs[gvd.gv]
			if m == nil {
				m = &groupVersionData{gv: gvd.gv, custom: true, resources: map[string]*resourceData{}}
				idx.gvs[gvd.gv] = m
			}
			for n, r := range gvd.resources {
				m.resources[n] = r
			}
		}
		for gv, comps := range e.components {
			m := idx.schemas[gv]
			if m == nil {
				m = &crdComponents{schemas: map[string]*spec.Schema{}, kinds: map[string][]schema.GroupVersionKind{}, served: map[string]servedKind{}}
				idx.schemas[gv] = m
			}
			for k, sk := range comps.served {
				if _, ok := m.served[k]; !ok {
					m.served[k] = sk
				}
			}
			for n, s := range comps.schemas {
				if _, ok := m.schemas[n]; !ok {
					m.schemas[n] = s
					if k := comps.kinds[n]; k != nil {
						m.kinds[n] = k
					}
				}
			}
		}
	}
	for _, m := range idx.schemas {
		m.gvkRefs = kindRefs(m.kinds)
	}
	return idx
}

func (r *resourceData) addSubresource(name string, kind schema.GroupVersionKind, verbs []string) {
	if r.subresources == nil {
		r.subresources = map[string]*subresourceData{}
	}
	r.subresources[name] = &subresourceData{kind: kind, verbs: verbs}
}

// validateCRD validates a defaulted CRD as the apiextensions-apiserver validates a create
// request: its create strategy resets the status and records the storage version as the
// stored version, then runs validation.ValidateCustomResourceDefinition. (The strategy itself
// lives in a registry package that would pull etcd into vapc, so its two steps are repeated
// here.)
func validateCRD(crd *apiextensionsv1.CustomResourceDefinition) error {
	internal := &apiextensions.CustomResourceDefinition{}
	if err := crdScheme.Convert(crd, internal, nil); err != nil {
		return fmt.Errorf("CustomResourceDefinition %s: %w", crd.Name, err)
	}
	internal.Status = apiextensions.CustomResourceDefinitionStatus{}
	internal.Generation = 1
	for _, v := range internal.Spec.Versions {
		if v.Storage {
			internal.Status.StoredVersions = append(internal.Status.StoredVersions, v.Name)
			break
		}
	}
	if errs := validation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
		msgs := make([]string, 0, len(errs))
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		return fmt.Errorf("CustomResourceDefinition %q is invalid: %s", crd.Name, strings.Join(msgs, "; "))
	}
	return nil
}

// crdConflicts refuses a CRD that the apiserver would not establish next to the catalog's
// resources: another CRD of the catalog (not one of the same name, which it replaces) already
// serves its kind or singular name in one of its group-versions. The caller holds c.mu.
func (c *Catalog) crdConflicts(e *crdEntry) error {
	for gv := range c.builtin.gvs {
		if gv.Group == e.gr.Group {
			return fmt.Errorf("CustomResourceDefinition %s: group %q is a built-in API group of Kubernetes %s", e.name, e.gr.Group, c.version)
		}
	}
	for _, other := range c.crds {
		if other.name == e.name || other.gr.Group != e.gr.Group {
			continue
		}
		shared := false
		for v := range e.gvs {
			if other.gvs[v] != nil {
				shared = true
			}
		}
		switch {
		case !shared:
		case other.kind == e.kind:
			return fmt.Errorf("CustomResourceDefinition %s: kind %s is already defined by CustomResourceDefinition %s", e.name, e.kind, other.name)
		case other.singular == e.singular:
			return fmt.Errorf("CustomResourceDefinition %s: singular name %s is already used by CustomResourceDefinition %s", e.name, e.singular, other.name)
		}
	}
	return nil
}

// buildCRDComponents builds the OpenAPI v3 document the apiserver publishes for one version of
// a CRD and reads its component schemas back from JSON, as a discovery client would.
func buildCRDComponents(crd *apiextensionsv1.CustomResourceDefinition, version string) (*crdComponents, error) {
	// The openapiv3 controller passes IncludeSelectableFields from the CustomResourceFieldSelectors
	// feature gate, GA and on since 1.32.
	doc, err := builder.BuildOpenAPIV3(crd, version, builder.Options{V2: false, IncludeSelectableFields: true})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Components struct {
			Schemas map[string]*spec.Schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, err
	}
	kinds, err := schemaKinds(resp.Components.Schemas)
	if err != nil {
		return nil, err
	}
	st, err := servingSchema(crd, version)
	if err != nil {
		return nil, err
	}
	return &crdComponents{schemas: resp.Components.Schemas, kinds: kinds, // the index refers to kinds (buildCRDIndex)
		served: map[string]servedKind{crd.Spec.Names.Kind: {crd: crd, structural: st}}}, nil
}

// servingSchema is the structural schema of a CRD's version as the apiextensions apiserver's
// crdHandler builds it (getOrCreateServingInfoFor), for its decoder, defaulter and registry
// strategy: its defaults pruned, unless the CRD preserves unknown fields; nil when the version
// has no schema.
func servingSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) (*structuralschema.Structural, error) {
	val, err := apiextensionshelpers.GetSchemaForVersion(crd, version)
	if err != nil || val == nil {
		return nil, err
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
		return nil, err
	}
	st, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if crd.Spec.PreserveUnknownFields {
		return st, nil // as the handler takes it, whatever the error
	}
	if err != nil {
		return nil, err
	}
	st = st.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(st); err != nil {
		return nil, err
	}
	return st, nil
}

// CustomResourceDecoder returns what the apiextensions apiserver's decoder does to a custom
// resource's object of the kind, in place, before its handler and admission see it
// (unstructuredSchemaCoercer.apply, then unstructuredDefaulter.Default): it prunes the fields
// and nulls the schema does not allow (unless the CRD preserves unknown fields), coerces the
// metadata of embedded resources (an error where the server's decoder refuses it), then
// applies the schema's defaults; the object's own metadata goes through ObjectMeta where
// vapc's evaluator takes it. ok is false when no CRD of the catalog serves the kind with a
// schema.
func (c *Catalog) CustomResourceDecoder(gvk schema.GroupVersionKind) (decode func(obj map[string]any) error, ok bool) {
	st, preserve := c.CustomResourceSchema(gvk)
	if st == nil {
		return nil, false
	}
	return func(obj map[string]any) error {
		if !preserve {
			structuralpruning.Prune(obj, st, true)
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, st)
		}
		if err := schemaobjectmeta.Coerce(nil, obj, st, false, false); err != nil {
			return err
		}
		structuraldefaulting.Default(obj, st)
		return nil
	}, true
}

// CustomResourceConversion returns what the apiextensions apiserver does to a custom resource's
// object when it serves it as gvk, in place, where the CRD converts with the strategy None: the
// object as a write through its own version answered it (or a read through the storage version).
// Its nopConverter sets the apiVersion, then its schemaCoercingConverter prunes the fields and
// nulls the target version's schema does not allow (unless the CRD preserves unknown fields) and
// coerces the metadata of embedded resources, without defaulting (unstructuredSchemaCoercer.apply).
// An object of another version than the storage one is first made what the server stored and
// reads back: converted so to the storage version; every object is then defaulted by the
// storage version's schema, as the storage codec defaults what it decodes (by the CRD as it is
// now, which may give defaults it did not when the object was written). (A write through a version stores nothing that version's
// schema prunes; an object a read through it gave may lack what the storage version holds.) ok
// is false when the CRD converts otherwise (a webhook) or no CRD of the catalog serves gvk with
// a schema.
func (c *Catalog) CustomResourceConversion(gvk schema.GroupVersionKind) (convert func(obj map[string]any) error, ok bool) {
	crd := c.CustomResourceDefinitionOf(gvk)
	if crd == nil || crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
		return nil, false
	}
	st, preserve := c.CustomResourceSchema(gvk)
	if st == nil {
		return nil, false
	}
	storage := CustomResourceStorageVersion(crd)
	coerce := func(obj map[string]any, st *structuralschema.Structural) error {
		if !preserve {
			structuralpruning.Prune(obj, st, true)
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, st)
		}
		if err := schemaobjectmeta.Coerce(nil, obj, st, false, false); err != nil {
			return err // a *field.Error: not returned as an error holding nil
		}
		return nil
	}
	return func(obj map[string]any) error {
		from, _ := obj["apiVersion"].(string)
		gv, err := schema.ParseGroupVersion(from)
		if err != nil || gv.Group != gvk.Group {
			return fmt.Errorf("%s is not a version of %s", from, gvk.GroupKind())
		}
		stored, _ := c.CustomResourceSchema(gvk.GroupKind().WithVersion(storage))
		if stored == nil {
			return fmt.Errorf("%s: the storage version %s is not served with a schema", gvk.GroupKind(), storage)
		}
		if gv.Version != storage {
			obj["apiVersion"] = gvk.GroupKind().WithVersion(storage).GroupVersion().String()
			if err := coerce(obj, stored); err != nil {
				return err
			}
		}
		// The storage codec defaults every object it decodes by the schema the CRD has now:
		// an object stored before the CRD gave a field a default reads with it.
		structuraldefaulting.Default(obj, stored)
		obj["apiVersion"] = gvk.GroupVersion().String()
		return coerce(obj, st)
	}, true
}

// CustomResourceStorageVersion is the version a CRD stores its objects in.
func CustomResourceStorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// CustomResourceDefinitionOf is the CRD that serves the kind, as the catalog took it
// (defaulted), or nil; the caller must not change it.
func (c *Catalog) CustomResourceDefinitionOf(gvk schema.GroupVersionKind) *apiextensionsv1.CustomResourceDefinition {
	if comps := c.crdComponentsOf(gvk.GroupVersion()); comps != nil {
		return comps.served[gvk.Kind].crd
	}
	return nil
}

// CustomResourceDefaulter returns the apiextensions apiserver's defaulter of a custom
// resource's object of the kind (unstructuredDefaulter: the schema's defaults, in place), which
// the MutatingAdmissionPolicy dispatcher runs after every patch; ok is as for
// CustomResourceDecoder.
func (c *Catalog) CustomResourceDefaulter(gvk schema.GroupVersionKind) (def func(obj map[string]any), ok bool) {
	st, _ := c.CustomResourceSchema(gvk)
	if st == nil {
		return nil, false
	}
	return func(obj map[string]any) { structuraldefaulting.Default(obj, st) }, true
}

// CustomResourceSchema is the structural schema the apiextensions apiserver serves the kind
// with (see servingSchema), and whether its CRD preserves unknown fields; nil when no CRD of
// the catalog serves the kind with a schema. The caller must not change it.
func (c *Catalog) CustomResourceSchema(gvk schema.GroupVersionKind) (st *structuralschema.Structural, preserveUnknownFields bool) {
	if comps := c.crdComponentsOf(gvk.GroupVersion()); comps != nil {
		if sk := comps.served[gvk.Kind]; sk.structural != nil {
			return sk.structural, sk.crd.Spec.PreserveUnknownFields
		}
	}
	return nil, false
}

// crdComponentsOf is what the catalog's CRDs serve of the group-version, or nil; its maps are
// never changed once the catalog holds it.
func (c *Catalog) crdComponentsOf(gv schema.GroupVersion) *crdComponents {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.crd.schemas[gv]
}

// LoadCRDs reads CustomResourceDefinitions from YAML or JSON files, each holding one or more
// documents (a List of them too), and adds them with AddCRD. A folder stands for the manifest
// files under it, by the rule of manifest.Expand. Documents of other kinds are skipped; a file
// without any CustomResourceDefinition is an error. Every problem is reported, each a
// *manifest.Error at its file, line and column; the valid CRDs are added even when others fail.
func (c *Catalog) LoadCRDs(paths ...string) error {
	files, err := manifest.Expand(paths...)
	errs := []error{err}
	for _, f := range files {
		errs = append(errs, c.loadCRDFile(f)...)
	}
	return errors.Join(errs...)
}

// typeMeta is enough of an object to tell what it is.
type typeMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

func (c *Catalog) loadCRDFile(path string) []error {
	data, err := manifest.ReadFile(path)
	if err != nil {
		return []error{err}
	}
	docs, err := manifest.Parse(path, data)
	errs := []error{err}
	found := 0
	for _, d := range docs {
		var tm typeMeta
		if err := json.Unmarshal(d.JSON, &tm); err != nil {
			errs = append(errs, &manifest.Error{Pos: d.Pos(), Msg: err.Error()})
			continue
		}
		if (tm.APIVersion == "v1" && strings.HasSuffix(tm.Kind, "List")) || tm.Kind == "CustomResourceDefinitionList" {
			for i, obj := range tm.Items {
				field := fmt.Sprintf("items[%d]", i)
				n, err := c.loadCRDObject(obj, nil)
				found += n
				if err != nil {
					errs = append(errs, &manifest.Error{Pos: d.FieldPos(field), Field: field, Msg: err.Error()})
				}
			}
			continue
		}
		n, err := c.loadCRDObject(d.JSON, d)
		found += n
		if err != nil {
			var me *manifest.Error
			if !errors.As(err, &me) {
				err = &manifest.Error{Pos: d.Pos(), Msg: err.Error()}
			}
			errs = append(errs, err)
		}
	}
	if found == 0 && errors.Join(errs...) == nil {
		errs = append(errs, &manifest.Error{Pos: manifest.Position{File: path}, Msg: "no apiextensions.k8s.io/v1 CustomResourceDefinition: give the CRD as the cluster serves it (kubectl get crd NAME -o yaml)"})
	}
	return errs
}

// loadCRDObject adds one object if it is a CRD; it reports how many CRDs it found. The document
// of the object, when given, decodes it strictly with the positions of its fields.
func (c *Catalog) loadCRDObject(obj json.RawMessage, doc *manifest.Document) (int, error) {
	var tm typeMeta
	if err := json.Unmarshal(obj, &tm); err != nil {
		return 0, err
	}
	if tm.Kind != "CustomResourceDefinition" {
		return 0, nil
	}
	if tm.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
		err := fmt.Errorf("CustomResourceDefinition of apiVersion %q: Kubernetes %s serves only %s", tm.APIVersion, c.version, apiextensionsv1.SchemeGroupVersion)
		if doc != nil {
			return 1, doc.Errorf("apiVersion", "%v", err)
		}
		return 1, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if doc != nil {
		if err := doc.Decode(crd); err != nil {
			return 1, err
		}
	} else if err := yaml.UnmarshalStrict(obj, crd); err != nil {
		return 1, fmt.Errorf("CustomResourceDefinition: %w", err)
	}
	if err := c.AddCRD(crd); err != nil {
		if doc != nil {
			return 1, &manifest.Error{Pos: doc.Pos(), Msg: err.Error()}
		}
		return 1, err
	}
	return 1, nil
}
