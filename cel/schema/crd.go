package schema

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"
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
// group-version, merged across the CRDs that share it, and the kinds they declare.
type crdComponents struct {
	schemas map[string]*spec.Schema
	gvkRefs map[schema.GroupVersionKind]string
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

	gr := schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
	info := &crdInfo{name: crd.Name, subresources: map[string]map[string]bool{}}
	gvs := map[string]*groupVersionData{}
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	for _, v := range crd.Spec.Versions {
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
		kind := gv.WithKind(crd.Spec.Names.Kind)
		res := &resourceData{
			gvr:            gv.WithResource(crd.Spec.Names.Plural),
			kind:           kind,
			singular:       crd.Spec.Names.Singular,
			namespaced:     namespaced,
			verbs:          []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
			shortNames:     append([]string(nil), crd.Spec.Names.ShortNames...),
			categories:     append([]string(nil), crd.Spec.Names.Categories...),
			equivalenceKey: "crd:" + gr.String(),
			notServed:      !v.Served,
			crd:            crd.Name,
		}
		info.versions = append(info.versions, v.Name)
		info.subresources[v.Name] = map[string]bool{}
		if v.Subresources != nil && v.Subresources.Status != nil {
			res.addSubresource("status", kind, []string{"get", "patch", "update"})
			info.subresources[v.Name]["status"] = true
		}
		if v.Subresources != nil && v.Subresources.Scale != nil {
			res.addSubresource("scale", schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, []string{"get", "patch", "update"})
			info.subresources[v.Name]["scale"] = true
		}
		gvs[v.Name] = &groupVersionData{gv: gv, custom: true, resources: map[string]*resourceData{res.gvr.Resource: res}}
	}

	// Build the served versions' schemas before taking the lock: the builder is slow.
	components := map[schema.GroupVersion]*crdComponents{}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		comps, err := buildCRDComponents(crd, v.Name)
		if err != nil {
			return fmt.Errorf("CustomResourceDefinition %s: building the OpenAPI schema of version %s: %w", crd.Name, v.Name, err)
		}
		components[schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}] = comps
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.crdConflicts(crd, gr); err != nil {
		return err
	}
	for _, v := range crd.Spec.Versions {
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
		existing := c.crdGVs[gv]
		if existing == nil {
			c.crdGVs[gv] = gvs[v.Name]
		} else {
			for name, res := range gvs[v.Name].resources {
				existing.resources[name] = res
			}
		}
	}
	for gv, comps := range components {
		if existing := c.crdSchemas[gv]; existing != nil {
			for name, s := range comps.schemas {
				if _, ok := existing.schemas[name]; !ok {
					existing.schemas[name] = s
				}
			}
			refs, err := indexKinds(existing.schemas)
			if err != nil {
				return fmt.Errorf("CustomResourceDefinition %s: %w", crd.Name, err)
			}
			existing.gvkRefs = refs
		} else {
			c.crdSchemas[gv] = comps
		}
	}
	if !contains(c.crdGroups, crd.Spec.Group) {
		c.crdGroups = append(c.crdGroups, crd.Spec.Group)
	}
	c.crdByGroupResource[gr] = info
	c.mapper = nil
	return nil
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
// resources. The caller holds c.mu.
func (c *Catalog) crdConflicts(crd *apiextensionsv1.CustomResourceDefinition, gr schema.GroupResource) error {
	if prev := c.crdByGroupResource[gr]; prev != nil {
		return fmt.Errorf("CustomResourceDefinition %s is already in the catalog", prev.name)
	}
	for gv := range c.builtin.gvs {
		if gv.Group == crd.Spec.Group {
			return fmt.Errorf("CustomResourceDefinition %s: group %q is a built-in API group of Kubernetes %s", crd.Name, crd.Spec.Group, c.version)
		}
	}
	for _, v := range crd.Spec.Versions {
		gvd := c.crdGVs[schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}]
		if gvd == nil {
			continue
		}
		for _, res := range gvd.resources {
			switch {
			case res.kind.Kind == crd.Spec.Names.Kind:
				return fmt.Errorf("CustomResourceDefinition %s: kind %s is already defined by CustomResourceDefinition %s", crd.Name, crd.Spec.Names.Kind, res.crd)
			case res.singular == crd.Spec.Names.Singular:
				return fmt.Errorf("CustomResourceDefinition %s: singular name %s is already used by CustomResourceDefinition %s", crd.Name, crd.Spec.Names.Singular, res.crd)
			}
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
	refs, err := indexKinds(resp.Components.Schemas)
	if err != nil {
		return nil, err
	}
	return &crdComponents{schemas: resp.Components.Schemas, gvkRefs: refs}, nil
}

// LoadCRDs reads CustomResourceDefinitions from YAML or JSON files, each holding one or more
// documents (a List of them too), and adds them with AddCRD. A directory stands for its
// *.yaml, *.yml and *.json files. Documents of other kinds are skipped; a file without any
// CustomResourceDefinition is an error. Every problem is reported, each naming its file and
// document; the valid CRDs are added even when others fail.
func (c *Catalog) LoadCRDs(paths ...string) error {
	var errs []error
	for _, p := range paths {
		files, err := expandPath(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range files {
			errs = append(errs, c.loadCRDFile(f)...)
		}
	}
	return errors.Join(errs...)
}

func expandPath(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no .yaml, .yml or .json files", p)
	}
	return files, nil
}

// typeMeta is enough of an object to tell what it is.
type typeMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

func (c *Catalog) loadCRDFile(path string) []error {
	data, err := os.ReadFile(path)
	if err != nil {
		return []error{err}
	}
	var errs []error
	found := 0
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", path, doc, err))
			break
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			doc--
			continue
		}
		jsonDoc, err := yaml.YAMLToJSON(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", path, doc, err))
			continue
		}
		if bytes.Equal(bytes.TrimSpace(jsonDoc), []byte("null")) {
			doc--
			continue
		}
		var tm typeMeta
		if err := json.Unmarshal(jsonDoc, &tm); err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", path, doc, err))
			continue
		}
		objects := []json.RawMessage{jsonDoc}
		where := []string{fmt.Sprintf("document %d", doc)}
		if (tm.APIVersion == "v1" && strings.HasSuffix(tm.Kind, "List")) || tm.Kind == "CustomResourceDefinitionList" {
			objects, where = tm.Items, nil
			for i := range tm.Items {
				where = append(where, fmt.Sprintf("document %d: items[%d]", doc, i))
			}
		}
		for i, obj := range objects {
			n, err := c.loadCRDObject(obj)
			found += n
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", path, where[i], err))
			}
		}
	}
	if found == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: no apiextensions.k8s.io/v1 CustomResourceDefinition", path))
	}
	return errs
}

// loadCRDObject adds one object if it is a CRD; it reports how many CRDs it found.
func (c *Catalog) loadCRDObject(obj json.RawMessage) (int, error) {
	var tm typeMeta
	if err := json.Unmarshal(obj, &tm); err != nil {
		return 0, err
	}
	if tm.Kind != "CustomResourceDefinition" {
		return 0, nil
	}
	if tm.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
		return 1, fmt.Errorf("CustomResourceDefinition of apiVersion %q: Kubernetes %s serves only %s", tm.APIVersion, c.version, apiextensionsv1.SchemeGroupVersion)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(obj, crd); err != nil {
		return 1, fmt.Errorf("CustomResourceDefinition: %w", err)
	}
	return 1, c.AddCRD(crd)
}

// stripComments drops YAML comment lines, so that a document of comments only counts as empty.
func stripComments(b []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
