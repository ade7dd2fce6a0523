package schema

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// groupVersionData is what the catalog knows of one group-version.
type groupVersionData struct {
	gv              schema.GroupVersion
	servedByDefault bool
	// resources by plural name.
	resources map[string]*resourceData
	// doc holds the schemas of a built-in group-version; nil for a CRD's.
	doc *document
	// custom is true for a group-version defined by CustomResourceDefinitions.
	custom bool
}

// resourceData is what the catalog knows of one top-level resource in one version.
type resourceData struct {
	gvr        schema.GroupVersionResource
	kind       schema.GroupVersionKind
	singular   string
	namespaced bool
	verbs      []string
	// subresources by name, e.g. "status", "scale", "eviction".
	subresources map[string]*subresourceData
	// shortNames and categories are known for CRDs only; the published documents lack them.
	shortNames []string
	categories []string
	// equivalenceKey groups the resources the apiserver treats as equivalent for matchPolicy
	// Equivalent (CRDs have their own, see crdInfo).
	equivalenceKey string
	// notServed is true for a CRD version with served: false.
	notServed bool
	// crd is the name of the CustomResourceDefinition that defines the resource, if any.
	crd string
}

// subresourceData is one subresource of a resource.
type subresourceData struct {
	kind  schema.GroupVersionKind
	verbs []string
}

// discoveryVerbs maps an operation's x-kubernetes-action to the discovery verb, as the
// apiserver's endpoint installer does (toDiscoveryKubeVerb).
var discoveryVerbs = map[string]string{
	"get":              "get",
	"list":             "list",
	"watch":            "watch",
	"watchlist":        "watch",
	"post":             "create",
	"put":              "update",
	"patch":            "patch",
	"delete":           "delete",
	"deletecollection": "deletecollection",
}

// connectVerbs maps the HTTP method of a connect operation to the discovery verb; HEAD and
// OPTIONS are not listed in discovery.
var connectVerbs = map[string]string{
	"get":    "get",
	"post":   "create",
	"put":    "update",
	"patch":  "patch",
	"delete": "delete",
}

// requestKindPriority ranks the actions whose kind is the kind of the object a request
// carries: writes first, then connect, then reads.
var requestKindPriority = map[string]int{
	"post": 0, "put": 0, "patch": 0, "connect": 1, "get": 2, "delete": 3, "list": 4, "deletecollection": 4, "watch": 5, "watchlist": 5,
}

var pathPrefix = regexp.MustCompile(`^/(?:api/(v1)|apis/([^/]+)/([^/]+))/(.*)$`)

// parsedPath is an API path split into its parts.
type parsedPath struct {
	gv          schema.GroupVersion
	namespaced  bool
	watch       bool
	resource    string
	named       bool
	subresource string
}

// parsePath splits a path such as /api/v1/namespaces/{namespace}/pods/{name}/eviction or
// /apis/apps/v1/watch/deployments. It reports false for paths that name no resource.
func parsePath(p string) (parsedPath, bool) {
	m := pathPrefix.FindStringSubmatch(p)
	if m == nil {
		return parsedPath{}, false
	}
	out := parsedPath{gv: schema.GroupVersion{Group: m[2], Version: m[1] + m[3]}}
	segs := strings.Split(strings.TrimSuffix(m[4], "/"), "/")
	if len(segs) > 0 && segs[0] == "watch" {
		out.watch = true
		segs = segs[1:]
	}
	if len(segs) >= 2 && segs[0] == "namespaces" && segs[1] == "{namespace}" {
		out.namespaced = true
		segs = segs[2:]
	}
	if len(segs) == 0 || segs[0] == "" || strings.HasPrefix(segs[0], "{") {
		return parsedPath{}, false
	}
	out.resource = segs[0]
	if len(segs) >= 2 {
		if segs[1] != "{name}" {
			return parsedPath{}, false
		}
		out.named = true
	}
	if len(segs) >= 3 {
		out.subresource = segs[2]
	}
	return out, true
}

// kindCandidate is a kind seen on an operation, ranked by requestKindPriority.
type kindCandidate struct {
	kind schema.GroupVersionKind
	rank int
	set  bool
}

func (c *kindCandidate) offer(action string, gvk *schema.GroupVersionKind) {
	if gvk == nil {
		return
	}
	rank, ok := requestKindPriority[action]
	if !ok {
		rank = 10
	}
	if !c.set || rank < c.rank || (rank == c.rank && gvk.String() < c.kind.String()) {
		*c = kindCandidate{kind: *gvk, rank: rank, set: true}
	}
}

// buildResources reads the resources of one built-in group-version from its document's paths.
func buildResources(doc *document, paths map[string]map[string]openapiOperation, r *release) (map[string]*resourceData, error) {
	type building struct {
		res        *resourceData
		kind       kindCandidate
		verbs      map[string]bool
		subKinds   map[string]*kindCandidate
		subVerbs   map[string]map[string]bool
		namespaced bool
	}
	byName := map[string]*building{}
	pathNames := make([]string, 0, len(paths))
	for p := range paths {
		pathNames = append(pathNames, p)
	}
	sort.Strings(pathNames)
	for _, p := range pathNames {
		pp, ok := parsePath(p)
		if !ok {
			continue
		}
		if pp.gv != doc.gv {
			return nil, fmt.Errorf("%s: path %s is not in %s", doc.file, p, doc.gv)
		}
		b := byName[pp.resource]
		if b == nil {
			b = &building{
				res:      &resourceData{gvr: doc.gv.WithResource(pp.resource)},
				verbs:    map[string]bool{},
				subKinds: map[string]*kindCandidate{},
				subVerbs: map[string]map[string]bool{},
			}
			byName[pp.resource] = b
		}
		if pp.namespaced {
			b.namespaced = true
		}
		methods := make([]string, 0, len(paths[p]))
		for m := range paths[p] {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, method := range methods {
			op := paths[p][method]
			verb := discoveryVerbs[op.Action]
			if op.Action == "connect" {
				verb = connectVerbs[strings.ToLower(method)]
			}
			if pp.subresource == "" {
				b.kind.offer(op.Action, op.GVK)
				if verb != "" {
					b.verbs[verb] = true
				}
				continue
			}
			if pp.watch {
				continue
			}
			if b.subKinds[pp.subresource] == nil {
				b.subKinds[pp.subresource] = &kindCandidate{}
				b.subVerbs[pp.subresource] = map[string]bool{}
			}
			b.subKinds[pp.subresource].offer(op.Action, op.GVK)
			if verb != "" {
				b.subVerbs[pp.subresource][verb] = true
			}
		}
	}

	out := map[string]*resourceData{}
	for name, b := range byName {
		res := b.res
		res.namespaced = b.namespaced
		if !b.kind.set {
			// Only subresource paths: not a resource of its own (none in the published
			// documents, but be safe).
			continue
		}
		res.kind = b.kind.kind
		res.singular = strings.ToLower(res.kind.Kind)
		res.verbs = sortedKeys(b.verbs)
		res.equivalenceKey = r.equivalenceKey(res.gvr.GroupResource())
		for sub, k := range b.subKinds {
			if !k.set {
				continue
			}
			if res.subresources == nil {
				res.subresources = map[string]*subresourceData{}
			}
			res.subresources[sub] = &subresourceData{kind: k.kind, verbs: sortedKeys(b.subVerbs[sub])}
		}
		out[name] = res
	}
	return out, nil
}

// equivalenceKey is the key the apiserver's EquivalentResourceRegistry files a built-in
// resource under: its etcd resource prefix, which ignores the group.
func (r *release) equivalenceKey(gr schema.GroupResource) string {
	if p, ok := r.resourcePrefixes[gr]; ok {
		return "builtin:" + p
	}
	return "builtin:" + strings.ToLower(gr.Resource)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
