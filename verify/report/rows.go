package report

import (
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/verify/internal/redact"
	"github.com/vapc-dev/vapc/verify/replay"
)

// addRow adds a request to the table while the table has room (rows and bytes), with its
// objects while the budget for objects lasts. A sensitive request's objects keep their key names only, and the
// values they held are scrubbed from every text of the row.
func (b *Builder) addRow(r *replay.Record, t int64, node, outcome string, outs []BindingOutcome) {
	b.total++
	if len(b.rows) >= b.maxRows {
		b.leftOutBy[outcome]++
		return
	}
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	row := Row{
		T: t, Time: r.StageTimestamp, File: r.File, Line: r.Line, AuditID: r.AuditID,
		User: r.User, Group: requesterGroup(r.User, r.Subresource), Verb: r.Verb, Resource: res,
		Namespace: r.Namespace, Name: r.Name, Node: node,
		Decision: r.Decision, Code: r.Code, Message: r.Message, Certainty: likelyOnly(r.Certainty),
		Recorded: r.Recorded, RecordedBy: r.RecordedBy, Changed: r.Changed,
		Outcome: outcome, Bindings: outs, Results: []Result{},
		Indeterminate: r.Indeterminate, ObjectSource: r.ObjectSource, OldObjectSource: r.OldObjectSource, AnnotationsSource: r.AnnotationsSource,
		Notes: r.Notes, Warnings: r.Warnings, AuditAnnots: r.AuditAnnotations,
		Disagreements: r.Disagreements,
	}
	if row.Bindings == nil {
		row.Bindings = []BindingOutcome{}
	}
	for _, x := range r.Results {
		row.Results = append(row.Results, Result{Policy: x.Policy, Binding: x.Binding, Param: x.Param, Result: x.Result, Actions: x.Actions, Message: x.Message, Reason: x.Reason})
	}
	switch {
	case len(r.Results) > 0 && r.Results[0].Reason != "":
		row.Reason = r.Results[0].Reason
	case r.Reason != "":
		row.Reason = string(r.Reason)
	}

	group, groupKnown := objectGroup(r.Object, r.OldObject)
	sensitive := b.redactor.Sensitive(group, groupKnown, r.Resource)
	var vals redact.Values
	obj := redact.Object(r.Object, sensitive, &vals)
	old := redact.Object(r.OldObject, sensitive, &vals)
	row.Redacted = sensitive
	secretParam := slices.ContainsFunc(r.Results, func(x replay.RecordResult) bool { return b.secretParams[x.Policy] })
	row.Alternatives = alternativeTexts(r.Alternatives, sensitive || secretParam)
	if sensitive || secretParam {
		row.Disagreements = redact.Quoted(row.Disagreements)
	}
	if sensitive && r.AnnotationsSource != "" || secretParam {
		// Answered on another version of the object (the first attempt's, on the watch
		// cache's copy), or on a param that may be a Secret: values the scrub does not know.
		markAnswers(&row)
	}
	if sensitive {
		scrubRow(&row, &vals)
	}
	if size, err := json.Marshal(row); err == nil {
		if b.rowBytes+len(size) > maxRowBytes {
			b.leftOutBy[outcome]++
			b.maxRows = len(b.rows) // the table is full
			return
		}
		b.rowBytes += len(size)
	}
	var objJSON, oldJSON []byte
	if obj != nil {
		objJSON, _ = json.Marshal(obj)
	}
	if old != nil {
		oldJSON, _ = json.Marshal(old)
	}
	if n := len(objJSON) + len(oldJSON); n > 0 {
		if b.objectBytes+n > b.maxObjectBytes {
			row.ObjectsLeftOut = true
			b.objectsLeftOut++
		} else {
			b.objectBytes += n
			row.Object, row.OldObject = objJSON, oldJSON
		}
	}
	b.rows = append(b.rows, row)
}

// objectGroup is the API group of a request's objects.
func objectGroup(objs ...*unstructured.Unstructured) (string, bool) {
	for _, u := range objs {
		if u == nil || u.GetAPIVersion() == "" {
			continue
		}
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		if err == nil {
			return gv.Group, true
		}
	}
	return "", false
}

// scrubRow removes the values of a sensitive request's objects from every text of its row.
func scrubRow(row *Row, vals *redact.Values) {
	if vals.Empty() {
		return
	}
	s := vals.Scrub
	row.Message = s(row.Message)
	row.Indeterminate = s(row.Indeterminate)
	row.Notes, row.Warnings, row.Alternatives, row.Disagreements = vals.ScrubAll(row.Notes), vals.ScrubAll(row.Warnings), vals.ScrubAll(row.Alternatives), vals.ScrubAll(row.Disagreements)
	row.AuditAnnots = vals.ScrubValues(row.AuditAnnots)
	for i := range row.Results {
		row.Results[i].Message = s(row.Results[i].Message)
	}
}

// markAnswers replaces what the policies answered in a row (its message, its results'
// messages, its audit annotations' values and its warnings) by redact.Mark.
func markAnswers(row *Row) {
	row.Message = redact.Marked(row.Message)
	for i := range row.Results {
		row.Results[i].Message = redact.Marked(row.Results[i].Message)
	}
	row.AuditAnnots, row.Warnings = redact.MarkedValues(row.AuditAnnots), redact.MarkedAll(row.Warnings)
}

// alternativeTexts are the record's alternatives, each in one line. A sensitive request's
// give the message, audit annotations' values and warnings of each as redact.Mark: they are
// what the policies answered on another version of the object (the watch cache's copy a
// write replaced, a param's before the informers held a write), whose values the row's
// objects, and so the scrub, do not hold.
func alternativeTexts(alts []replay.Alternative, sensitive bool) []string {
	var out []string
	for _, a := range alts {
		if sensitive {
			a.Message, a.AuditAnnotations, a.Warnings = redact.Marked(a.Message), redact.MarkedValues(a.AuditAnnotations), redact.MarkedAll(a.Warnings)
		}
		out = append(out, a.String())
	}
	return out
}

// likelyOnly is the certainty a row shows: likely, or nothing (a certain decision, or an
// indeterminate one, which says so itself).
func likelyOnly(c replay.Certainty) string {
	if c == replay.CertaintyLikely {
		return string(c)
	}
	return ""
}
