package replay

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// TestNoopWriteLoggedFirst: two patches to a ConfigMap run at once. One (robot's) changes
// nothing: the server answers it with the object as it read it last, which is the other's
// result, and the audit log records it first. The other (admin's) adds the label "skip". Both
// answer with the same resourceVersion; only one of them wrote it.
//   - Robot's patch read the object without the label (its first attempt) or with it (after
//     admin's write), never its response as a change of the version before: the policy that
//     refuses robot the label's adding admits it on either.
//   - Admin's patch wrote the version (on the one before, without the label), or changed
//     nothing of it (had robot's written it): the log's order makes the second likely, the
//     first the alternative, and the log's annotations, checked, say which.
func TestNoopWriteLoggedFirst(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("skip", "configmaps", admissionregistrationv1.Update, nil,
		"request.userInfo.username != 'robot' || !has(object.metadata.labels) || !('skip' in object.metadata.labels) || (has(oldObject.metadata.labels) && 'skip' in oldObject.metadata.labels)")
	p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{
		Expression: "request.userInfo.username != 'admin' || !has(oldObject.metadata.labels) || !('skip' in oldObject.metadata.labels)", Message: "admin may not patch a skipped ConfigMap"})
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "old", ValueExpression: "has(oldObject.metadata.labels) && 'skip' in oldObject.metadata.labels ? 'skip' : 'none'"}}
	cm := func(rv string, labels map[string]any) map[string]any {
		meta := map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": rv}
		if labels != nil {
			meta["labels"] = labels
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"v": "a"}}
	}
	skip := map[string]any{"skip": "yes"}
	lines := []string{
		timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", nil), cm("10", nil)), "01.000000", "01.001000", nil),
		timedEvent(t, asUser(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", map[string]any{"data": map[string]any{"n": nil}}, cm("11", skip)), "robot"), "02.000000", "02.004000", map[string]string{"skip/old": "none"}),
		timedEvent(t, asUser(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", map[string]any{"metadata": map[string]any{"labels": skip}}, cm("11", skip)), "admin"), "02.000010", "02.008000", map[string]string{"skip/old": "none"}),
	}
	type outcome struct {
		Decision  string
		Certainty Certainty
		Old       string // the skip/old annotation
		// Alternatives are the alternatives' decisions and skip/old annotations: a watch
		// cache's first attempt publishes what it read, the live attempt decides; a response
		// that differs carries no annotations (alternativeOf).
		Alternatives []string
	}
	for _, tc := range []struct {
		id    string
		check bool
		want  outcome
	}{
		{id: "2", want: outcome{Decision: DecisionAdmit, Certainty: CertaintyLikely, Old: "none", Alternatives: []string{"admit skip"}}},
		{id: "2", check: true, want: outcome{Decision: DecisionAdmit, Certainty: CertaintyCertain, Old: "none"}},
		{id: "3", want: outcome{Decision: DecisionDeny, Certainty: CertaintyLikely, Old: "skip", Alternatives: []string{"deny none", "admit "}}},
		{id: "3", check: true, want: outcome{Decision: DecisionAdmit, Certainty: CertaintyCertain, Old: "none"}},
	} {
		r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, WithCheckRecorded(tc.check))
		if err != nil {
			t.Fatal(err)
		}
		rec := recordOf(t, r, tc.id, lines)
		if rec == nil {
			t.Fatalf("request %s has no record", tc.id)
		}
		got := outcome{Decision: rec.Decision, Certainty: rec.Certainty, Old: rec.AuditAnnotations["skip/old"]}
		for _, a := range rec.Alternatives {
			got.Alternatives = append(got.Alternatives, a.Decision+" "+a.AuditAnnotations["skip/old"])
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("request %s, checked %v (-want +got):\n%s\nrecord: %s %v", tc.id, tc.check, diff, rec, rec.Notes)
		}
	}
}

// TestConcurrentWriteCommittedFirst: a kubelet's patch of a ConfigMap is logged before a patch
// by node-problem-detector that was received before it completed, and the detector's result
// is the older resourceVersion: it was committed first, so the kubelet's patch, which wrote the
// newer one, last read what the detector stored (its first attempt may have read the version
// before). The policy that keeps the label "cond" to the detector admits the kubelet's patch,
// which changed it not. A write logged later whose result is newer than the request's was
// committed after it: the request did not read it.
func TestConcurrentWriteCommittedFirst(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("cond", "configmaps", admissionregistrationv1.Update, nil,
		"request.userInfo.username == 'npd' || ((has(object.metadata.labels) && 'cond' in object.metadata.labels) ? object.metadata.labels['cond'] : '') == ((has(oldObject.metadata.labels) && 'cond' in oldObject.metadata.labels) ? oldObject.metadata.labels['cond'] : '')")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "old", ValueExpression: "has(oldObject.metadata.labels) && 'cond' in oldObject.metadata.labels ? string(oldObject.metadata.labels['cond']) : 'none'"}}
	cm := func(rv string, labels, data map[string]any) map[string]any {
		meta := map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": rv}
		if labels != nil {
			meta["labels"] = labels
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
	}
	bad := map[string]any{"cond": "bad"}
	type outcome struct {
		Decision     string
		Certainty    Certainty
		Old          string
		Alternatives []string
	}
	for _, tc := range []struct {
		name string
		// kubeletRV and npdRV are the results of the kubelet's and the detector's patches.
		kubeletRV, npdRV string
		check            bool
		want             outcome
	}{{
		name: "the detector's write committed first", kubeletRV: "12", npdRV: "11",
		// The first attempt may have read the version before the detector's: what it
		// published is the alternative.
		want: outcome{Decision: DecisionAdmit, Certainty: CertaintyLikely, Old: "bad", Alternatives: []string{"admit none"}},
	}, {
		name: "the detector's write committed first, checked", kubeletRV: "12", npdRV: "11", check: true,
		want: outcome{Decision: DecisionAdmit, Certainty: CertaintyCertain, Old: "none"},
	}, {
		name: "the kubelet's write committed first", kubeletRV: "11", npdRV: "12",
		want: outcome{Decision: DecisionAdmit, Certainty: CertaintyCertain, Old: "none"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			kubeletResp := cm(tc.kubeletRV, bad, map[string]any{"v": "a", "h": "1"})
			npdResp := cm(tc.npdRV, bad, map[string]any{"v": "a"})
			if tc.kubeletRV < tc.npdRV {
				kubeletResp = cm(tc.kubeletRV, nil, map[string]any{"v": "a", "h": "1"})
				npdResp = cm(tc.npdRV, bad, map[string]any{"v": "a", "h": "1"})
			}
			recorded := "bad"
			if tc.check || tc.kubeletRV < tc.npdRV {
				recorded = "none"
			}
			lines := []string{
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", nil, map[string]any{"v": "a"}), cm("10", nil, map[string]any{"v": "a"})), "01.000000", "01.001000", nil),
				timedEvent(t, asUser(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", map[string]any{"data": map[string]any{"h": "1"}}, kubeletResp), "kubelet"), "02.000000", "02.006000", map[string]string{"cond/old": recorded}),
				timedEvent(t, asUser(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", map[string]any{"metadata": map[string]any{"labels": bad}}, npdResp), "npd"), "02.001000", "02.008000", map[string]string{"cond/old": "none"}),
			}
			r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, WithCheckRecorded(tc.check))
			if err != nil {
				t.Fatal(err)
			}
			rec := recordOf(t, r, "2", lines)
			if rec == nil {
				t.Fatal("request 2 has no record")
			}
			got := outcome{Decision: rec.Decision, Certainty: rec.Certainty, Old: rec.AuditAnnotations["cond/old"]}
			for _, a := range rec.Alternatives {
				got.Alternatives = append(got.Alternatives, a.Decision+" "+a.AuditAnnotations["cond/old"])
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("request 2 (-want +got):\n%s\nrecord: %s %q %v", diff, rec, rec.Message, rec.Notes)
			}
		})
	}
}

// TestAnsweredOther: a patch's response is taken for another write's version only where the
// patch changes nothing of an old object the replay knows in full, and the response differs.
func TestAnsweredOther(t *testing.T) {
	t.Parallel()
	cm := func(rv string, labels map[string]any) *unstructured.Unstructured {
		meta := map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": rv}
		if labels != nil {
			meta["labels"] = labels
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"v": "a"}}}
	}
	tg := target{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, op: admission.Update,
		mainKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, reqKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, namespace: "ns1", name: "cm"}
	noop, label := `{"data":{"n":null}}`, `{"metadata":{"labels":{"skip":"yes"}}}`
	for _, tc := range []struct {
		name     string
		verb     string
		patch    string
		resp     *unstructured.Unstructured
		standIn  bool
		unknowns bool
		want     bool
	}{
		{name: "a no-op answered with another version", verb: "patch", patch: noop, resp: cm("11", map[string]any{"skip": "yes"}), want: true},
		{name: "a no-op answered with the version it read", verb: "patch", patch: noop, resp: cm("10", nil)},
		{name: "a no-op answered with a version alike but for its resourceVersion", verb: "patch", patch: noop, resp: cm("11", nil)},
		{name: "a change", verb: "patch", patch: label, resp: cm("11", map[string]any{"skip": "yes"})},
		{name: "an update", verb: "update", patch: `{}`, resp: cm("11", map[string]any{"skip": "yes"})},
		{name: "the old object a stand-in", verb: "patch", patch: noop, resp: cm("11", map[string]any{"skip": "yes"}), standIn: true},
		{name: "a field of the old object not known", verb: "patch", patch: noop, resp: cm("11", map[string]any{"skip": "yes"}), unknowns: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b rebuilt
			if tc.standIn {
				b.oldUnknown = because(ReasonOldObjectUnknown, "not in the log")
			}
			var p state.Prior
			if tc.unknowns {
				p.Unknowns = []vapccel.Unknown{{Path: objectPath("data", "w"), Why: "written at Metadata level"}}
			}
			ev := &Event{}
			ev.Verb, ev.RequestObject = tc.verb, []byte(tc.patch)
			if got := b.answeredOther(ev, tg, nil, p, cm("10", nil), tc.resp); got != tc.want {
				t.Errorf("answeredOther = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWritesCommittedBeforeLoggedAfter: writes the log records after a request they ran
// concurrently with, whose results are older than the request's, were committed before it:
// the request last read the newest of them. A controller's write to an object logged before
// the object's create is decided on what the create stored; a patch logged before two
// patches committed ahead of it, on what the second stored (the policy refuses the first's); a
// delete, on what the patch committed ahead of it stored.
func TestWritesCommittedBeforeLoggedAfter(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("v", "configmaps", admissionregistrationv1.Update, nil, "request.userInfo.username != 'ctl' || oldObject.data.v != (request.operation == 'DELETE' ? 'a' : 'b')")
	p.Spec.MatchConstraints.ResourceRules[0].Operations = append(p.Spec.MatchConstraints.ResourceRules[0].Operations, admissionregistrationv1.Delete)
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "old", ValueExpression: "string(oldObject.data.v)"}}
	cm := func(rv, v, w string) map[string]any {
		data := map[string]any{"v": v}
		if w != "" {
			data["w"] = w
		}
		meta := map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1"}
		if rv != "" {
			meta["resourceVersion"] = rv
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
	}
	patch := func(id, user, v, rv, resp, w, received, done string) string {
		return timedEvent(t, asUser(t, levelEvent(t, id, auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", map[string]any{"data": map[string]any{v: "1"}}, cm(rv, resp, w)), user), received, done, nil)
	}
	for _, tc := range []struct {
		name  string
		lines []string
		want  decided
	}{{
		name: "a write logged before the create",
		lines: []string{
			patch("1", "ctl", "w", "11", "a", "1", "01.000000", "01.006000"),
			timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a", ""), cm("10", "a", "")), "00.999000", "01.008000", nil),
		},
		want: decided{Decision: DecisionAdmit, Certainty: CertaintyCertain, Old: "a"},
	}, {
		name: "two writes committed before, logged after",
		lines: []string{
			timedEvent(t, levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a", ""), cm("10", "a", "")), "00.000000", "00.001000", nil),
			// ctl's patch, whose result (13) holds v=c from the patches committed before it.
			patch("1", "ctl", "w", "13", "c", "1", "01.000000", "01.006000"),
			patch("2", "admin", "v", "11", "b", "", "01.001000", "01.007000"),
			patch("3", "admin", "v", "12", "c", "", "01.002000", "01.008000"),
		},
		// Its first attempt may have read either version before: what it published there
		// is an alternative.
		want: decided{Decision: DecisionAdmit, Certainty: CertaintyLikely, Old: "c"},
	}, {
		// The delete's response is the object it removed, with the deletion's revision.
		name: "a delete logged before a patch committed ahead of it",
		lines: []string{
			timedEvent(t, levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a", ""), cm("10", "a", "")), "00.000000", "00.001000", nil),
			timedEvent(t, asUser(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "delete", "configmaps", "ns1", "cm", 200, "", nil, cm("12", "b", "")), "ctl"), "01.000000", "01.006000", nil),
			patch("2", "admin", "v", "11", "b", "", "01.001000", "01.007000"),
		},
		want: decided{Decision: DecisionAdmit, Certainty: CertaintyLikely, Old: "b"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, rec := decidedOf(t, p, b, "1", tc.lines)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("request 1 (-want +got):\n%s\nrecord: %s %q %s %v %+v", diff, rec, rec.Message, rec.Indeterminate, rec.Notes, rec.Alternatives)
			}
		})
	}
}

// asUser is an event of levelEvent's sent by user instead.
func asUser(t *testing.T, line, user string) string {
	t.Helper()
	return edited(t, line, func(m map[string]any) {
		m["user"] = map[string]any{"username": user, "groups": []any{"system:authenticated"}}
	})
}

// edited is an event's JSON line as edit changes it.
func edited(t *testing.T, line string, edit func(map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// decided is what the tests of this file hold a request's record to: its decision, its
// certainty and the audit annotation v/old.
type decided struct {
	Decision  string
	Certainty Certainty
	Old       string
}

// decidedOf replays lines through the policy and binding and gives request id's record.
func decidedOf(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, id string, lines []string) (decided, *Record) {
	t.Helper()
	r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b})
	if err != nil {
		t.Fatal(err)
	}
	rec := recordOf(t, r, id, lines)
	if rec == nil {
		t.Fatalf("request %s has no record", id)
	}
	return decided{Decision: rec.Decision, Certainty: rec.Certainty, Old: rec.AuditAnnotations["v/old"]}, rec
}

// TestDryRunReads: a dry run reads the object from storage (DryRunnableStorage, not the watch
// cache) and answers with the version it read: that version is the old object, before a write
// that completed after the dry run was received, and after the object's deletion the log
// records first; it has no first attempt on a watch cache's copy.
func TestDryRunReads(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("v", "configmaps", admissionregistrationv1.Update, nil, "request.userInfo.username != 'ctl' || oldObject.data.v != 'b'")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "old", ValueExpression: "string(oldObject.data.v)"}}
	cm := func(rv, v string) map[string]any {
		meta := map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1"}
		if rv != "" {
			meta["resourceVersion"] = rv
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"v": v}}
	}
	event := func(id, user, verb string, req, resp map[string]any, received, done string) string {
		line := asUser(t, levelEvent(t, id, auditlog.LevelRequestResponse, verb, "configmaps", "ns1", "cm", 200, "", req, resp), user)
		return timedEvent(t, line, received, done, nil)
	}
	dryRun := func(line string) string {
		return edited(t, line, func(m map[string]any) { m["requestURI"] = m["requestURI"].(string) + "?dryRun=All" })
	}
	created := timedEvent(t, levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), cm("10", "a")), "00.000000", "00.001000", nil)
	patchB := event("1", "admin", "patch", map[string]any{"data": map[string]any{"v": "b"}}, cm("11", "b"), "01.000000", "01.004000")
	for _, tc := range []struct {
		name  string
		lines []string
		want  decided
	}{{
		name:  "read before a write that completed after it was received",
		lines: []string{created, patchB, dryRun(event("2", "ctl", "patch", map[string]any{"data": map[string]any{"w": "1"}}, cm("10", "a"), "01.001000", "01.006000"))},
		want:  decided{Decision: DecisionAdmit, Certainty: CertaintyCertain, Old: "a"},
	}, {
		name: "read before the deletion the log records first",
		lines: []string{created, patchB,
			event("3", "admin", "delete", nil, cm("12", "b"), "02.000000", "02.004000"),
			dryRun(event("2", "admin", "patch", map[string]any{"data": map[string]any{"w": "1"}}, cm("11", "b"), "02.001000", "02.006000"))},
		want: decided{Decision: DecisionAdmit, Certainty: CertaintyCertain, Old: "b"},
	}, {
		// Without its response, the version it read is the State's: not a watch cache's.
		name: "moments after a write, its response not logged",
		lines: []string{created, patchB, dryRun(edited(t, event("2", "admin", "patch", map[string]any{"data": map[string]any{"w": "1"}}, nil, "01.010000", "01.012000"),
			func(m map[string]any) { m["level"] = auditlog.LevelRequest }))},
		want: decided{Decision: DecisionAdmit, Certainty: CertaintyCertain, Old: "b"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, rec := decidedOf(t, p, b, "2", tc.lines)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("request 2 (-want +got):\n%s\nrecord: %s %q %s %v %+v", diff, rec, rec.Message, rec.Indeterminate, rec.Notes, rec.Alternatives)
			}
		})
	}
}

// TestFailedDeleteCollection: a deletecollection of c1 and c2 (each held by a finalizer) fails.
// The store deleted the items in the order of their keys and stopped at the first refused, so
// c1 may be marked deleted, c2 not. A later DELETE of each is refused by "deleting" when the
// object is marked deleted already.
//   - Refused by a policy the replay does not run (the replay's "guard" refuses it too, with
//     another message): which items it reached is not known, and a later DELETE that reads
//     whether they are marked is indeterminate.
//   - Refused by the replayed "guard" (on c2), with the log's message: the replay's pipeline
//     reached c1 first, as the server did: c1 is marked, c2 as it was, and the later DELETEs
//     are decided.
//   - Refused by the authorizer: it deleted nothing.
func TestFailedDeleteCollection(t *testing.T) {
	t.Parallel()
	cm := func(name, rv string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "a", "resourceVersion": rv, "uid": "u-" + name, "finalizers": []any{"x/hold"}}}
	}
	collection := func(code int32, message string, annotations map[string]string) string {
		l := timedEvent(t, levelEvent(t, "dc", auditlog.LevelRequestResponse, "deletecollection", "configmaps", "a", "", code, message, nil, nil), "03.000000", "03.010000", annotations)
		return strings.Replace(l, `"requestURI":"/api/v1/namespaces/a/configmaps/"`, `"requestURI":"/api/v1/namespaces/a/configmaps"`, 1)
	}
	const refusedMarked = `configmaps "c1" is forbidden: ValidatingAdmissionPolicy 'deleting' with binding 'deleting' denied request: denied by deleting`
	lines := func(dc string, c1Refused, patched bool) []string {
		deleteC1 := levelEvent(t, "delete", auditlog.LevelRequestResponse, "delete", "configmaps", "a", "c1", 200, "", nil, cm("c1", "9"))
		if c1Refused {
			deleteC1 = levelEvent(t, "delete", auditlog.LevelRequestResponse, "delete", "configmaps", "a", "c1", 422, refusedMarked, nil, nil)
		}
		// The log begins with the cluster's creation: the State holds every object.
		ns := func(rv string) map[string]any {
			return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "default", "uid": "u-default", "resourceVersion": rv}}
		}
		out := []string{
			timedEvent(t, asUser(t, levelEvent(t, "ns", auditlog.LevelRequestResponse, "create", "namespaces", "", "default", 201, "", ns(""), ns("4")), "system:apiserver"), "00.000000", "00.010000", nil),
			timedEvent(t, levelEvent(t, "c1", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c1", 201, "", cm("c1", ""), cm("c1", "5")), "01.000000", "01.010000", nil),
			timedEvent(t, levelEvent(t, "c2", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c2", 201, "", cm("c2", ""), cm("c2", "6")), "02.000000", "02.010000", nil),
			dc,
		}
		if patched {
			// A patch of c1 received before the deletecollection completed, answered with c1
			// unmarked: stored before the deletecollection marked it, or after.
			patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}
			labelled := cm("c1", "8")
			labelled["metadata"].(map[string]any)["labels"] = map[string]any{"a": "b"}
			out = append(out, timedEvent(t, levelEvent(t, "patch", auditlog.LevelRequestResponse, "patch", "configmaps", "a", "c1", 200, "", patch, labelled), "03.005000", "03.020000", nil))
		}
		return append(out,
			timedEvent(t, deleteC1, "04.000000", "04.010000", nil),
			timedEvent(t, levelEvent(t, "delete2", auditlog.LevelRequestResponse, "delete", "configmaps", "a", "c2", 200, "", nil, cm("c2", "10")), "05.000000", "05.010000", nil),
		)
	}
	p, b := levelPolicy("deleting", "configmaps", admissionregistrationv1.Delete, nil, "!has(oldObject.metadata.deletionTimestamp)")
	guard, guardBinding := levelPolicy("guard", "configmaps", admissionregistrationv1.Delete, nil, "oldObject.metadata.name != 'c2' || has(request.name) && request.name == 'c2'")
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p, guard}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b, guardBinding}
	type outcome struct {
		Decision string
		Reason   Reason
	}
	decided := func(d string) outcome { return outcome{Decision: d} }
	unknown := outcome{Decision: DecisionIndeterminate, Reason: ReasonOldObjectUnknown}
	tests := []struct {
		name       string
		dc         string
		c1Refused  bool
		patched    bool // a patch of c1 ran concurrently with the deletecollection
		c1, c2     outcome
		collection outcome
	}{
		{name: "refused by a policy the replay does not run: which items it deleted is not known",
			dc: collection(422, `configmaps "Unknown" is forbidden: ValidatingAdmissionPolicy 'other' with binding 'other' denied request: no`, map[string]string{"authorization.k8s.io/decision": "allow"}),
			c1: unknown, c2: unknown, collection: decided(DecisionDeny)},
		{name: "refused by a replayed policy, as the log shows: it deleted what came before the refused item",
			dc:        collection(422, `configmaps "Unknown" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: denied by guard`, map[string]string{"authorization.k8s.io/decision": "allow"}),
			c1Refused: true, c1: decided(DecisionDeny), c2: decided(DecisionAdmit), collection: decided(DecisionDeny)},
		{name: "refused by a replayed policy, and c1 patched concurrently: whether the patch came before the marks is not known",
			dc: collection(422, `configmaps "Unknown" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: denied by guard`, map[string]string{"authorization.k8s.io/decision": "allow"}),
			// What a refused deletecollection left is forgotten whole when a write ran
			// concurrently with it (forgetReached): c2 too.
			c1Refused: true, patched: true, c1: unknown, c2: unknown, collection: decided(DecisionDeny)},
		{name: "refused by the authorizer: it deleted nothing",
			dc: collection(403, `configmaps is forbidden: User "admin" cannot deletecollection resource "configmaps"`, map[string]string{"authorization.k8s.io/decision": "forbid"}),
			c1: decided(DecisionAdmit), c2: decided(DecisionAdmit)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, got := replayLinesWith(t, ps, bs, nil, lines(tt.dc, tt.c1Refused, tt.patched)...)
			outcomeOf := func(id string) outcome {
				rec := got[id]
				if rec == nil {
					return outcome{}
				}
				if len(rec.Disagreements) > 0 {
					t.Errorf("%s: %s disagrees with the log: %v", id, describeRecord(rec), rec.Disagreements)
				}
				if rec.Decision == DecisionIndeterminate && !strings.Contains(rec.Indeterminate, "the deletecollection at") && !strings.Contains(rec.Indeterminate, "ran concurrently") {
					t.Errorf("%s: %s does not name the deletecollection", id, describeRecord(rec))
				}
				return outcome{Decision: rec.Decision, Reason: rec.Reason}
			}
			want := map[string]outcome{"dc": tt.collection, "delete": tt.c1, "delete2": tt.c2}
			gotOutcomes := map[string]outcome{"dc": outcomeOf("dc"), "delete": outcomeOf("delete"), "delete2": outcomeOf("delete2")}
			if diff := cmp.Diff(want, gotOutcomes); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPendingDeletionLoggedFirst: two DELETEs of a pod run at once. Admin's (grace 30) marks it
// deleted; bob's (grace 60) reads the marked pod, whose graceful deletion is pending, and the
// store answers it with the pod as it is, without admission. Both answer with the version
// admin's stored. The observer annotates whether the old object was being deleted. Logged in
// either order (two kube-apiservers' logs merged), checked against the log, which shows the
// policy installed:
//   - admin's was decided on the version before bob's response, as the log's annotations show
//     admission ran (a result that is the State's version, which another write answered
//     with, is the one of the two that wrote it);
//   - bob's reached no admission: on what admin's stored it does not, and the log shows
//     none of the verdicts the version before gives.
func TestPendingDeletionLoggedFirst(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("obs", "pods", admissionregistrationv1.Delete, nil, "true")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "deleting", ValueExpression: "has(oldObject.metadata.deletionTimestamp) ? 'true' : 'false'"}}
	pod := func(rv string, marked bool) map[string]any {
		meta := map[string]any{"name": "p", "namespace": "ns1", "uid": "u1"}
		if rv != "" {
			meta["resourceVersion"] = rv
		}
		if marked {
			meta["deletionTimestamp"] = "2026-11-24T00:00:31Z"
			meta["deletionGracePeriodSeconds"] = 30
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta,
			"spec":   map[string]any{"nodeName": "n1", "terminationGracePeriodSeconds": 30, "containers": []any{map[string]any{"name": "c", "image": "x"}}},
			"status": map[string]any{"phase": "Running"}}
	}
	grace := func(g int) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": g}
	}
	// The log shows the policy and its binding created: the server ran it.
	admissionreg := func(id, resource string) string {
		l := levelEvent(t, id, auditlog.LevelMetadata, "create", resource, "", "obs", 201, "", nil, nil)
		l = replaceOnce(t, l, `"requestURI":"/api/v1/`, `"requestURI":"/apis/admissionregistration.k8s.io/v1/`)
		return timedEvent(t, replaceOnce(t, l, `"apiVersion":"v1","name"`, `"apiGroup":"admissionregistration.k8s.io","apiVersion":"v1","name"`), "00.000000", "00.000500", nil)
	}
	head := []string{
		admissionreg("vap", "validatingadmissionpolicies"), admissionreg("vapb", "validatingadmissionpolicybindings"),
		timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "pods", "ns1", "p", 201, "", pod("", false), pod("10", false)), "00.001000", "00.002000", nil),
	}
	admin := timedEvent(t, asUser(t, levelEvent(t, "admin", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "p", 200, "", grace(30), pod("11", true)), "admin"), "01.000000", "01.008000", map[string]string{"obs/deleting": "false"})
	bob := timedEvent(t, asUser(t, levelEvent(t, "bob", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "p", 200, "", grace(60), pod("11", true)), "bob"), "01.001000", "01.006000", nil)
	type outcome struct {
		Decision  string
		Certainty Certainty
		Deleting  string // the obs/deleting annotation
	}
	for _, tc := range []struct {
		name  string
		lines []string
	}{
		{name: "logged in the order they were stored", lines: append(slices.Clone(head), admin, bob)},
		{name: "the one that read the other's result logged first", lines: append(slices.Clone(head), bob, admin)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil, tc.lines...)
			got := map[string]outcome{}
			for id, rec := range recs {
				if len(rec.Disagreements) > 0 {
					t.Errorf("%s: %s disagrees with the log: %v", id, describeRecord(rec), rec.Disagreements)
				}
				got[id] = outcome{Decision: rec.Decision, Certainty: rec.Certainty, Deleting: rec.AuditAnnotations["obs/deleting"]}
			}
			want := map[string]outcome{"admin": {Decision: DecisionAdmit, Certainty: CertaintyCertain, Deleting: "false"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFailedDeleteCollectionSecondStep: a deletecollection of two pods without a grace period
// (not scheduled), which the store deletes each in two validated steps: "second" refuses the
// deletion of b once the store has marked it. a is gone, b stays marked: a later patch of b
// is refused by "not-deleting", and a create of a succeeds.
func TestFailedDeleteCollectionSecondStep(t *testing.T) {
	t.Parallel()
	notDeleting, ndb := levelPolicy("not-deleting", "pods", admissionregistrationv1.Update, nil, "!has(oldObject.metadata.deletionTimestamp)")
	second, sb := levelPolicy("second", "pods", admissionregistrationv1.Delete, nil, "oldObject.metadata.name != 'b' || !has(oldObject.metadata.deletionTimestamp)")
	created, cb := levelPolicy("created", "pods", admissionregistrationv1.Create, nil, "true")
	pod := func(name, rv string) map[string]any {
		md := map[string]any{"name": name, "namespace": "default", "uid": "u-" + name}
		if rv != "" {
			md["resourceVersion"] = rv
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "default", "uid": "u-default", "resourceVersion": "4"}}
	collection := timedEvent(t, levelEvent(t, "dc", auditlog.LevelRequestResponse, "deletecollection", "pods", "default", "", 422,
		`pods "Unknown" is forbidden: ValidatingAdmissionPolicy 'second' with binding 'second' denied request: denied by second`, nil, nil), "03.000000", "03.010000", map[string]string{"authorization.k8s.io/decision": "allow"})
	collection = strings.Replace(collection, `"requestURI":"/api/v1/namespaces/default/pods/"`, `"requestURI":"/api/v1/namespaces/default/pods"`, 1)
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{notDeleting, second, created}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{ndb, sb, cb},
		timedEvent(t, asUser(t, levelEvent(t, "ns", auditlog.LevelRequestResponse, "create", "namespaces", "", "default", 201, "", ns, ns), "system:apiserver"), "00.000000", "00.001000", nil),
		timedEvent(t, levelEvent(t, "ca", auditlog.LevelRequestResponse, "create", "pods", "default", "a", 201, "", pod("a", ""), pod("a", "10")), "01.000000", "01.001000", nil),
		timedEvent(t, levelEvent(t, "cb", auditlog.LevelRequestResponse, "create", "pods", "default", "b", 201, "", pod("b", ""), pod("b", "11")), "02.000000", "02.001000", nil),
		collection,
		timedEvent(t, levelEvent(t, "pb", auditlog.LevelRequestResponse, "patch", "pods", "default", "b", 422,
			`pods "b" is forbidden: ValidatingAdmissionPolicy 'not-deleting' with binding 'not-deleting' denied request: denied by not-deleting`, map[string]any{"metadata": map[string]any{"labels": map[string]any{"x": "y"}}}, nil), "04.000000", "04.001000", nil),
		timedEvent(t, levelEvent(t, "ca2", auditlog.LevelRequestResponse, "create", "pods", "default", "a", 201, "", pod("a", ""), pod("a", "20")), "05.000000", "05.001000", nil),
	)
	want := map[string]certainOutcome{"dc": {DecisionDeny, CertaintyCertain}, "pb": {DecisionDeny, CertaintyCertain}, "ca2": {DecisionAdmit, CertaintyCertain}}
	if diff := cmp.Diff(want, outcomesOf(t, recs, "dc", "pb", "ca2")); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// certainOutcome is a record's decision and certainty.
type certainOutcome struct {
	Decision  string
	Certainty Certainty
}

// outcomesOf are the outcomes of the records of ids (none for a request without one); a
// record that disagrees with the log fails the test.
func outcomesOf(t *testing.T, recs map[string]*Record, ids ...string) map[string]certainOutcome {
	t.Helper()
	got := map[string]certainOutcome{}
	for _, id := range ids {
		rec := recs[id]
		if rec == nil {
			continue
		}
		if len(rec.Disagreements) > 0 {
			t.Errorf("%s: %s disagrees with the log: %v", id, describeRecord(rec), rec.Disagreements)
		}
		got[id] = certainOutcome{rec.Decision, rec.Certainty}
	}
	return got
}

// TestTimedOut: kube-apiserver's timeout filter answers 504 while the handler still runs,
// before, during or after admission, whose answer it drops: the log's verdict of the request
// is not known, and a denial the replay predicts disagrees with nothing.
func TestTimedOut(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("deny", "configmaps", admissionregistrationv1.Update, nil, "false")
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "a", "uid": "u-c", "resourceVersion": "5"}, "data": map[string]any{"k": "v"}}
	timedOut := timedEvent(t, levelEvent(t, "patch", auditlog.LevelRequestResponse, "patch", "configmaps", "a", "c", 504, "Timeout: request did not complete within the allotted timeout", map[string]any{"data": map[string]any{"k": "w"}}, nil), "02.000000", "59.000000", nil)
	timedOut = strings.Replace(timedOut, `"code":504`, `"code":504,"reason":"Timeout"`, 1)
	_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []any{cm}, timedOut)
	rec := recs["patch"]
	if rec == nil || rec.Recorded != RecordedUnknown || rec.Changed || len(rec.Disagreements) > 0 {
		t.Errorf("the timed-out patch: %s, recorded %s, want its recorded verdict unknown", describeRecord(rec), recordedOf(rec))
	}
}

func recordedOf(rec *Record) string {
	if rec == nil {
		return ""
	}
	return string(rec.Recorded)
}

// TestMarkedResponseOtherVersion: a DELETE that marks a pod answers with the pod it read,
// marked. Here it read the pod scheduled (spec.nodeName) where the State holds it unscheduled:
// the binding that scheduled it is in the other apiserver's log, merged after it. What
// differs is not known of the old object; the rest is.
func TestMarkedResponseOtherVersion(t *testing.T) {
	t.Parallel()
	pod := func(rv, node string, marked bool, app ...string) map[string]any {
		md := map[string]any{"name": "p", "namespace": "ns1", "uid": "u-p", "labels": map[string]any{"app": append(app, "web")[0]}}
		if rv != "" {
			md["resourceVersion"] = rv
		}
		if marked {
			md["deletionTimestamp"], md["deletionGracePeriodSeconds"] = "2026-11-24T00:00:32Z", 30
		}
		spec := map[string]any{"terminationGracePeriodSeconds": 30, "containers": []any{map[string]any{"name": "c", "image": "i"}}}
		if node != "" {
			spec["nodeName"] = node
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}
	}
	lines := func(answer map[string]any) []string {
		return []string{
			timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "pods", "ns1", "p", 201, "", pod("", "", false), pod("10", "", false)), "00.000000", "00.001000", nil),
			timedEvent(t, levelEvent(t, "delete", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "p", 200, "", nil, answer), "02.000000", "02.010000", nil),
		}
	}
	scheduled, relabelled := pod("12", "n1", true), pod("12", "", true, "db")
	for _, tc := range []struct {
		name, expr string
		answer     map[string]any
		want       string
	}{
		{name: "a field that differs", expr: "!has(oldObject.spec.nodeName)", answer: scheduled, want: DecisionIndeterminate},
		{name: "a field that does not", expr: "oldObject.metadata.labels.app == 'web'", answer: scheduled, want: DecisionAdmit},
		// Only the metadata differs: compared on the headers.
		{name: "a metadata field that differs", expr: "oldObject.metadata.labels.app == 'web'", answer: relabelled, want: DecisionIndeterminate},
		{name: "the metadata differs, not the field", expr: "!has(oldObject.spec.nodeName)", answer: relabelled, want: DecisionAdmit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", "pods", admissionregistrationv1.Delete, nil, tc.expr)
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines(tc.answer)...)
			if rec := recs["delete"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("the DELETE: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestMarkedResponseConverted: a DELETE in autoscaling/v1 answers with the object it read in
// autoscaling/v1, where the State holds the version an autoscaling/v2 status update wrote: the
// two are compared in the DELETE's version (the conditions are v1's annotation), not found to
// differ for being in two versions (random parity seed m:794: indeterminate, "a write the log
// does not show").
func TestMarkedResponseConverted(t *testing.T) {
	t.Parallel()
	const conditions = `[{"type":"AbleToScale","status":"False","lastTransitionTime":"2026-11-24T00:00:00Z","reason":"FailedGetScale","message":"no scale"}]`
	target := map[string]any{"kind": "Deployment", "name": "d1", "apiVersion": "apps/v1"}
	md := func(rv, generation int, extra map[string]any) map[string]any {
		m := map[string]any{"name": "h", "namespace": "ns1", "uid": "u-h", "resourceVersion": strconv.Itoa(rv), "generation": generation, "creationTimestamp": "2026-11-24T00:00:00Z"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	v1 := func(rv, generation int, extra map[string]any) map[string]any {
		return map[string]any{"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": md(rv, generation, extra),
			"spec":   map[string]any{"scaleTargetRef": target, "minReplicas": 1, "maxReplicas": 6, "targetCPUUtilizationPercentage": 80},
			"status": map[string]any{"currentReplicas": 0, "desiredReplicas": 0}}
	}
	var cs []any
	if err := json.Unmarshal([]byte(conditions), &cs); err != nil {
		t.Fatal(err)
	}
	v2 := map[string]any{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": md(11, 1, nil),
		"spec": map[string]any{"scaleTargetRef": target, "minReplicas": 1, "maxReplicas": 6,
			"metrics": []any{map[string]any{"type": "Resource", "resource": map[string]any{"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": 80}}}}},
		"status": map[string]any{"desiredReplicas": 0, "currentMetrics": nil, "conditions": cs}}
	marked := func(annotations map[string]any) map[string]any {
		extra := map[string]any{"deletionTimestamp": "2026-11-24T00:00:02Z", "deletionGracePeriodSeconds": 0, "finalizers": []any{"orphan"}}
		if annotations != nil {
			extra["annotations"] = annotations
		}
		return v1(12, 2, extra)
	}
	hpa := func(id, verb, version, sub string, req, resp map[string]any) string {
		line := levelEvent(t, id, auditlog.LevelRequestResponse, verb, "horizontalpodautoscalers", "ns1", "h", map[string]int32{"create": 201}[verb]+map[bool]int32{true: 200}[verb != "create"], "", req, resp)
		line = replaceOnce(t, line, `"requestURI":"/api/v1/`, `"requestURI":"/apis/autoscaling/`+version+`/`)
		if sub != "" {
			line = replaceOnce(t, line, `"resource":"horizontalpodautoscalers"`, `"resource":"horizontalpodautoscalers","subresource":"`+sub+`"`)
		}
		return replaceOnce(t, line, `"apiVersion":"v1","name":"h"`, `"apiGroup":"autoscaling","apiVersion":"`+version+`","name":"h"`)
	}
	for _, tc := range []struct {
		name   string
		answer map[string]any
		want   string
	}{
		{name: "the conditions as the annotation", answer: marked(map[string]any{"autoscaling.alpha.kubernetes.io/conditions": conditions}), want: DecisionAdmit},
		// The answer lacks the conditions the State's version holds: another version was read.
		{name: "without them", answer: marked(nil), want: DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", "horizontalpodautoscalers", admissionregistrationv1.Delete, nil, "has(oldObject.metadata.annotations)")
			p.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{"autoscaling"}
			p.Spec.MatchConstraints.ResourceRules[0].APIVersions = []string{"v1"}
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				timedEvent(t, hpa("create", "create", "v1", "", v1(0, 0, nil), v1(10, 1, nil)), "00.000000", "00.001000", nil),
				timedEvent(t, hpa("status", "update", "v2", "status", v2, v2), "00.010000", "00.015000", nil),
				timedEvent(t, hpa("delete", "delete", "v1", "", map[string]any{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "propagationPolicy": "Orphan"}, tc.answer), "02.000000", "02.010000", nil))
			if rec := recs["delete"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("the DELETE: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestMarkedResponseDeletionFinalizers: the finalizer a DELETE's propagation policy adds
// (foregroundDeletion) is the DELETE's own change, not another version's.
func TestMarkedResponseDeletionFinalizers(t *testing.T) {
	t.Parallel()
	cm := func(rv string, finalizers ...any) map[string]any {
		md := map[string]any{"name": "c", "namespace": "a", "uid": "u-c"}
		if rv != "" {
			md["resourceVersion"] = rv
		}
		if len(finalizers) > 0 {
			md["finalizers"], md["deletionTimestamp"], md["deletionGracePeriodSeconds"] = finalizers, "2026-11-24T00:00:02Z", 0
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}
	}
	p, b := levelPolicy("guard", "configmaps", admissionregistrationv1.Delete, nil, "!has(oldObject.metadata.finalizers)")
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c", 201, "", cm(""), cm("10")), "00.000000", "00.001000", nil),
		timedEvent(t, levelEvent(t, "delete", auditlog.LevelRequestResponse, "delete", "configmaps", "a", "c", 200, "", map[string]any{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "propagationPolicy": "Foreground"}, cm("12", "foregroundDeletion")), "02.000000", "02.010000", nil))
	if rec := recs["delete"]; rec == nil || rec.Decision != DecisionAdmit {
		t.Errorf("the DELETE: %s, want admit", describeRecord(rec))
	}
}

// TestMarkedResponseNamespacePhase: the phase Terminating a namespace's DELETE sets is its own
// change, not another version's: a policy that reads the namespace's phase is decided on the
// version the State holds.
func TestMarkedResponseNamespacePhase(t *testing.T) {
	t.Parallel()
	ns := func(rv, phase string, marked bool) map[string]any {
		md := map[string]any{"name": "team", "uid": "u-team", "labels": map[string]any{"kubernetes.io/metadata.name": "team"}}
		if rv != "" {
			md["resourceVersion"] = rv
		}
		if marked {
			md["deletionTimestamp"] = "2026-11-24T00:00:02Z"
		}
		o := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": md, "spec": map[string]any{"finalizers": []any{"kubernetes"}}}
		if phase != "" {
			o["status"] = map[string]any{"phase": phase}
		}
		return o
	}
	p, b := levelPolicy("guard", "namespaces", admissionregistrationv1.Delete, nil, "oldObject.status.phase == 'Active'")
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "namespaces", "", "team", 201, "", ns("", "", false), ns("10", "Active", false)), "00.000000", "00.001000", nil),
		timedEvent(t, levelEvent(t, "delete", auditlog.LevelRequestResponse, "delete", "namespaces", "", "team", 200, "", nil, ns("12", "Terminating", true)), "02.000000", "02.010000", nil))
	if rec := recs["delete"]; rec == nil || rec.Decision != DecisionAdmit {
		t.Errorf("the DELETE: %s, want admit", describeRecord(rec))
	}
}

// TestMarkedResponseShortened: a DELETE that shortens a pending graceful deletion answers with
// the marks moved (rest.BeforeDelete); a write the log does not show changed the pod in
// between. The marks are the DELETE's own change: a policy that reads them, or the grace
// period the options give, is decided on the State's version; another field that differs is
// not known.
func TestMarkedResponseShortened(t *testing.T) {
	t.Parallel()
	pod := func(rv, phase string, grace int, ts string) map[string]any {
		md := map[string]any{"name": "p", "namespace": "ns1", "uid": "u-p", "resourceVersion": rv}
		if ts != "" {
			md["deletionTimestamp"], md["deletionGracePeriodSeconds"] = ts, grace
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md,
			"spec":   map[string]any{"nodeName": "n1", "terminationGracePeriodSeconds": 30, "containers": []any{map[string]any{"name": "c", "image": "i"}}},
			"status": map[string]any{"phase": phase}}
	}
	zero := map[string]any{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "gracePeriodSeconds": 0}
	lines := []string{
		timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "pods", "ns1", "p", 201, "", pod("", "Running", 0, ""), pod("10", "Running", 0, "")), "00.000000", "00.001000", nil),
		timedEvent(t, levelEvent(t, "graceful", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "p", 200, "", nil, pod("12", "Running", 30, "2026-11-24T00:00:32Z")), "02.000000", "02.010000", nil),
		// The kubelet's status update (phase Succeeded) is not in the log; its final DELETE
		// shortens the grace period to 0: the deletionTimestamp moves to the server's clock.
		timedEvent(t, levelEvent(t, "final", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "p", 200, "", zero, pod("14", "Succeeded", 0, "2026-11-24T00:00:05Z")), "05.000000", "05.010000", nil),
	}
	for _, tc := range []struct {
		name, expr, want string
	}{
		// Validated twice: on the pod as the State holds it, then marked with the period of
		// zero, which the policy refuses.
		{"the marks", "oldObject.metadata.deletionGracePeriodSeconds == 30", DecisionDeny},
		{"the marks before", "oldObject.metadata.deletionGracePeriodSeconds in [0, 30]", DecisionAdmit},
		{"the options' grace period", "request.options.gracePeriodSeconds == 0", DecisionAdmit},
		{"a field that differs", "oldObject.status.phase == 'Running'", DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", "pods", admissionregistrationv1.Delete, nil, tc.expr)
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines...)
			if rec := recs["final"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("the final DELETE: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestMarkedResponseGeneration: a DELETE that first marks its object moves its generation by
// one (rest.BeforeDelete); a response whose generation is further on read a version the log
// does not show, and the old object's generation is not known.
func TestMarkedResponseGeneration(t *testing.T) {
	t.Parallel()
	pod := func(rv string, gen int, marked bool) map[string]any {
		md := map[string]any{"name": "p", "namespace": "ns1", "uid": "u-p", "resourceVersion": rv, "generation": gen}
		if marked {
			md["deletionTimestamp"], md["deletionGracePeriodSeconds"] = "2026-11-24T00:00:05Z", 0
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md,
			"spec": map[string]any{"nodeName": "n1", "terminationGracePeriodSeconds": 30, "containers": []any{map[string]any{"name": "c", "image": "i"}}}}
	}
	zero := map[string]any{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "gracePeriodSeconds": 0}
	for _, tc := range []struct {
		name string
		gen  int // of the DELETE's response
		want string
	}{
		{"moved by the DELETE", 2, DecisionAdmit},
		{"moved by a write the log does not show", 3, DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", "pods", admissionregistrationv1.Delete, nil, "oldObject.metadata.generation <= 2")
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "pods", "ns1", "p", 201, "", pod("", 1, false), pod("10", 1, false)), "00.000000", "00.001000", nil),
				timedEvent(t, levelEvent(t, "delete", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "p", 200, "", zero, pod("14", tc.gen, true)), "05.000000", "05.010000", nil))
			if rec := recs["delete"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("the DELETE: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestMarkedByAnotherDelete: a DELETE answered with the version the State holds, marked, read
// it before another DELETE marked it (the store's errAlreadyDeleting): admission saw the object
// as that one left it, which the log does not show.
func TestMarkedByAnotherDelete(t *testing.T) {
	t.Parallel()
	cm := func(rv string, marked bool) map[string]any {
		md := map[string]any{"name": "c", "namespace": "a", "uid": "u-c", "resourceVersion": rv, "finalizers": []any{"example.com/keep"}}
		if marked {
			md["deletionTimestamp"], md["deletionGracePeriodSeconds"] = "2026-11-24T00:00:02Z", 0
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}
	}
	for _, tc := range []struct {
		name, expr, want string
	}{
		{"reads the old object", "!has(oldObject.metadata.deletionTimestamp)", DecisionIndeterminate},
		{"reads the user", "request.userInfo.username == 'admin'", DecisionAdmit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", "configmaps", admissionregistrationv1.Delete, nil, tc.expr)
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c", 201, "", cm("", false), cm("10", false)), "00.000000", "00.001000", nil),
				timedEvent(t, levelEvent(t, "delete", auditlog.LevelRequestResponse, "delete", "configmaps", "a", "c", 200, "", nil, cm("10", true)), "02.000000", "02.010000", nil))
			if rec := recs["delete"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("the DELETE: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestWriteLoggedBeforeItsCreate: the scheduler bound a pod while the pod's create was still
// answering, so the log records the binding first; the create's response is the pod as it
// created it, before the binding. The pod the binding left unknown stays unknown: a request
// that reads its node is not decided on the unbound pod.
func TestWriteLoggedBeforeItsCreate(t *testing.T) {
	t.Parallel()
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "ns1", "uid": "u-web", "resourceVersion": "6"},
		"spec":   map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
		"status": map[string]any{"phase": "Pending"}}
	binding := map[string]any{"apiVersion": "v1", "kind": "Binding", "metadata": map[string]any{"name": "web", "namespace": "ns1"},
		"target": map[string]any{"kind": "Node", "name": "n1"}}
	bind := levelEvent(t, "bind", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", binding, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})
	bind = replaceOnce(t, bind, `"resource":"pods"`, `"resource":"pods","subresource":"binding"`)
	bind = replaceOnce(t, bind, `"requestURI":"/api/v1/namespaces/ns1/pods"`, `"requestURI":"/api/v1/namespaces/ns1/pods/web/binding"`)
	relabel := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		// The create completed first: the binding is followed on the pod it created.
		{name: "in order", lines: []string{
			timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), "00.000000", "00.010000", nil),
			timedEvent(t, bind, "00.020000", "00.030000", nil),
		}, want: DecisionDeny},
		// The binding completed while the create ran, and is logged first.
		{name: "the binding logged first", lines: []string{
			timedEvent(t, bind, "00.010000", "00.020000", nil),
			timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), "00.000000", "00.030000", nil),
		}, want: DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("unbound", "pods", admissionregistrationv1.Update, nil, "!has(oldObject.spec.nodeName)")
			update := timedEvent(t, levelEvent(t, "update", auditlog.LevelRequest, "patch", "pods", "ns1", "web", 200, "", relabel, nil), "05.000000", "05.010000", nil)
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, append(tc.lines, update)...)
			if rec := recs["update"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("the update: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestWriteConcurrentWithRefusedDelete: a refused DELETE of a pod with no grace period may have
// left it marked deleted; a patch the log records after it, received before it completed, may
// have been stored before the marks: its response, unmarked, does not make the pod known.
func TestWriteConcurrentWithRefusedDelete(t *testing.T) {
	t.Parallel()
	pod := func(rv string, labels map[string]any) map[string]any {
		md := map[string]any{"name": "p", "namespace": "ns1", "resourceVersion": rv, "uid": "u-p"}
		if labels != nil {
			md["labels"] = labels
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}
	}
	refused := `pods "p" is forbidden: ValidatingAdmissionPolicy 'other' with binding 'other' denied request: no`
	label := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}
	for _, tc := range []struct {
		name           string
		received, done string // the labelling patch's
		want           string
	}{
		{name: "received before the DELETE completed", received: "02.005000", done: "02.020000", want: DecisionIndeterminate},
		{name: "received after", received: "02.015000", done: "02.020000", want: DecisionAdmit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("not-deleting", "pods", admissionregistrationv1.Update, nil, "!has(oldObject.metadata.deletionTimestamp)")
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "pods", "ns1", "p", 201, "", pod("", nil), pod("10", nil)), "00.000000", "00.010000", nil),
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "p", 422, refused, nil, nil), "02.000000", "02.010000", nil),
				timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "patch", "pods", "ns1", "p", 200, "", label, pod("11", map[string]any{"a": "b"})), tc.received, tc.done, nil),
				timedEvent(t, levelEvent(t, "4", auditlog.LevelRequest, "patch", "pods", "ns1", "p", 200, "", label, nil), "05.000000", "05.010000", nil),
			)
			if rec := recs["4"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("request 4: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestRemovedByRefusedDeleteCollection: a deletecollection of the params, refused at p2 by
// "guard", removed p1 first; a patch of p1 that ran concurrently with it (answered 200, so
// stored before p1 was removed) is logged after it. p1 is gone, not brought back by the
// patch's response: a request that reads the params is not decided on it.
func TestRemovedByRefusedDeleteCollection(t *testing.T) {
	t.Parallel()
	param := func(name, rv string, selected bool) map[string]any {
		p := lagParam(name, rv, "yes")
		if !selected {
			p["metadata"].(map[string]any)["labels"] = map[string]any{"param": "no"}
		}
		return p
	}
	ns := func(name, rv string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name, "uid": "u-" + name, "resourceVersion": rv}}
	}
	dc := timedEvent(t, levelEvent(t, "dc", auditlog.LevelRequestResponse, "deletecollection", "configmaps", "params", "", 422,
		`configmaps "Unknown" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: denied by guard`, nil, nil), "03.000000", "03.010000", map[string]string{"authorization.k8s.io/decision": "allow"})
	dc = strings.Replace(dc, `"requestURI":"/api/v1/namespaces/params/configmaps/"`, `"requestURI":"/api/v1/namespaces/params/configmaps"`, 1)
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a": "b"}}}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "ns1"}}
	limit, limitBinding := lagParamPolicy(admissionregistrationv1.DenyAction)
	limitBinding.Spec.ParamRef.Selector, limitBinding.Spec.ParamRef.Name = nil, "p1" // read by name
	guard, guardBinding := levelPolicy("guard", "configmaps", admissionregistrationv1.Delete, nil, "oldObject.metadata.name != 'p2'")
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{limit, guard}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{limitBinding, guardBinding},
		timedEvent(t, asUser(t, levelEvent(t, "ns", auditlog.LevelRequestResponse, "create", "namespaces", "", "default", 201, "", ns("default", ""), ns("default", "2")), "system:apiserver"), "00.000000", "00.010000", nil),
		timedEvent(t, levelEvent(t, "ns-params", auditlog.LevelRequestResponse, "create", "namespaces", "", "params", 201, "", ns("params", ""), ns("params", "3")), "00.100000", "00.110000", nil),
		timedEvent(t, levelEvent(t, "ns-ns1", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", ns("ns1", ""), ns("ns1", "4")), "00.200000", "00.210000", nil),
		timedEvent(t, levelEvent(t, "p1", auditlog.LevelRequestResponse, "create", "configmaps", "params", "p1", 201, "", param("p1", "", true), param("p1", "5", true)), "01.000000", "01.010000", nil),
		timedEvent(t, levelEvent(t, "p2", auditlog.LevelRequestResponse, "create", "configmaps", "params", "p2", 201, "", param("p2", "", false), param("p2", "6", false)), "02.000000", "02.010000", nil),
		dc,
		timedEvent(t, levelEvent(t, "patch", auditlog.LevelRequestResponse, "patch", "configmaps", "params", "p1", 200, "", patch, param("p1", "8", true)), "03.005000", "03.020000", nil),
		timedEvent(t, levelEvent(t, "x", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "x", 201, "", cm, withRV(cm, "9")), "05.000000", "05.010000", nil),
	)
	if rec := recs["dc"]; rec == nil || rec.Decision != DecisionDeny {
		t.Fatalf("the deletecollection: %s, want deny (the replay's pipeline refusing p2 as the log shows)", describeRecord(rec))
	}
	if rec := recs["x"]; rec == nil || rec.Decision != DecisionIndeterminate {
		t.Errorf("the create: %s, want indeterminate: p1 is gone or not known, not the patch's", describeRecord(rec))
	}
}

// withRV is a copy of obj with its resourceVersion set, as the server answers.
func withRV(obj map[string]any, rv string) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		out[k] = v
	}
	md := map[string]any{}
	for k, v := range obj["metadata"].(map[string]any) {
		md[k] = v
	}
	md["resourceVersion"] = rv
	out["metadata"] = md
	return out
}

// TestNamespaceFinalized: the namespace controller removes a namespace with the PUT of its
// finalize subresource that empties spec.finalizers (the namespace store's
// ShouldDeleteNamespaceDuringUpdate: no metadata.finalizers, no spec.finalizers, a deletion
// without grace period); no DELETE follows. A policy whose params are every namespace does not
// read it afterwards.
func TestNamespaceFinalized(t *testing.T) {
	t.Parallel()
	ns := func(name, rv, phase string, marked bool, finalizers ...any) map[string]any {
		md := map[string]any{"name": name, "uid": "u-" + name, "labels": map[string]any{"kubernetes.io/metadata.name": name}}
		if rv != "" {
			md["resourceVersion"] = rv
		}
		if marked {
			md["deletionTimestamp"] = "2026-11-24T00:00:02Z"
		}
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": md,
			"spec": map[string]any{"finalizers": finalizers}, "status": map[string]any{"phase": phase}}
	}
	p, b := levelPolicy("guard", "configmaps", admissionregistrationv1.Create, nil, "params.status.phase == 'Active'")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Namespace"}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "default"}}
	cmDone := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "default", "uid": "u-c", "resourceVersion": "20"}}
	finalize := func(spec ...any) string {
		line := levelEvent(t, "finalize", auditlog.LevelRequestResponse, "update", "namespaces", "", "team", 200, "", ns("team", "12", "Terminating", true, spec...), ns("team", "13", "Terminating", true, spec...))
		return timedEvent(t, strings.Replace(line, `/api/v1/namespaces/team"`, `/api/v1/namespaces/team/finalize"`, 1), "04.000000", "04.010000", nil)
	}
	for _, tc := range []struct {
		name     string
		finalize string
		want     string
	}{
		{"finalized: removed", finalize(), DecisionAdmit},
		// Another finalizer is pending: the namespace stays, Terminating.
		{"a finalizer left", finalize("example.com/cleanup"), DecisionDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snapshot := []any{ns("default", "1", "Active", false, "kubernetes"), ns("team", "10", "Active", false, "kubernetes")}
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, snapshot,
				timedEvent(t, levelEvent(t, "delete", auditlog.LevelRequestResponse, "delete", "namespaces", "", "team", 200, "", nil, ns("team", "12", "Terminating", true, "kubernetes")), "02.000000", "02.010000", nil),
				tc.finalize,
				timedEvent(t, levelEvent(t, "cm", auditlog.LevelRequestResponse, "create", "configmaps", "default", "c", 201, "", cm, cmDone), "30.000000", "30.001000", nil))
			if rec := recs["cm"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("the ConfigMap's create: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestConcurrentWritesCommute: patches logged at level Request that ran concurrently store the
// same object whichever the server committed last when they write different fields: the update
// after them is decided on it; where two write one field, it is not known; nor where the third
// of three writes the first one's field, though each commutes with the one before it (the
// server may have committed the third before the first).
func TestConcurrentWritesCommute(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("old-x", "configmaps", admissionregistrationv1.Update, nil, "oldObject.data.x == 'a'")
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": "10"}, "data": map[string]any{"x": "0"}}
	type patch struct{ field, value, received, done string }
	for _, tc := range []struct {
		name    string
		patches []patch
		want    string
	}{
		{name: "different fields", patches: []patch{{"x", "a", "01.000000", "01.010000"}, {"y", "b", "01.005000", "01.012000"}}, want: DecisionAdmit},
		{name: "one field", patches: []patch{{"x", "a", "01.000000", "01.010000"}, {"x", "b", "01.005000", "01.012000"}}, want: DecisionIndeterminate},
		{name: "three, the first and the third one field", patches: []patch{{"x", "a", "01.000000", "01.010000"}, {"y", "b", "01.005000", "01.012000"}, {"x", "c", "01.002000", "01.014000"}}, want: DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := []string{timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm, cm), "00.000000", "00.001000", nil)}
			for i, pt := range tc.patches {
				lines = append(lines, timedEvent(t, levelEvent(t, fmt.Sprint(i), auditlog.LevelRequest, "patch", "configmaps", "ns1", "cm", 200, "", map[string]any{"data": map[string]any{pt.field: pt.value}}, nil), pt.received, pt.done, nil))
			}
			lines = append(lines, timedEvent(t, levelEvent(t, "update", auditlog.LevelRequest, "update", "configmaps", "ns1", "cm", 200, "", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1"}, "data": map[string]any{"x": "d"}}, nil), "05.000000", "05.001000", nil))
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines...)
			if rec := recs["update"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("the update after them: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestMatchedOnlyAhead: a policy selects ConfigMaps labelled "color". A dry-run patch (2) of one
// without the label (its answer at the version it read: nothing orders it against another
// write), and a patch (3) that adds it, received before the first completed and logged after
// it: on the state the log's order gives, no policy matches the first; on what the second
// stored, the policy denies it (random parity r:1245, a GKE export, which gives no receipt
// times). The log, checked, shows the first admitted, with none of the policy's verdicts
// where it shows the policy installed: the log's order is the one, and no policy matched it.
// Unchecked, which the first read is not known.
func TestMatchedOnlyAhead(t *testing.T) {
	t.Parallel()
	cm := func(rv string, labels map[string]any) map[string]any {
		meta := map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": rv, "labels": labels}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"v": "a"}}
	}
	for _, tc := range []struct {
		name    string
		checked bool
		want    string // the first patch's decision; "" for no record (no policy matched it)
	}{
		{"the log's verdicts say", true, ""},
		{"nothing says", false, DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("colored", "configmaps", admissionregistrationv1.Update, nil, "false")
			p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "color", Operator: metav1.LabelSelectorOpExists}}}
			other := cm("5", map[string]any{"color": "red"})
			other["metadata"].(map[string]any)["name"] = "other"
			denied := `configmaps "other" is forbidden: ValidatingAdmissionPolicy 'colored' with binding 'colored' denied request: denied by colored`
			lines := []string{
				// The log shows the policy installed: it refused another ConfigMap's update.
				timedEvent(t, levelEvent(t, "0", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "other", 422, denied, other, nil), "00.500000", "00.501000", nil),
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", map[string]any{"app": "web"}), cm("10", map[string]any{"app": "web"})), "01.000000", "01.001000", nil),
				timedEvent(t, replaceOnce(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"limit": "2"}}}, cm("10", map[string]any{"app": "web", "limit": "2"})),
					`configmaps/cm"`, `configmaps/cm?dryRun=All"`), "02.000000", "02.004000", nil),
				timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"color": "green"}}}, cm("11", map[string]any{"app": "web", "color": "green"})), "02.001000", "02.008000", nil),
			}
			opts := []Option{}
			if tc.checked {
				opts = append(opts, WithCheckRecorded(true))
			}
			_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, opts,
				Source{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")})
			rec := recs["2"]
			switch {
			case tc.want == "" && rec != nil:
				t.Errorf("the first patch: %s, want no policy matched", describeRecord(rec))
			case tc.want != "" && (rec == nil || rec.Decision != tc.want):
				t.Errorf("the first patch: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestDeletedWhileRead: a dry-run patch of a ConfigMap, received before a DELETE of it
// completed and logged after it, refused by a policy: on the State the log's order gives, the
// object is gone and the patch never reaches validating admission (404), but the log shows the
// policy's denial: the patch read the version the DELETE removed, on which it is decided
// (random parity r:1246).
func TestDeletedWhileRead(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("guard", "configmaps", admissionregistrationv1.Update, nil, "!has(object.metadata.labels) || !('color' in object.metadata.labels)")
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": "10"}, "data": map[string]any{"v": "a"}}
	denied := `configmaps "cm" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: denied by guard`
	patch := levelEvent(t, "patch", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 422, denied, map[string]any{"metadata": map[string]any{"labels": map[string]any{"color": "red"}}}, nil)
	patch = replaceOnce(t, patch, `configmaps/cm"`, `configmaps/cm?dryRun=All"`)
	lines := []string{
		timedEvent(t, levelEvent(t, "delete", auditlog.LevelRequestResponse, "delete", "configmaps", "ns1", "cm", 200, "", nil, cm), "02.000700", "02.003300", nil),
		timedEvent(t, patch, "02.000000", "02.006000", nil),
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1"}}
	for _, checked := range []bool{true, false} {
		// The snapshot holds the ConfigMap, and every ConfigMap there is.
		_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []Option{WithCheckRecorded(checked), snapshotOf(t, []any{ns, cm})},
			Source{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")})
		if rec := recs["patch"]; rec == nil || rec.Decision != DecisionDeny || rec.Certainty != CertaintyCertain || rec.Message != denied || len(rec.Disagreements) > 0 {
			t.Errorf("checked %v: the patch: %s, want deny certain", checked, describeRecord(rec))
		}
	}
}
