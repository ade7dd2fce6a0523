package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// patchVariants are the content types a PATCH body may have been sent as: a JSON array is a
// JSON patch; an object is a merge patch, a strategic merge patch (built-in kinds only) or,
// with a fieldManager and apiVersion and kind, a server-side apply. A force parameter is valid
// for apply only, and only an apply creates its object (201).
func patchVariants(body []byte, ev *Event) []types.PatchType {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return []types.PatchType{types.JSONPatchType}
	}
	q := ev.Query()
	if q.Has("force") || ev.Code() == http.StatusCreated {
		// Of the patches, only a server-side apply creates the object it is about (the
		// patcher's createNewObject: the others are NotFound).
		return []types.PatchType{types.ApplyYAMLPatchType}
	}
	if strategicDirectives(body) {
		// A strategic merge patch generator wrote it (the kubelet's status patches,
		// kubectl's apply and edit): a merge patch carries no directive.
		return []types.PatchType{types.StrategicMergePatchType}
	}
	out := []types.PatchType{types.MergePatchType, types.StrategicMergePatchType}
	// An apply needs a fieldManager, in the query, which an export may have lost.
	if (q.Get("fieldManager") != "" || ev.Loss.Lost.Has(auditlog.LostQuery)) && bytes.Contains(body, []byte(`"apiVersion"`)) && bytes.Contains(body, []byte(`"kind"`)) {
		out = append(out, types.ApplyYAMLPatchType)
	}
	return out
}

// strategicDirectives says whether a patch's JSON object holds a key of a strategic merge
// patch's directives ($patch, $retainKeys, $setElementOrder/..., $deleteFromPrimitiveList/...,
// k8s.io/apimachinery/pkg/util/strategicpatch), which strategicpatch.CreateTwoWayMergePatch
// writes for the lists it changes and no JSON merge patch holds.
func strategicDirectives(body []byte) bool {
	if !bytes.Contains(body, []byte(`"$`)) {
		return false
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return false
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "$patch" || k == "$retainKeys" || strings.HasPrefix(k, "$setElementOrder/") || strings.HasPrefix(k, "$deleteFromPrimitiveList/") || walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// variantName names a patch type for notes.
func variantName(pt types.PatchType) string {
	switch pt {
	case types.JSONPatchType:
		return "json patch"
	case types.MergePatchType:
		return "merge patch"
	case types.StrategicMergePatchType:
		return "strategic merge patch"
	case types.ApplyYAMLPatchType, types.ApplyCBORPatchType:
		return "server-side apply"
	}
	return string(pt)
}

// describeServed says what a served request did, for notes and reasons.
func describeServed(s served) string {
	var b strings.Builder
	if s.variant != "" {
		b.WriteString("as a " + s.variant + ": ")
	}
	switch {
	case s.err != nil:
		b.WriteString("the evaluator failed: " + s.err.Error())
	case s.undecided != "":
		b.WriteString("not decided (" + s.undecided + ")")
	case len(s.calls) == 0 && s.resp.Code >= 300:
		fmt.Fprintf(&b, "refused before validating admission (%d", s.resp.Code)
		if s.resp.Status != nil {
			fmt.Fprintf(&b, " %s: %s", s.resp.Status.Reason, firstLine(s.resp.Status.Message))
		}
		b.WriteString(")")
	case len(s.calls) == 0:
		fmt.Fprintf(&b, "completed without validating admission (%d)", s.resp.Code)
	default:
		var ds []string
		for _, c := range s.calls {
			ds = append(ds, c.dec.Summary())
		}
		b.WriteString(strings.Join(ds, "; "))
	}
	return b.String()
}

// sameServed says whether two served variants lead to the same outcome: the same changes of
// the replayed mutating policies, then the same admissions with the same decisions, or the
// same refusal before admission.
func sameServed(a, b served) bool { return servedDiff(a, b) == "" }

// servedDiff names what of the outcome of b differs from a's (see sameServed), for people:
// empty when nothing does.
func servedDiff(a, b served) string {
	switch {
	case a.err != nil || b.err != nil:
		return "whether they evaluate"
	case (a.undecided == "") != (b.undecided == ""):
		return "whether what the replay does not know decides them"
	case a.undecided != "":
		// Neither is decided: what each would give rests on values the replay chose (an
		// address it allocated), not the server's.
		return ""
	case len(a.calls) != len(b.calls):
		return "whether they reach validating admission"
	case !sameMutation(a.mutation, b.mutation):
		return "what the MutatingAdmissionPolicies changed"
	case len(a.calls) == 0 && a.resp.Code != b.resp.Code:
		return "the response"
	}
	for i := range a.calls {
		if d := outcomeDiff(unanswered(a.calls[i].dec, b.calls[i].dec)); d != "" {
			return d
		}
	}
	return ""
}

// unanswered are two variants' decisions without the authorizer checks they asked where they
// asked the same: the server answers one request's checks alike whatever it was sent as, so
// those tell them apart no more than the answers they were evaluated with do; whether the
// answers the log does not hold change the decision is the request's (answersAlike). Otherwise
// they are as they are (outcomeDiff tells them apart for their checks).
func unanswered(a, b *verify.Decision) (*verify.Decision, *verify.Decision) {
	ca, cb := verify.Configured(a.Authorizer), verify.Configured(b.Authorizer)
	if len(ca) == 0 || !slices.Equal(ca, cb) {
		return a, b
	}
	a2, b2 := *a, *b
	a2.Authorizer, b2.Authorizer = nil, nil
	return &a2, &b2
}

// sendVariants are the ways the request may have been sent: a patch as each content type its
// body is valid for, a Job create with its labels and without (see jobLabelVariants), or as
// it is.
func sendVariants(req apiserver.Request, ev *Event, t target) []sendVariant {
	switch {
	case req.Method == http.MethodPatch:
		var variants []sendVariant
		for _, ct := range patchVariants(req.Body, ev) {
			variants = append(variants, sendVariant{contentType: ct, body: req.Body, name: variantName(ct)})
		}
		return variants
	case req.Method == http.MethodPost && t.gvr.GroupResource() == jobsResource && t.sub == "":
		return jobLabelVariants(req.Body, ev)
	}
	return []sendVariant{{body: req.Body}}
}

// sendVariant is one way a request may have been sent: a patch's content type, or a Job's
// labels.
type sendVariant struct {
	contentType types.PatchType
	body        []byte
	name        string
	labels      bool
}

// jobLabelVariants are the bodies a Job create whose logged request has the labels of its pod
// template may have been sent with. The log records a request object after its defaults, and
// batch/v1 SetDefaults_Job gives a Job without labels its template's labels map itself: the
// job strategy then adds the job-name and controller-uid labels to the template, and so to the
// Job's own labels too, which it does not when the client sent the labels. The Job the log
// returns for a create the server completed says which: otherwise both are sent.
func jobLabelVariants(body []byte, ev *Event) []sendVariant {
	logged := []sendVariant{{body: body}}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if d.Decode(&m) != nil {
		return logged
	}
	labels, found, _ := unstructured.NestedFieldNoCopy(m, "metadata", "labels")
	tmpl, _, _ := unstructured.NestedFieldNoCopy(m, "spec", "template", "metadata", "labels")
	if lm, ok := labels.(map[string]any); !found || !ok || len(lm) == 0 || !reflect.DeepEqual(labels, tmpl) {
		return logged
	}
	unstructured.RemoveNestedField(m, "metadata", "labels")
	alt, err := json.Marshal(m)
	if err != nil {
		return logged
	}
	if resp := auditlog.DecodeAnyObject(ev.ResponseObject); resp != nil && ev.Code() >= 200 && ev.Code() < 300 && resp.GetKind() == "Job" {
		if _, defaulted := resp.GetLabels()["batch.kubernetes.io/controller-uid"]; defaulted {
			return []sendVariant{{body: alt}}
		}
		return logged
	}
	return []sendVariant{
		{body: body, name: "Job sent with its labels", labels: true},
		{body: alt, name: "Job sent without labels (defaulted to its template's)", labels: true},
	}
}

// pickServed chooses among the variants of a request what the replay can say: the variants
// the log rules out dropped (a request the server completed, or a policy refused, cannot have
// been refused before admission; one the server refused before admission with the message the
// log records was), then the outcome when all that remain agree. When they do
// not, and recorded is not nil (checking against the log), those whose audit annotations the
// log does not record are dropped too. ok is false when they disagree; reason then says why.
func pickServed(ev *Event, vs []served, recorded func(served) bool) (s served, ok bool, why string, reason Reason) {
	if len(vs) == 1 {
		return vs[0], true, "", ""
	}
	// The server ran admission when it completed the request or a policy refused it.
	ran := ev.Code() >= 200 && ev.Code() < 300 || vapDenied.MatchString(ev.Message())
	var kept []served
	for _, v := range vs {
		if ran && len(v.calls) == 0 && v.resp.Code >= 300 && v.err == nil && v.unknown == nil {
			continue
		}
		kept = append(kept, v)
	}
	if len(kept) == 0 {
		kept = vs
	}
	if !ran && ev.Code() >= 300 {
		// A refusal before admission the log records word for word (a merge patch replacing
		// a list the strategy forbids to change, where a strategic merge patch merges into
		// it) is the variant that was sent: the others ran admission, or refused otherwise.
		var same []served
		for _, v := range kept {
			if len(v.calls) == 0 && v.err == nil && v.unknown == nil && int32(v.resp.Code) == ev.Code() && v.resp.Status != nil && v.resp.Status.Message == ev.Message() {
				same = append(same, v)
			}
		}
		if len(same) > 0 {
			kept = same
		}
	}
	// The variants whose stored object has the metadata the log's response shows.
	kept = matchingResponse(ev, kept, func(v served) runtime.Object {
		if v.resp == nil || len(v.resp.Writes) == 0 {
			return nil
		}
		return v.resp.Writes[len(v.resp.Writes)-1].Object
	})
	byAnnotations := false
	if recorded != nil && slices.ContainsFunc(kept[1:], func(v served) bool { return !sameServed(kept[0], v) }) {
		var agree []served
		for _, v := range kept {
			if recorded(v) {
				agree = append(agree, v)
			}
		}
		if len(agree) > 0 && len(agree) < len(kept) {
			kept, byAnnotations = agree, true
		}
	}
	forgetAcross(kept)
	for _, v := range kept[1:] {
		if diff := servedDiff(kept[0], v); diff != "" {
			var ds []string
			for _, k := range kept {
				ds = append(ds, describeServed(k))
			}
			sort.Strings(ds)
			if why := byChanceOf(kept); why != "" {
				// The variants differ as two evaluations of one of them may.
				return served{}, false, why, ReasonMapOrder
			}
			if kept[0].labels {
				return served{}, false, "the audit log records a Job's create after its defaults, and whether its labels were sent or are its pod template's (which the job strategy then labels with the job's name and uid) leads to different outcomes (" + diff + "): " + strings.Join(ds, "; "), ReasonDefaultedLabels
			}
			return served{}, false, "the audit log does not record the patch's content type, and the types it may have been sent as lead to different outcomes (" + diff + "): " + strings.Join(ds, "; "), ReasonPatchType
		}
	}
	if len(kept) < len(vs) || len(kept) > 1 {
		var names []string
		for _, k := range kept {
			names = append(names, k.variant)
		}
		switch {
		case byAnnotations && kept[0].labels:
			why = "the audit annotations the log records are those of the " + strings.Join(names, " and the ")
		case byAnnotations:
			why = "the audit annotations the log records are those of the patch applied as a " + strings.Join(names, " or a ")
		case kept[0].labels:
			why = "the outcome is the same for the " + strings.Join(names, " and the ")
		default:
			why = "the patch is applied alike as a " + strings.Join(names, " or a ")
		}
	}
	return kept[0], true, why, ""
}

// forgetAcross forgets in every variant the audit annotations one of them does not know
// (verify.Decision.UnknownAnnotations): what was sent may be that one, and they differ in it by
// what the replay could settle of each (an annotation in map order, whose server's order the
// search found in one variant and not in another: random parity seed m:1319), not by what the
// server decided.
func forgetAcross(vs []served) {
	if len(vs) < 2 {
		return
	}
	for i := range vs[0].calls {
		var decs []*verify.Decision
		for _, v := range vs {
			if i < len(v.calls) && v.calls[i].dec != nil {
				decs = append(decs, v.calls[i].dec)
			}
		}
		forgetUnknown(decs)
	}
}

// mayHaveCreated says whether a request the log shows as an update may have created its object
// instead: a patch that failed, which a server-side apply may have been (only an apply creates
// its object: 201 when it does), sent with a body that could be one, or at a level that does not
// show its body.
func mayHaveCreated(ev *Event, t target) bool {
	if ev.Verb != "patch" || t.op != admission.Update || t.sub != "" {
		return false
	}
	if code := ev.Code(); code >= 200 && code < 300 {
		return false
	}
	if body := bytes.TrimSpace(ev.RequestObject); len(body) == 0 || string(body) == "null" {
		return true
	}
	return slices.Contains(patchVariants(ev.RequestObject, ev), types.ApplyYAMLPatchType)
}
