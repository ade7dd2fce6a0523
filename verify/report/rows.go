package report

import (
	"encoding/json"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/verify/replay"
	"github.com/vapc-dev/vapc/verify/report/internal/redact"
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
		row.Disagreements = recordedMarked(row.Disagreements)
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
	list := func(in []string) []string {
		if in == nil {
			return nil
		}
		out := make([]string, len(in))
		for i, x := range in {
			out[i] = s(x)
		}
		return out
	}
	row.Notes, row.Warnings, row.Alternatives, row.Disagreements = list(row.Notes), list(row.Warnings), list(row.Alternatives), list(row.Disagreements)
	if row.AuditAnnots != nil {
		m := make(map[string]string, len(row.AuditAnnots))
		for k, v := range row.AuditAnnots {
			m[k] = s(v)
		}
		row.AuditAnnots = m
	}
	for i := range row.Results {
		row.Results[i].Message = s(row.Results[i].Message)
	}
}

// markAnswers replaces what the policies answered in a row (its message, its results'
// messages, its audit annotations' values and its warnings) by redact.Mark.
func markAnswers(row *Row) {
	row.Message = marked(row.Message)
	for i := range row.Results {
		row.Results[i].Message = marked(row.Results[i].Message)
	}
	row.AuditAnnots, row.Warnings = markedValues(row.AuditAnnots), markedAll(row.Warnings)
}

// marked is s as redact.Mark, "" as it is.
func marked(s string) string {
	if s == "" {
		return s
	}
	return redact.Mark
}

// markedValues is a copy of m with its values marked (the row's map is the record's).
func markedValues(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = marked(v)
	}
	return out
}

// markedAll is a new slice of as many redact.Mark as texts (the row's slice is the record's).
func markedAll(texts []string) []string {
	if texts == nil {
		return nil
	}
	return slices.Repeat([]string{redact.Mark}, len(texts))
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
			a.Message, a.AuditAnnotations, a.Warnings = marked(a.Message), markedValues(a.AuditAnnotations), markedAll(a.Warnings)
		}
		out = append(out, a.String())
	}
	return out
}

// recordedMarked are a sensitive request's disagreements with the messages and annotation
// values they quote as redact.Mark: the log's are what the server answered on the version it
// read, which a disagreement says is not the one the row's objects hold.
func recordedMarked(texts []string) []string {
	if texts == nil {
		return nil
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		if head, _, ok := strings.Cut(t, ": recorded ["); ok && head == replay.ValidationFailureAnnotation {
			out[i] = head + ": recorded and predicted differ: " + redact.Mark
			continue
		}
		var b strings.Builder
		for j := 0; j < len(t); j++ {
			if t[j] != '"' {
				b.WriteByte(t[j])
				continue
			}
			// A Go-quoted string (%q): to its closing quote, past its escapes.
			k := j + 1
			for k < len(t) && t[k] != '"' {
				if t[k] == '\\' {
					k++
				}
				k++
			}
			b.WriteString(`"` + redact.Mark + `"`)
			j = k
		}
		out[i] = b.String()
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
