package replay

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/catalog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
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
	src := d.ref().String()
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
			crd = r.crdFromRequest(ev, t)
		}
		if crd == nil {
			crd = r.crdPatched(ev, t)
			if crd != nil && t.op == admission.Create {
				// Its create, as a create the log holds without its object is, too: the
				// status writes that serve it may not be in the log (Learn serves it from its
				// use, with this spec).
				cat.Opaque(t.name, src, at, true, false)
			}
		}
		if crd == nil {
			// The log does not show what the apiserver serves now.
			if t.name != "" {
				cat.Opaque(t.name, src, at, t.op == admission.Create && t.sub == "", t.sub == "status")
			}
			if t.name != "" && t.sub == "" && t.op == admission.Update && !isDryRun(ev) {
				// A write of its spec: the schema it serves from now on is not known.
				return cat.Obscure(ctx, t.name, d.file, d.num, at)
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

// crdFromRequest is the CRD a successful write whose result the log does not show stored, as
// its request shows it (level Request): a create's body, which the audit event holds as the
// handler decoded and defaulted it, without a status (the strategy clears it); an update's
// body with the status the catalog knows (the strategy keeps the stored one), and of an update
// of its status, the body's status with the spec the catalog knows (the strategy keeps the
// stored one). nil otherwise: a patch, whose result rests on an object the log does not show,
// or an update of a CRD whose spec the catalog does not know.
func (r *Replayer) crdFromRequest(ev *Event, t target) *apiextensionsv1.CustomResourceDefinition {
	if !levelLogsBody(ev.Level) || t.name == "" {
		return nil
	}
	crd := catalog.DecodeCRD(ev.RequestObject)
	if crd == nil || crd.Name != t.name {
		return nil
	}
	switch {
	case ev.Verb == "create" && t.sub == "":
		crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
		return crd
	case ev.Verb == "update" && (t.sub == "" || t.sub == "status"):
		cur := r.cat.c.Served(t.name)
		if cur == nil {
			return nil
		}
		if t.sub == "status" {
			crd.Spec = cur.Spec
		} else {
			crd.Status = cur.Status
		}
		return crd
	}
	return nil
}

// crdPatched is the CRD a successful patch of its spec at level Request stored: the patch
// applied to the CRD the catalog serves, with the status it kept. Only a JSON patch and a
// merge patch without a strategic merge patch's directives (kubectl apply's of a CRD, whose
// type it does not know; the spec's lists have no merge keys, so a strategic merge patch
// merges them alike); nil for a server-side apply's configuration (whose result rests on who
// owns the fields) or anything else.
func (r *Replayer) crdPatched(ev *Event, t target) *apiextensionsv1.CustomResourceDefinition {
	if ev.Verb != "patch" || t.sub != "" || !levelLogsBody(ev.Level) || len(bytes.TrimSpace(ev.RequestObject)) == 0 {
		return nil
	}
	cur := r.cat.c.Served(t.name)
	if cur == nil {
		return nil
	}
	cur.APIVersion, cur.Kind = catalog.CRDKind.GroupVersion().String(), catalog.CRDKind.Kind
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err != nil {
		return nil
	}
	// The replay's patcher: a JSON or merge patch applies, a server-side apply or a strategic
	// merge patch's directive (the CRD is not a kind it merges strategically) does not.
	out, _, err := applyPatch(&unstructured.Unstructured{Object: obj}, ev.RequestObject, ev.Query())
	if err != nil {
		return nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(out.Object, crd) != nil || crd.Name != t.name {
		return nil
	}
	crd.Status = cur.Status
	return crd
}

// learnFromUse learns the kind of a resource the catalog does not serve from a successful
// request for it (see catalog.Catalog.Learn), and returns the request's target as the catalog
// now resolves it.
func (r *Replayer) learnFromUse(ctx context.Context, d decoded, ev *Event, t target) target {
	if r.cat.c.Schema() == nil || !t.reqKind.Empty() || t.sub != "" || t.gvr.Group == "" || kubescheme.Scheme.IsGroupRegistered(t.gvr.Group) {
		return t
	}
	kind := kindOfUse(ev, t)
	if kind == "" {
		return t
	}
	if !r.learn(ctx, catalog.Use{Resource: t.gvr, Kind: kind, Namespaced: t.namespace != "",
		Verb: ev.Verb, File: d.file, Line: d.num, At: auditlog.ParseTime(ev.StageTimestamp)}) {
		return t
	}
	nt, _ := r.resolve(ev)
	return nt
}

// kindOfUse is the kind a successful write of a resource (t, not a subresource) shows in its
// response or request object, or "" when it shows none in the version requested.
func kindOfUse(ev *Event, t target) string {
	if code := ev.Code(); code < 200 || code >= 300 || isDryRun(ev) || t.op == admission.Connect {
		return ""
	}
	for _, raw := range [][]byte{ev.ResponseObject, ev.RequestObject} {
		if h, err := auditlog.DecodeHeader(raw); err == nil && h.GetKind() != "" && h.GetKind() != "Status" && !strings.HasSuffix(h.GetKind(), "List") {
			if h.GetAPIVersion() != t.gvr.GroupVersion().String() {
				return ""
			}
			return h.GetKind()
		}
	}
	return ""
}

// learn learns a kind from its use (catalog.Catalog.Learn), and says whether it did. What the
// log wrote of the resource before, which the replay did not follow, is not known
// (noteUnlearned).
func (r *Replayer) learn(ctx context.Context, u catalog.Use) bool {
	learned, err := r.cat.c.Learn(ctx, u)
	if err != nil && r.output.sinkErr == nil {
		r.output.sinkErr = err
	}
	if !learned {
		return false
	}
	gr := u.Resource.GroupResource()
	for k, src := range r.cat.unlearned[gr] {
		why := "written at " + src + " before the replay learned the kind of " + gr.String() + " from a later request, its CustomResourceDefinition not known"
		if k.Name == "" {
			r.state.ForgetAll(gr, k.Namespace, why)
		} else {
			r.state.Forget(gr, schema.GroupVersionKind{}, k.Namespace, k.Name, why)
		}
	}
	delete(r.cat.unlearned, gr)
	return true
}

// noteUnlearned notes a write the replay could not follow, of a resource whose kind the
// catalog does not know (not of a built-in group): if the replay learns the kind later, the
// objects it may have written are not known (learn). A write that does not name its object
// (a deletecollection) leaves none of the namespace known.
func (r *Replayer) noteUnlearned(d decoded, ev *Event, t target) {
	if !t.reqKind.Empty() || t.gvr.Group == "" || kubescheme.Scheme.IsGroupRegistered(t.gvr.Group) || t.op == admission.Connect || isDryRun(ev) {
		return
	}
	if code := ev.Code(); code >= 400 || (code > 0 && code < 200) {
		return
	}
	gr := t.gvr.GroupResource()
	if r.cat.unlearned == nil {
		r.cat.unlearned = map[schema.GroupResource]map[state.ObjectKey]string{}
	}
	m := r.cat.unlearned[gr]
	if m == nil {
		m = map[state.ObjectKey]string{}
		r.cat.unlearned[gr] = m
	}
	k := state.ObjectKey{Namespace: t.namespace, Name: t.name}
	if ev.Verb == "deletecollection" {
		k.Name = ""
	}
	if _, ok := m[k]; !ok {
		m[k] = d.ref().String()
	}
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
// Where an export lost when the request was received (GKE), Received is the earliest it may
// have been, a minute before it completed; the kinds settled had it been received moments
// before it completed (admissionMayFollow, as the informers' worlds take such a request) are
// taken as found, and early says what an earlier receipt would leave unsettled: the decision
// is then likely (see Replayer.receivedEarly).
func (r *Replayer) unsettledParams(policies []string, ev *Event) (resolving undecided, unknown map[schema.GroupResource]string, indeterminate undecided, early earlyReceipt) {
	allSince := r.state.AllSince != ""
	u := r.cat.c.UnsettledFor(policies, ev.Received, allSince)
	// (Not a long-running request, whose receipt has no bound: an exec completes as its
	// session ends.)
	if u.Missing == "" && (u.Resolving != "" || u.Pending != "") && !u.Until.IsZero() && ev.Loss.Lost.Has(auditlog.LostReceived) && !ev.Received().IsZero() {
		if done := auditlog.ParseTime(ev.StageTimestamp); !done.IsZero() && done.Sub(u.Until) > admissionMayFollow {
			likely := done.Add(-admissionMayFollow)
			if s := r.cat.c.UnsettledFor(policies, func() time.Time { return likely }, allSince); s.Missing == "" && s.Resolving == "" && s.Pending == "" && len(s.Unknown) == len(u.Unknown) {
				early = earlyReceipt{why: because(ReasonParamKindPending, u.Resolving+u.Pending), both: u.Resolving != "", until: u.Until, done: done}
				u = s
			}
		}
	}
	switch {
	case u.Missing != "":
		indeterminate = because(ReasonParamKindUnknown, u.Missing)
	case u.Resolving != "":
		resolving = because(ReasonParamKindPending, u.Resolving)
	case u.Pending != "":
		indeterminate = because(ReasonParamKindPending, u.Pending)
	}
	return resolving, u.Unknown, indeterminate, early
}

// paramRereads are the param resources of the policies whose CRD the log changed, as a View
// of the request ev reads them (catalog.Catalog.ParamRereads): each param read again through
// its CRD's schema as it is now, as kube-apiserver's param informer lists them again after the
// change; nil when there are none.
func (r *Replayer) paramRereads(policies []string, ev *Event) map[schema.GroupResource]state.Reread {
	rrs := r.cat.c.ParamRereads(policies, ev.Received(), auditlog.ParseTime(ev.StageTimestamp))
	if len(rrs) == 0 {
		return nil
	}
	cat := r.cat.c.Schema()
	out := make(map[schema.GroupResource]state.Reread, len(rrs))
	for gr, rr := range rrs {
		storageChanged := func(_ string, rv uint64) (string, string) { return rr.StorageChanged(rv) }
		read := func(o runtime.Object) (runtime.Object, string) {
			u, ok := o.(*unstructured.Unstructured)
			if !ok || cat == nil {
				return nil, "the replay does not read it through the schema of CustomResourceDefinition " + rr.CRD
			}
			rv, _ := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
			conv, why := convertCustom(cat, u, u.GroupVersionKind(), false, rv, storageChanged)
			switch {
			case conv == nil:
				return nil, "kube-apiserver's param informer read it again through the schema of CustomResourceDefinition " + rr.CRD + " after the log changed it, which the replay cannot" + why
			case equality.Semantic.DeepEqual(conv.Object, u.Object):
				return nil, ""
			}
			return conv, ""
		}
		out[gr] = state.Reread{Read: read, Racing: rr.Racing, Thrice: rr.Thrice}
	}
	return out
}

// storedInOtherVersion says whether the request's custom resource is stored in another version
// than the request's: what the server answered with is the stored object read back in the
// request's version (a conversion None changes only its apiVersion; what the storage version's
// schema prunes is gone, and its defaults are not the request version's), not the object
// admission saw, which is rebuilt from the request (helper exT: creates through a version that
// defaults a field the storage version lacks, denied on the answer where the server admitted).
func (r *Replayer) storedInOtherVersion(t target) bool {
	cat := r.cat.c.Schema()
	if cat == nil || t.reqKind.Empty() {
		return false
	}
	crd := cat.CustomResourceDefinitionOf(t.reqKind)
	if crd == nil {
		return false
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name != t.reqKind.Version
		}
	}
	return false
}
