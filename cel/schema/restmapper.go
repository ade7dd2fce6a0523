package schema

import (
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/restmapper"
)

// RESTMapper returns a RESTMapper over the served group-versions (see WithAllVersions), built
// the way clients build one from the apiserver's discovery (restmapper.NewDiscoveryRESTMapper):
// groups in discovery order, each group's versions by priority, plural and singular resource
// names, and CRD short names. The mapper follows the catalog: after AddCRD it knows the new
// resources.
func (c *Catalog) RESTMapper() meta.RESTMapper {
	return catalogMapper{c: c}
}

// APIGroupResources returns the catalog's served API as discovery would list it: one entry per
// group, in discovery order, with every version's resources and subresources ("pods/status").
func (c *Catalog) APIGroupResources() []*restmapper.APIGroupResources {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.apiGroupResources()
}

// apiGroupResources builds the discovery view. The caller holds c.mu.
func (c *Catalog) apiGroupResources() []*restmapper.APIGroupResources {
	var out []*restmapper.APIGroupResources
	byGroup := map[string]*restmapper.APIGroupResources{}
	for _, gvd := range c.orderedGroupVersions(c.discoveryGroupOrder()) {
		if !c.served(gvd) {
			continue
		}
		var resources []metav1.APIResource
		names := make([]string, 0, len(gvd.resources))
		for name := range gvd.resources {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			res := gvd.resources[name]
			if res.notServed {
				continue
			}
			resources = append(resources, metav1.APIResource{
				Name:         name,
				SingularName: res.singular,
				Namespaced:   res.namespaced,
				Kind:         res.kind.Kind,
				Verbs:        append(metav1.Verbs(nil), res.verbs...),
				ShortNames:   append([]string(nil), res.shortNames...),
				Categories:   append([]string(nil), res.categories...),
			})
			subs := make([]string, 0, len(res.subresources))
			for sub := range res.subresources {
				subs = append(subs, sub)
			}
			sort.Strings(subs)
			for _, sub := range subs {
				sd := res.subresources[sub]
				r := metav1.APIResource{
					Name:       name + "/" + sub,
					Namespaced: res.namespaced,
					Kind:       sd.kind.Kind,
					Verbs:      append(metav1.Verbs(nil), sd.verbs...),
				}
				if sd.kind.GroupVersion() != gvd.gv {
					r.Group, r.Version = sd.kind.Group, sd.kind.Version
				}
				resources = append(resources, r)
			}
		}
		if len(resources) == 0 {
			continue
		}
		g := byGroup[gvd.gv.Group]
		if g == nil {
			g = &restmapper.APIGroupResources{
				Group: metav1.APIGroup{
					Name:             gvd.gv.Group,
					PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: gvd.gv.String(), Version: gvd.gv.Version},
				},
				VersionedResources: map[string][]metav1.APIResource{},
			}
			byGroup[gvd.gv.Group] = g
			out = append(out, g)
		}
		g.Group.Versions = append(g.Group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gvd.gv.String(), Version: gvd.gv.Version})
		g.VersionedResources[gvd.gv.Version] = resources
	}
	return out
}

// currentMapper returns the mapper for the catalog's present state, building it if needed.
func (c *Catalog) currentMapper() meta.RESTMapper {
	c.mu.RLock()
	m := c.mapper
	c.mu.RUnlock()
	if m != nil {
		return m
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mapper == nil {
		c.mapper = &cachedMapper{RESTMapper: restmapper.NewDiscoveryRESTMapper(c.apiGroupResources()), mappings: map[mappingKey]mappingResult{}}
	}
	return c.mapper
}

// cachedMapper is the mapper of one state of the catalog and the RESTMappings it gave: the
// discovery mapper builds each anew, errors included, and a replay asks for one at every write
// of a param or namespace.
type cachedMapper struct {
	meta.RESTMapper
	mu       sync.RWMutex
	mappings map[mappingKey]mappingResult
}

// maxCachedMappings bounds the mappings kept: kinds a log names that the catalog does not
// know are asked for too.
const maxCachedMappings = 4096

type mappingKey struct {
	gk       schema.GroupKind
	version  string
	versions int
}

type mappingResult struct {
	m   *meta.RESTMapping
	err error
}

// RESTMapping implements meta.RESTMapper: a copy of the mapping given before for the kind and
// version, or the error.
func (c *cachedMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) > 1 {
		return c.RESTMapper.RESTMapping(gk, versions...)
	}
	k := mappingKey{gk: gk, versions: len(versions)}
	if len(versions) == 1 {
		k.version = versions[0]
	}
	c.mu.RLock()
	r, ok := c.mappings[k]
	c.mu.RUnlock()
	if !ok {
		m, err := c.RESTMapper.RESTMapping(gk, versions...)
		r = mappingResult{m: m, err: err}
		c.mu.Lock()
		if len(c.mappings) < maxCachedMappings {
			c.mappings[k] = r
		}
		c.mu.Unlock()
	}
	if r.m == nil {
		return nil, r.err
	}
	m := *r.m
	return &m, r.err
}

// catalogMapper delegates to the mapper of the catalog's present state.
type catalogMapper struct {
	c *Catalog
}

var _ meta.RESTMapper = catalogMapper{}

// KindFor implements meta.RESTMapper.
func (m catalogMapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return m.c.currentMapper().KindFor(resource)
}

// KindsFor implements meta.RESTMapper.
func (m catalogMapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return m.c.currentMapper().KindsFor(resource)
}

// ResourceFor implements meta.RESTMapper.
func (m catalogMapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return m.c.currentMapper().ResourceFor(input)
}

// ResourcesFor implements meta.RESTMapper.
func (m catalogMapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return m.c.currentMapper().ResourcesFor(input)
}

// RESTMapping implements meta.RESTMapper.
func (m catalogMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return m.c.currentMapper().RESTMapping(gk, versions...)
}

// RESTMappings implements meta.RESTMapper.
func (m catalogMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return m.c.currentMapper().RESTMappings(gk, versions...)
}

// ResourceSingularizer implements meta.RESTMapper.
func (m catalogMapper) ResourceSingularizer(resource string) (string, error) {
	return m.c.currentMapper().ResourceSingularizer(resource)
}
