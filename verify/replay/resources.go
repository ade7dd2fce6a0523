package replay

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
)

// cachedResources remembers the answers of a verify.Resources: a replay asks the same few
// questions (the kind of pods, the resources equivalent to pods/status) for every line, and a
// catalog answers them by walking its group versions. Each epoch of a replay has its own: a
// cache is up to date as long as its epoch is current. It is safe for concurrent use.
type cachedResources struct {
	verify.Resources

	mu    sync.RWMutex
	kinds map[resourceKey]schema.GroupVersionKind
	equiv map[resourceKey][]schema.GroupVersionResource
}

type resourceKey struct {
	gvr schema.GroupVersionResource
	sub string
}

func newCachedResources(r verify.Resources) *cachedResources {
	if c, ok := r.(*cachedResources); ok {
		return c
	}
	return &cachedResources{Resources: r, kinds: map[resourceKey]schema.GroupVersionKind{}, equiv: map[resourceKey][]schema.GroupVersionResource{}}
}

// KindFor implements verify.Resources.
func (c *cachedResources) KindFor(gvr schema.GroupVersionResource, sub string) schema.GroupVersionKind {
	k := resourceKey{gvr, sub}
	c.mu.RLock()
	v, ok := c.kinds[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = c.Resources.KindFor(gvr, sub)
	c.mu.Lock()
	c.kinds[k] = v
	c.mu.Unlock()
	return v
}

// EquivalentResources implements verify.Resources; the caller gets its own slice.
func (c *cachedResources) EquivalentResources(gvr schema.GroupVersionResource, sub string) []schema.GroupVersionResource {
	k := resourceKey{gvr, sub}
	c.mu.RLock()
	v, ok := c.equiv[k]
	c.mu.RUnlock()
	if !ok {
		v = c.Resources.EquivalentResources(gvr, sub)
		c.mu.Lock()
		c.equiv[k] = v
		c.mu.Unlock()
	}
	if v == nil {
		return nil
	}
	return append([]schema.GroupVersionResource(nil), v...)
}

// Catalog implements verify.CatalogHolder: the catalog the resources read, if any.
func (c *cachedResources) Catalog() *vapcschema.Catalog { return verify.CatalogOf(c.Resources) }
