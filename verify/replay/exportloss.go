package replay

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// An event read from a managed cluster's export may lack parts of the log backend's event
// (auditlog.Lost: GKE's entries carry the user's name but not their groups, uid or extra, nor
// when the request was received, its audit level, the query of its URI or every HTTP code).
// The event holds zero values in their place; the replay never decides on them:
//
//   - the user's groups, uid and extra, whether the request was a dry run, and the options
//     its query gave (a write's fieldManager, fieldValidation and force, a connect's command;
//     a DELETE's when it has no body) are fields of request a policy reads
//     (request.userInfo.*, request.dryRun, request.options): they are unknown fields
//     (exportUnknowns), as is a CertificateSigningRequest's copy of them in its spec (the
//     strategy's PrepareForCreate), and a decision that reads them is indeterminate with
//     ReasonExportLost; whom a request impersonated lost (AKS's Log Analytics), the whole
//     user is unknown, but its name where RBAC's reason names it
//     (auditlog.Event.AuthorizedUsername);
//     an authorizer check is not answered as kube-apiserver answers a member of
//     system:masters (the rebuilt user is a member of no group), and the ReasonAuthorizer
//     says so (explainLoss);
//   - the received time opens every window of the replay (what ran concurrently with the
//     request, what the informers may not have held yet) as early as the request can have
//     been received (auditlog.Event.Received), and the indeterminate records those windows
//     make say so (explainLoss);
//   - the level is the lowest the event's objects allow (Metadata without objects), and the
//     query's selectors of a deletecollection are not known (exportListUnknown);
//   - a successful update or patch may have created its object (201): unless the State knows
//     the object was there, the operation is not known (exportUndecided);
//   - an event CloudWatch Logs cut at its size limit keeps its head (the request, the user,
//     the response's status) and loses its objects, its received time and its annotations,
//     which hold the log's verdicts of the request: it is replayed as an event at level
//     Metadata (the State stops knowing what it wrote; its own objects are not known), and a
//     request that could be decided without them is not (exportUndecided): its verdicts are
//     not known to compare.

// ReasonExportLost: the decision depends on what the export the event was read from does not
// carry (the user's groups, uid or extra, whether it was a dry run, whether an update created
// its object).
const ReasonExportLost Reason = "export-lost"

// exportUnknowns are the fields of the request (whose operation is op) an export lost of its
// event.
func exportUnknowns(ev *Event, op admission.Operation) []vapccel.Unknown {
	l := ev.Loss
	if !l.Any() {
		return nil
	}
	var out []vapccel.Unknown
	for _, f := range []struct {
		lost auditlog.Lost
		path []string
	}{
		{auditlog.LostGroups, []string{"userInfo", "groups"}},
		{auditlog.LostUID, []string{"userInfo", "uid"}},
		{auditlog.LostExtra, []string{"userInfo", "extra"}},
		{auditlog.LostDryRun, []string{"dryRun"}},
	} {
		if l.Lost.Has(f.lost) {
			out = append(out, vapccel.Unknown{Path: vapccel.FieldPath{Root: "request", Steps: f.path}, Why: l.Of(f.lost)})
		}
	}
	nameKnown := false
	if l.Lost.Has(auditlog.LostImpersonation) {
		if name := ev.AuthorizedUsername(); name != "" {
			// Authorization names the user admission saw (the Requester): only the rest of
			// whom the request may have impersonated is not known.
			nameKnown = true
			why := l.Of(auditlog.LostImpersonation) + "; its authorization (" + auditlog.AnnotationAuthzReason + ") names the user " + name + ", but not the groups, uid and extra of a user the request impersonated"
			for _, f := range []string{"groups", "uid", "extra"} {
				out = append(out, vapccel.Unknown{Path: vapccel.FieldPath{Root: "request", Steps: []string{"userInfo", f}}, Why: why})
			}
		} else {
			out = append(out, vapccel.Unknown{Path: vapccel.FieldPath{Root: "request", Steps: []string{"userInfo"}}, Why: l.Of(auditlog.LostImpersonation)})
		}
	}
	if userCopied(ev) {
		// The CertificateSigningRequest strategy copies the requesting user into the object's
		// spec before admission (PrepareForCreate): what the export lost of the user, it lost
		// there too.
		for _, f := range userCopiedFields {
			if f.field == "username" && nameKnown {
				continue // the user admission saw, whose name the strategy copied
			}
			lost := f.lost
			if !l.Lost.Has(lost) {
				lost = auditlog.LostImpersonation // whom the request impersonated lost, the whole user is
			}
			if l.Lost.Has(lost) {
				out = append(out, vapccel.Unknown{Path: objectPath("spec", f.field), Why: l.Of(lost) + " (the CertificateSigningRequest's spec." + f.field + ", which kube-apiserver copies from the user)"})
			}
		}
	}
	if l.Lost.Has(auditlog.LostQuery) {
		// The field manager a write names in its query (fieldManager) names the managedFields
		// entry it writes.
		out = append(out, vapccel.Unknown{Path: objectPath("metadata", "managedFields"), Why: l.Of(auditlog.LostQuery) + " (its fieldManager)"})
		switch ev.Verb {
		case "delete", "deletecollection":
			if !hasBody(ev.RequestObject) {
				// Delete options come from the body, or else from the query
				// (handlers.DeleteResource).
				out = append(out, vapccel.Unknown{Path: vapccel.FieldPath{Root: "request", Steps: []string{"options"}}, Why: l.Of(auditlog.LostQuery) + " (delete options given as parameters)"})
			}
		default:
			// Other requests' options come from the query only: a write's (CreateOptions,
			// UpdateOptions, PatchOptions: fieldManager, fieldValidation, force, dryRun), a
			// connect's (an exec's command, container and streams).
			out = append(out, vapccel.Unknown{Path: vapccel.FieldPath{Root: "request", Steps: []string{"options"}}, Why: l.Of(auditlog.LostQuery) + " (the request's options: a write's fieldManager, fieldValidation and force, a connect's command and container)"})
			if op == admission.Connect {
				// A connect's object is its options (PodExecOptions, PodAttachOptions,
				// PodPortForwardOptions, a proxy's path), which the handler decodes from the
				// query (rest.ConnectResource): the export lost all of it.
				out = append(out, vapccel.Unknown{Path: vapccel.FieldPath{Root: "object"}, Why: l.Of(auditlog.LostQuery) + " (a connect's options, its object: an exec's command and container, a port forward's ports)"})
			}
		}
	}
	return out
}

// userCopiedFields are the fields of a CertificateSigningRequest's spec its strategy copies
// from the requesting user, and the part of the user each is.
var userCopiedFields = []userField{{auditlog.LostGroups, "groups"}, {auditlog.LostUID, "uid"}, {auditlog.LostExtra, "extra"}, {auditlog.LostImpersonation, "username"}}

// userField is a field an object holds of the requesting user, and the part of the user it is.
type userField struct {
	lost  auditlog.Lost
	field string
}

// userCopied says whether the request's object gets the requesting user's attributes from
// its registry strategy before admission: a CertificateSigningRequest's create.
func userCopied(ev *Event) bool {
	ref := ev.ObjectRef
	return ev.Verb == "create" && ref != nil && ref.APIGroup == "certificates.k8s.io" && ref.Resource == "certificatesigningrequests" && ref.Subresource == ""
}

// lostByExport says whether an unknown field of a request whose operation is op is one the
// export the event was read from lost: the user's attributes (and a CertificateSigningRequest's
// copy of them, userCopied), whether the request was a dry run, which every log backend's
// event carries (but for the dry run of a DELETE whose options its level leaves out:
// unlogged.go), and the query's options (a connect's object).
func lostByExport(ev *Event, op admission.Operation, u vapccel.Unknown) bool {
	steps := u.Path.Steps
	switch {
	case !ev.Loss.Any():
		return false
	case len(steps) == 0:
		// A connect's object, its options, is its query's (exportUnknowns).
		return u.Path.Root == "object" && op == admission.Connect && ev.Loss.Lost.Has(auditlog.LostQuery)
	}
	switch u.Path.Root {
	case "request":
		return steps[0] == "userInfo" || steps[0] == "dryRun" || (steps[0] == "options" && ev.Loss.Lost.Has(auditlog.LostQuery))
	case "object":
		return userCopied(ev) && len(steps) == 2 && steps[0] == "spec" && slices.ContainsFunc(userCopiedFields, func(f userField) bool { return f.field == steps[1] })
	}
	return false
}

// exportListUnknown says why what a deletecollection deleted is not known when its export
// lost the query, which holds its selectors; "" otherwise.
func exportListUnknown(ev *Event) string {
	if ev.Verb == "deletecollection" && ev.Loss.Lost.Has(auditlog.LostQuery) {
		return ev.Loss.Of(auditlog.LostQuery) + ", which holds its label and field selectors"
	}
	return ""
}

// exportUndecided says why a request cannot be decided whatever the policies read: an event
// whose export lost its annotations (the log's verdicts of the request); a successful update
// or patch whose export lost its HTTP code may have created its object (201, a CREATE for
// admission) unless the State knows the object was there before.
func (j *job) exportUndecided() undecided {
	ev := j.ev
	switch {
	case ev.Loss.Lost.Has(auditlog.LostAnnotations | auditlog.LostLevel):
		return because(ReasonExportLost, ev.Loss.Of(auditlog.LostAnnotations|auditlog.LostLevel)+" of this event, which it cut at its size limit: neither the objects admission saw nor its verdicts are known")
	case ev.Loss.Lost.Has(auditlog.LostAnnotations):
		// A Log Analytics query that left the column out.
		return because(ReasonExportLost, ev.Loss.Of(auditlog.LostAnnotations)+" of this event: its verdicts are not known")
	}
	if !ev.Loss.Lost.Has(auditlog.LostCode) || j.t.op != admission.Update || j.t.sub != "" || ev.Code() < 200 || ev.Code() >= 300 {
		return undecided{}
	}
	if j.prior.Found && j.prior.Unknown == "" || !successMayHaveCreated(ev, j.t) {
		return undecided{}
	}
	return because(ReasonExportLost, fmt.Sprintf("%s: whether the %s created the object (201, a CREATE for admission), and the replay does not know that %s %s was there before",
		ev.Loss.Of(auditlog.LostCode), ev.Verb, j.t.gvr.GroupResource(), state.JoinKey(j.t.namespace, j.t.name)))
}

// successMayHaveCreated says whether a successful update or patch of the target may have
// created its object, as far as its event tells: not when the object it answered with was
// created, to the second, before the earliest the request can have been received (a create
// stamps the second it ran: rest.FillObjectMetaSystemFields); nor when it is a patch whose
// body no server-side apply could have sent (patchVariants), as no other patch creates (the
// patcher's createNewObject answers NotFound but for apply); nor an update no update of its
// resource creates (updateMayCreate). (The managedFields of its answer do not tell: an apply
// that creates writes its manager's entry alone, but a mutating webhook or policy may add
// others, which the field manager keeps.)
func successMayHaveCreated(ev *Event, t target) bool {
	if h, err := auditlog.DecodeHeader(ev.ResponseObject); hasBody(ev.ResponseObject) && err == nil {
		if ct := h.GetCreationTimestamp(); !ct.IsZero() && ct.Time.Before(ev.Received().Truncate(time.Second)) {
			return false
		}
	}
	if ev.Verb == "patch" && hasBody(ev.RequestObject) && !slices.Contains(patchVariants(ev.RequestObject, ev), types.ApplyYAMLPatchType) {
		return false
	}
	return ev.Verb != "update" || updateMayCreate(t)
}

// updateMayCreate says whether an update (PUT) of the target may create its object: not a
// subresource's (its store's strategy never allows it), nor one of a resource whose store's
// update strategy does not (apiserver.Server.CreatesOnUpdate: a config map, a node, a pod, a
// deployment; Store.Update answers NotFound), nor a custom resource (t.custom: the
// apiextensions apiserver's strategy never allows it). A lease, an event, a service do; so may
// a resource neither the pipeline nor the catalog knows (an aggregated API's).
func updateMayCreate(t target) bool {
	if t.sub != "" {
		return false
	}
	srv, err := pipelineServer()
	if err != nil {
		return !t.custom
	}
	// A built-in resource is served before a CRD's of the same group and resource.
	if creates, known := srv.CreatesOnUpdate(t.gvr.GroupResource()); known {
		return creates
	}
	return !t.custom
}

// lossOfReason are the parts an export may lose that a reason may rest on.
var lossOfReason = map[Reason]auditlog.Lost{
	ReasonOldObjectUnknown:   auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostObjects,
	ReasonParamUnknown:       auditlog.LostReceived,
	ReasonNamespaceUnknown:   auditlog.LostReceived,
	ReasonWatchCache:         auditlog.LostReceived,
	ReasonParamKindPending:   auditlog.LostReceived,
	ReasonMutationUnknown:    auditlog.LostReceived | auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostDryRun | auditlog.LostImpersonation,
	ReasonUnknownField:       auditlog.LostReceived | auditlog.LostQuery | auditlog.LostObjects,
	ReasonNoObject:           auditlog.LostLevel | auditlog.LostObjects,
	ReasonStateUnknown:       auditlog.LostReceived | auditlog.LostQuery,
	ReasonPluginInputUnknown: auditlog.LostReceived,
	ReasonPolicySource:       auditlog.LostReceived,
	ReasonAuthorizer:         auditlog.LostGroups | auditlog.LostImpersonation,
	ReasonRebuild:            auditlog.LostQuery | auditlog.LostLevel | auditlog.LostObjects,
}

// explainLoss names, in an indeterminate record, the export its event was read from and what
// it does not carry that the reason may rest on: the replay held it as unknown as it can be.
func explainLoss(out *Record, ev *Event) {
	if out == nil || out.Decision != DecisionIndeterminate || !ev.Loss.Any() || out.Reason == ReasonExportLost {
		return
	}
	lost := ev.Loss.Lost & lossOfReason[out.Reason]
	if lost == 0 {
		return
	}
	note := ev.Loss.Of(lost)
	if lost.Has(auditlog.LostReceived) {
		note += fmt.Sprintf(" (the replay takes the request as received %s before it completed, the most kube-apiserver's --request-timeout allows)", auditlog.MaxRequestDuration)
	}
	if lost.Has(auditlog.LostGroups) && out.Reason == ReasonAuthorizer {
		note += " (whether the user is a member of system:masters, whom kube-apiserver allows every check, is not known)"
	}
	out.Indeterminate += "; " + note
}

// labelledDryRuns follows, on the ordered stage, whether the export labels dry runs: GKE puts
// command.gke.io/dryRun on the entries of dry-run requests (since 2026; a GKE before did not,
// and an entry without it was then of either). Where an entry of the export shows the label,
// the cluster's GKE labels them, and the entries without it were no dry runs: their write
// happened (the State follows it), and request.dryRun is false. Run looks for the label in
// the export's files before the replay (source.LabelsDryRuns); a log read once (streamed) is
// known from its first labelled entry on.
func (r *Replayer) labelledDryRuns(ev *Event) {
	switch {
	case ev.Loss.Export == "":
	case ev.Loss.DryRunLabelled:
		r.dryRunLabels = ev.Loss.Export
	case r.dryRunLabels == ev.Loss.Export && ev.Loss.Lost.Has(auditlog.LostDryRun):
		ev.Loss.Lost &^= auditlog.LostDryRun
	}
}
