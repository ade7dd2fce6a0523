package replay

import (
	"cmp"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// Recorded outcomes: what the log says validating admission did.
const (
	RecordedAdmit   = "admit"
	RecordedDeny    = "deny"
	RecordedUnknown = "unknown"
)

var (
	vapDenied = regexp.MustCompile(`ValidatingAdmissionPolicy '([^']*)' (?:with binding '([^']*)' )?denied request: `)
	// ownDenial is what precedes a ValidatingAdmissionPolicy's denial of the request itself
	// (admission.NewForbidden): anything else wraps the denial of another request the server
	// made while serving it.
	ownDenial     = regexp.MustCompile(`^(\S+ "[^"]*" is forbidden: )?$`)
	webhookDenied = regexp.MustCompile(`admission webhook "([^"]*)" denied the request`)
	webhookFailed = regexp.MustCompile(`failed calling webhook "([^"]*)"`)
	// mapDenied is a MutatingAdmissionPolicy's refusal: kube-apiserver's policy dispatcher
	// (generic.PolicyError) puts it in place of admission.NewForbidden's message.
	mapDenied = regexp.MustCompile(`^policy '([^']*)' with binding '([^']*)' denied request: `)
)

// recording is what the log says happened to a request, as far as validating admission goes.
type recording struct {
	// outcome is admit, deny or unknown.
	outcome string
	// by says who denied: "ValidatingAdmissionPolicy 'p' with binding 'b'", a webhook, another
	// admission plugin.
	by string
	// byWebhook says an admission webhook denied the request, or its call failed.
	byWebhook bool
	// policy and binding of a denial by a ValidatingAdmissionPolicy.
	policy, binding string
	// vapRan is false when the request was refused before ValidatingAdmissionPolicy ran, or
	// may have been.
	vapRan bool
	// note explains the classification: "failed after admission: AlreadyExists".
	note string
	// skip, when set, says the request never reached validating admission.
	skip Reason
	// sure says the log shows the request never reached validating admission: the pipeline
	// is not asked.
	sure bool
	// verdict is the verdict of a replayed policy the log records for the request, for people
	// (see recordedVerdictOf); "" when there is none.
	verdict string
	// byPlugin says a built-in admission plugin that runs before ValidatingAdmissionPolicy
	// refused the request (as far as its answer tells: a 403 nothing else claims).
	byPlugin bool
}

// namesRequest says whether the prefix of a policy's denial (`pods "a" is forbidden: `, or
// none) names the request's own resource, as admission.NewForbidden names the attributes'
// GroupResource: a denial of another request the server made while serving it names that
// one's (the ResourceQuota plugin's update of a quota's status: `resourcequotas "q"`).
func namesRequest(prefix string, ev *Event) bool {
	ref := ev.ObjectRef
	if prefix == "" || ref == nil || ref.Resource == "" {
		return true
	}
	gr := ref.Resource
	if ref.APIGroup != "" {
		gr += "." + ref.APIGroup
	}
	return strings.HasPrefix(prefix, gr+` "`)
}

// classify reads the response of a final event.
func classify(ev *Event, connect bool) recording {
	code := ev.Code()
	msg := ev.Message()
	reason := ""
	if ev.ResponseStatus != nil {
		reason = ev.ResponseStatus.Reason
	}
	switch {
	case ev.Stage == auditlog.StagePanic:
		return recording{outcome: RecordedUnknown, note: "the request panicked"}
	case ev.ResponseStatus == nil || code == 0:
		return recording{outcome: RecordedUnknown, note: "no response status"}
	case code >= 200 && code < 300:
		return recording{outcome: RecordedAdmit, vapRan: true}
	}
	if i := vapDenied.FindStringIndex(msg); i != nil && (!ownDenial.MatchString(msg[:i[0]]) || !namesRequest(msg[:i[0]], ev)) {
		// A policy denied another request the server made for this one: a Service's IP
		// allocation creates an IPAddress (BeginCreate, before validating admission).
		if strings.Contains(msg[:i[0]], "failed to allocate") {
			return recording{skip: SkipBeforeAdmission, sure: true, note: "its allocation failed: a policy denied the request the allocator made (its own event in the log)"}
		}
		return recording{outcome: RecordedUnknown, note: "failed on another request the server made for it, which a policy denied: cannot tell whether admission ran"}
	}
	if m := vapDenied.FindStringSubmatch(msg); m != nil {
		r := recording{outcome: RecordedDeny, policy: m[1], binding: m[2], vapRan: true}
		r.by = "ValidatingAdmissionPolicy '" + m[1] + "'"
		if m[2] != "" {
			r.by += " with binding '" + m[2] + "'"
		}
		return r
	}
	if m := webhookDenied.FindStringSubmatch(msg); m != nil {
		// Mutating webhooks run before ValidatingAdmissionPolicy, validating ones after, and
		// their denials read the same; the event's mutation annotations name the mutating
		// webhooks the server called.
		if calledMutating(ev, m[1]) {
			return recording{skip: SkipBeforeAdmission, sure: true, note: `refused by the mutating admission webhook "` + m[1] + `", which runs before ValidatingAdmissionPolicy (the event's mutation annotations name it)`}
		}
		return recording{outcome: RecordedDeny, by: `admission webhook "` + m[1] + `"`, byWebhook: true, note: "a webhook denied: ValidatingAdmissionPolicy ran before it if it is a validating webhook"}
	}
	if m := mapDenied.FindStringSubmatch(msg); m != nil && code == http.StatusForbidden {
		return recording{outcome: RecordedDeny, by: "MutatingAdmissionPolicy '" + m[1] + "' with binding '" + m[2] + "'",
			note: "refused by a MutatingAdmissionPolicy, which runs before ValidatingAdmissionPolicy"}
	}
	if m := webhookFailed.FindStringSubmatch(msg); m != nil {
		if calledMutating(ev, m[1]) {
			return recording{skip: SkipBeforeAdmission, sure: true, note: `the call of the mutating admission webhook "` + m[1] + `" failed, before ValidatingAdmissionPolicy (the event's mutation annotations name it)`}
		}
		return recording{outcome: RecordedDeny, by: `admission webhook "` + m[1] + `" (call failed)`, byWebhook: true, note: "a webhook call failed"}
	}
	if messageLost(ev) {
		if ev.Annotations["authorization.k8s.io/decision"] == "forbid" {
			return recording{skip: SkipUnauthorized}
		}
		// A policy's denial and another refusal of the same code read the same without it.
		failed := "failed with " + httpCode(code)
		if ev.Loss.Lost.Has(auditlog.LostCode) {
			failed = "failed, and " + ev.Loss.Of(auditlog.LostCode)
		}
		return recording{outcome: RecordedUnknown, note: failed + ", and " + ev.Loss.Of(auditlog.LostMessage) + ": cannot tell whether a policy denied it"}
	}
	if ev.Loss.Lost.Has(auditlog.LostCode) && code >= 300 {
		// The export does not carry the failure's HTTP code, only its class (exportloss.go):
		// what refused the request, and whether admission ran before, is not known from it.
		return recording{outcome: RecordedUnknown, note: "failed, and " + ev.Loss.Of(auditlog.LostCode) + ": cannot tell whether admission ran"}
	}
	return classifyCode(ev, code, msg, reason, connect)
}

// calledMutating says whether the event's mutation annotations (at every level but None) name
// the webhook among the mutating webhooks the server called: a denial or a failed call of
// one is before validating admission.
func calledMutating(ev *Event, webhook string) bool {
	return slices.ContainsFunc(recordedWebhooks(ev), func(c webhookCall) bool { return c.hasMutation && c.name == webhook })
}

// classifyCode reads a refusal no policy, webhook or mutating policy claims, and whose export
// kept its message and code, by its code.
func classifyCode(ev *Event, code int32, msg, reason string, connect bool) recording {
	verb := ev.Verb
	switch code {
	case 401:
		return recording{skip: SkipUnauthenticated}
	case 403:
		return classifyForbidden(ev, msg)
	case 404:
		if ref := ev.ObjectRef; verb == "create" && ref != nil && ref.Resource == "pods" && ref.APIGroup == "" &&
			(ref.Subresource == "eviction" || ref.Subresource == "binding") && strings.HasPrefix(msg, `pods "`) {
			// EvictionREST.Create and BindingREST.Create run validating admission on the Eviction or
			// Binding before they look the pod up.
			return recording{outcome: RecordedAdmit, vapRan: true, note: "failed after admission: the pod does not exist"}
		}
		if tokenRequest(ev) && !strings.HasPrefix(msg, `serviceaccounts "`) && !strings.HasPrefix(msg, `pod "`) {
			// TokenREST.Create runs validating admission after it reads the service account
			// and before it reads the object the token is bound to. (NodeRestriction, before
			// validating admission, looks a node's bound pod up in its informer, whose lister
			// names the resource singular: `pod "p" not found`; TokenREST's store `pods`.)
			return recording{outcome: RecordedAdmit, vapRan: true, note: "failed after admission: the object the token is bound to does not exist"}
		}
		if ref := ev.ObjectRef; (verb == "create" || verb == "update" || verb == "patch") && ref != nil && ref.APIGroup == "rbac.authorization.k8s.io" &&
			(ref.Resource == "rolebindings" || ref.Resource == "clusterrolebindings") && ref.Subresource == "" &&
			strings.HasPrefix(msg, ref.Resource+`.rbac.authorization.k8s.io "`) && !strings.HasPrefix(msg, ref.Resource+`.rbac.authorization.k8s.io "`+ref.Name+`" `) {
			// The RBAC storage (policybased) looks the role a binding refers to up before it
			// creates or updates the binding, for a user who may neither escalate nor bind it:
			// a role that does not exist refuses it before admission, NotFound naming the
			// role in the binding's resource (helper exAG).
			return recording{skip: SkipBeforeAdmission, sure: true, note: "the role it binds does not exist: the RBAC storage looks it up before admission"}
		}
		return recording{skip: SkipBeforeAdmission, note: "NotFound"}
	case 409:
		if verb == "create" && !connect {
			return recording{outcome: RecordedAdmit, vapRan: true, note: "failed after admission: " + reasonOr(reason, "Conflict")}
		}
		// An update's resourceVersion (Store.Update, before updateValidation), a delete's
		// preconditions (before validateDeletion), an apply's field conflicts: all before
		// validating admission on the live object. When the pipeline over the State gets past
		// them, the State is not the version the server held (a write logged later ran
		// concurrently). Another object's conflict (the ResourceQuota plugin's, after the
		// policies) is the pipeline's to tell.
		return recording{skip: SkipBeforeAdmission, sure: conflictOnObject(ev, msg), note: "Conflict"}
	case 422:
		if allocationFailed(ev, msg) {
			return recording{skip: SkipBeforeAdmission, sure: true, note: "the address or port it asked for could not be allocated"}
		}
		if verb == "patch" && msg == patchFailed {
			// The patcher's answer when the patch does not apply to the object it read (a
			// JSON patch's path missing, a list of lists: NewGenericServerResponse with no
			// message), before admission: the pipeline getting past it over the State says
			// only that the State is not the version the server read.
			return recording{skip: SkipBeforeAdmission, sure: true, note: "its patch did not apply to the object"}
		}
		return recording{skip: SkipBeforeAdmission, note: "Invalid"}
	case 400, 405, 406, 413, 415:
		if code == 400 && tokenRequest(ev) && strings.HasPrefix(msg, "cannot bind token") {
			// TokenREST.Create checks the bound object after validating admission.
			return recording{outcome: RecordedAdmit, vapRan: true, note: "failed after admission: " + firstLine(msg)}
		}
		return recording{skip: SkipBeforeAdmission, note: reasonOr(reason, "BadRequest")}
	case 429:
		if ev.ObjectRef != nil && ev.ObjectRef.Subresource == "eviction" && strings.Contains(msg, "disruption budget") {
			return recording{outcome: RecordedAdmit, vapRan: true, note: "failed after admission: the eviction would violate a PodDisruptionBudget"}
		}
		return recording{skip: SkipBeforeAdmission, note: "TooManyRequests"}
	}
	return recording{outcome: RecordedUnknown, note: "failed with " + reasonOr(reason, httpCode(code)) + ": cannot tell whether admission ran"}
}

// ranBeforeFailing is the recording of a request classified as refused before admission (rec)
// whose log's annotations show validating admission ran: admitted before what refused it, or,
// where an export lost the message, not known.
func ranBeforeFailing(ev *Event, rec recording) recording {
	if messageLost(ev) {
		return recording{outcome: RecordedUnknown, note: "failed, and " + ev.Loss.Of(auditlog.LostMessage) + ", after validating admission, which the log's annotations show ran"}
	}
	return recording{outcome: RecordedAdmit, vapRan: true, note: "failed after admission: " + cmp.Or(rec.note, httpCode(ev.Code())) + " (the log's annotations show validating admission ran)"}
}

// patchFailed is the message of kube-apiserver's 422 for a patch that does not apply
// (endpoints/handlers/patch.go: a generic server response without a message of its own).
const patchFailed = "the server rejected our request due to an error in our request"

// tokenRequest says whether the event is a create of a service account's TokenRequest.
func tokenRequest(ev *Event) bool {
	ref := ev.ObjectRef
	return ev.Verb == "create" && ref != nil && ref.Resource == "serviceaccounts" && ref.APIGroup == "" && ref.Subresource == "token"
}

// classifyForbidden reads a 403 no policy, webhook or mutating policy claims: the authorizer's
// or impersonation's, ResourceQuota's (after validating admission), a REST storage's after
// admission, or another admission plugin's, before validating admission.
func classifyForbidden(ev *Event, msg string) recording {
	switch {
	case ev.Annotations["authorization.k8s.io/decision"] == "forbid" || strings.Contains(msg, "cannot impersonate") ||
		(strings.Contains(msg, "User \"") && strings.Contains(msg, "\" cannot ")):
		return recording{skip: SkipUnauthorized}
	case slices.ContainsFunc(quotaRefusals, func(q string) bool { return strings.Contains(msg, q) }):
		return recording{outcome: RecordedDeny, by: "ResourceQuota", vapRan: true, note: "ResourceQuota runs after ValidatingAdmissionPolicy"}
	case slices.ContainsFunc(refusedAfterAdmission, func(q string) bool { return strings.Contains(msg, q) }):
		return recording{outcome: RecordedAdmit, vapRan: true, note: "failed after admission: " + firstLine(msg)}
	case slices.ContainsFunc(pluginRefusals, func(q string) bool { return strings.Contains(msg, q) }):
		return recording{skip: SkipBeforeAdmission, sure: true, note: "refused by an admission plugin that runs before ValidatingAdmissionPolicy: " + firstLine(msg)}
	}
	return recording{outcome: RecordedDeny, by: "another admission plugin", byPlugin: true, note: "denied by an admission plugin that may run before ValidatingAdmissionPolicy: " + firstLine(msg)}
}

// allocationFailed says whether a Service write was refused because an address or node port it
// asked for could not be allocated (k8s.io/kubernetes/pkg/registry/core/service/storage,
// alloc.go: allocClusterIPs, initNodePorts, updateNodePorts), which the service registry's
// BeginCreate and BeginUpdate do before validating admission. The replay's pipeline allocates
// from ranges that take any address or port, so it cannot tell.
func allocationFailed(ev *Event, msg string) bool {
	if ref := ev.ObjectRef; ref == nil || ref.Resource != "services" || ref.APIGroup != "" || ref.Subresource != "" {
		return false
	}
	return strings.Contains(msg, "spec.clusterIPs: Invalid value: ") && strings.Contains(msg, "failed to allocate IP") ||
		strings.Contains(msg, ".nodePort: Invalid value: ") && (strings.Contains(msg, "provided port is already allocated") || strings.Contains(msg, "provided port is not in the valid range"))
}

// refusedAfterAdmission are the 403s of REST storages that refuse after validating admission
// admitted the request (k8s.io/kubernetes/pkg/registry/core: an eviction a
// PodDisruptionBudget blocks, pod/storage/eviction.go; a TokenRequest the token's binding
// refuses, serviceaccount/storage/token.go).
var refusedAfterAdmission = []string{
	`poddisruptionbudget.policy "`,
	`serviceaccounts/token "`,
}

// pluginRefusals are the 403s of built-in admission plugins that kube-apiserver runs before
// ValidatingAdmissionPolicy, whatever the object (k8s.io/kubernetes/plugin/pkg/admission/
// certificates: CertificateApproval, CertificateSigning, CertificateSubjectRestriction): the
// replay need not know the object to tell (helper exAG: a CSR's approval at level Metadata).
var pluginRefusals = []string{
	"user not permitted to approve requests with signerName ",
	"user not permitted to sign requests with signerName ",
	"use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed",
}

// quotaRefusals are the refusals of the ResourceQuota admission plugin, which runs after
// ValidatingAdmissionPolicy (k8s.io/apiserver/pkg/admission/plugin/resourcequota): a quota
// exceeded, one whose status its controller has not computed yet (a new quota), a limit it
// requires that the object does not set.
var quotaRefusals = []string{"exceeded quota: ", "status unknown for quota: ", "failed quota: ", "quota usage is negative for resource(s): ",
	"insufficient quota to consume: ", "unable to get previous usage since prior version of object was not found"}

func reasonOr(reason, def string) string {
	if reason != "" {
		return reason
	}
	return def
}

func httpCode(code int32) string { return "HTTP " + strconv.Itoa(int(code)) }

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// conflictOnObject says whether a 409's message is the conflict of the request's own object:
// `Operation cannot be fulfilled on <resource or kind> "<name>": ...` with the request's name and
// not another resource's, or a server-side apply's field conflicts.
func conflictOnObject(ev *Event, msg string) bool {
	if strings.HasPrefix(msg, "Apply failed with ") {
		return true
	}
	const prefix = "Operation cannot be fulfilled on "
	rest, ok := strings.CutPrefix(msg, prefix)
	if !ok || ev.ObjectRef == nil {
		return false
	}
	what, rest, _ := strings.Cut(rest, " ")
	ref := ev.ObjectRef
	ownResource := what == ref.Resource || what == ref.Resource+"."+ref.APIGroup ||
		(what != "" && what[0] >= 'A' && what[0] <= 'Z') // a Kind, as a delete's precondition names it
	return ownResource && strings.HasPrefix(rest, `"`+ref.Name+`"`)
}

// messageLost says whether the event is a failure of a code a ValidatingAdmissionPolicy's
// denial answers (401, 403, 413, 422: the validating dispatcher's reasonToCode) whose message
// an export lost: the message alone tells a policy's denial from another refusal of that code.
// A failure whose exact code the export lost too may be of one of those codes (GKE gives 413 a
// gRPC code that 500 has: random parity seed c:475, a policy's denial with the reason
// RequestEntityTooLarge, read as admitted before a failure).
func messageLost(ev *Event) bool {
	if !ev.Loss.Lost.Has(auditlog.LostMessage) {
		return false
	}
	switch ev.Code() {
	case 401, 403, 413, 422:
		return true
	}
	return ev.Loss.Lost.Has(auditlog.LostCode)
}
