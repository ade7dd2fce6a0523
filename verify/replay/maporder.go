package replay

import (
	"encoding/json"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// messageOrder is what the log holds of the values kube-apiserver gave the job's request's
// failure messages and audit annotations that may follow the order CEL iterated a map
// (verify.MessageOrder): the message of a denial by the result's policy and binding, which the
// response holds, the validation_failure annotation's entries of an Audit binding, and the
// audit annotations. The evaluator evaluates a decision again until its values are those (the
// order the server took), and does not claim them where the log does not hold them and they
// change.
func (j *job) messageOrder(dec *verify.Decision) (known, agrees bool) {
	known, agrees = true, true
	annotations := j.ev.Annotations != nil || !j.ev.Loss.Any() // a GKE entry without labels lost them
	var logged []validationFailure
	if v := j.ev.Annotations[ValidationFailureAnnotation]; v != "" && json.Unmarshal([]byte(v), &logged) != nil {
		annotations = false
	}
	for _, r := range dec.Results {
		if !r.MessageByChance {
			continue
		}
		if slices.Contains(r.Actions, admissionregistrationv1.Deny) {
			switch {
			case j.ev.Loss.Lost.Has(auditlog.LostMessage) || j.rec.policy != r.Policy || j.rec.binding != r.Binding:
				known = false // the response does not show this result's denial
			case !strings.HasSuffix(j.ev.Message(), "denied request: "+r.Message):
				agrees = false
			}
		}
		if slices.Contains(r.Actions, admissionregistrationv1.Audit) {
			if !annotations {
				known = false
				continue
			}
			if !slices.ContainsFunc(logged, func(f validationFailure) bool {
				return f.Policy == r.Policy && f.Binding == r.Binding && r.ExpressionIndex != nil && f.ExpressionIndex == *r.ExpressionIndex && f.Message == r.Message
			}) {
				agrees = false
			}
		}
	}
	for _, k := range dec.AnnotationsByChance() {
		if v, ok := j.ev.Annotations[k]; !annotations {
			known = false
		} else if !ok || v != dec.AuditAnnotations[k] {
			agrees = false
		}
	}
	return known, agrees
}

// byChanceOf is why the failure messages of the first validating admission of vs whose
// messages follow map order are not known (verify.Decision.ByChance), or "".
func byChanceOf(vs []served) string {
	for _, v := range vs {
		for _, c := range v.calls {
			if c.dec != nil && c.dec.ByChance != "" {
				return c.dec.ByChance
			}
		}
	}
	return ""
}
