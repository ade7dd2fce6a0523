package replay

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
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

// opaqueCRD notes a CRD write whose object the log does not hold, at where and the time at:
// a create, or an update of the status subresource, which the apiserver's own controllers
// write to accept its names and establish it moments after its create.
func (r *Replayer) opaqueCRD(name, where string, at time.Time, create, status bool) {
	if r.cat.opaqueCRDs == nil {
		r.cat.opaqueCRDs, r.cat.opaqueCreated = map[string]string{}, map[string]opaqueCreate{}
	}
	group := crdResource(name).Group
	if _, ok := r.cat.opaqueCRDs[group]; !ok {
		r.cat.opaqueCRDs[group] = where
	}
	switch c, ok := r.cat.opaqueCreated[name]; {
	case create:
		r.cat.opaqueCreated[name] = opaqueCreate{where: where, at: at, established: at}
	case ok && status && !at.IsZero() && at.Sub(c.at) < establishWithin:
		c.established = at
		r.cat.opaqueCreated[name] = c
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
func (r *Replayer) servedSince(name string, at time.Time) (time.Time, string) {
	if c, ok := r.cat.opaqueCreated[name]; ok && !c.established.IsZero() && !c.established.After(at) {
		return c.established, "created at " + c.where
	}
	if at.IsZero() {
		return at, ""
	}
	return at.Add(-ParamResolveDelay - time.Second), "created before the log shows it"
}

// learnFromUse learns the kind of a resource the catalog does not serve from a successful
// request for it, and returns the request's target as the catalog now resolves it.
func (r *Replayer) learnFromUse(ctx context.Context, d decoded, ev *Event, t target) target {
	if r.cat.catalog == nil || !t.reqKind.Empty() || t.sub != "" || t.gvr.Group == "" || kubescheme.Scheme.IsGroupRegistered(t.gvr.Group) {
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
	if kind == "" || apiVersion != t.gvr.GroupVersion().String() || r.cat.removedCRDs[t.gvr.Resource+"."+t.gvr.Group] {
		return t // (a CRD the log deleted serves nothing, whatever the log says of its use)
	}
	scope := apiextensionsv1.ClusterScoped
	if t.namespace != "" {
		scope = apiextensionsv1.NamespaceScoped
	}
	name := t.gvr.Resource + "." + t.gvr.Group
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: t.gvr.Group, Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: t.gvr.Resource, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: t.gvr.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue},
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
			},
		},
	}
	crd.Status.AcceptedNames = crd.Spec.Names
	if r.cat.learned == nil {
		r.cat.learned = map[string]bool{}
	}
	r.cat.learned[name] = true
	at, since := r.servedSince(name, auditlog.ParseTime(ev.StageTimestamp))
	if err := r.followCRD(ctx, crd, d.file, d.num, at); err != nil && r.output.sinkErr == nil {
		r.output.sinkErr = err
	}
	if since != "" {
		since = " (" + since + ")"
	}
	r.crdChange(d.file, d.num, name, fmt.Sprintf("learned from a %s of it: %s %s in %s, its schema not known%s", ev.Verb, kind, scope, t.gvr.Version, since))
	nt, _ := r.resolve(ev)
	return nt
}

// learnedKind says whether the replay learned the kind from its use, without its schema.
func (r *Replayer) learnedKind(gvr schema.GroupVersionResource) bool {
	return r.cat.learned[gvr.Resource+"."+gvr.Group]
}

// paramKindMissing says why a paramKind the catalog does not map makes a decision
// indeterminate (the detail of a ReasonParamKindUnknown), or "" when the kind is missing for
// sure.
func (r *Replayer) paramKindMissing(k *paramKind) string {
	group := k.gvk.Group
	if group == "" || kubescheme.Scheme.IsGroupRegistered(group) {
		return "" // a built-in group: no CRD serves it
	}
	if where, ok := r.cat.opaqueCRDs[group]; ok {
		return fmt.Sprintf("paramKind %s may be served by a CustomResourceDefinition of %s the log wrote at %s without its object: give the CRD with --crd or --snapshot", gvkString(k.gvk), group, where)
	}
	if r.state.AllSince != "" {
		return "" // the log holds every CRD write since the cluster began
	}
	return fmt.Sprintf("paramKind %s is served by no CustomResourceDefinition the replay knows, and the log does not begin with the cluster: give the CRD with --crd or --snapshot", gvkString(k.gvk))
}
