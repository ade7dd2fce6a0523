package replay

// Reason is a stable code for why a replay did not decide a request (Record.Reason), skipped
// it (the keys of Summary.Skipped), or fails (Failure.Reason). It is what JSON consumers and
// code switch on; the text beside it (Record.Indeterminate, a note, Failure.Detail) is for
// people and may change.
type Reason string

// Reasons a request is indeterminate: what the replay does not know that the decision may
// depend on. Record.Indeterminate is the code followed by ": " and a detail.
const (
	// ReasonUnknownResource: the request is for a resource the replay's catalog does not
	// serve (a CRD it was not given).
	ReasonUnknownResource Reason = "unknown-resource"
	// ReasonNoObject: the event is logged without the request object (level Metadata, or a
	// request object that does not decode).
	ReasonNoObject Reason = "no-object"
	// ReasonDeleteCollection: the objects a deletecollection deleted cannot be rebuilt one
	// by one.
	ReasonDeleteCollection Reason = "deletecollection"
	// ReasonOldObjectUnknown: the State does not know the old object.
	ReasonOldObjectUnknown Reason = "old-object-unknown"
	// ReasonOldObjectVersion: the State knows the old object in a version that does not
	// convert to the request's.
	ReasonOldObjectVersion Reason = "old-object-version"
	// ReasonSubresourceKind: the old object of a subresource is a kind vapc does not derive.
	ReasonSubresourceKind Reason = "subresource-kind"
	// ReasonOptions: the request's options do not decode.
	ReasonOptions Reason = "options"
	// ReasonPatch: the patch of a request cannot be applied to the State's object.
	ReasonPatch Reason = "patch"
	// ReasonPatchType: the log does not record the patch's content type, and the types it
	// may have been decide differently.
	ReasonPatchType Reason = "patch-type"
	// ReasonDefaultedLabels: a Job's create logged with its pod template's labels may have
	// been sent with them or without (defaulted), and the two decide differently.
	ReasonDefaultedLabels Reason = "defaulted-labels"
	// ReasonRequestKind: the request object is not of the kind the resource takes.
	ReasonRequestKind Reason = "request-kind"
	// ReasonGeneratedName: the server generated the object's name before admission and the
	// log does not hold it.
	ReasonGeneratedName Reason = "generated-name"
	// ReasonRequest: the request could not be evaluated (an error of the evaluator).
	ReasonRequest Reason = "request"
	// ReasonMutationUnknown: what the replayed MutatingAdmissionPolicies changed is not
	// known, and the decision depends on it.
	ReasonMutationUnknown Reason = "mutation-unknown"
	// ReasonStateUnknown: the request pipeline read an object the State does not know.
	ReasonStateUnknown Reason = "state-unknown"
	// ReasonPluginInputUnknown: a built-in admission plugin read an object the State does
	// not know.
	ReasonPluginInputUnknown Reason = "plugin-input-unknown"
	// ReasonRebuild: sent through the request pipeline over the State, the request does not
	// end as the log says it did.
	ReasonRebuild Reason = "rebuild"
	// ReasonInternal: the replay failed on the request (a panic of its own, or of the
	// Kubernetes code it runs, recovered, as kube-apiserver's handler recovers one into a
	// 500): a bug of vapc's, which the detail names; the rest of the log is replayed.
	ReasonInternal Reason = "internal-error"
	// ReasonUnknownField: a policy reads a field of the request's objects the replay does
	// not know.
	ReasonUnknownField Reason = "unknown-field"
	// ReasonParamKindPending: kube-apiserver may not have found a policy's paramKind yet,
	// and the decision depends on it.
	ReasonParamKindPending Reason = "param-kind-pending"
	// ReasonParamKindUnknown: a policy's paramKind may be served by a CRD the replay does
	// not know.
	ReasonParamKindUnknown Reason = "param-kind-unknown"
	// ReasonParamUnknown: the decision read params the State does not know.
	ReasonParamUnknown Reason = "param-unknown"
	// ReasonNamespaceUnknown: the decision read a namespace the State does not know.
	ReasonNamespaceUnknown Reason = "namespace-unknown"
	// ReasonWatchCache: kube-apiserver may have admitted an update or a delete first on its
	// watch cache's copy of an older version of the object, and the audit annotations,
	// which keep that attempt's values, depend on which version it read.
	ReasonWatchCache Reason = "watch-cache"
	// ReasonAuthorizer: the decision depends on authorizer checks, which the audit log does
	// not answer.
	ReasonAuthorizer Reason = "authorizer"
	// ReasonMapOrder: a failure's message lists a map's keys in the order CEL iterated the
	// map, kube-apiserver's chance, and the log does not hold the server's.
	ReasonMapOrder Reason = "map-order"
	// ReasonNumberType: a custom resource's whole number, which the log writes as an integer,
	// may have been sent as a double (2.0), and the policies decide the two differently.
	ReasonNumberType Reason = "number-type"
)

// Skip reasons: requests that never reached validating admission. Summary.Skipped counts
// them by the code, followed by a note in parentheses where there is one.
const (
	SkipRead            Reason = "read"                      // get, list, watch
	SkipNonResource     Reason = "non-resource"              // /healthz, /version, discovery
	SkipUnauthenticated Reason = "unauthenticated"           // 401
	SkipUnauthorized    Reason = "unauthorized"              // 403 from the authorizer or impersonation
	SkipBeforeAdmission Reason = "rejected-before-admission" // refused before validating admission ran
	SkipPendingDeletion Reason = "graceful-deletion-pending" // a DELETE the server completes without admission
	SkipNothingDeleted  Reason = "nothing-deleted"           // a deletecollection that found no object to delete, and so admitted none
)

// undecided is why a request is indeterminate: a code and a human detail. The zero value
// means the request is not (yet) indeterminate.
type undecided struct {
	reason Reason
	detail string
}

func because(reason Reason, detail string) undecided {
	return undecided{reason: reason, detail: detail}
}

// is says whether the request is indeterminate.
func (u undecided) is() bool { return u.reason != "" }

// String is the code and the detail, as Record.Indeterminate holds them.
func (u undecided) String() string {
	if u.reason == "" {
		return ""
	}
	return string(u.reason) + ": " + u.detail
}

// indeterminate marks the record indeterminate for the reason.
func (r *Record) indeterminate(u undecided) {
	r.Decision, r.Certainty, r.Reason, r.Indeterminate = DecisionIndeterminate, CertaintyIndeterminate, u.reason, u.String()
	// What the log's verdicts contradicted of a decision made before (see check) is no claim,
	// and neither is what the response and the audit event would carry: the audit annotations
	// and warnings of an evaluation on a state or request the replay does not know (helper
	// exAJ: an observer's annotations of a request whose param was not known, or evaluated
	// without a MutatingAdmissionPolicy that refused it).
	r.Disagreements = nil
	r.AuditAnnotations, r.Warnings = nil, nil
	for i := range r.Results {
		r.Results[i].AuditAnnotations = nil
	}
	for i := range r.Alternatives {
		r.Alternatives[i].AuditAnnotations, r.Alternatives[i].Warnings = nil, nil
	}
}
