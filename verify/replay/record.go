package replay

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// Decisions of a Record.
const (
	DecisionAdmit         = "admit"
	DecisionDeny          = "deny"
	DecisionIndeterminate = "indeterminate"
)

// Record is what a replay says about one request the policies match: one line of
// `vapc replay --output jsonl`.
type Record struct {
	Request
	// Decision is what kube-apiserver would answer: admit, deny or indeterminate.
	Decision string `json:"decision"`
	// Certainty says how the decision is known: certain (every state the server could have
	// been in decides alike), likely (decided on the state the log's order gives, where
	// another state the server could have been in only through a lag decides otherwise:
	// Alternatives says which and what each needs) or indeterminate.
	Certainty Certainty `json:"certainty"`
	Logged
	// Results lists every (binding, param) evaluation that did not admit: the validating
	// policies', and the errors of the MutatingAdmissionPolicies that refused the request
	// (result error, without actions).
	Results []RecordResult `json:"results"`
	// Reason is the code of why the decision is indeterminate (ReasonOldObjectUnknown, ...),
	// and Indeterminate the same for people: the code, ": " and a detail.
	Reason        Reason `json:"reason,omitempty"`
	Indeterminate string `json:"indeterminate"`
	// Code and Message are the response vapc predicts for a denial.
	Code    int32  `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Alternatives are the other outcomes kube-apiserver may have given the request, each
	// with what it needs: the other refusals when several policies, bindings or params deny
	// (verify.Decision.Denials: the server answers with the first in an order no log
	// determines; with --check-recorded, Code and Message are the one the log records when it
	// is among them), and the outcomes of the states a lag may have left the server in (see
	// Certainty).
	Alternatives []Alternative `json:"alternatives,omitempty"`
	// Warnings and AuditAnnotations are what the response and the audit event would carry.
	Warnings         []string          `json:"warnings,omitempty"`
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
	// ObjectSource and OldObjectSource say where the request's objects came from.
	ObjectSource    string `json:"objectSource,omitempty"`
	OldObjectSource string `json:"oldObjectSource,omitempty"`
	// AnnotationsSource, when set, says whose evaluation AuditAnnotations are where they are
	// not the decision's (its Results'): kube-apiserver's first attempt on an older copy of the
	// object (the audit event keeps each key's first value), or the live object in another
	// state its informers may have held.
	AnnotationsSource string   `json:"annotationsSource,omitempty"`
	Notes             []string `json:"notes,omitempty"`
	// Disagreements are the log's verdicts the prediction contradicts (--check-recorded).
	Disagreements []string `json:"disagreements,omitempty"`
	// Mutations are what the replayed MutatingAdmissionPolicies changed in the request's
	// object before the validating policies decided: a JSON patch per policy, binding and
	// param, in the order they ran.
	Mutations []verify.Change `json:"mutations,omitempty"`
	// Object and OldObject are the request's objects as the replay rebuilt them (nil when it
	// could not), and Policies the policies that can match the request. They are not written
	// out; the objects are the replay's own: a sink must not change them.
	Object    *unstructured.Unstructured `json:"-"`
	OldObject *unstructured.Unstructured `json:"-"`
	Policies  []string                   `json:"-"`

	// secret, for a request on a Secret, is where its values are, which the outputs' copy
	// of the record is scrubbed of (scrubbed).
	secret *secretSources
}

// Request is the request a Record is of: where the log holds it, and what it asked.
type Request struct {
	File           string `json:"file,omitempty"`
	Line           int    `json:"line,omitempty"`
	AuditID        string `json:"auditID"`
	StageTimestamp string `json:"stageTimestamp"`
	Verb           string `json:"verb"`
	Operation      string `json:"operation"`
	Resource       string `json:"resource"`
	Subresource    string `json:"subresource"`
	Namespace      string `json:"namespace"`
	Name           string `json:"name"`
	User           string `json:"user"`
	DryRun         bool   `json:"dryRun,omitempty"`
}

// Logged is what the log says validating admission did with a request, and whether the
// replay's decision differs.
type Logged struct {
	// Recorded is what the log says validating admission did: admit, deny or unknown;
	// RecordedBy says who denied, RecordedNote how the response was read.
	Recorded     string `json:"recorded"`
	RecordedBy   string `json:"recordedBy,omitempty"`
	RecordedNote string `json:"recordedNote,omitempty"`
	// Changed is true when the decision differs from what happened.
	Changed bool `json:"changed,omitempty"`

	recordedByVAP bool
	// recordedVerdict is the verdict of a replayed policy the log records for the request.
	recordedVerdict string
	// verdictUnproven says the recorded verdict is of a replayed policy whose verdicts were
	// not evidence (evidence.go): the log does not show it word for word.
	verdictUnproven bool
	// unmatched says no replayed policy matched the request (fill): the replay says nothing
	// of what the log records of it.
	unmatched bool
}

// RecordResult is one (binding, param) evaluation that did not admit.
type RecordResult struct {
	Policy           string            `json:"policy"`
	Binding          string            `json:"binding"`
	Param            string            `json:"param"`
	Result           string            `json:"result"`
	Actions          []string          `json:"actions"`
	ExpressionIndex  *int              `json:"expressionIndex,omitempty"`
	Message          string            `json:"message,omitempty"`
	Reason           string            `json:"reason,omitempty"`
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
}

func newRecord(j *job, b rebuilt) *Record {
	d, ev, t, rec := j.d, j.ev, j.t, j.rec
	name := t.name
	if name == "" && b.req.Object != nil {
		name = b.req.Object.GetName()
	}
	return &Record{
		Request: Request{
			File: d.file, Line: d.num,
			AuditID: ev.AuditID, StageTimestamp: ev.StageTimestamp, Verb: ev.Verb, Operation: string(t.op),
			Resource: t.gvr.Resource, Subresource: t.sub, Namespace: t.namespace, Name: name,
			User: ev.Requester().Username, DryRun: b.req.DryRun,
		},
		Logged: Logged{
			Recorded: orUnknown(rec.outcome), RecordedBy: rec.by, RecordedNote: rec.note,
			recordedByVAP: rec.policy != "", recordedVerdict: rec.verdict,
		},
		Results:      []RecordResult{},
		ObjectSource: b.objectSource, OldObjectSource: b.oldObjectSource,
		secret: secretSourcesOf(t, ev, j.prior, b.req.Object, b.req.OldObject, b.prepared),
		Object: cmp.Or(b.prepared, b.req.Object), OldObject: b.req.OldObject,
	}
}

// ifRefusalFirst is what another refusal of a request several policies, bindings or params
// deny needs.
const ifRefusalFirst = "kube-apiserver's informer caches list the policy, binding and param of this refusal first (their order follows Go map iteration, which no log records)"

func orUnknown(s string) string {
	if s == "" {
		return RecordedUnknown
	}
	return s
}

// failureSources is how many policies, bindings and params the entries of a validation_failure
// audit annotation's value come from (0 when it does not decode).
func failureSources(value string) int {
	if value == "" {
		return 0
	}
	var entries []struct{ Policy, Binding, Param string }
	if json.Unmarshal([]byte(value), &entries) != nil {
		return 0
	}
	seen := map[[3]string]bool{}
	for _, e := range entries {
		seen[[3]string{e.Policy, e.Binding, e.Param}] = true
	}
	return len(seen)
}

// fill sets the decision and results from the evaluator's Decision.
func (r *Record) fill(dec *verify.Decision) {
	r.Decision, r.Certainty = DecisionAdmit, CertaintyCertain
	if !dec.Allowed {
		r.Decision, r.Code, r.Message = DecisionDeny, dec.Code, dec.Message
		for _, d := range dec.Denials {
			r.Alternatives = append(r.Alternatives, Alternative{Decision: DecisionDeny, Code: d.Code, Message: d.Message,
				If: ifRefusalFirst, refusal: true})
		}
	}
	r.Warnings = dec.Warnings
	r.AuditAnnotations = dec.AuditAnnotations
	r.Notes = dec.Notes
	if dec.WarningsNotKnown() {
		w := dec.WarningsByChance()
		r.Warnings = slices.DeleteFunc(slices.Clone(r.Warnings), func(s string) bool { return slices.Contains(w, s) })
		r.Notes = append(slices.Clip(r.Notes), MapOrderWarningsNote)
	}
	for _, k := range joinedKeys(dec) {
		if n := len(annotationValues(dec, k)); n > 1 {
			// The apiserver joins them in the order of its informer caches
			// (auditAnnotationCollector.publish): the value may be another order of them.
			r.Notes = append(slices.Clip(r.Notes), fmt.Sprintf("audit annotation %s joins the values of %d of its policy's bindings or params in the order kube-apiserver's informer caches list them, which no log records: the server's may be another order of them", k, n))
		}
	}
	if n := failureSources(dec.AuditAnnotations[ValidationFailureAnnotation]); n > 1 {
		// The apiserver lists the audit failures in the order of its policies, bindings and
		// params, which follows its informer caches (policy_source.go calculatePolicyData
		// ranges over a map; helper exAL: the server's [a, b] every time, the replay's [b, a]).
		r.Notes = append(slices.Clip(r.Notes), fmt.Sprintf("audit annotation %s lists the failures of %d policies, bindings or params in the order kube-apiserver's informer caches list them, which no log records: the server's may be another order of them", ValidationFailureAnnotation, n))
	}
	r.unmatched = len(dec.Results) == 0
	results := dec.Results
	if m := dec.Mutation; m != nil && !m.Allowed {
		results = append(slices.Clip(results), m.Refusals...) // the mutating policies' errors that refused it
	}
	for _, res := range results {
		if res.Result == verify.ResultAdmit {
			continue
		}
		r.Results = append(r.Results, RecordResult{
			Policy: res.Policy, Binding: res.Binding, Param: res.Param.String(), Result: res.Result,
			Actions: actionStrings(res.Actions), ExpressionIndex: res.ExpressionIndex,
			Message: res.Message, Reason: string(res.Reason), AuditAnnotations: res.AuditAnnotations,
		})
	}
}

// joinedKeys are the audit annotations of dec that may join several results' values, in
// order: none where a single result gave them.
func joinedKeys(dec *verify.Decision) []string {
	if len(dec.Results) < 2 || len(dec.AuditAnnotations) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(dec.AuditAnnotations))
}

// refill replaces the decision and results of the record by those of dec.
func (r *Record) refill(dec *verify.Decision) {
	r.Results, r.Alternatives, r.Code, r.Message, r.Disagreements = []RecordResult{}, nil, 0, "", nil
	r.fill(dec)
}

func actionStrings(a []admissionregistrationv1.ValidationAction) []string {
	out := make([]string, len(a))
	for i, v := range a {
		out[i] = string(v)
	}
	return out
}

// changed sets Changed: the decision differs from what happened. A denial by someone else
// (a webhook, another plugin) stands whatever the policies decide; so does one a request no
// replayed policy matched got (it is recorded only for the alternatives of the states the
// server may have read): the replay says of it what it says of a request not matched.
func (r *Record) changed() {
	switch {
	case r.Decision == DecisionIndeterminate || r.Recorded == RecordedUnknown:
		r.Changed = false
	case r.Recorded == RecordedDeny && !r.recordedByVAP:
		r.Changed = false
	case r.Recorded == RecordedDeny && r.Decision == DecisionAdmit && r.unmatched:
		r.Changed = false
	default:
		r.Changed = r.Decision != r.Recorded
	}
}

// String is a one-line description of the request for examples.
func (r *Record) String() string {
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	return fmt.Sprintf("%s:%d %s %s %s by %s", r.File, r.Line, r.Verb, res, state.JoinKey(r.Namespace, r.Name), r.User)
}
