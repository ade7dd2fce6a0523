package replay

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/catalog"
)

// What the log's requests do to the catalog (internal/catalog): a write of a CRD, the use of a
// resource whose kind the catalog does not serve, and what of a request's paramKinds is
// unsettled when it comes.

// CRDChange is a change of the API a replay followed: a CustomResourceDefinition of the
// snapshot or the log served, changed or removed.
type CRDChange = catalog.Change

// SchemaRefreshDelay bounds how long after a CRD's change kube-apiserver's
// MutatingAdmissionPolicy plugin may still lack the custom resource's new schema (see
// catalog.SchemaRefreshDelay).
const SchemaRefreshDelay = catalog.SchemaRefreshDelay

// ParamResolveDelay is how long after a CRD is Established a policy whose paramKind it serves
// may still fail with "failed to find resource referenced by paramKind" (see
// catalog.ParamResolveDelay).
const ParamResolveDelay = catalog.ParamResolveDelay

// catalogOwner is the Replayer as the owner of its catalog: the barrier of a change of the API
// (epoch.go), and the State, which loses a removed CRD's objects.
type catalogOwner struct{ r *Replayer }

func (o catalogOwner) Quiesce()                        { o.r.quiesce() }
func (o catalogOwner) Removed(gr schema.GroupResource) { o.r.state.Clear(gr) }
func (o catalogOwner) Resume(ctx context.Context)      { o.r.resume(ctx) }
func (o catalogOwner) Changed(ctx context.Context) error {
	o.r.newEpoch()
	if o.r.evals != nil {
		if err := o.r.buildEvaluators(); err != nil {
			return err
		}
	}
	o.r.resume(ctx)
	return nil
}

// learnCRD follows a successful write of a CRD at the line of d.
func (r *Replayer) learnCRD(ctx context.Context, d decoded, ev *Event, t target) error {
	cat := r.cat.c
	if cat.Schema() == nil {
		return nil
	}
	src := lineRef{d.file, d.num}.String()
	at := auditlog.ParseTime(ev.StageTimestamp)
	switch ev.Verb {
	case "create", "update", "patch", "apply":
		if t.op == admission.Create && t.sub == "" && t.name != "" {
			// No CRD of the name existed, so no object of its resource: the log holds all of
			// them from now on.
			gr := catalog.ResourceOf(t.name)
			r.state.Clear(gr)
			r.state.MarkComplete(gr, "its CustomResourceDefinition was created at "+src)
		}
		crd := catalog.DecodeCRD(ev.ResponseObject)
		if crd == nil {
			// The log does not show what the apiserver serves now.
			if t.name != "" {
				cat.Opaque(t.name, src, at, t.op == admission.Create && t.sub == "", t.sub == "status")
			}
			return nil
		}
		return cat.Follow(ctx, crd, d.file, d.num, at)
	case "delete":
		return cat.Remove(ctx, t.name, d.file, d.num, at, "deleted")
	case "deletecollection":
		var items []any
		if resp := auditlog.DecodeAnyObject(ev.ResponseObject); resp != nil {
			items, _ = resp.Object["items"].([]any)
		}
		if items == nil {
			return cat.RemoveAll(ctx, d.file, d.num, at, "deleted by a deletecollection without a recorded result")
		}
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				if err := cat.Remove(ctx, (&unstructured.Unstructured{Object: m}).GetName(), d.file, d.num, at, "deleted"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// learnFromUse learns the kind of a resource the catalog does not serve from a successful
// request for it (see catalog.Catalog.Learn), and returns the request's target as the catalog
// now resolves it.
func (r *Replayer) learnFromUse(ctx context.Context, d decoded, ev *Event, t target) target {
	if r.cat.c.Schema() == nil || !t.reqKind.Empty() || t.sub != "" || t.gvr.Group == "" || kubescheme.Scheme.IsGroupRegistered(t.gvr.Group) {
		return t
	}
	if code := ev.Code(); code < 200 || code >= 300 || isDryRun(ev) || t.op == admission.Connect {
		return t
	}
	var kind, apiVersion string
	for _, raw := range [][]byte{ev.ResponseObject, ev.RequestObject} {
		if h, err := auditlog.DecodeHeader(raw); err == nil && h.GetKind() != "" && h.GetKind() != "Status" && !strings.HasSuffix(h.GetKind(), "List") {
			kind, apiVersion = h.GetKind(), h.GetAPIVersion()
			break
		}
	}
	if kind == "" || apiVersion != t.gvr.GroupVersion().String() {
		return t
	}
	learned, err := r.cat.c.Learn(ctx, catalog.Use{Resource: t.gvr, Kind: kind, Namespaced: t.namespace != "",
		Verb: ev.Verb, File: d.file, Line: d.num, At: auditlog.ParseTime(ev.StageTimestamp)})
	if err != nil && r.output.sinkErr == nil {
		r.output.sinkErr = err
	}
	if !learned {
		return t
	}
	nt, _ := r.resolve(ev)
	return nt
}

// schemaRefreshing says why the MutatingAdmissionPolicy plugin may not have had the schema of
// the resource's CRD when a request came at received, or "" (see
// catalog.Catalog.SchemaRefreshing): only a replay of mutating policies asks.
func (r *Replayer) schemaRefreshing(gvr schema.GroupVersionResource, received time.Time) string {
	if len(r.set.mutatingPolicies) == 0 {
		return ""
	}
	return r.cat.c.SchemaRefreshing(gvr, received)
}

// unsettledParams is what a request's decision may depend on of the paramKinds of its
// policies that are unsettled when the apiserver received it (catalog.Unsettled): resolving
// is the reason of the one kind the policy source may not have found yet, to decide the
// request both ways; unknown the param resources whose objects are not known, as reads of the
// View that miss; indeterminate is set when the replay cannot decide the request both ways.
func (r *Replayer) unsettledParams(policies []string, ev *Event) (resolving undecided, unknown map[schema.GroupResource]string, indeterminate undecided) {
	u := r.cat.c.UnsettledFor(policies, ev.Received, r.state.AllSince != "")
	switch {
	case u.Missing != "":
		indeterminate = because(ReasonParamKindUnknown, u.Missing)
	case u.Resolving != "":
		resolving = because(ReasonParamKindPending, u.Resolving)
	case u.Pending != "":
		indeterminate = because(ReasonParamKindPending, u.Pending)
	}
	return resolving, u.Unknown, indeterminate
}
