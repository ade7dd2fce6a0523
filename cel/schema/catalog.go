package schema

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"

	"github.com/vapc-dev/vapc/cel/internal/parallel"
)

// Catalog is the API surface of one Kubernetes release: the built-in group-versions from the
// embedded OpenAPI documents plus any CustomResourceDefinitions added to it. A Catalog is safe
// for concurrent use; AddCRD, LoadCRDs, SetCRD and RemoveCRD may run concurrently with lookups.
type Catalog struct {
	version string
	rel     *release
	builtin *builtinData
	// enabled decides which group-versions count as served.
	allVersions bool
	extra       map[schema.GroupVersion]bool

	mu sync.RWMutex
	// crds are the CRDs by name, crdOrder their names in the order they were added, and crd
	// their index, rebuilt whenever they change.
	crds     map[string]*crdEntry
	crdOrder []string
	crd      *crdIndex
	// mapper caches the RESTMapper built from the current state; nil after a change.
	mapper *cachedMapper
}

// builtinData is the parsed, immutable, shared built-in data of one release.
type builtinData struct {
	gvs  map[schema.GroupVersion]*groupVersionData
	docs map[schema.GroupVersion]*document
	// kinds finds the document and schema of every kind any document declares.
	kinds map[schema.GroupVersionKind]kindLocation
	// resolved holds the schemas the resolver returned, their references inlined, by kind:
	// schema.GroupVersionKind → func() (*spec.Schema, error), which resolves it once.
	resolved sync.Map
}

// kindLocation is where the schema of a built-in kind is published.
type kindLocation struct {
	doc  *document
	name string
}

// ResourceInfo describes a resource, or one of its subresources, in one group-version.
type ResourceInfo struct {
	// Kind is the kind of the object a request for the resource carries: for a subresource,
	// the kind its writes (or, for connect subresources, its options) take, e.g. policy/v1
	// Eviction for pods/eviction, autoscaling/v1 Scale for deployments/scale, v1 Pod for
	// pods/status. It is what admission reports as the request's kind.
	Kind schema.GroupVersionKind
	// Namespaced is true for a namespace-scoped resource.
	Namespaced bool
	// Verbs are the discovery verbs of the resource or subresource, sorted.
	Verbs []string
	// Subresources are the names of the resource's subresources, sorted; empty when the
	// ResourceInfo describes a subresource.
	Subresources []string
	// Served reports whether the group-version is served under the catalog's options (by
	// default, whether kube-apiserver serves it with default flags).
	Served bool
	// ServedByDefault reports whether kube-apiserver serves the group-version with default
	// flags. CRD versions report their spec.versions[].served.
	ServedByDefault bool
	// CRD is the name of the CustomResourceDefinition that defines the resource; empty for
	// built-in resources.
	CRD string
}

// GroupVersionInfo describes one group-version the catalog knows.
type GroupVersionInfo struct {
	// GroupVersion is the group and version; the core group is "".
	GroupVersion schema.GroupVersion
	// Served reports whether the group-version is served under the catalog's options.
	Served bool
	// ServedByDefault reports whether kube-apiserver serves it with default flags.
	ServedByDefault bool
	// Custom is true for a group-version defined by CustomResourceDefinitions.
	Custom bool
}

// Option configures a Catalog.
type Option func(*Catalog) error

// WithAllVersions treats every published group-version as served, alpha and beta included, as
// a kube-apiserver started with --runtime-config=api/all=true would.
func WithAllVersions() Option {
	return func(c *Catalog) error {
		c.allVersions = true
		return nil
	}
}

// WithGroupVersions treats the given group-versions as served in addition to those served by
// default, as --runtime-config=<group>/<version>=true would. Each must be a published
// group-version of the release.
func WithGroupVersions(gvs ...schema.GroupVersion) Option {
	return func(c *Catalog) error {
		var unknown []string
		for _, gv := range gvs {
			if c.builtin.gvs[gv] == nil {
				unknown = append(unknown, gvString(gv))
				continue
			}
			c.extra[gv] = true
		}
		if len(unknown) > 0 {
			return fmt.Errorf("Kubernetes %s publishes no group-version %s", c.version, strings.Join(unknown, ", "))
		}
		return nil
	}
}

// SupportedVersions lists the Kubernetes minors with embedded data, e.g. ["1.37"].
func SupportedVersions() []string {
	var out []string
	for _, v := range embeddedVersions() {
		if releases[v] != nil {
			out = append(out, v)
		}
	}
	return out
}

var (
	builtinMu    sync.Mutex
	builtinCache = map[string]func() (*builtinData, error){}
)

// Builtin returns a catalog of the built-in APIs of a Kubernetes minor such as "1.37" (also
// accepted: "v1.37", "1.37.2"). An unsupported version is an error that lists the supported
// ones. The embedded documents are read on the first call for a version and shared by every
// catalog of that version; schemas are parsed only when resolved.
func Builtin(kubernetesVersion string, opts ...Option) (*Catalog, error) {
	minor, err := parseMinor(kubernetesVersion)
	if err != nil {
		return nil, err
	}
	rel := releases[minor]
	if rel == nil || !contains(embeddedVersions(), minor) {
		return nil, fmt.Errorf("no built-in API data for Kubernetes %s: supported versions are %s",
			kubernetesVersion, strings.Join(SupportedVersions(), ", "))
	}
	builtinMu.Lock()
	load := builtinCache[minor]
	if load == nil {
		load = sync.OnceValues(func() (*builtinData, error) { return loadBuiltin(minor, rel) })
		builtinCache[minor] = load
	}
	builtinMu.Unlock()
	data, err := load()
	if err != nil {
		return nil, fmt.Errorf("loading built-in API data for Kubernetes %s: %w", minor, err)
	}
	c := &Catalog{
		version: minor,
		rel:     rel,
		builtin: data,
		extra:   map[schema.GroupVersion]bool{},
		crds:    map[string]*crdEntry{},
		crd:     &crdIndex{},
	}
	for _, opt := range opts {
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseMinor turns "1.37", "v1.37" or "1.37.2" into "1.37".
func parseMinor(s string) (string, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	v, err := utilversion.ParseGeneric(t)
	if err != nil {
		v, err = utilversion.ParseMajorMinor(t)
	}
	if err != nil {
		return "", fmt.Errorf("invalid Kubernetes version %q: want MAJOR.MINOR such as 1.37; supported versions are %s",
			s, strings.Join(SupportedVersions(), ", "))
	}
	return fmt.Sprintf("%d.%d", v.Major(), v.Minor()), nil
}

// loadBuiltin reads the paths of every embedded document of a release.
func loadBuiltin(minor string, rel *release) (*builtinData, error) {
	docs, err := embeddedDocuments(minor)
	if err != nil {
		return nil, err
	}
	served := map[schema.GroupVersion]bool{}
	for _, gv := range rel.servedByDefault {
		served[gv] = true
	}
	notServed := map[schema.GroupVersion]bool{}
	for _, gv := range rel.notServedByDefault {
		notServed[gv] = true
	}
	data := &builtinData{
		gvs:   map[schema.GroupVersion]*groupVersionData{},
		docs:  map[schema.GroupVersion]*document{},
		kinds: map[schema.GroupVersionKind]kindLocation{},
	}
	scans := scanWithIndex(path.Join(openapiRoot, "v"+minor), docs)
	for i, doc := range docs {
		if !served[doc.gv] && !notServed[doc.gv] {
			return nil, fmt.Errorf("%s: group-version %s is not classified as served or not served by default", doc.file, gvString(doc.gv))
		}
		paths, kinds, err := scans[i].paths, scans[i].kinds, scans[i].err
		if err != nil {
			return nil, err
		}
		// A kind is looked up in its own group-version's document first; a few are published
		// only where another group uses them (policy/v1 Eviction, autoscaling/v1 Scale and
		// authentication.k8s.io/v1 TokenRequest appear in the core and apps documents only),
		// and for those the first document in name order wins.
		for gvk, name := range kinds {
			if prev, ok := data.kinds[gvk]; !ok || (prev.doc.gv != gvk.GroupVersion() && doc.gv == gvk.GroupVersion()) {
				data.kinds[gvk] = kindLocation{doc: doc, name: name}
			}
		}
		resources, err := buildResources(doc, paths, rel)
		if err != nil {
			return nil, err
		}
		data.docs[doc.gv] = doc
		data.gvs[doc.gv] = &groupVersionData{
			gv:              doc.gv,
			servedByDefault: served[doc.gv],
			resources:       resources,
			doc:             doc,
		}
	}
	return data, nil
}

// documentScan is what document.scan returned.
type documentScan struct {
	paths map[string]map[string]openapiOperation
	kinds map[schema.GroupVersionKind]string
	err   error
}

// scanDocuments scans the documents on every core: most of a process's start-up is spent
// decompressing and decoding them, one after the other otherwise. The i-th scan is the i-th
// document's.
func scanDocuments(docs []*document) []documentScan {
	scans := make([]documentScan, len(docs))
	parallel.Each(len(docs), func(i int) {
		s := &scans[i]
		s.paths, s.kinds, s.err = docs[i].scan()
	})
	return scans
}

// Clone returns a catalog of the same API, CRDs included, that changes on its own: CRDs added
// to or removed from one are not in the other. It shares what neither changes.
func (c *Catalog) Clone() *Catalog {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := &Catalog{
		version: c.version, rel: c.rel, builtin: c.builtin, allVersions: c.allVersions,
		extra:    make(map[schema.GroupVersion]bool, len(c.extra)),
		crds:     make(map[string]*crdEntry, len(c.crds)),
		crdOrder: append([]string(nil), c.crdOrder...),
		crd:      c.crd, // replaced, never changed
	}
	for gv, on := range c.extra {
		out.extra[gv] = on
	}
	for n, e := range c.crds {
		out.crds[n] = e
	}
	return out
}

// Version returns the Kubernetes minor of the catalog, e.g. "1.37".
func (c *Catalog) Version() string { return c.version }

// served reports whether gvd counts as served under the catalog's options. The caller holds
// c.mu if gvd may belong to a CRD.
func (c *Catalog) served(gvd *groupVersionData) bool {
	if gvd.custom {
		return true
	}
	return gvd.servedByDefault || c.allVersions || c.extra[gvd.gv]
}

// groupVersion returns the data of a group-version, built-in first. The caller holds c.mu.
func (c *Catalog) groupVersion(gv schema.GroupVersion) *groupVersionData {
	if gvd := c.builtin.gvs[gv]; gvd != nil {
		return gvd
	}
	return c.crd.gvs[gv]
}

// GroupVersions lists every group-version the catalog knows, served or not, in discovery
// order: groups as the aggregated discovery lists them, then CRD groups in the order they were
// added; versions by Kubernetes version priority (v1 before v1beta1 before v1alpha1).
func (c *Catalog) GroupVersions() []GroupVersionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []GroupVersionInfo
	for _, gvd := range c.orderedGroupVersions(c.discoveryGroupOrder()) {
		out = append(out, GroupVersionInfo{
			GroupVersion:    gvd.gv,
			Served:          c.served(gvd) && !c.crdVersionNotServed(gvd),
			ServedByDefault: gvd.servedByDefault || (gvd.custom && !c.crdVersionNotServed(gvd)),
			Custom:          gvd.custom,
		})
	}
	return out
}

// crdVersionNotServed reports whether every resource of a CRD group-version has served: false.
func (c *Catalog) crdVersionNotServed(gvd *groupVersionData) bool {
	if !gvd.custom {
		return false
	}
	for _, r := range gvd.resources {
		if !r.notServed {
			return false
		}
	}
	return true
}

// discoveryGroupOrder is the release's discovery order followed by CRD groups. The caller
// holds c.mu.
func (c *Catalog) discoveryGroupOrder() []string {
	return append(append([]string(nil), c.rel.discoveryOrder...), c.crd.groups...)
}

// orderedGroupVersions returns all group-versions, groups in the given order (unknown groups
// last, by name), versions by Kubernetes version priority. The caller holds c.mu.
func (c *Catalog) orderedGroupVersions(groupOrder []string) []*groupVersionData {
	rank := map[string]int{}
	for i, g := range groupOrder {
		if _, ok := rank[g]; !ok {
			rank[g] = i
		}
	}
	var all []*groupVersionData
	seen := map[schema.GroupVersion]bool{}
	for gv, gvd := range c.builtin.gvs {
		seen[gv] = true
		all = append(all, gvd)
	}
	for gv, gvd := range c.crd.gvs {
		if !seen[gv] {
			all = append(all, gvd)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		gi, gj := all[i].gv.Group, all[j].gv.Group
		if gi != gj {
			ri, oki := rank[gi]
			rj, okj := rank[gj]
			switch {
			case oki && okj:
				return ri < rj
			case oki != okj:
				return oki
			default:
				return gi < gj
			}
		}
		return version.CompareKubeAwareVersionStrings(all[i].gv.Version, all[j].gv.Version) > 0
	})
	return all
}

// Resources lists the plural names of the top-level resources of a group-version, sorted,
// whether or not it is served; nil for an unknown group-version.
func (c *Catalog) Resources(gv schema.GroupVersion) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	gvd := c.groupVersion(gv)
	if gvd == nil {
		return nil
	}
	out := make([]string, 0, len(gvd.resources))
	for name := range gvd.resources {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Resource describes a resource, or one of its subresources when subresource is not empty,
// of any group-version the catalog knows, served or not (see ResourceInfo.Served). It reports
// false for an unknown resource or subresource.
func (c *Catalog) Resource(gvr schema.GroupVersionResource, subresource string) (ResourceInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	gvd := c.groupVersion(gvr.GroupVersion())
	if gvd == nil {
		return ResourceInfo{}, false
	}
	res := gvd.resources[gvr.Resource]
	if res == nil {
		return ResourceInfo{}, false
	}
	info := ResourceInfo{
		Kind:            res.kind,
		Namespaced:      res.namespaced,
		Verbs:           append([]string(nil), res.verbs...),
		Served:          c.served(gvd) && !res.notServed,
		ServedByDefault: (gvd.servedByDefault || gvd.custom) && !res.notServed,
		CRD:             res.crd,
	}
	if subresource == "" {
		for name := range res.subresources {
			info.Subresources = append(info.Subresources, name)
		}
		sort.Strings(info.Subresources)
		return info, true
	}
	sub := res.subresources[subresource]
	if sub == nil {
		return ResourceInfo{}, false
	}
	info.Kind = sub.kind
	info.Verbs = append([]string(nil), sub.verbs...)
	return info, true
}

// EquivalentResources returns the resources the apiserver treats as equivalent to gvr (with
// the same subresource) for matchPolicy: Equivalent, gvr itself included when served, in the
// order of the apiserver's EquivalentResourceRegistry, which is the order the admission
// matcher tries them in. Only served group-versions are included, except that, as in the
// apiserver, a CRD's equivalents are all its spec.versions, served or not. Built-in resources
// are equivalent when they share a storage prefix: every version of a group-resource, and
// core/v1 events with events.k8s.io/v1 events. It returns nil when nothing is equivalent.
func (c *Catalog) EquivalentResources(gvr schema.GroupVersionResource, subresource string) []schema.GroupVersionResource {
	c.mu.RLock()
	defer c.mu.RUnlock()
	gr := gvr.GroupResource()
	if crd := c.crd.byGroupResource[gr]; crd != nil {
		var out []schema.GroupVersionResource
		for _, v := range crd.versions {
			if subresource == "" || crd.subresources[v][subresource] {
				out = append(out, gr.WithVersion(v))
			}
		}
		return out
	}
	key := c.rel.equivalenceKey(gr)
	var out []schema.GroupVersionResource
	for _, gvd := range c.orderedGroupVersions(c.rel.installOrder) {
		if gvd.custom || !c.served(gvd) {
			continue
		}
		names := make([]string, 0, len(gvd.resources))
		for name := range gvd.resources {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			res := gvd.resources[name]
			if res.equivalenceKey != key {
				continue
			}
			if subresource != "" && res.subresources[subresource] == nil {
				continue
			}
			out = append(out, res.gvr)
		}
	}
	return out
}

// KindFor returns the kind of the object a request for gvr and subresource carries, as the
// apiserver's EquivalentResourceRegistry reports it: only for served group-versions (and, for
// CRDs, every spec.versions entry), and the zero GroupVersionKind otherwise.
func (c *Catalog) KindFor(gvr schema.GroupVersionResource, subresource string) schema.GroupVersionKind {
	c.mu.RLock()
	crd := c.crd.byGroupResource[gvr.GroupResource()]
	c.mu.RUnlock()
	info, ok := c.Resource(gvr, subresource)
	if !ok {
		return schema.GroupVersionKind{}
	}
	if !info.Served && crd == nil {
		return schema.GroupVersionKind{}
	}
	return info.Kind
}

func gvString(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "core/" + gv.Version
	}
	return gv.String()
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
