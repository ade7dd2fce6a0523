package schema

import (
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Resolver returns the catalog's schema resolver: the OpenAPI schema of every kind of every
// published built-in group-version (served by default or not, as the apiserver's
// definitions-based resolver knows every compiled type), then of the served versions of the
// catalog's CRDs. Errors for unknown group-versions and kinds wrap
// resolver.ErrSchemaNotFound, as resolver.ClientDiscoveryResolver's do. Each built-in document
// is parsed on first use and cached, and so is each built-in kind's schema; the returned schemas
// are shared and must not be modified.
func (c *Catalog) Resolver() resolver.SchemaResolver {
	return catalogResolver{c: c}
}

// catalogResolver implements resolver.SchemaResolver over a Catalog.
type catalogResolver struct {
	c *Catalog
}

var _ resolver.SchemaResolver = catalogResolver{}

// ResolveSchema returns the schema of gvk with every $ref inlined by resolver.PopulateRefs.
// Built-in kinds are found in any published document, as the apiserver's definitions-based
// resolver finds every compiled type: policy/v1 Eviction, for one, is published only in the
// core document, where pods/eviction uses it.
func (r catalogResolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if loc, ok := r.c.builtin.kinds[gvk]; ok {
		// Resolved once and shared, as the documents' schemas are: a type check resolves its
		// kinds several times, and the checks of several policies at once.
		resolve, ok := r.c.builtin.resolved.Load(gvk)
		if !ok {
			resolve, _ = r.c.builtin.resolved.LoadOrStore(gvk, sync.OnceValues(func() (*spec.Schema, error) {
				return populateFrom(loc.doc, loc.name)
			}))
		}
		return resolve.(func() (*spec.Schema, error))()
	}
	gv := gvk.GroupVersion()
	comps := r.c.crdComponentsOf(gv)
	if comps == nil {
		if r.c.builtin.docs[gv] != nil {
			return nil, fmt.Errorf("cannot resolve group version kind %q: %w", gvk, resolver.ErrSchemaNotFound)
		}
		return nil, fmt.Errorf("cannot resolve group version %q: %w", gv, resolver.ErrSchemaNotFound)
	}
	ref, ok := comps.gvkRefs[gvk]
	if !ok {
		return nil, fmt.Errorf("cannot resolve group version kind %q: %w", gvk, resolver.ErrSchemaNotFound)
	}
	resolve, ok := comps.resolved.Load(gvk)
	if !ok {
		resolve, _ = comps.resolved.LoadOrStore(gvk, sync.OnceValues(func() (*spec.Schema, error) {
			return populate(comps.schemas, ref)
		}))
	}
	return resolve.(func() (*spec.Schema, error))()
}

// populate inlines the references of the named schema, as ClientDiscoveryResolver does.
func populate(schemas map[string]*spec.Schema, ref string) (*spec.Schema, error) {
	return resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
		s, ok := schemas[strings.TrimPrefix(ref, refPrefix)]
		return s, ok
	}, ref)
}

// populateFrom is populate over a document's schemas, parsing those it refers to only.
func populateFrom(doc *document, ref string) (*spec.Schema, error) {
	var parseErr error
	s, err := resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
		s, ok, err := doc.schema(strings.TrimPrefix(ref, refPrefix))
		if err != nil && parseErr == nil {
			parseErr = err
		}
		return s, ok
	}, ref)
	if parseErr != nil {
		return nil, parseErr
	}
	return s, err
}
