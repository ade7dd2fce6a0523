package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
)

// Owner is what the user of a Catalog does around a change of what the API serves.
type Owner interface {
	// Quiesce is the first half of the barrier: every evaluation that reads the catalog
	// finishes, and none runs until Changed or Resume. A second Quiesce before either does
	// nothing.
	Quiesce()
	// Removed says that the objects of the resource are gone (its CRD was removed); called
	// quiesced.
	Removed(gr schema.GroupResource)
	// Changed is the second half of the barrier after the catalog changed: the owner derives
	// what it derives from the catalog (its epoch, its evaluators) and evaluation goes on.
	Changed(ctx context.Context) error
	// Resume ends a barrier in which nothing changed; after Changed, or without Quiesce, it
	// does nothing.
	Resume(ctx context.Context)
}

// Catalog is the API a replay serves, as the snapshot and the log change it.
type Catalog struct {
	// schema is the replay's copy of the catalog it was given (nil when its resources are not
	// a catalog, and then no CRD is followed); resources is what requests are resolved with.
	schema    *vapcschema.Catalog
	resources verify.Resources
	owner     Owner
	// crds are the CRDs the replay serves, changes what it followed, lastChange when the log
	// last changed a CRD (see SchemaRefreshing), removed the CRDs the snapshot or the log
	// removed.
	crds       map[string]*servedCRD
	changes    []Change
	lastChange time.Time
	removed    map[string]bool
	// pending are the specs of the CRDs the log created that are not served yet (their
	// names not accepted).
	pending map[string]*apiextensionsv1.CustomResourceDefinitionSpec
	// obscured are the served CRDs whose spec a write the log holds without its result
	// changed, by name, with where (see Obscure).
	obscured map[string]string
	// learned are the CRDs the replay learned from the use of their resources, opaque the
	// groups of CRD writes the log holds without their object, and where, opaqueCreated the
	// creates among them, by name (see learn.go).
	learned       map[string]bool
	opaque        map[string]string
	opaqueCreated map[string]opaqueCreate
	// strategies holds the registry strategies of custom resources built so far, by CRD (the
	// catalog's, never changed once added) and version (see Strategies). Evaluations share it.
	strategies sync.Map // strategyKey -> *Strategies
	// paramKinds are the paramKinds of the bound policies, by kind and by policy (see
	// paramkinds.go); nil until InitParamKinds.
	paramKinds  map[schema.GroupVersionKind]*paramKind
	policyParam map[string]*paramKind
}

// New returns the catalog of the resources: a vapcschema.Catalog is copied, and follows the
// CRDs of the snapshot and the log; other resources serve what they serve.
func New(resources verify.Resources, owner Owner) *Catalog {
	c := &Catalog{resources: resources, owner: owner, crds: map[string]*servedCRD{}}
	if cat, ok := resources.(*vapcschema.Catalog); ok {
		c.schema = cat.Clone()
		c.resources = c.schema
	}
	return c
}

// Resources is what requests are resolved with: the catalog's copy when it follows CRDs.
func (c *Catalog) Resources() verify.Resources { return c.resources }

// Schema is the catalog of built-in kinds and CRDs the replay serves, or nil when its
// resources are not a catalog.
func (c *Catalog) Schema() *vapcschema.Catalog { return c.schema }

// Changes are the changes of the API the replay followed, in order.
func (c *Catalog) Changes() []Change { return c.changes }

func (c *Catalog) record(file string, line int, name, change string) {
	c.changes = append(c.changes, Change{File: file, Line: line, Name: name, Change: change})
}

// Seed follows a CRD of the snapshot at where: served as the apiserver serves it when the
// replay begins.
func (c *Catalog) Seed(u *unstructured.Unstructured, where string) error {
	if c.schema == nil {
		return nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return fmt.Errorf("snapshot %s: CustomResourceDefinition %s: %v", where, u.GetName(), err)
	}
	return c.Follow(context.Background(), crd, where, 0, time.Time{})
}

// Follow makes the catalog serve the CRD as the apiserver does, after a write of it the log
// shows at file:line and the time at, or from the snapshot (line 0).
func (c *Catalog) Follow(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, file string, line int, at time.Time) error {
	if c.schema == nil {
		return nil
	}
	delete(c.obscured, crd.Name) // Obscure sets it again after following a CRD without schemas
	snapshot := line == 0
	if crd.DeletionTimestamp != nil || !crdServed(crd, snapshot) {
		err := c.Remove(ctx, crd.Name, file, line, at, "no longer served")
		if crd.DeletionTimestamp == nil {
			// Created, its names not accepted yet: the spec the status writes that serve it
			// keep.
			if c.pending == nil {
				c.pending = map[string]*apiextensionsv1.CustomResourceDefinitionSpec{}
			}
			c.pending[crd.Name] = crd.Spec.DeepCopy()
			delete(c.removed, crd.Name)
		}
		return err
	}
	delete(c.pending, crd.Name)
	names := crd.Spec.Names
	if acc := crd.Status.AcceptedNames; acc.Plural != "" && acc.Kind != "" {
		names = acc
	}
	established := crdCondition(crd, apiextensionsv1.Established) || (snapshot && handWritten(crd))
	delete(c.removed, crd.Name)
	cur := c.crds[crd.Name]
	if cur == nil || !equality.Semantic.DeepEqual(cur.spec, crd.Spec) || !equality.Semantic.DeepEqual(cur.names, names) {
		c.owner.Quiesce()
		if err := c.schema.SetCRD(crd); err != nil {
			c.record(file, line, crd.Name, "not served by the replay: "+err.Error())
			c.owner.Resume(ctx)
			return nil
		}
		verb := "served"
		if cur != nil {
			verb = "changed"
		}
		var versions []string
		for _, v := range crd.Spec.Versions {
			if v.Served {
				versions = append(versions, v.Name)
			}
		}
		c.record(file, line, crd.Name, fmt.Sprintf("%s: %s %s in %s", verb, names.Kind, crd.Spec.Scope, strings.Join(versions, ", ")))
		next := &servedCRD{spec: *crd.Spec.DeepCopy(), names: *names.DeepCopy(), established: established && cur != nil && cur.established}
		next.followStorage(cur, Where(file, line), crd.ResourceVersion)
		c.crds[crd.Name] = next
		if !snapshot {
			c.crds[crd.Name].changedAt = at
			c.lastChange = at
			if cur != nil && c.paramKinds != nil {
				c.respecified(crd.Name, Where(file, line), at)
			}
		}
		if err := c.changed(ctx, Where(file, line), at); err != nil {
			return err
		}
		cur = c.crds[crd.Name]
	}
	if established && !cur.established {
		cur.established = true
		c.established(crd.Name, establishedAt(crd, at))
	}
	return nil
}

// Served is the CRD of the name as the catalog serves it: its spec, the names it accepted and
// whether it is Established, or as the log created it, not served yet (no status); nil when
// it knows none of the name or does not know its schema (Obscure).
func (c *Catalog) Served(name string) *apiextensionsv1.CustomResourceDefinition {
	cur := c.crds[name]
	if cur == nil && c.pending[name] != nil {
		crd := &apiextensionsv1.CustomResourceDefinition{Spec: *c.pending[name].DeepCopy()}
		crd.Name = name
		return crd
	}
	if cur == nil || c.obscured[name] != "" {
		return nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: *cur.spec.DeepCopy()}
	crd.Name = name
	crd.Status.AcceptedNames = *cur.names.DeepCopy()
	if cur.established {
		crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	}
	return crd
}

// Obscure follows a write of the spec of the CRD of the name, which the catalog serves, whose
// result the log does not show (a CRD logged at level Metadata) at file:line and the time at:
// the CRD is still served, but its schema may have changed, and is not known from then on
// (until a write the log shows the result of).
func (c *Catalog) Obscure(ctx context.Context, name string, file string, line int, at time.Time) error {
	cur := c.crds[name]
	if c.schema == nil || cur == nil {
		return nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: *cur.spec.DeepCopy()}
	crd.Name = name
	crd.Status.AcceptedNames = *cur.names.DeepCopy()
	schemaless := false
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Schema != nil {
			crd.Spec.Versions[i].Schema, schemaless = nil, true
		}
	}
	if !schemaless {
		return nil
	}
	if cur.established {
		crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	}
	if err := c.Follow(ctx, crd, file, line, at); err != nil {
		return err
	}
	if c.obscured == nil {
		c.obscured = map[string]string{}
	}
	c.obscured[name] = Where(file, line)
	return nil
}

// Obscured says where a write the log holds without its result changed the spec of the CRD
// that serves gvr, whose schema the catalog does not know since (Obscure), or "".
func (c *Catalog) Obscured(gvr schema.GroupVersionResource) string {
	return c.obscured[nameOf(gvr)]
}

// Remove stops serving the CRD of the name, if the catalog serves it, at file:line and the
// time at, for the reason why: its objects are gone, as the apiserver deletes them.
func (c *Catalog) Remove(ctx context.Context, name string, file string, line int, at time.Time, why string) error {
	delete(c.crds, name)
	delete(c.pending, name)
	delete(c.obscured, name)
	if c.removed == nil {
		c.removed = map[string]bool{}
	}
	c.removed[name] = true
	if name == "" || c.schema == nil || !slices.Contains(c.schema.CRDs(), name) {
		return nil
	}
	c.owner.Quiesce()
	c.schema.RemoveCRD(name)
	c.record(file, line, name, "removed: "+why)
	c.owner.Removed(ResourceOf(name))
	return c.changed(ctx, Where(file, line), at)
}

// RemoveAll removes every CRD the catalog serves (a deletecollection of them the log holds
// without its result), at file:line and the time at.
func (c *Catalog) RemoveAll(ctx context.Context, file string, line int, at time.Time, why string) error {
	if c.schema == nil {
		return nil
	}
	for _, name := range c.schema.CRDs() {
		if err := c.Remove(ctx, name, file, line, at, why); err != nil {
			return err
		}
	}
	return nil
}

// changed is the second half of the barrier of a change of the catalog the log made at src and
// the time at: the paramKinds follow the catalog, then the owner.
func (c *Catalog) changed(ctx context.Context, src string, at time.Time) error {
	c.owner.Quiesce()
	if c.paramKinds != nil {
		c.followParamKinds(src, at)
	}
	return c.owner.Changed(ctx)
}

// SchemaRefreshDelay bounds how long after a CRD's change kube-apiserver's
// MutatingAdmissionPolicy plugin may still lack the custom resource's new schema: its type
// converter manager reads the OpenAPI v3 paths every 5 seconds (and refuses the kind with 503
// until it has a schema), after the apiextensions OpenAPI controller published it; with a
// margin for a loaded server.
const SchemaRefreshDelay = 15 * time.Second

// SchemaRefreshing says why the MutatingAdmissionPolicy plugin may not have had the schema of
// the resource's CRD when a request came at received, or "": the log changed the CRD less
// than SchemaRefreshDelay before; or why the replay does not know that schema (Obscured).
func (c *Catalog) SchemaRefreshing(gvr schema.GroupVersionResource, received time.Time) string {
	name := nameOf(gvr)
	if where := c.obscured[name]; where != "" {
		return fmt.Sprintf("the schema of CustomResourceDefinition %s is not known since its write at %s, which the log holds without its result", name, where)
	}
	if c.lastChange.IsZero() || !received.Before(c.lastChange.Add(SchemaRefreshDelay)) {
		return ""
	}
	crd := c.crds[name]
	if crd == nil || crd.changedAt.IsZero() || received.Before(crd.changedAt) || !received.Before(crd.changedAt.Add(SchemaRefreshDelay)) {
		return ""
	}
	return fmt.Sprintf("CustomResourceDefinition %s changed %s before the request: kube-apiserver's MutatingAdmissionPolicy plugin refreshes custom resources' schemas every 5 seconds, and may have refused the request (503) or used the schema before", name, received.Sub(crd.changedAt).Round(time.Millisecond))
}
