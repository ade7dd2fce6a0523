package replay

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vapc-dev/vapc/verify/internal/redact"
)

// secretValues gathers, for a request on Secrets, the values of the objects the replay built
// for it (nil for any other resource): a policy's message, audit annotation or warning may
// quote them, and every output of the replay (JSON lines, text, JUnit, the report) is shared
// more widely than the audit log it read. See Record.scrubSecret.
func secretValues(t target, objs ...*unstructured.Unstructured) *redact.Values {
	if t.gvr.Group != "" || t.gvr.Resource != "secrets" {
		return nil
	}
	v := &redact.Values{}
	for _, u := range objs {
		v.Of(u)
	}
	return v
}

// scrubSecret removes from the record of a request on a Secret the values its objects hold,
// from every text the replay writes of it, once, before the summary or a sink sees it: the
// decision and the comparison with the log are made. What the policies answered on another
// version of the Secret (a lag's alternative, the first attempt's annotations, the log's
// verdicts a disagreement quotes) holds values the record's objects do not: it is written as
// redact.Mark. A value the record shows anyway (in the Secret's name or namespace) stays.
func (r *Record) scrubSecret() {
	v := r.secret
	if v == nil {
		return
	}
	r.secret = nil
	v.Shown(r.Namespace, r.Name)
	for i := range r.Alternatives {
		a := &r.Alternatives[i]
		if a.refusal {
			// Another refusal on the same objects.
			a.Message, a.Detail, a.Warnings, a.AuditAnnotations = v.Scrub(a.Message), v.Scrub(a.Detail), v.ScrubAll(a.Warnings), v.ScrubValues(a.AuditAnnotations)
			continue
		}
		a.Message, a.Warnings, a.AuditAnnotations, a.Detail = redact.Marked(a.Message), redact.MarkedAll(a.Warnings), redact.MarkedValues(a.AuditAnnotations), v.Scrub(a.Detail)
	}
	if r.AnnotationsSource != "" {
		r.AuditAnnotations = redact.MarkedValues(r.AuditAnnotations)
	}
	r.Disagreements = redact.Quoted(r.Disagreements)
	if r.recordedVerdict != "" {
		r.recordedVerdict = redact.Mark
	}
	if v.Empty() {
		return
	}
	r.Message, r.Indeterminate = v.Scrub(r.Message), v.Scrub(r.Indeterminate)
	r.Notes, r.Warnings, r.AuditAnnotations = v.ScrubAll(r.Notes), v.ScrubAll(r.Warnings), v.ScrubValues(r.AuditAnnotations)
	for i := range r.Results {
		res := &r.Results[i]
		res.Message, res.AuditAnnotations = v.Scrub(res.Message), v.ScrubValues(res.AuditAnnotations)
	}
}
