package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// A log whose audit policy records CustomResourceDefinitions at Metadata level shows that a
// CRD was written (its name: PLURAL.GROUP) but not what it serves. The resources it serves
// still show in the log: a successful request for one gives its group, version, resource and
// scope, and its request or response object gives its kind. The replay learns the kind from
// that first use, as served by a CRD without a schema it knows: enough to map a paramKind and
// to hold the objects; a refused write of the kind, whose object the server pruned and
// defaulted by the schema, is not decided. A paramKind the replay does not map is not found
// for sure only when no CRD could serve it: a built-in group, or a log that begins with the
// cluster and holds every CRD write of the group in full.

// Opaque notes a CRD write whose object the log does not hold, at where and the time at: a
// create, or an update of the status subresource, which the apiserver's own controllers write
// to accept its names and establish it moments after its create.
func (c *Catalog) Opaque(name, where string, at time.Time, create, status bool) {
	if c.opaque == nil {
		c.opaque, c.opaqueCreated = map[string]string{}, map[string]opaqueCreate{}
	}
	group := ResourceOf(name).Group
	if _, ok := c.opaque[group]; !ok {
		c.opaque[group] = where
	}
	if create {
		delete(c.pending, name)
	}
	switch oc, ok := c.opaqueCreated[name]; {
	case create:
		c.opaqueCreated[name] = opaqueCreate{where: where, at: at, established: at}
	case ok && status && !at.IsZero() && at.Sub(oc.at) < establishWithin:
		oc.established = at
		c.opaqueCreated[name] = oc
	}
}

// opaqueCreate is the create of a CRD the log holds without its object: where and when, and
// when its last status write soon after shows it established.
type opaqueCreate struct {
	where           string
	at, established time.Time
}

// establishWithin is how soon after a CRD's create the status writes of kube-apiserver's
// naming and establishing controllers come: they accept its names and establish it at once,
// and a status write later than that is another change.
const establishWithin = 10 * time.Second

// servedSince is when the CRD of the name, which the replay learns from the use of its
// resource at the time at, began to be served as the log shows it: established by the status
// writes that followed its create; where its create is not in the log, it was served before
// the log shows it, and is taken as found by kube-apiserver's policy source
// (ParamResolveDelay before the use).
func (c *Catalog) servedSince(name string, at time.Time) (time.Time, string) {
	if oc, ok := c.opaqueCreated[name]; ok && !oc.established.IsZero() && !oc.established.After(at) {
		return oc.established, "created at " + oc.where
	}
	if at.IsZero() {
		return at, ""
	}
	return at.Add(-ParamResolveDelay - time.Second), "created before the log shows it"
}

// Use is a successful request for a resource the catalog does not serve, which gives its kind.
type Use struct {
	Resource   schema.GroupVersionResource
	Kind       string
	Namespaced bool
	// Verb is the request's verb, File and Line its place in the log, At when it completed.
	Verb string
	File string
	Line int
	At   time.Time
	// Ahead, when set, is where the request is that the replay read the log ahead for, to
	// this use: one that came before it.
	Ahead string
}

// Learn learns the kind of a resource the catalog does not serve from its use, as served by a
// CRD without a schema it knows, and says whether it did: not a kind of a CRD the log removed,
// whatever the log says of its use.
func (c *Catalog) Learn(ctx context.Context, u Use) (bool, error) {
	name := nameOf(u.Resource)
	if c.schema == nil || c.removed[name] {
		return false, nil
	}
	if vs := c.schema.EquivalentResources(u.Resource, ""); len(vs) > 0 && !slices.Contains(vs, u.Resource) {
		// Another version of a CRD the catalog serves: the CRD serves this one too, converted
		// in a way the log does not show (random parity seed c:511: a v1beta1 create of a CRD
		// learned in v1, which a policy of v1 matched as equivalent). Learning it would replace
		// the versions known; unlearned, its requests are unknown-resource, and the policies of
		// the other versions still match them.
		return false, nil
	}
	scope := apiextensionsv1.ClusterScoped
	if u.Namespaced {
		scope = apiextensionsv1.NamespaceScoped
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: u.Resource.Group, Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: u.Resource.Resource, Singular: strings.ToLower(u.Kind), Kind: u.Kind, ListKind: u.Kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: u.Resource.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue},
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
			},
		},
	}
	schemaKnown := false
	if spec := c.pending[name]; spec != nil && spec.Group == u.Resource.Group && spec.Names.Plural == u.Resource.Resource && spec.Names.Kind == u.Kind {
		// The log created it with its object, and holds no status write that served it: its
		// use shows it was served, with the spec it was created with.
		crd.Spec, schemaKnown = *spec.DeepCopy(), true
	}
	crd.Status.AcceptedNames = crd.Spec.Names
	// Evaluations read what was learned (Learned): it changes within the barrier.
	c.owner.Quiesce()
	defer c.owner.Resume(ctx)
	if c.learned == nil {
		c.learned = map[string]bool{}
	}
	c.learned[name] = !schemaKnown
	at, since := c.servedSince(name, u.At)
	err := c.Follow(ctx, crd, u.File, u.Line, at)
	if since != "" {
		since = " (" + since + ")"
	}
	if u.Ahead != "" {
		since += ", read ahead for the request at " + u.Ahead
	}
	if schemaKnown {
		c.record(u.File, u.Line, name, fmt.Sprintf("served as created, its establishing not in the log, as a %s of it shows%s", u.Verb, since))
		return true, err
	}
	c.record(u.File, u.Line, name, fmt.Sprintf("learned from a %s of it: %s %s in %s, its schema not known%s", u.Verb, u.Kind, scope, u.Resource.Version, since))
	return true, err
}

// CRDWrittenIn says whether the log holds a write, without its object, of a CRD of the group
// (Opaque): the group's resources are a CRD's, not an aggregated API's (whose requests
// kube-apiserver proxies without admission).
func (c *Catalog) CRDWrittenIn(group string) bool {
	_, ok := c.opaque[group]
	return ok
}

// Learned says whether the replay learned the resource's kind from its use, without its
// schema.
func (c *Catalog) Learned(gvr schema.GroupVersionResource) bool { return c.learned[nameOf(gvr)] }

// Unlearned are the CRDs that may serve a paramKind of the policies the catalog does not map
// (kinds): those of its group the log created without their objects, whose kinds the replay
// has not learned, each with the time of its create (see the replay's learnAhead). Only a CRD
// whose establishing status writes the log shows is one: a log that does not record them
// would not show the status writes that accept its names later either (after a conflict).
func (c *Catalog) Unlearned(policies []string) (crds map[string]time.Time, kinds []schema.GroupVersionKind) {
	if len(c.opaqueCreated) == 0 {
		return nil, nil
	}
	for _, p := range policies {
		k := c.policyParam[p]
		if k == nil || k.mapping != nil || k.resolving.on || slices.Contains(kinds, k.gvk) {
			continue
		}
		for name, oc := range c.opaqueCreated {
			if ResourceOf(name).Group != k.gvk.Group || c.learned[name] || c.removed[name] || oc.at.IsZero() || !oc.established.After(oc.at) {
				continue
			}
			if crds == nil {
				crds = map[string]time.Time{}
			}
			crds[name] = oc.at
			if !slices.Contains(kinds, k.gvk) {
				kinds = append(kinds, k.gvk)
			}
		}
	}
	return crds, kinds
}

// CreatedOpaque says whether the log created a CRD without its object.
func (c *Catalog) CreatedOpaque() bool { return len(c.opaqueCreated) > 0 }

// EstablishWithin is how soon after a CRD's create the status writes that establish it come
// (see Opaque): a later one is another change.
const EstablishWithin = establishWithin
