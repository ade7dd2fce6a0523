package replay

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/vapc-dev/vapc/verify"
)

// ValidationFailureAnnotation is the audit annotation in which the apiserver records the
// failures of bindings with the Audit action.
const ValidationFailureAnnotation = "validation.policy.admission.k8s.io/validation_failure"

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

// check compares the verdicts the log holds for the loaded policies with the prediction: the
// validation_failure annotation of Audit bindings, the policies' `<policy>/<key>` audit
// annotations, and a denial by a ValidatingAdmissionPolicy. It returns every disagreement;
// an empty, non-nil slice means the request was checked and agrees.
func check(ev *Event, rec recording, dec *verify.Decision, loaded map[string]bool) []string {
	out := []string{}
	if !rec.vapRan && ev.Annotations[ValidationFailureAnnotation] == "" {
		return nil // ValidatingAdmissionPolicy may not have run: nothing to compare
	}
	// validation_failure.
	recorded, err := failures(ev.Annotations[ValidationFailureAnnotation], loaded)
	if err != nil {
		out = append(out, "recorded "+ValidationFailureAnnotation+" does not decode: "+err.Error())
	}
	predicted, _ := failures(dec.AuditAnnotations[ValidationFailureAnnotation], loaded)
	if a, b := strings.Join(recorded, "\n"), strings.Join(predicted, "\n"); a != b {
		out = append(out, fmt.Sprintf("%s: recorded [%s], predicted [%s]", ValidationFailureAnnotation, strings.Join(recorded, "; "), strings.Join(predicted, "; ")))
	}
	// <policy>/<key> audit annotations.
	keys := map[string]bool{}
	for k := range ev.Annotations {
		keys[k] = true
	}
	for k := range dec.AuditAnnotations {
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
		got, gok := ev.Annotations[k]
		want, wok := dec.AuditAnnotations[k]
		switch {
		case gok && !wok:
			out = append(out, fmt.Sprintf("audit annotation %s: recorded %q, predicted none", k, got))
		case !gok && wok:
			out = append(out, fmt.Sprintf("audit annotation %s: recorded none, predicted %q", k, want))
		case got != want:
			out = append(out, fmt.Sprintf("audit annotation %s: recorded %q, predicted %q", k, got, want))
		}
	}
	// A denial by a loaded policy.
	if rec.policy != "" && loaded[rec.policy] {
		switch {
		case dec.Allowed:
			out = append(out, fmt.Sprintf("recorded denial by %s, predicted admit", rec.by))
		case dec.Message != ev.Message() || dec.Code != ev.Code():
			out = append(out, fmt.Sprintf("recorded denial %d %q, predicted %d %q", ev.Code(), ev.Message(), dec.Code, dec.Message))
		}
	}
	return out
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
