package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
)

// Decision is what kube-apiserver answers to an admission request, as far as
// ValidatingAdmissionPolicies decide it, and why.
type Decision struct {
	// Allowed is false when the request is refused.
	Allowed bool `json:"allowed"`
	// Code is the HTTP status code: 200 when allowed, else the code of the refusal (422 for
	// reason Invalid, 403 Forbidden, 401 Unauthorized, 413 RequestEntityTooLarge).
	Code int32 `json:"code"`
	// Reason is the status reason of a refusal.
	Reason metav1.StatusReason `json:"reason,omitempty"`
	// Message is the status message of a refusal, exactly as the apiserver returns it:
	// `pods "web-a" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied
	// request: ...`.
	Message string `json:"message,omitempty"`
	// Status is the whole status the apiserver returns for a refusal.
	Status *metav1.Status `json:"status,omitempty"`
	// Denials are every refusal the apiserver may answer with when several policies,
	// bindings or params deny, Message's first: the apiserver answers with the first denial in
	// the order of its policy and param informer caches, which follows Go map iteration and
	// changes with every refresh, so no input determines which. Empty unless several
	// distinct refusals are possible.
	Denials []Refusal `json:"denials,omitempty"`
	// Warnings are the Warning headers of the response.
	Warnings []string `json:"warnings,omitempty"`
	// AuditAnnotations are the annotations the request's audit event gets.
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
	// Results say what each policy, binding and param evaluated, in evaluation order.
	Results []Result `json:"results,omitempty"`
	// Authorizer lists the checks the validating policies made through `authorizer` (the
	// mutating policies' are the Mutation's); when Configured(Authorizer) is not empty the
	// decision depended on the configured authorizer.
	Authorizer []AuthorizerCheck `json:"authorizer,omitempty"`
	// Notes say where the decision rests on an assumption of vapc's.
	Notes []string `json:"notes,omitempty"`
	// UnknownAnnotations are the "<policy>/<key>" audit annotations whose values the caller
	// found it does not know, and why (a replay's: what their valueExpressions read is not
	// known, and the decision does not depend on them); they are not in AuditAnnotations.
	UnknownAnnotations map[string]string `json:"-"`
	// Mutation is what the MutatingAdmissionPolicies did before the validating policies
	// decided (nil without mutating policies); Object is the object they decided on when a
	// mutation changed it (JSON, in the request's version).
	// ByChance, when set, says why the failure messages of the decision are not known: they
	// list a map's keys in the order CEL iterated the map, which changes from one evaluation to
	// the next, and the caller's WithMessageOrder does not show the server's.
	ByChance string `json:"-"`
	// chanceKeys are the audit annotations whose values may follow map order
	// (AnnotationsByChance).
	chanceKeys []string
	// quietWarnings says the warnings of the bindings whose outcomes follow map order, where
	// the verdict does not, are not known (withoutQuietOutcomes).
	quietWarnings bool
	Mutation      *Mutation       `json:"mutation,omitempty"`
	Object        json.RawMessage `json:"object,omitempty"`
}

// Forget takes the audit annotation full ("<policy>/<key>", or the apiserver's own such as the
// validation_failure annotation) out of the decision and its results, as one whose value the
// caller does not know (why): it goes in UnknownAnnotations, with a note. The maps it changes
// are copied first: a decision's maps may be shared.
func (d *Decision) Forget(full, why string) {
	if _, done := d.UnknownAnnotations[full]; done {
		return
	}
	if d.UnknownAnnotations == nil {
		d.UnknownAnnotations = map[string]string{}
	}
	d.UnknownAnnotations[full] = why
	if _, ok := d.AuditAnnotations[full]; ok {
		d.AuditAnnotations = maps.Clone(d.AuditAnnotations)
		delete(d.AuditAnnotations, full)
	}
	if policy, key, ok := strings.Cut(full, "/"); ok {
		for i := range d.Results {
			if r := &d.Results[i]; r.Policy == policy {
				if _, has := r.AuditAnnotations[key]; has {
					r.AuditAnnotations = maps.Clone(r.AuditAnnotations)
					delete(r.AuditAnnotations, key)
				}
			}
		}
	}
	d.Notes = append(slices.Clip(d.Notes), "audit annotation "+full+" is not known: "+why)
}

// Refusal is one status the apiserver may refuse a request with.
type Refusal struct {
	Code    int32               `json:"code"`
	Reason  metav1.StatusReason `json:"reason,omitempty"`
	Message string              `json:"message"`
	// ChanceWording is the end of Message a messageExpression worded by listing a map's keys
	// in the order CEL iterated the map (Result.MessageByChance): another evaluation of the
	// request may word it otherwise. Empty for other refusals, and for the decision's own.
	ChanceWording string `json:"-"`
	// OutcomeByChance says the refusal is a binding's whose policy may decide otherwise in
	// another order of a map's keys (Result.OutcomeByChance): another evaluation of the request
	// may not give it, or give another of the binding's.
	OutcomeByChance bool `json:"-"`
}

// Refuses says whether the decision is a refusal with the code and message, or, when several
// refusals are possible, with any of them.
func (d *Decision) Refuses(code int32, message string) bool {
	return slices.ContainsFunc(d.Refusals(), func(r Refusal) bool { return r.Code == code && r.Message == message })
}

// Refusals are the refusals the apiserver may answer the request with: Denials, or the
// decision's one refusal (marked OutcomeByChance when a result whose outcome follows map
// order gave it); none when it admits.
func (d *Decision) Refusals() []Refusal {
	switch {
	case d.Allowed:
		return nil
	case len(d.Denials) > 0:
		return d.Denials
	}
	// With one distinct refusal, a denying result whose outcome follows map order gave it.
	byChance := slices.ContainsFunc(d.Results, func(r Result) bool { return r.OutcomeByChance && r.denies() })
	return []Refusal{{Code: d.Code, Reason: d.Reason, Message: d.Message, OutcomeByChance: byChance}}
}

// denials builds the refusal of every denying result, as the dispatcher builds the error of
// its first denied decision (validating.dispatcher.Dispatch): the policy and binding named in
// the message, admission.NewForbidden, the decision's reason (Invalid when empty) and its
// code (validating's unexported reasonToCode), then the handlers' ErrorToAPIStatus.
func denials(a admission.Attributes, dec *Decision) []Refusal {
	if dec.Allowed {
		return nil
	}
	type response struct {
		code    int32
		reason  metav1.StatusReason
		message string
	}
	seen := map[response]int{}
	var out []Refusal
	add := func(r Refusal) {
		k := response{r.Code, r.Reason, r.Message}
		if i, ok := seen[k]; ok {
			out[i].OutcomeByChance = out[i].OutcomeByChance || r.OutcomeByChance // the response's own
			return
		}
		seen[k] = len(out)
		out = append(out, r)
	}
	add(Refusal{Code: dec.Code, Reason: dec.Reason, Message: dec.Message})
	// The dispatcher answers with the first denied decision. A policy's binding and param give
	// their validations' decisions in order, then their audit annotations' errors: only the
	// first of those that denies can be it (the results list annotation errors first).
	type evaluation struct{ policy, binding, param string }
	firstOf := map[evaluation]int{}
	var order []evaluation
	for i, r := range dec.Results {
		if !r.denies() {
			continue
		}
		k := evaluation{r.Policy, r.Binding, ""}
		if r.Param != nil {
			k.param = r.Param.String()
		}
		j, ok := firstOf[k]
		switch {
		case !ok:
			firstOf[k] = i
			order = append(order, k)
		case r.ExpressionIndex != nil && (dec.Results[j].ExpressionIndex == nil || *r.ExpressionIndex < *dec.Results[j].ExpressionIndex):
			firstOf[k] = i
		}
	}
	for _, k := range order {
		r := dec.Results[firstOf[k]]
		msg := fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", r.Policy, r.Message)
		if r.Binding != "" {
			msg = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", r.Policy, r.Binding, r.Message)
		}
		err, ok := admission.NewForbidden(a, errors.New(msg)).(*apierrors.StatusError)
		if !ok {
			continue
		}
		reason := r.Reason
		if reason == "" {
			reason = metav1.StatusReasonInvalid
		}
		err.ErrStatus.Reason = reason
		err.ErrStatus.Code = reasonToCode(reason)
		st := responsewriters.ErrorToAPIStatus(err)
		refusal := Refusal{Code: st.Code, Reason: st.Reason, Message: st.Message}
		if r.MessageByChance {
			refusal.ChanceWording = r.Message
		}
		refusal.OutcomeByChance = r.OutcomeByChance
		add(refusal)
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// WarningPrefix is how a response's warning of a Warn binding's failed validation begins, as
// the dispatcher words it (validating.dispatcher.Dispatch), the validation's message after it
// (which the apiserver's warning recorder may truncate).
func WarningPrefix(policy, binding string) string {
	return fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': ", policy, binding)
}

// reasonToCode mirrors the unexported reasonToCode of
// k8s.io/apiserver/pkg/admission/plugin/policy/validating/policy_decision.go.
func reasonToCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	default:
		return http.StatusUnprocessableEntity
	}
}

// Decision words for Result.Result.
const (
	ResultAdmit = "admit"
	ResultDeny  = "deny"
	ResultError = "error"
)

// Result is the outcome of one policy, binding and param for a request: one row per failed
// validation (deny), error (error), or, when nothing failed, one admit row.
type Result struct {
	Policy  string    `json:"policy"`
	Binding string    `json:"binding,omitempty"`
	Param   *ParamRef `json:"param,omitempty"`
	// Result is admit, deny (a validation is false) or error (a configuration or runtime
	// error).
	Result string `json:"result"`
	// Actions are the binding's validationActions the result triggered; empty for admit
	// rows and for errors that failurePolicy Ignore dropped.
	Actions []admissionregistrationv1.ValidationAction `json:"actions,omitempty"`
	// ExpressionIndex is the index of the validation in spec.validations; for a
	// matchCondition's error under failurePolicy Fail, 0: the index of the evaluation's one
	// decision, which kube-apiserver's validation_failure entry of an Audit binding gives it.
	ExpressionIndex *int                `json:"expressionIndex,omitempty"`
	Message         string              `json:"message,omitempty"`
	Reason          metav1.StatusReason `json:"reason,omitempty"`
	// AuditAnnotations are the audit annotations this evaluation published, by key (the
	// request's annotation is "<policy>/<key>", joined across bindings).
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
	// MatchCondition names the matchCondition that was false, so that the policy did not
	// apply (result admit).
	MatchCondition string `json:"matchCondition,omitempty"`
	// ParamNotFound says the binding found no params and its parameterNotFoundAction Allow
	// admitted (result admit).
	ParamNotFound bool `json:"paramNotFound,omitempty"`
	// MessageByChance says Message is a messageExpression's value that may list a map's keys
	// in the order CEL iterated the map (WithMapOrder): kube-apiserver's may list them in
	// another order.
	MessageByChance bool `json:"messageByChance,omitempty"`
	// OutcomeByChance says a validation's expression or a matchCondition of the policy may
	// list a map's keys in the order CEL iterated the map (WithMapOrder): kube-apiserver's
	// evaluation may have come out otherwise.
	OutcomeByChance bool `json:"outcomeByChance,omitempty"`
}

// ParamRef names a param object.
type ParamRef struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String returns namespace/name, or name.
func (p *ParamRef) String() string {
	if p == nil {
		return ""
	}
	if p.Namespace == "" {
		return p.Name
	}
	return p.Namespace + "/" + p.Name
}

func (r Result) denies() bool {
	for _, a := range r.Actions {
		if a == admissionregistrationv1.Deny {
			return true
		}
	}
	return false
}

// newDecision turns the dispatcher's error into the status the apiserver responds with
// (responsewriters.ErrorToAPIStatus, as its handlers do).
func newDecision(err error) *Decision {
	if err == nil {
		return &Decision{Allowed: true, Code: http.StatusOK}
	}
	st := responsewriters.ErrorToAPIStatus(err)
	return &Decision{Code: st.Code, Reason: st.Reason, Message: st.Message, Status: st}
}

// maxAuditAnnotationValueLength mirrors the dispatcher's cap on an audit annotation value.
const maxAuditAnnotationValueLength = 10 * 1024

// results turns the trace into result rows.
func (e *Evaluator) results(t *trace) []Result {
	var out []Result
	for _, p := range t.policies {
		hook := e.byName[p.name]
		fail := hook == nil || hook.Policy.Spec.FailurePolicy == nil || *hook.Policy.Spec.FailurePolicy != admissionregistrationv1.Ignore
		configErr := func(r Result, err error, what string) Result {
			r.Result, r.Message = ResultError, fmt.Sprintf("failed to configure %s: %v", what, err)
			if fail {
				r.Actions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
			}
			return r
		}
		if p.err != nil {
			out = append(out, configErr(Result{Policy: p.name}, p.err, "policy"))
			continue
		}
		for _, b := range p.bindings {
			base := Result{Policy: p.name, Binding: b.name}
			switch {
			case b.err != nil:
				out = append(out, configErr(base, b.err, "binding"))
				continue
			case len(b.params) == 0:
				base.Result, base.Message, base.ParamNotFound = ResultAdmit, "no params found: parameterNotFoundAction Allow", true
				out = append(out, base)
				continue
			}
			for k, ev := range b.evals {
				// The dispatcher wraps typed params (wrappedParam), hiding their names: take
				// the k-th of the params it collected, in the same order.
				var param runtime.Object
				if !b.notParams && k < len(b.params) {
					param = b.params[k]
				}
				out = append(out, evalResults(base, hook, b, ev, param)...)
			}
		}
	}
	return out
}

// skippedMessages are the messages of results a matchCondition skipped, by its name: the
// dispatcher evaluates a policy once per param, and most requests skip most policies.
var skippedMessages sync.Map

func skippedMessage(condition string) string {
	if m, ok := skippedMessages.Load(condition); ok {
		return m.(string)
	}
	m := fmt.Sprintf("matchCondition %q is false: the policy does not apply", condition)
	skippedMessages.Store(condition, m)
	return m
}

func evalResults(base Result, hook *validating.PolicyHook, b *bindingTrace, ev *evalTrace, param runtime.Object) []Result {
	base.Param = paramRef(param)
	if ev.match != nil && !ev.match.Matches && ev.match.Error == nil {
		base.Result, base.MatchCondition = ResultAdmit, ev.match.FailedConditionName
		base.Message = skippedMessage(ev.match.FailedConditionName)
		return []Result{base}
	}
	var annotations map[string]string
	var rows []Result
	for _, aa := range ev.result.AuditAnnotations {
		switch aa.Action {
		case validating.AuditAnnotationActionPublish:
			v := aa.Value
			if len(v) > maxAuditAnnotationValueLength {
				v = v[:maxAuditAnnotationValueLength]
			}
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[aa.Key] = v
		case validating.AuditAnnotationActionError:
			r := base
			r.Result, r.Message = ResultError, aa.Error
			r.Actions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
			rows = append(rows, r)
		}
	}
	for i, d := range ev.result.Decisions {
		if d.Evaluation == validating.EvalAdmit {
			continue
		}
		r := base
		r.Result, r.Message, r.Reason = ResultError, d.Message, d.Reason
		if d.Evaluation == validating.EvalDeny {
			r.Result = ResultDeny
		}
		// The dispatcher's index of the decision, which a validation_failure entry carries:
		// a validation's, or 0 for a matchCondition's error, the evaluation's one decision.
		idx := i
		r.ExpressionIndex = &idx
		if d.Action == validating.ActionDeny {
			r.Actions = b.actions
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		base.Result = ResultAdmit
		rows = append(rows, base)
	}
	rows[0].AuditAnnotations = annotations
	return rows
}

func paramRef(o runtime.Object) *ParamRef {
	if o == nil {
		return nil
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return nil
	}
	return &ParamRef{Namespace: m.GetNamespace(), Name: m.GetName()}
}

// Summary is a one-line account of the decision: "admit", or "deny 422 Invalid: message".
func (d *Decision) Summary() string {
	if d.Allowed {
		s := "admit"
		if len(d.Warnings) > 0 {
			s += fmt.Sprintf(" with %d warnings", len(d.Warnings))
		}
		return s
	}
	return strings.TrimSpace(fmt.Sprintf("deny %d %s: %s", d.Code, d.Reason, d.Message))
}
