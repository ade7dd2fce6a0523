package replay

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// What the apiextensions apiserver's handler of a custom resource does to the object of a
// create or update before validating admission, which the replay does for an object it
// rebuilds from the request outside the request pipeline (the pipeline serves built-in
// resources, CustomResourceDefinitions and APIServices only): its registry strategy's rest.BeforeCreate (after
// FillObjectMetaSystemFields, as Store.Create does) or rest.BeforeUpdate, the status
// subresource's for a /status update. The log holds a create's or update's body as the
// handler decoded it (pruned and defaulted: audit.LogRequestObject runs after the decoder); a
// patched object the replay decodes itself (decodeCustomResource). What the handler's field
// manager writes stays unknown (see evaluate).

// prepareCustomResource gives the request of a custom resource's create or update the replay
// rebuilt from its request what the handler's store does to its object between mutating and
// validating admission (see above; verify.Request.BeforeValidation: after the
// MutatingAdmissionPolicies, as the server runs them), and adds to b what of it the log does
// not hold (the uid it generates, its clock: settle), found on a copy, which the record shows.
// A request the replay cannot take through it is indeterminate.
func (r *Replayer) prepareCustomResource(ev *Event, t target, b *rebuilt) {
	u := b.req.Object
	if u == nil || b.indeterminate.is() || b.objectSource == SourceResponse || kubescheme.Knows(u.GroupVersionKind()) ||
		(t.op != admission.Create && t.op != admission.Update) || (t.sub != "" && t.sub != "status") {
		return
	}
	s := r.cat.c.Strategies(u.GroupVersionKind())
	switch {
	case s == nil:
		b.indeterminate = because(ReasonRebuild, "the CustomResourceDefinition of "+describe(t.gvr, "")+" is not known, and so neither what its handler sets before admission")
		return
	case s.Err != nil:
		b.indeterminate = because(ReasonRebuild, "the strategy of "+describe(t.gvr, "")+": "+s.Err.Error())
		return
	case t.op == admission.Update && b.req.OldObject == nil:
		b.indeterminate = because(ReasonOldObjectUnknown, "the stored object, which the handler's update starts from")
		return
	case t.sub == "status" && s.Status == nil:
		return // no status subresource: the server does not serve the request
	}
	if why := r.schemaUnknown(t); why != "" && !succeeded(ev) && messageLost(ev) && !r.ranAdmission(ev) {
		// The handler validates the object by its schema before admission (the strategy's
		// Validate in rest.BeforeCreate and BeforeUpdate: OpenAPI, x-kubernetes-validations),
		// and a refusal there reads as a policy's where the export lost the message (a 422
		// both): whether the policies ran is not known (helper exZ, a GKE export).
		b.indeterminate = because(ReasonRebuild, "whether the object passes "+why+", which its handler checks before admission: the request failed, and "+ev.Loss.Of(auditlog.LostMessage))
		return
	}
	prepare := func(obj, old runtime.Object) ([]vapccel.Unknown, error) {
		ctx := request.WithNamespace(context.Background(), t.namespace)
		var err error
		switch {
		case t.op == admission.Create:
			if m, merr := meta.Accessor(obj); merr == nil {
				rest.FillObjectMetaSystemFields(m)
			}
			err = rest.BeforeCreate(s.Main, ctx, obj)
			old = nil
		case t.sub == "status":
			restore := unknownVersion(obj, old, succeeded(ev))
			err = rest.BeforeUpdate(s.Status, ctx, obj, old)
			restore()
		default:
			restore := unknownVersion(obj, old, succeeded(ev))
			err = rest.BeforeUpdate(s.Main, ctx, obj, old)
			restore()
		}
		if err != nil {
			return nil, fmt.Errorf("the object the replay rebuilt does not pass what the handler of %s checks before admission: %w", describe(t.gvr, t.sub), err)
		}
		return settle(ev, t, admission.NewAttributesRecord(obj, old, t.reqKind, t.namespace, t.name, t.gvr, t.sub, t.op, nil, false, nil), ev.RequestObject), nil
	}
	prepared := u.DeepCopy()
	var old runtime.Object
	if b.req.OldObject != nil {
		old = b.req.OldObject.DeepCopy()
	}
	unknowns, err := prepare(prepared, old)
	if err != nil {
		b.indeterminate = because(ReasonRebuild, err.Error())
		return
	}
	b.unknowns = append(b.unknowns, unknowns...)
	b.prepared = prepared
	b.req.BeforeValidation = func(obj, old runtime.Object) error {
		_, err := prepare(obj, old)
		return err
	}
}

// schemaUnknown says what of the schema the handler of the custom resource t serves the
// replay does not know, or "" when it knows it: a write of its CRD the log holds without its
// result (catalog.Catalog.Obscure), a resource learned from its use without its CRD.
func (r *Replayer) schemaUnknown(t target) string {
	if where := r.cat.c.Obscured(t.gvr); where != "" {
		return "the schema of its CustomResourceDefinition, which its write at " + where + " changed and the log holds without its result"
	}
	if r.cat.c.Learned(t.gvr) {
		return "the schema of " + t.gvr.Resource + "." + t.gvr.Group + ", whose CustomResourceDefinition the log does not hold"
	}
	return ""
}

// unknownVersion gives an update's object and old object a resourceVersion for what the
// store checks when the State does not know the stored one (a create followed at level
// Request: the server generated it), as the server's stored object has one and a patched
// object takes it; the returned func takes it away again (what a policy reads of it is
// unknown: the State's unknowns).
//
// And where the request succeeded (ok), its object's uid, which the server checked against the
// stored one's, is the old object's for the check too: the State may hold a stand-in for a uid
// the server generated (a create followed at level Request; helper exZ: `kubectl replace` of a
// custom resource, whose body holds the uid it read).
func unknownVersion(obj, old runtime.Object, ok bool) func() {
	m, err := meta.Accessor(obj)
	o, oerr := meta.Accessor(old)
	if err != nil || oerr != nil {
		return func() {}
	}
	var undo []func()
	if m.GetResourceVersion() == "" && o.GetResourceVersion() == "" {
		m.SetResourceVersion(unknownResourceVersion)
		o.SetResourceVersion(unknownResourceVersion)
		undo = append(undo, func() {
			m.SetResourceVersion("")
			o.SetResourceVersion("")
		})
	}
	if uid, was := m.GetUID(), o.GetUID(); ok && uid != "" && uid != was {
		o.SetUID(uid)
		undo = append(undo, func() { o.SetUID(was) })
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// succeeded says whether the server answered the request with success.
func succeeded(ev *Event) bool { return ev.Code() >= 200 && ev.Code() < 300 }

// unknownResourceVersion stands for a resourceVersion the State does not know in what the
// replay checks outside admission.
const unknownResourceVersion = "1"

// decodeCustomResource does to a custom resource's patched object, in place, what the patcher's
// codec does (cel/schema Catalog.CustomResourceDecoder: pruning, embedded metadata, the
// schema's defaults).
func (r *Replayer) decodeCustomResource(t target, u *unstructured.Unstructured) error {
	cat := r.cat.c.Schema()
	if cat == nil || u == nil || kubescheme.Knows(u.GroupVersionKind()) {
		return nil
	}
	if decode, ok := cat.CustomResourceDecoder(u.GroupVersionKind()); ok {
		return decode(u.Object)
	}
	return nil
}

// followCustomCreate follows a custom resource's create the log holds at a level without its
// result (Request): the body the log holds is the object as the handler decoded it (pruned and
// defaulted by its version's schema), which the store keeps after its strategy's
// rest.BeforeCreate when no admission changed it: no MutatingAdmissionPolicy of the cluster
// may have (mutators), no mutating webhook did (the event's annotations name none), and it is
// stored in the request's version. What the server generated (its uid, its clock, its
// resourceVersion) and what its field manager wrote are unknown. It says whether it followed
// the create (helpers exQ and exT: a custom resource param created at level Request was
// unknown to every request after it).
func (r *Replayer) followCustomCreate(sw stateWrite, src string) bool {
	ev, t := sw.ev, sw.t
	if ev.Verb != "create" || t.op != admission.Create || t.sub != "" || t.name == "" || ev.Code() < 200 || ev.Code() >= 300 ||
		t.reqKind.Empty() || kubescheme.Knows(t.reqKind) || r.storedInOtherVersion(t) || len(recordedWebhooks(ev)) > 0 {
		return false
	}
	body := auditlog.DecodeAnyObject(ev.RequestObject)
	if body == nil || !sameKind(body, t.reqKind) || (body.GetName() != "" && body.GetName() != t.name) {
		return false
	}
	s := r.cat.c.Strategies(t.reqKind)
	if s == nil || s.Err != nil {
		return false
	}
	body.SetName(t.name)
	body.SetNamespace(t.namespace)
	req := mutatedObject(t, body, nil, r.state.View(false))
	req.following = r.set.replayedMAPs
	if r.mutatorsAt(ev.Received()).mayMutate(req) != "" {
		return false
	}
	ctx := request.WithNamespace(context.Background(), t.namespace)
	rest.FillObjectMetaSystemFields(body)
	if rest.BeforeCreate(s.Main, ctx, body) != nil {
		return false
	}
	why := "the server generated it when it stored the create at " + src + ", which the log holds without its result"
	unknowns := append(settle(ev, t, admission.NewAttributesRecord(body, nil, t.reqKind, t.namespace, t.name, t.gvr, "", t.op, nil, false, nil), ev.RequestObject),
		vapccel.Unknown{Path: objectPath("metadata", "resourceVersion"), Why: why},
		vapccel.Unknown{Path: objectPath("metadata", "managedFields"), Why: "what the handler's field manager wrote at " + src + ", which the log holds without its result"})
	_ = r.state.PutPartly(sw.gr, body, unknowns, src+" (the create's body, as the handler decoded it and its strategy prepared it)")
	return true
}

// followCustomUpdate follows a custom resource's update or patch (of it or its status) the log
// holds at a level without its result (Request), as followCustomCreate does a create: the
// object admission saw, rebuilt from the State's version and the request as the decision does
// (the update's body, or the patch applied and decoded as the patcher does, through the
// strategy's rest.BeforeUpdate), is the one the store kept when no admission changed it and
// it is stored in the request's version. It follows only a write the State's version is the
// one it read of: not one a write that completed while it ran raced. What the server
// generated (its resourceVersion), what its field manager wrote and what the State did not
// know of the version before stay unknown. It says whether it followed the write (helper exT:
// a custom resource patched at level Request was unknown to every request after it).
// followedDespite are the parts of an event an export may lose that do not change what a
// custom resource's write stored: who made it (the field manager's entry, which the follow
// leaves unknown, is named by the query or the user agent), the audit level, a failure's
// message (helper exAH: AKS's Log Analytics rows, which lose impersonation, left every merge
// patch of a param unfollowed).
const followedDespite = auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostImpersonation | auditlog.LostLevel | auditlog.LostMessage

func (r *Replayer) followCustomUpdate(sw stateWrite, src string) bool {
	ev, t := sw.ev, sw.t
	if (ev.Verb != "update" && ev.Verb != "patch") || t.op != admission.Update || (t.sub != "" && t.sub != "status") || t.name == "" ||
		ev.Code() != http.StatusOK || t.reqKind.Empty() || kubescheme.Knows(t.reqKind) || t.reqKind != t.mainKind ||
		r.storedInOtherVersion(t) || len(recordedWebhooks(ev)) > 0 || r.cat.c.Obscured(t.gvr) != "" || ev.Loss.Lost&^followedDespite != 0 {
		return false
	}
	p := r.state.PriorOf(sw.gr, t.namespace, t.name, 0, receivedOf(ev), false)
	if p.Raw == nil || p.Unknown != "" || p.RacedBy != "" || ev.Received().IsZero() {
		return false
	}
	b := rebuilt{req: verify.Request{Operation: t.op, Resource: t.gvr, SubResource: t.sub, Kind: t.reqKind, Namespace: t.namespace, Name: t.name, UserInfo: ev.Requester()}}
	old, ok := b.oldFromState(ev, t, p, r.convertPrior)
	if !ok || old == nil || b.oldUnknown.is() {
		return false
	}
	b.req.OldObject = old
	r.newObject(&b, ev, t, ev.Query(), p, old, r.facts, nil)
	if b.indeterminate.is() || b.req.Object == nil {
		return false
	}
	req := mutatedObject(t, b.req.Object, old, r.state.View(false))
	req.following = r.set.replayedMAPs
	if r.mutatorsAt(ev.Received()).mayMutate(req) != "" {
		return false
	}
	r.prepareCustomResource(ev, t, &b)
	if b.indeterminate.is() || b.prepared == nil {
		return false
	}
	stored := b.prepared.DeepCopy()
	unknowns := slices.Clone(p.Unknowns)
	for _, u := range b.unknowns {
		if u.Path.Root == "object" {
			unknowns = append(unknowns, u)
		}
	}
	why := "the server generated it when it stored the write at " + src + ", which the log holds without its result"
	unknowns = append(unknowns,
		vapccel.Unknown{Path: objectPath("metadata", "resourceVersion"), Why: why},
		vapccel.Unknown{Path: objectPath("metadata", "managedFields"), Why: "what the handler's field manager wrote at " + src + ", which the log holds without its result"})
	_ = r.state.PutPartly(sw.gr, stored, unknowns, src+" (the "+ev.Verb+" as the replay rebuilt it on "+p.Source+")")
	return true
}
