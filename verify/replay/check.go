package replay

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify"
)

// ValidationFailureAnnotation is the audit annotation in which the apiserver records the
// failures of bindings with the Audit action (verify's, which forgets it where they are not
// known).
const ValidationFailureAnnotation = verify.ValidationFailureAnnotation

// validationFailure is one entry of the ValidationFailureAnnotation (the apiserver's
// validating.ValidationFailureValue).
type validationFailure struct {
	Message           string   `json:"message"`
	Policy            string   `json:"policy"`
	Binding           string   `json:"binding"`
	ExpressionIndex   int      `json:"expressionIndex"`
	ValidationActions []string `json:"validationActions"`
}

func (f validationFailure) String() string {
	return fmt.Sprintf("%s/%s[%d] %v %q", f.Policy, f.Binding, f.ExpressionIndex, f.ValidationActions, f.Message)
}

// check compares the verdicts the log holds for the replayed policies it shows installed
// (loaded: see installed) with the prediction: the validation_failure annotation of Audit
// bindings, the policies' `<policy>/<key>` audit annotations, and a denial by a
// ValidatingAdmissionPolicy. It returns every disagreement; an empty, non-nil slice means the
// request was checked and agrees. A policy the log does not show installed has no verdicts in
// it to compare with.
func check(ev *Event, rec recording, dec *verify.Decision, loaded map[string]bool) []string {
	if len(loaded) == 0 || (!rec.vapRan && ev.Annotations[ValidationFailureAnnotation] == "") {
		return nil // no policy the server ran, or ValidatingAdmissionPolicy may not have run: nothing to compare
	}
	if ev.Loss.Any() && ev.Annotations == nil {
		// An export's event without annotations lost them (a GKE entry without labels):
		// every request authorization runs for has one (authorization.k8s.io/decision).
		// Their absence is no verdict: the response alone is compared.
		return append([]string{}, checkResponse(ev, rec, dec, loaded)...)
	}
	return append(checkAnnotations(ev, dec.AuditAnnotations, dec, loaded), checkResponse(ev, rec, dec, loaded)...)
}

// checkResponse compares the response the log records with the prediction's: a denial by a
// loaded policy, or an admission where the prediction is such a denial.
func checkResponse(ev *Event, rec recording, dec *verify.Decision, loaded map[string]bool) []string {
	switch {
	case rec.policy != "" && loaded[rec.policy]:
		// A denial by a loaded policy. When several deny, the server answers with any of them.
		switch {
		case dec.Allowed:
			return []string{fmt.Sprintf("recorded denial by %s, predicted admit", rec.by)}
		case !dec.Refuses(ev.Code(), ev.Message()):
			return []string{fmt.Sprintf("recorded denial %d %q, predicted %d %q", ev.Code(), ev.Message(), dec.Code, dec.Message)}
		}
	case rec.outcome == RecordedAdmit && !dec.Allowed && deniedBy(dec, loaded):
		// Admitted by the server, refused by the prediction.
		return []string{fmt.Sprintf("recorded admit (%d), predicted denial %d %q", ev.Code(), dec.Code, dec.Message)}
	}
	return nil
}

// checkAnnotations compares the audit annotations of the loaded policies the log holds with
// predicted, the annotations of dec or of another attempt at the request (see firstAttempt).
func checkAnnotations(ev *Event, predictedAnnotations map[string]string, dec *verify.Decision, loaded map[string]bool) []string {
	out := []string{}
	// validation_failure.
	recorded, err := failures(ev.Annotations[ValidationFailureAnnotation], loaded)
	if err != nil {
		out = append(out, "recorded "+ValidationFailureAnnotation+" does not decode: "+err.Error())
	}
	predicted, _ := failures(predictedAnnotations[ValidationFailureAnnotation], loaded)
	if _, unknown := dec.UnknownAnnotations[ValidationFailureAnnotation]; unknown {
		predicted = recorded // the replay does not know it (the answers of authorizer checks)
	}
	if a, b := strings.Join(recorded, "\n"), strings.Join(predicted, "\n"); a != b {
		out = append(out, fmt.Sprintf("%s: recorded [%s], predicted [%s]", ValidationFailureAnnotation, strings.Join(recorded, "; "), strings.Join(predicted, "; ")))
	}
	// <policy>/<key> audit annotations.
	keys := map[string]bool{}
	for k := range ev.Annotations {
		keys[k] = true
	}
	for k := range predictedAnnotations {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		p, _, ok := strings.Cut(k, "/")
		if ok && loaded[p] {
			sorted = append(sorted, k)
		}
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if _, unknown := dec.UnknownAnnotations[k]; unknown {
			continue // the replay does not know its value
		}
		got, gok := ev.Annotations[k]
		want, wok := predictedAnnotations[k]
		switch {
		case gok && !wok:
			out = append(out, fmt.Sprintf("audit annotation %s: recorded %q, predicted none", k, got))
		case !gok && wok:
			out = append(out, fmt.Sprintf("audit annotation %s: recorded none, predicted %q", k, want))
		case got != want && !joinedEqual(got, annotationValues(dec, k)):
			out = append(out, fmt.Sprintf("audit annotation %s: recorded %q, predicted %q", k, got, want))
		}
	}
	return out
}

// annotationValues are the distinct values the results published for the `<policy>/<key>`
// annotation k, in evaluation order.
func annotationValues(dec *verify.Decision, k string) []string {
	policy, key, _ := strings.Cut(k, "/")
	var out []string
	seen := map[string]bool{}
	for _, r := range dec.Results {
		if v, ok := r.AuditAnnotations[key]; ok && r.Policy == policy && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// joinedEqual says whether got is the values joined with ", " in some order: the apiserver
// joins the values of a policy's bindings and params in the order of its informer caches
// (auditAnnotationCollector.publish), which no input determines.
func joinedEqual(got string, values []string) bool {
	if len(values) < 2 || len(values) > 8 {
		return false
	}
	var permute func(rest []string, prefix string) bool
	permute = func(rest []string, prefix string) bool {
		if len(rest) == 0 {
			return prefix == got
		}
		for i, v := range rest {
			p := v
			if prefix != "" {
				p = prefix + ", " + v
			}
			if !strings.HasPrefix(got, p) {
				continue
			}
			next := append(append([]string(nil), rest[:i]...), rest[i+1:]...)
			if permute(next, p) {
				return true
			}
		}
		return false
	}
	return permute(values, "")
}

// failures decodes a validation_failure annotation and keeps the entries of loaded policies,
// as sorted strings.
func failures(value string, loaded map[string]bool) ([]string, error) {
	if value == "" {
		return nil, nil
	}
	var fs []validationFailure
	if err := json.Unmarshal([]byte(value), &fs); err != nil {
		return nil, err
	}
	var out []string
	for _, f := range fs {
		if loaded[f.Policy] {
			out = append(out, f.String())
		}
	}
	sort.Strings(out)
	return out, nil
}

// deniedBy says whether one of the policies denied the request in dec, or a replayed
// MutatingAdmissionPolicy refused it.
func deniedBy(dec *verify.Decision, policies map[string]bool) bool {
	if dec.Mutation != nil && !dec.Mutation.Allowed {
		return true
	}
	for _, r := range dec.Results {
		if policies[r.Policy] && r.Result != verify.ResultAdmit && slices.Contains(r.Actions, admissionregistrationv1.Deny) {
			return true
		}
	}
	return false
}
