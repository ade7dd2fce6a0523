package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// A replay learns the CustomResourceDefinitions the log and the snapshot hold as the apiserver
// serves them: the apiextensions-apiserver's crdHandler serves a CRD's resources once its
// NamesAccepted or Established condition is true, under status.acceptedNames, and they are
// gone once the CRD is deleted. The replay follows every successful write of a CRD whose result
// the log holds (create, update, patch, the status updates the apiserver makes itself), and
// takes a CRD as deleted as soon as its deletion begins: the apiserver then refuses creates of
// its resources and deletes them without the log showing it.

var (
	crdsGR  = schema.GroupResource{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"}
	crdsGVK = apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")
)

// servedCRD is a CRD the replay learned and serves.
type servedCRD struct {
	spec        apiextensionsv1.CustomResourceDefinitionSpec
	names       apiextensionsv1.CustomResourceDefinitionNames
	established bool
	// changedAt is when the log shows its spec written (zero for the snapshot's).
	changedAt time.Time
}

// SchemaRefreshDelay bounds how long after a CRD's change kube-apiserver's
// MutatingAdmissionPolicy plugin may still lack the custom resource's new schema: its type
// converter manager reads the OpenAPI v3 paths every 5 seconds (and refuses the kind with 503
// until it has a schema), after the apiextensions OpenAPI controller published it; with a
// margin for a loaded server.
const SchemaRefreshDelay = 15 * time.Second

// schemaRefreshing says why the MutatingAdmissionPolicy plugin may not have had the schema of
// the resource's CRD when a request came at received, or "": the log changed the CRD less
// than SchemaRefreshDelay before.
func (r *Replayer) schemaRefreshing(gvr schema.GroupVersionResource, received time.Time) string {
	if len(r.set.mutatingPolicies) == 0 || r.cat.lastCRDChange.IsZero() || !received.Before(r.cat.lastCRDChange.Add(SchemaRefreshDelay)) {
		return ""
	}
	name := gvr.Resource + "." + gvr.Group // a CRD's name
	c := r.cat.crds[name]
	if c == nil || c.changedAt.IsZero() || received.Before(c.changedAt) || !received.Before(c.changedAt.Add(SchemaRefreshDelay)) {
		return ""
	}
	return fmt.Sprintf("CustomResourceDefinition %s changed %s before the request: kube-apiserver's MutatingAdmissionPolicy plugin refreshes custom resources' schemas every 5 seconds, and may have refused the request (503) or used the schema before", name, received.Sub(c.changedAt).Round(time.Millisecond))
}

// CRDChange is a change of the API a replay followed: a CustomResourceDefinition of the
// snapshot or the log served, changed or removed.
type CRDChange struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Name   string `json:"name"`
	Change string `json:"change"`
}

func (c CRDChange) String() string {
	where := c.File
	if c.Line > 0 {
		where = fmt.Sprintf("%s:%d", c.File, c.Line)
	}
	return fmt.Sprintf("%s: %s %s", where, c.Name, c.Change)
}

// crdServed mirrors the check of the crdHandler (k8s.io/apiextensions-apiserver/pkg/apiserver/
// customresource_handler.go ServeHTTP): a CRD's resources are served once its NamesAccepted or
// Established condition is true. A snapshot's CRD without any status (written by hand) is
// taken as established, as --crd takes its CRDs; the log's CRD has none when it is just
// created, and is not served yet.
func crdServed(crd *apiextensionsv1.CustomResourceDefinition, snapshot bool) bool {
	if snapshot && handWritten(crd) {
		return true
	}
	return crdCondition(crd, apiextensionsv1.NamesAccepted) || crdCondition(crd, apiextensionsv1.Established)
}

// handWritten says whether a CRD has no status the apiserver wrote.
func handWritten(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return len(crd.Status.Conditions) == 0 && crd.Status.AcceptedNames.Kind == ""
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// crdResource is the resource of the CRD of a name (plural.group, as the apiserver requires).
func crdResource(name string) schema.GroupResource {
	plural, group, _ := strings.Cut(name, ".")
	return schema.GroupResource{Group: group, Resource: plural}
}

// decodeCRD decodes a CRD of a response or a snapshot; nil for anything else.
func decodeCRD(raw []byte) *apiextensionsv1.CustomResourceDefinition {
	if !hasBody(raw) {
		return nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(raw, crd); err != nil || crd.Name == "" {
		return nil
	}
	if crd.Kind != "" && (crd.Kind != crdsGVK.Kind || crd.APIVersion != crdsGVK.GroupVersion().String()) {
		return nil
	}
	return crd
}

// learnCRD follows a successful write of a CRD at the line of d.
func (r *Replayer) learnCRD(ctx context.Context, d decoded, ev *Event, t target) error {
	if r.cat.catalog == nil {
		return nil
	}
	src := lineRef{d.file, d.num}.String()
	at := auditlog.ParseTime(ev.StageTimestamp)
	switch ev.Verb {
	case "create", "update", "patch", "apply":
		if t.op == admission.Create && t.sub == "" && t.name != "" {
			// No CRD of the name existed, so no object of its resource: the log holds all of
			// them from now on.
			gr := crdResource(t.name)
			r.state.Clear(gr)
			r.state.MarkComplete(gr, "its CustomResourceDefinition was created at "+src)
		}
		crd := decodeCRD(ev.ResponseObject)
		if crd == nil {
			// The log does not show what the apiserver serves now.
			if t.name != "" {
				r.opaqueCRD(t.name, src, at, t.op == admission.Create && t.sub == "", t.sub == "status")
			}
			return nil
		}
		return r.followCRD(ctx, crd, d.file, d.num, at)
	case "delete":
		return r.removeCRD(ctx, t.name, d.file, d.num, at, "deleted")
	case "deletecollection":
		var items []any
		if resp := auditlog.DecodeAnyObject(ev.ResponseObject); resp != nil {
			items, _ = resp.Object["items"].([]any)
		}
		if items == nil {
			for _, name := range r.cat.catalog.CRDs() {
				if err := r.removeCRD(ctx, name, d.file, d.num, at, "deleted by a deletecollection without a recorded result"); err != nil {
					return err
				}
			}
			return nil
		}
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				if err := r.removeCRD(ctx, (&unstructured.Unstructured{Object: m}).GetName(), d.file, d.num, at, "deleted"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// followCRD makes the catalog serve the CRD as the apiserver does, after a write of it (line > 0)
// or from the snapshot (line 0).
func (r *Replayer) followCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, file string, line int, at time.Time) error {
	snapshot := line == 0
	if crd.DeletionTimestamp != nil || !crdServed(crd, snapshot) {
		return r.removeCRD(ctx, crd.Name, file, line, at, "no longer served")
	}
	names := crd.Spec.Names
	if acc := crd.Status.AcceptedNames; acc.Plural != "" && acc.Kind != "" {
		names = acc
	}
	established := crdCondition(crd, apiextensionsv1.Established) || (snapshot && handWritten(crd))
	delete(r.cat.removedCRDs, crd.Name)
	cur := r.cat.crds[crd.Name]
	if cur == nil || !equality.Semantic.DeepEqual(cur.spec, crd.Spec) || !equality.Semantic.DeepEqual(cur.names, names) {
		r.quiesce()
		if err := r.cat.catalog.SetCRD(crd); err != nil {
			r.crdChange(file, line, crd.Name, "not served by the replay: "+err.Error())
			r.resume(ctx)
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
		r.crdChange(file, line, crd.Name, fmt.Sprintf("%s: %s %s in %s", verb, names.Kind, crd.Spec.Scope, strings.Join(versions, ", ")))
		r.cat.crds[crd.Name] = &servedCRD{spec: *crd.Spec.DeepCopy(), names: *names.DeepCopy(), established: established && cur != nil && cur.established}
		if !snapshot {
			r.cat.crds[crd.Name].changedAt = at
			r.cat.lastCRDChange = at
		}
		if err := r.changeCatalog(ctx, where(file, line), at); err != nil {
			return err
		}
		cur = r.cat.crds[crd.Name]
	}
	if established && !cur.established {
		cur.established = true
		r.established(crd.Name, establishedAt(crd, at))
	}
	return nil
}

// establishedAt is when the CRD became Established: its condition's lastTransitionTime, which
// has a precision of a second, or the time at which the log shows it, whichever is earlier.
func establishedAt(crd *apiextensionsv1.CustomResourceDefinition, at time.Time) time.Time {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			if t := c.LastTransitionTime.Add(time.Second); at.IsZero() || t.Before(at) {
				return t
			}
		}
	}
	return at
}

// removeCRD stops serving the CRD of the name, if the catalog serves it: its objects are gone
// from the State, as the apiserver deletes them.
func (r *Replayer) removeCRD(ctx context.Context, name string, file string, line int, at time.Time, why string) error {
	delete(r.cat.crds, name)
	if r.cat.removedCRDs == nil {
		r.cat.removedCRDs = map[string]bool{}
	}
	r.cat.removedCRDs[name] = true
	if name == "" || !slices.Contains(r.cat.catalog.CRDs(), name) {
		return nil
	}
	r.quiesce()
	r.cat.catalog.RemoveCRD(name)
	r.crdChange(file, line, name, "removed: "+why)
	r.state.Clear(crdResource(name))
	return r.changeCatalog(ctx, where(file, line), at)
}

func (r *Replayer) crdChange(file string, line int, name, change string) {
	r.cat.crdChanges = append(r.cat.crdChanges, CRDChange{File: file, Line: line, Name: name, Change: change})
}

func where(file string, line int) string {
	if line <= 0 {
		return file
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// seedCRD follows a CRD of the snapshot: served as the apiserver serves it when the replay
// begins.
func (r *Replayer) seedCRD(u *unstructured.Unstructured, where string) error {
	if r.cat.catalog == nil {
		return nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return fmt.Errorf("snapshot %s: CustomResourceDefinition %s: %v", where, u.GetName(), err)
	}
	return r.followCRD(context.Background(), crd, where, 0, time.Time{})
}
