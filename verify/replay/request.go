package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	sigsjson "sigs.k8s.io/json"

	vapccel "github.com/vapc-dev/vapc/cel"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// target is what a final event is about, before any object is decoded.
type target struct {
	gvr       schema.GroupVersionResource
	sub       string
	op        admission.Operation
	connect   bool
	mainKind  schema.GroupVersionKind // kind of the resource itself (Pod for pods/status)
	reqKind   schema.GroupVersionKind // kind a request for the (sub)resource carries
	namespace string
	name      string
	// scale is how the resource's scale subresource derives its Scale, for a request of it
	// (derivesScale); nil otherwise.
	scale *scaleSubresource
	// custom says, of an update (PUT) of a main resource whose export lost its code or
	// whether it was a dry run, that a CRD of the catalog serves its kind (not one the replay
	// learned from its use): the apiextensions apiserver's strategy never creates on update
	// (updateMayCreate).
	custom bool
}

// isConnectKind says whether a subresource's kind is the options kind of a connect
// subresource (PodExecOptions, PodProxyOptions, NodeProxyOptions, ...).
func isConnectKind(gvk schema.GroupVersionKind) bool {
	return strings.HasSuffix(gvk.Kind, "Options") && gvk.Group == ""
}

// resolve finds the operation and kinds of a resource request in the current epoch; skip says
// why a request is not an admission write (a read, a non-resource request).
func (r *Replayer) resolve(ev *Event) (t target, skip Reason) {
	t, skip = resolveIn(r.cur().resources, ev)
	// Asked only where an export lost the code or whether it was a dry run (updateMayCreate):
	// a log backend's file pays nothing for it.
	if ev.Verb == "update" && t.sub == "" && skip == "" && ev.Loss.Lost&(auditlog.LostCode|auditlog.LostDryRun) != 0 {
		if cat := r.cat.c.Schema(); cat != nil && !t.mainKind.Empty() {
			// Not a resource the replay learned from its use: it may be an aggregated API's
			// (a CRD of its group written in the log does not say: an APIService takes a
			// group-version, and a group may hold both).
			t.custom = cat.CustomResourceDefinitionOf(t.mainKind) != nil && !r.cat.c.Learned(t.gvr)
		}
	}
	return t, skip
}

// resolveIn is resolve with the kinds the resources give.
func resolveIn(res verify.Resources, ev *Event) (t target, skip Reason) {
	ref := ev.ObjectRef
	if ref == nil || ref.Resource == "" {
		return t, SkipNonResource
	}
	t.gvr = schema.GroupVersionResource{Group: ref.APIGroup, Version: ref.APIVersion, Resource: ref.Resource}
	if i := strings.IndexByte(ref.APIVersion, '/'); i >= 0 && t.gvr.Group == "" {
		t.gvr.Group, t.gvr.Version = ref.APIVersion[:i], ref.APIVersion[i+1:]
	}
	t.sub, t.namespace, t.name = ref.Subresource, ref.Namespace, ref.Name
	if t.gvr.Group == "" && t.gvr.Resource == "namespaces" {
		// The request info of /api/v1/namespaces/NAME[/SUB] gives the namespace itself as the
		// request's namespace (RequestInfoFactory.NewRequestInfo), and the audit objectRef
		// repeats it; a Namespace is cluster-scoped, and the State keys it by name alone.
		t.namespace = ""
	}
	t.reqKind = res.KindFor(t.gvr, t.sub)
	t.mainKind = res.KindFor(t.gvr, "")
	t.connect = t.sub != "" && isConnectKind(t.reqKind)
	if t.sub == "scale" {
		t.scale = scaleSubresourceOf(res, t.gvr, t.mainKind)
	}
	switch {
	case t.connect:
		t.op = admission.Connect
	case ev.Verb == "create":
		t.op = admission.Create
	case ev.Verb == "update" || ev.Verb == "patch" || ev.Verb == "apply":
		t.op = admission.Update
		if ev.Code() == 201 {
			t.op = admission.Create // an update or apply that created the object
		}
	case ev.Verb == "delete" || ev.Verb == "deletecollection":
		t.op = admission.Delete
	case ev.Verb == "get" || ev.Verb == "list" || ev.Verb == "watch":
		return t, SkipRead
	default:
		return t, SkipNonResource
	}
	return t, ""
}

// rebuilt is an admission request rebuilt from an event, and where its objects came from.
type rebuilt struct {
	req             verify.Request
	objectSource    string
	oldObjectSource string
	// indeterminate says why the request cannot be rebuilt for sure.
	indeterminate undecided
	// oldUnknown says why the oldObject is not known when req holds a stand-in for it (its
	// kind, namespace and name only): the decision stands only if it does not depend on the
	// oldObject (see requestOnly).
	oldUnknown undecided
	// skip says the server completed the request without validating admission.
	skip Reason
	// unknowns are fields of the request's objects the server set before admission that the
	// log does not hold.
	unknowns []vapccel.Unknown
	// prepared, when set, is the object as the handler's store prepares it before validating
	// admission, which req.BeforeValidation does to what mutating admission left (see
	// prepareCustomResource): the object the record shows.
	prepared *unstructured.Unstructured
}

// serverFacts is what the log taught the replay of the server's configuration by the point of
// a request.
type serverFacts struct {
	// apiAudiences are the server's --api-audiences, as a completed TokenRequest that asked
	// for none shows them; nil until one did.
	apiAudiences []any
}

// learnAudiences learns the server's --api-audiences from a completed TokenRequest that asked
// for none (TokenREST.Create gives it them).
func (f *serverFacts) learnAudiences(ev *Event) {
	if ev.Code() < 200 || ev.Code() >= 300 || !hasBody(ev.RequestObject) || !hasBody(ev.ResponseObject) {
		return
	}
	req, resp := auditlog.DecodeAnyObject(ev.RequestObject), auditlog.DecodeAnyObject(ev.ResponseObject)
	if req == nil || resp == nil || resp.GetKind() != "TokenRequest" {
		return
	}
	if asked, _, _ := unstructured.NestedSlice(req.Object, "spec", "audiences"); len(asked) > 0 {
		return
	}
	if given, _, _ := unstructured.NestedSlice(resp.Object, "spec", "audiences"); len(given) > 0 {
		f.apiAudiences = given
	}
}

// rebuild turns a final event into the admission request the ValidatingAdmissionPolicy plugin
// saw, reading the prior state from the State; facts are what the log showed of the server
// before it.
func (r *Replayer) rebuild(ev *Event, t target, rec recording, p state.Prior, facts serverFacts) rebuilt {
	return r.rebuildWith(ev, t, rec, p, facts, nil)
}

// rebuildWith is rebuild with the event's response object already decoded by
// auditlog.DecodeAnyObject (resp, which it may change), or nil to decode it when needed.
func (r *Replayer) rebuildWith(ev *Event, t target, rec recording, p state.Prior, facts serverFacts, resp *unstructured.Unstructured) rebuilt {
	q := ev.Query()
	b := rebuilt{req: verify.Request{
		Operation: t.op, Resource: t.gvr, SubResource: t.sub, Kind: t.reqKind,
		Namespace: t.namespace, Name: t.name, UserInfo: ev.Requester(),
	}}
	if b.notRebuilt(ev, t, q) {
		return b
	}

	// The prior state: oldObject of UPDATE and DELETE.
	var old *unstructured.Unstructured
	if t.op == admission.Update || t.op == admission.Delete {
		var ok bool
		if old, ok = b.oldFromState(ev, t, p, r.convertPrior); !ok {
			return b
		}
		b.req.OldObject = old
		if where := r.cat.c.Obscured(t.gvr); where != "" && old != nil && !kubescheme.Knows(t.mainKind) {
			// The schema the stored object reads defaulted by (and a patch applies over) is
			// not known: what it defaults is not either.
			why := "the schema of its CustomResourceDefinition, which its write at " + where + " changed and the log holds without its result: the defaults the stored object reads with"
			b.unknowns = append(b.unknowns, vapccel.Unknown{Path: vapccel.FieldPath{Root: "oldObject"}, Why: why})
			if ev.Verb == "patch" || ev.Verb == "apply" {
				b.unknowns = append(b.unknowns, vapccel.Unknown{Path: vapccel.FieldPath{Root: "object"}, Why: why})
			}
		}
	}

	switch t.op {
	case admission.Delete:
		b.deleteOptions(ev, t, q, old)
		b.unknowns = append(b.unknowns, omittedManagedFields(t, &b, old)...)
		return b
	case admission.Create, admission.Update:
		b.req.Options = writeOptions(q)
	}
	if objectNotLogged(ev, t) {
		b.standInObject(ev, t, rec) // unlogged.go
	} else {
		r.newObject(&b, ev, t, q, p, old, facts, resp)
	}
	if !b.indeterminate.is() {
		b.unknowns = append(b.unknowns, omittedManagedFields(t, &b, old)...)
	}
	return b
}

// unknownResource says why the replay does not know the resource of a request: a group version
// kube-apiserver publishes but serves only when --runtime-config enables it (a beta or alpha
// one), which the replay does not take, or no resource of Kubernetes at all.
func unknownResource(t target) string {
	// The built-in catalog lists every group version Kubernetes publishes, served by default
	// or not (loaded once a process: Builtin caches it).
	if cat, err := vapcschema.Builtin(verify.KubernetesVersion); err == nil {
		if info, ok := cat.Resource(t.gvr, t.sub); ok && !info.ServedByDefault {
			return fmt.Sprintf("%s is a resource of Kubernetes %s in %s, a group version kube-apiserver serves only when --runtime-config enables it, which the replay does not take: it replays what the server serves by default", describe(t.gvr, t.sub), verify.KubernetesVersion, t.gvr.GroupVersion())
		}
	}
	return fmt.Sprintf("%s is not a resource of Kubernetes %s (add its CRD)", describe(t.gvr, t.sub), verify.KubernetesVersion)
}

// notRebuilt settles what rebuild does not rebuild from the event: a kind the replay does not
// know, a CONNECT (its options, from the request URI), an event without objects, a
// deletecollection. It says whether it settled the request.
func (b *rebuilt) notRebuilt(ev *Event, t target, q url.Values) bool {
	if t.reqKind.Empty() {
		b.indeterminate = because(ReasonUnknownResource, unknownResource(t))
		return true
	}
	b.req.DryRun = isDryRun(ev)
	if t.op == admission.Connect {
		b.req.Object = connectOptions(t, q, ev.RequestURI)
		b.objectSource = SourceRequestURI
		return true
	}
	if !levelLogsBody(ev.Level) && !objectNotLogged(ev, t) {
		why := "the event is " + atLevel(ev) + ", without request and response objects"
		if ev.Truncated() {
			why = "the audit backend truncated the event (" + auditlog.AnnotationTruncated + "): it dropped the request and response objects of an event larger than --audit-log-truncate-max-event-size"
		}
		b.indeterminate = because(ReasonNoObject, why)
		return true
	}
	if ev.Verb == "deletecollection" {
		// Only the request pipeline deletes a collection item by item (usesPipeline).
		b.indeterminate = because(ReasonDeleteCollection, "the items it deleted are not rebuilt one by one outside the request pipeline, which does not serve "+describe(t.gvr, t.sub))
		return true
	}
	return false
}

// oldFromState returns the oldObject of an UPDATE or DELETE from the State (p): the stored
// object in the request's version, or the Scale derived from it, or for a request whose
// decision may not depend on it, a stand-in holding its kind and name. It says whether the
// request is left to rebuild.
func (b *rebuilt) oldFromState(ev *Event, t target, p state.Prior, convert func(state.Prior, *unstructured.Unstructured, schema.GroupVersionKind) (*unstructured.Unstructured, string)) (*unstructured.Unstructured, bool) {
	var old *unstructured.Unstructured
	gr := t.gvr.GroupResource()
	u, unknown := p.Decode()
	source, found := p.Source, p.Found
	notConverted := ""
	if found && unknown == "" && p.Kept && len(p.Unknowns) == 0 && u.GroupVersionKind() != t.mainKind {
		// The server holds its objects in its internal version and converts the stored
		// one to the request's, as the replay does here.
		if conv, why := convert(p, u, t.mainKind); conv != nil {
			source += ", converted from " + u.GetAPIVersion()
			u = conv
		} else {
			notConverted = why
		}
	} else if found && unknown == "" && p.Kept && u != nil && !kubescheme.Knows(u.GroupVersionKind()) {
		// A custom resource reads from storage defaulted by its CRD's schema as it is now
		// (a default the CRD gained after the object was written: the apiextensions
		// apiserver's storage codec).
		if conv, _ := convert(p, u, t.mainKind); conv != nil {
			u = conv
		}
	}
	switch {
	case !p.Kept:
		b.indeterminate = because(ReasonOldObjectUnknown, gr.String()+" is not kept")
	case unknown != "":
		b.indeterminate = because(ReasonOldObjectUnknown, fmt.Sprintf("%s %s: %s", gr, state.JoinKey(t.namespace, t.name), state.ShortReason(unknown)))
	case !found:
		b.indeterminate = because(ReasonOldObjectUnknown, fmt.Sprintf("%s %s is not in the snapshot or earlier in the log", gr, state.JoinKey(t.namespace, t.name)))
	case u.GroupVersionKind() != t.mainKind:
		b.indeterminate = because(ReasonOldObjectVersion, fmt.Sprintf("%s %s is stored as %s and does not convert to %s%s", gr, state.JoinKey(t.namespace, t.name), u.GroupVersionKind(), t.mainKind, notConverted))
	case derivesScale(t):
		scale, err := scaleFrom(t.scale, u)
		if err != nil {
			b.indeterminate = because(ReasonSubresourceKind, fmt.Sprintf("the Scale of %s %s: %v", gr, state.JoinKey(t.namespace, t.name), err))
			break
		}
		old = scale
		b.oldObjectSource = SourceState + " (" + source + "), the Scale the apiserver derives from it"
	case t.reqKind != t.mainKind:
		b.indeterminate = because(ReasonSubresourceKind, fmt.Sprintf("the oldObject of %s is a %s derived from the %s; vapc does not derive it", describe(t.gvr, t.sub), t.reqKind.Kind, t.mainKind.Kind))
	default:
		old = u
		b.oldObjectSource = SourceState + " (" + source + ")"
	}
	if !b.indeterminate.is() {
		return old, true
	}
	if b.indeterminate.reason != ReasonOldObjectUnknown || !standInOld(ev, t) {
		return nil, false
	}
	b.oldUnknown, b.indeterminate = b.indeterminate, undecided{}
	old = &unstructured.Unstructured{}
	old.SetGroupVersionKind(t.mainKind)
	old.SetNamespace(t.namespace)
	old.SetName(t.name)
	return old, true
}

// deleteOptions gives a DELETE its options, as the store gives them to admission, or skips it
// when the store does not run admission (a deletion pending, a namespace finalizing).
func (b *rebuilt) deleteOptions(ev *Event, t target, q url.Values, old *unstructured.Unstructured) {
	opts, err := deleteOptions(ev.RequestObject, q)
	if err != nil {
		b.indeterminate = because(ReasonOptions, err.Error())
		return
	}
	b.req.Options = opts
	if dr, _, _ := unstructured.NestedStringSlice(opts.Object, "dryRun"); len(dr) > 0 {
		b.req.DryRun = true
	}
	if gracefulDeletionPending(old, opts) || namespaceFinalizing(t.gvr.GroupResource(), t.sub, old) {
		b.skip = SkipPendingDeletion
		return
	}
	admissionDeleteOptions(t.gvr.GroupResource(), t.sub, old, opts)
}

// newObject gives a CREATE or UPDATE its object: the response's of a successful request, the
// patch applied to the old object, or the request's body as the server gives it to admission.
// resp is the response object decoded by auditlog.DecodeAnyObject, or nil to decode it here.
func (r *Replayer) newObject(b *rebuilt, ev *Event, t target, q url.Values, p state.Prior, old *unstructured.Unstructured, facts serverFacts, resp *unstructured.Unstructured) {
	if resp == nil {
		resp = auditlog.DecodeAnyObject(ev.ResponseObject)
	}
	if ev.Code() >= 200 && ev.Code() < 300 && resp != nil && sameKind(resp, t.reqKind) && !r.storedInOtherVersion(t) && !b.answeredOther(ev, t, q, p, old, resp) && !doublesInPatch(ev, t) {
		obj := withKind(resp, t.reqKind)
		if t.op == admission.Create {
			unstructured.RemoveNestedField(obj.Object, "metadata", "resourceVersion")
		} else if old != nil {
			obj.SetResourceVersion(old.GetResourceVersion())
		}
		if (ev.Verb == "create" || ev.Verb == "update") && bytes.Contains(ev.ResponseObject, []byte(":null")) {
			emptiedByStorage(obj.Object, ev.RequestObject) // decodes the request: only where the response holds a null
		}
		b.req.Object, b.objectSource = obj, SourceResponse
		// The response as the server encoded it: admission reads it without the round trip
		// through its typed object, which changes nothing of it (verify.Request.Encoded).
		// Not where an export carried the objects in another form (GKE's entries, as
		// protobuf Structs, whose numbers are doubles); where it lost other parts of the
		// event only (Log Analytics' impersonation), its objects are the server's.
		b.req.Encoded = !ev.Loss.Structs
		return
	}
	if len(ev.RequestObject) == 0 {
		b.indeterminate = because(ReasonNoObject, "the event at level "+ev.Level+" has no request object")
		return
	}
	if ev.Verb == "patch" || ev.Verb == "apply" {
		r.patched(b, ev, t, q, old)
		return
	}
	body := auditlog.DecodeAnyObject(ev.RequestObject)
	if body == nil {
		b.indeterminate = because(ReasonNoObject, "the request object does not decode")
		return
	}
	if !sameKind(body, t.reqKind) {
		b.indeterminate = because(ReasonRequestKind, fmt.Sprintf("the request carries %s, the resource takes %s", body.GroupVersionKind(), t.reqKind))
		return
	}
	if t.op == admission.Create && t.sub == "" && body.GetName() == "" && body.GetGenerateName() != "" {
		// rest.BeforeCreate generates the name before validating admission runs, and
		// AdmissionToValidateObjectFunc gives it to the request; only the stored object of a
		// successful create records it.
		b.indeterminate = because(ReasonGeneratedName, "the server generated the name of the "+body.GetKind()+" (generateName "+body.GetGenerateName()+") before admission; the log holds it only for a successful create")
		return
	}
	if t.op == admission.Create && t.sub == "" && t.namespace != "" && body.GetNamespace() == "" {
		// rest.BeforeCreate (rest.ValidNamespace) gives the object the request's namespace
		// before the store runs validating admission; the logged body may lack it.
		body.SetNamespace(t.namespace)
	}
	if t.op == admission.Create && t.sub == "eviction" && t.gvr.GroupResource() == podsGR {
		propagateDryRun(body, q)
	}
	if t.op == admission.Create && t.sub == "token" && t.gvr.GroupResource() == serviceAccountsGR {
		if !b.tokenRequestDefaults(body, ev, t, p, facts) {
			return
		}
	}
	if derivesScale(t) && old != nil {
		b.req.Object, b.objectSource = scaleUpdated(old, body), SourceRequest+" (spec.replicas on the Scale the apiserver derives)"
		return
	}
	if t.op == admission.Update && old != nil && body.GetResourceVersion() == "" {
		// An update without resourceVersion is unconditional: Store.Update gives the object the
		// stored one (doUnconditionalUpdate) before it runs validating admission.
		body.SetResourceVersion(old.GetResourceVersion())
	}
	b.req.Object, b.objectSource = withKind(body, t.reqKind), SourceRequest
}

// patched gives a patch its object: the patch applied to the old object, as the server's
// patcher applies and decodes it.
func (r *Replayer) patched(b *rebuilt, ev *Event, t target, q url.Values, old *unstructured.Unstructured) {
	if old == nil {
		b.indeterminate = because(ReasonPatch, "no prior state to apply the patch to")
		return
	}
	obj, source, err := applyPatch(old, ev.RequestObject, q)
	if err != nil {
		b.indeterminate = because(ReasonPatch, err.Error())
		return
	}
	if derivesScale(t) {
		obj, source = scaleUpdated(old, obj), source+", spec.replicas of the result on the Scale the apiserver derives"
	}
	b.req.Object, b.objectSource = withKind(obj, t.reqKind), source
	// The patcher decodes the patched object with the resource's codec.
	if err := r.decodeCustomResource(t, b.req.Object); err != nil {
		b.indeterminate = because(ReasonPatch, "the patched object does not decode as the server's codec decodes it: "+err.Error())
	}
}

// answeredOther says whether the response of a patch is not its result on old: the patch
// changes nothing of old, yet the response, another resourceVersion, differs from it. The
// server answers a patch that changes nothing with the object as it read it last, without
// writing: a version another write stored after old, which the log may record later (two
// writes answered with one resourceVersion). Admission saw the patch applied to the version
// it read (old, on that attempt), not the response. Only an old object known in full (not a
// stand-in, no field unknown) says the patch changes nothing of it.
func (b *rebuilt) answeredOther(ev *Event, t target, q url.Values, p state.Prior, old, resp *unstructured.Unstructured) bool {
	if t.op != admission.Update || (ev.Verb != "patch" && ev.Verb != "apply") || old == nil || b.oldUnknown.is() || len(p.Unknowns) > 0 || derivesScale(t) ||
		resp.GetResourceVersion() == old.GetResourceVersion() || sameContent(resp, old) {
		return false
	}
	patched, _, err := applyPatch(old, ev.RequestObject, q)
	return err == nil && sameContent(patched, old)
}

// sameContent says whether two versions of an object hold the same, but for the
// resourceVersion and managedFields the server sets.
func sameContent(a, b *unstructured.Unstructured) bool {
	return state.ValuesEqual(withoutVersion(a.Object), withoutVersion(b.Object))
}

// withoutVersion is a shallow copy of an object without metadata.resourceVersion and
// metadata.managedFields.
func withoutVersion(obj map[string]any) map[string]any {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	m := make(map[string]any, len(meta))
	for k, v := range meta {
		if k != "resourceVersion" && k != "managedFields" {
			m[k] = v
		}
	}
	out["metadata"] = m
	return out
}

// tokenRequestDefaults gives a TokenRequest what TokenREST.Create gives it before validating
// admission: the service account's name and namespace, and the server's --api-audiences when
// it asks for none (see tokenRequestMeta for the rest). It says whether the request is left to
// rebuild.
func (b *rebuilt) tokenRequestDefaults(body *unstructured.Unstructured, ev *Event, t target, p state.Prior, facts serverFacts) bool {
	if body.GetName() == "" {
		body.SetName(t.name)
	}
	if body.GetNamespace() == "" {
		body.SetNamespace(t.namespace)
	}
	if auds, _, _ := unstructured.NestedSlice(body.Object, "spec", "audiences"); len(auds) > 0 {
		// As asked.
	} else if facts.apiAudiences != nil {
		_ = unstructured.SetNestedSlice(body.Object, runtime.DeepCopyJSONValue(facts.apiAudiences).([]any), "spec", "audiences")
	} else {
		b.unknowns = append(b.unknowns, vapccel.Unknown{Path: objectPath("spec", "audiences"), Why: "the server's --api-audiences, which it gives a TokenRequest that asks for none before admission, and which the log does not show before this request (a completed TokenRequest that asked for none would)"})
	}
	unknowns, refused := tokenRequestMeta(body, ev, p)
	if refused != "" {
		b.indeterminate = because(ReasonRebuild, refused)
		return false
	}
	b.unknowns = append(b.unknowns, unknowns...)
	return true
}

// tokenRequestMeta gives a TokenRequest what TokenREST.Create gives it before validating
// admission, besides its name, namespace and audiences: the service account's uid when it
// asks for none, the server's clock as its creationTimestamp, and no status. sa is the
// service account as the State holds it; unknowns are what the replay does not know of those,
// and refused says why the server refused the request before admission.
func tokenRequestMeta(body *unstructured.Unstructured, ev *Event, sa state.Prior) (unknowns []vapccel.Unknown, refused string) {
	unstructured.RemoveNestedField(body.Object, "status")
	var uid string
	if u, unknown := sa.Decode(); sa.Found && unknown == "" && u != nil && !slices.ContainsFunc(sa.Unknowns, func(un vapccel.Unknown) bool { return state.FieldUnder(un.Path.Steps, "metadata", "uid") }) {
		uid = string(u.GetUID())
	}
	if asked := string(body.GetUID()); asked != "" && uid != "" && asked != uid {
		// TokenRequestServiceAccountUIDValidation (on since 1.34): a Conflict before admission.
		return nil, "the TokenRequest's uid " + asked + " is not its service account's " + uid + ", which the server refuses before admission"
	}
	if body.GetUID() == "" {
		if uid != "" {
			body.SetUID(types.UID(uid))
		} else {
			body.SetUID("00000000-0000-0000-0000-000000000000") // a value it can hold, held unknown
			unknowns = append(unknowns, vapccel.Unknown{Path: objectPath("metadata", "uid"), ValueOnly: true,
				Why: "the uid of the service account, which the server gives a TokenRequest that asks for none before admission, and which the replay does not know"})
		}
	}
	second, ok := serverSecond(ev)
	if !ok {
		second = *markedAt(ev)
		unknowns = append(unknowns, vapccel.Unknown{Path: objectPath("metadata", "creationTimestamp"), ValueOnly: true,
			Why: "the server's clock during the request, which the server gives a TokenRequest as its creationTimestamp before admission, and which the log does not hold to the second"})
	}
	body.SetCreationTimestamp(second)
	return unknowns, ""
}

// standInOld says whether a request whose oldObject is not known is rebuilt with a stand-in:
// a DELETE, and an UPDATE whose new object is the stored result (a refused patch needs the
// old object to be rebuilt at all) or not logged at all, of the object itself or of a
// subresource whose kind is the object's (status, ephemeralcontainers, resize: the store's strategy sets what the
// subresource does not write from the old object before validating admission, as it stores).
func standInOld(ev *Event, t target) bool {
	switch t.op {
	case admission.Delete:
		return t.sub == ""
	case admission.Update:
		if t.sub != "" && t.reqKind != t.mainKind {
			return false
		}
		succeeded := ev.Code() >= 200 && ev.Code() < 300
		// A write whose object the log does not hold at all (level Metadata) has a stand-in
		// for both objects: where it succeeded, or a policy refused it (admission ran), a
		// decision that reads neither stands (helper exAB: leases updated at Metadata).
		return succeeded && hasBody(ev.ResponseObject) || objectNotLogged(ev, t) && (succeeded || vapDenied.MatchString(ev.Message()))
	}
	return false
}

func orNone(level string) string {
	if level == "" {
		return "(none)"
	}
	return level
}

func describe(gvr schema.GroupVersionResource, sub string) string {
	s := gvr.GroupResource().String()
	if sub != "" {
		s += "/" + sub
	}
	return s
}

// decodeKind decodes the apiVersion and kind of an object's JSON as auditlog.DecodeAnyObject does, without
// decoding the rest (sameKind reads no more).
func decodeKind(raw json.RawMessage) *unstructured.Unstructured {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	if u, err := auditlog.DecodeKind(raw); err == nil {
		return u
	}
	return auditlog.DecodeAnyObject(raw)
}

// sameKind says whether the object is of the group and kind (an object without apiVersion or
// kind, as some logs write them, is taken to be).
func sameKind(u *unstructured.Unstructured, gvk schema.GroupVersionKind) bool {
	got := u.GroupVersionKind()
	if got.Kind != "" && got.Kind != gvk.Kind {
		return false
	}
	return u.GetAPIVersion() == "" || got.Group == gvk.Group
}

// withKind sets the object's apiVersion and kind to the request's: the apiserver converts the
// object to the request's version before admission.
func withKind(u *unstructured.Unstructured, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u.SetGroupVersionKind(gvk)
	return u
}

// writeOptions are the CreateOptions or UpdateOptions of the request URI (for a PATCH, the
// UpdateOptions the patch handler passes to admission).
func writeOptions(q url.Values) *unstructured.Unstructured {
	o := map[string]any{}
	if v := q["dryRun"]; len(v) > 0 {
		o["dryRun"] = toAny(v)
	}
	if v := q.Get("fieldManager"); v != "" {
		o["fieldManager"] = v
	}
	if v := q.Get("fieldValidation"); v != "" {
		o["fieldValidation"] = v
	}
	return &unstructured.Unstructured{Object: o}
}

// deleteOptions are the DeleteOptions of a DELETE as its handler reads them
// (handlers.DeleteResource, handlers.DeleteCollection): all of them from the body when there is
// one (the audit log records it, in the internal version), else all of them from the query,
// which is then ignored entirely, dryRun included.
func deleteOptions(raw json.RawMessage, q url.Values) (*unstructured.Unstructured, error) {
	o := map[string]any{}
	if hasBody(raw) {
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, err
		}
		delete(o, "apiVersion")
		delete(o, "kind")
		return &unstructured.Unstructured{Object: o}, nil
	}
	// The query as the ParameterCodec converts it (metav1's autoConvert_url_Values_To_v1_DeleteOptions):
	// the first value of each parameter; a bool is true unless it is "0" or "false", in any case,
	// empty included.
	if v, ok := q["gracePeriodSeconds"]; ok && len(v) > 0 {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("gracePeriodSeconds %q: %v", v[0], err)
		}
		o["gracePeriodSeconds"] = n
	}
	if v, ok := q["propagationPolicy"]; ok && len(v) > 0 {
		o["propagationPolicy"] = v[0]
	}
	for _, name := range []string{"orphanDependents", "ignoreStoreReadErrorWithClusterBreakingPotential"} {
		if v, ok := q[name]; ok && len(v) > 0 {
			o[name] = v[0] != "0" && !strings.EqualFold(v[0], "false")
		}
	}
	if v := q["dryRun"]; len(v) > 0 {
		o["dryRun"] = toAny(v)
	}
	return &unstructured.Unstructured{Object: o}, nil
}

func hasBody(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// isDryRun says whether a request was a dry run: from the dryRun of the query for a create, an
// update or a patch, and from the options deleteOptions reads for a delete or a
// deletecollection (client-go sends a DELETE's dryRun in the body, and a body hides the query).
func isDryRun(ev *Event) bool {
	if (ev.Verb == "delete" || ev.Verb == "deletecollection") && hasBody(ev.RequestObject) {
		if !bytes.Contains(ev.RequestObject, []byte("dryRun")) && bytes.IndexByte(ev.RequestObject, '\\') < 0 {
			return false // neither the member nor an escape that could spell it
		}
		var o struct {
			DryRun []string `json:"dryRun"`
		}
		// Case-sensitively, as the server's codec decodes DeleteOptions.
		_ = sigsjson.UnmarshalCaseSensitivePreserveInts(ev.RequestObject, &o)
		return len(o.DryRun) > 0
	}
	if !strings.Contains(ev.RequestURI, "dryRun") && !strings.Contains(ev.RequestURI, "%") {
		return false // neither the parameter nor an escape that could spell it
	}
	return len(ev.Query()["dryRun"]) > 0
}

// gracefulDeletionPending mirrors rest.BeforeDelete: a DELETE of an object whose graceful
// deletion is pending, without a shorter grace period, returns it without validating admission.
func gracefulDeletionPending(old *unstructured.Unstructured, opts *unstructured.Unstructured) bool {
	if old == nil || old.GetDeletionTimestamp() == nil {
		return false
	}
	g := old.GetDeletionGracePeriodSeconds()
	if g == nil || *g == 0 {
		return false
	}
	period, found, _ := unstructured.NestedFieldNoCopy(opts.Object, "gracePeriodSeconds")
	if !found || period == nil {
		return true
	}
	var p int64
	switch v := period.(type) {
	case int64:
		p = v
	case float64:
		p = int64(v)
	default:
		return false
	}
	if p < 0 {
		p = 1
	}
	return p >= *g
}

// podsGR is the resource whose strategy deletes gracefully.
var (
	podsGR            = schema.GroupResource{Resource: "pods"}
	serviceAccountsGR = schema.GroupResource{Resource: "serviceaccounts"}
)

// admissionDeleteOptions changes the options of a DELETE as rest.BeforeDelete
// (k8s.io/apiserver/pkg/registry/rest/delete.go) changes them before the store calls validating
// admission with them: the handler's admission attributes hold the same *metav1.DeleteOptions,
// so request.options is the options after these changes, not as the client sent them. A
// negative grace period is one second; a pod not being deleted yet gets the grace period of
// podStrategy.CheckGracefulDelete (k8s.io/kubernetes/pkg/registry/core/pod/strategy.go): the
// one asked for, else its terminationGracePeriodSeconds, and 0 for a pod that is not scheduled
// or has terminated. (A pod being deleted keeps the options asked for, or its graceful deletion
// is pending and admission does not run.)
//
// A namespace's DELETE goes through the namespace REST's Delete
// (k8s.io/kubernetes/pkg/registry/core/namespace/storage/storage.go), which gives the options
// the namespace's uid as precondition when they have none, and, for a namespace not being
// deleted yet, runs admission without rest.BeforeDelete.
func admissionDeleteOptions(gr schema.GroupResource, sub string, old, opts *unstructured.Unstructured) {
	if gr == state.NamespacesGR && sub == "" && old != nil {
		pre, _ := opts.Object["preconditions"].(map[string]any)
		if pre == nil {
			pre = map[string]any{}
			opts.Object["preconditions"] = pre
		}
		if _, ok := pre["uid"]; !ok {
			pre["uid"] = string(old.GetUID())
		}
		if old.GetDeletionTimestamp() == nil {
			return
		}
	}
	grace, hasGrace := intValue(opts.Object["gracePeriodSeconds"])
	if hasGrace && grace < 0 {
		grace = 1
		opts.Object["gracePeriodSeconds"] = grace
	}
	if gr != podsGR || sub != "" || old == nil || old.GetDeletionTimestamp() != nil {
		return
	}
	period := int64(0)
	if hasGrace {
		period = grace
	} else if v, found, _ := unstructured.NestedFieldNoCopy(old.Object, "spec", "terminationGracePeriodSeconds"); found {
		period, _ = intValue(v)
	}
	if node, _, _ := unstructured.NestedString(old.Object, "spec", "nodeName"); node == "" {
		period = 0
	}
	if phase, _, _ := unstructured.NestedString(old.Object, "status", "phase"); phase == "Failed" || phase == "Succeeded" {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	opts.Object["gracePeriodSeconds"] = period
}

// propagateDryRun mirrors the part of propagateDryRun of
// k8s.io/kubernetes/pkg/registry/core/pod/storage/eviction.go that EvictionREST.Create runs
// before validating admission: an Eviction with deleteOptions without dryRun gets the
// request's dryRun in them.
func propagateDryRun(eviction *unstructured.Unstructured, q url.Values) {
	do, ok := eviction.Object["deleteOptions"].(map[string]any)
	if !ok || do == nil {
		return
	}
	if dr, _ := do["dryRun"].([]any); len(dr) > 0 {
		return
	}
	if v := q["dryRun"]; len(v) > 0 {
		do["dryRun"] = toAny(v)
	} else {
		delete(do, "dryRun")
	}
}

// namespaceFinalizing says whether a DELETE is of a namespace already being deleted that still
// has finalizers (spec.finalizers): the namespace REST returns it without admission.
func namespaceFinalizing(gr schema.GroupResource, sub string, old *unstructured.Unstructured) bool {
	if gr != state.NamespacesGR || sub != "" || old == nil || old.GetDeletionTimestamp() == nil {
		return false
	}
	f, _, _ := unstructured.NestedSlice(old.Object, "spec", "finalizers")
	return len(f) > 0
}

// intValue reads an integer of a decoded JSON object.
func intValue(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// connectOptions rebuilds the options object of a CONNECT from the request URI, as the
// apiserver's connect handler decodes the query into it.
func connectOptions(t target, q url.Values, uri string) *unstructured.Unstructured {
	o := map[string]any{"apiVersion": t.reqKind.GroupVersion().String(), "kind": t.reqKind.Kind}
	for _, f := range []string{"stdin", "stdout", "stderr", "tty"} {
		if v := q.Get(f); v != "" {
			o[f] = v == "true" || v == "1"
		}
	}
	if v := q.Get("container"); v != "" {
		o["container"] = v
	}
	if v := q["command"]; len(v) > 0 {
		o["command"] = toAny(v)
	}
	if v := q["ports"]; len(v) > 0 {
		var ports []any
		for _, p := range v {
			for _, s := range strings.Split(p, ",") {
				if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32); err == nil {
					ports = append(ports, n)
				}
			}
		}
		o["ports"] = ports
	}
	if t.sub == "proxy" {
		path := uri
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		if _, rest, ok := strings.Cut(path, "/proxy"); ok {
			if rest == "" {
				rest = "/"
			}
			o["path"] = rest
		}
		if v := q.Get("path"); v != "" {
			o["path"] = v
		}
	}
	return &unstructured.Unstructured{Object: o}
}

func toAny(v []string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

// emptiedByStorage gives the response object resp of a create or update the empty lists and
// maps the request's body (logged) sent where the response holds null: admission decoded the
// body's [] into an empty slice, which a field without omitempty gives CEL as [], and the
// storage's round trip made nil, which it gives as null (helper exAG: an aggregated
// ClusterRole applied with rules: [], refused by the replay on the response's rules: null,
// admitted by the server).
func emptiedByStorage(resp map[string]any, logged []byte) {
	if len(logged) == 0 || !bytes.Contains(logged, []byte("[]")) && !bytes.Contains(logged, []byte("{}")) {
		return
	}
	var req map[string]any
	if json.Unmarshal(logged, &req) != nil {
		return
	}
	var walk func(resp, req map[string]any)
	walk = func(resp, req map[string]any) {
		for k, rv := range req {
			got, ok := resp[k]
			if !ok {
				continue
			}
			switch v := rv.(type) {
			case []any:
				if got == nil && len(v) == 0 {
					resp[k] = []any{}
				} else if gl, ok := got.([]any); ok && len(gl) == len(v) {
					for i := range v {
						if rm, ok := v[i].(map[string]any); ok {
							if gm, ok := gl[i].(map[string]any); ok {
								walk(gm, rm)
							}
						}
					}
				}
			case map[string]any:
				if got == nil && len(v) == 0 {
					resp[k] = map[string]any{}
				} else if gm, ok := got.(map[string]any); ok {
					walk(gm, v)
				}
			}
		}
	}
	walk(resp, req)
}
