package replay

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// TestWatchCacheFirstAttempt: kube-apiserver runs an update's or a delete's first attempt on
// its watch cache's copy of the object, which may be the version before a write that completed
// moments earlier, and the audit event keeps the annotations of that attempt. The decision is
// the live object's; the annotations are certain only when every version the attempt may have
// read publishes the same, or, when the replay checks the log, when the log's own annotations
// of the loaded policies say which one it read. Otherwise the live attempt's are likely (the
// watch cache holds a write moments after it completed), the older version's an alternative.
func TestWatchCacheFirstAttempt(t *testing.T) {
	t.Parallel()
	cm := func(rv, v string) map[string]any {
		meta := map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1"}
		if rv != "" {
			meta["resourceVersion"] = rv
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"v": v}}
	}
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{"l": "1"}}}
	type want struct {
		Decision    string
		Certainty   Certainty
		Reason      Reason
		Annotation  string // the record's old-v/v
		Disagrees   bool
		FirstNoteOK bool // a note says which attempt the log's annotations come from
		// Alternatives are the alternatives' old-v/v annotations, warnings ("warns") or the
		// reason they are not decided.
		Alternatives []string
	}
	for _, tc := range []struct {
		name     string
		check    bool
		verb     string
		body     map[string]any
		received string // seconds after the write that changed v from a to b completed
		recorded string // the log's old-v/v annotation, "" for none
		noAudit  bool   // the policy publishes nothing
		warn     bool   // the policy warns when the old object's v is a, and publishes nothing else
		// olderUnknown: the version before the write was created at Metadata level
		olderUnknown bool
		want         want
	}{{
		name: "moments after, not checked", verb: "patch", body: patch, received: "02.011000",
		want: want{Decision: DecisionAdmit, Certainty: CertaintyLikely, Annotation: "b", Alternatives: []string{"a"}},
	}, {
		name: "moments after, the log says the first attempt read the older version", check: true, verb: "patch", body: patch, received: "02.011000", recorded: "a",
		want: want{Decision: DecisionAdmit, Certainty: CertaintyCertain, Annotation: "a", FirstNoteOK: true},
	}, {
		name: "moments after, the log says the first attempt read the live version", check: true, verb: "patch", body: patch, received: "02.011000", recorded: "b",
		want: want{Decision: DecisionAdmit, Certainty: CertaintyCertain, Annotation: "b", FirstNoteOK: true},
	}, {
		name: "moments after, the log matches neither version", check: true, verb: "patch", body: patch, received: "02.011000", recorded: "z",
		want: want{Decision: DecisionAdmit, Certainty: CertaintyLikely, Annotation: "b", Disagrees: true, Alternatives: []string{"a"}},
	}, {
		// The log's annotation rules out the live attempt's; what the older version publishes
		// is not known.
		name: "moments after, the log contradicts the live version, the older one not known", check: true, verb: "patch", body: patch, received: "02.011000", recorded: "z", olderUnknown: true,
		want: want{Decision: DecisionIndeterminate, Certainty: CertaintyIndeterminate, Reason: ReasonWatchCache},
	}, {
		name: "an update that asks for the live resourceVersion conflicts on an older one", verb: "update", body: cm("11", "c"), received: "02.011000",
		want: want{Decision: DecisionAdmit, Certainty: CertaintyCertain, Annotation: "b"},
	}, {
		name: "an update that asks for the live resourceVersion, the older version not known", verb: "update", body: cm("11", "c"), received: "02.011000", olderUnknown: true,
		want: want{Decision: DecisionAdmit, Certainty: CertaintyCertain, Annotation: "b"},
	}, {
		name: "a patch, the older version not known", verb: "patch", body: patch, received: "02.011000", olderUnknown: true,
		want: want{Decision: DecisionAdmit, Certainty: CertaintyLikely, Annotation: "b", Alternatives: []string{string(ReasonWatchCache)}},
	}, {
		name: "an unconditional update may read the older version", verb: "update", body: cm("", "c"), received: "02.011000",
		want: want{Decision: DecisionAdmit, Certainty: CertaintyLikely, Annotation: "b", Alternatives: []string{"a"}},
	}, {
		name: "a delete", verb: "delete", received: "02.011000", check: true, recorded: "a",
		want: want{Decision: DecisionAdmit, Certainty: CertaintyCertain, Annotation: "a", FirstNoteOK: true},
	}, {
		name: "a Warn binding warns on the older version only", verb: "patch", body: patch, received: "02.011000", warn: true,
		want: want{Decision: DecisionAdmit, Certainty: CertaintyLikely, Alternatives: []string{"warns"}},
	}, {
		// The log does not record warnings, and the policy publishes no annotation.
		name: "a Warn binding warns on the older version only, checked", check: true, verb: "patch", body: patch, received: "02.011000", warn: true,
		want: want{Decision: DecisionAdmit, Certainty: CertaintyLikely, Alternatives: []string{"warns"}},
	}, {
		name: "a second later", verb: "patch", body: patch, received: "03.100000",
		want: want{Decision: DecisionAdmit, Certainty: CertaintyCertain, Annotation: "b"},
	}, {
		name: "no policy publishes annotations", verb: "patch", body: patch, received: "02.011000", noAudit: true,
		want: want{Decision: DecisionAdmit, Certainty: CertaintyCertain},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Update, nil, "true")
			p.Spec.MatchConstraints.ResourceRules[0].Operations = append(p.Spec.MatchConstraints.ResourceRules[0].Operations, admissionregistrationv1.Delete)
			if tc.warn {
				p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "oldObject.data.v != 'a'", Message: "v was a"}}
				b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
			} else if !tc.noAudit {
				p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "v", ValueExpression: "string(oldObject.data.v)"}}
			}
			at := func(line, received, done string, annotations map[string]string) string {
				return timedEvent(t, line, received, done, annotations)
			}
			created := levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), cm("10", "a"))
			if tc.olderUnknown {
				created = levelEvent(t, "1", auditlog.LevelMetadata, "create", "configmaps", "ns1", "cm", 201, "", nil, nil)
			}
			var recorded map[string]string
			if tc.recorded != "" {
				recorded = map[string]string{"old-v/v": tc.recorded}
			}
			lines := []string{
				at(created, "01.000000", "01.001000", nil),
				at(levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("10", "b"), cm("11", "b")), "02.000000", "02.010000", map[string]string{"old-v/v": "a"}),
				at(levelEvent(t, "3", auditlog.LevelRequestResponse, tc.verb, "configmaps", "ns1", "cm", 200, "", tc.body, nil), tc.received, tc.received[:len(tc.received)-3]+"900", recorded),
			}
			opts := []Option{WithCheckRecorded(tc.check)}
			r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			rec := recordOf(t, r, "3", lines)
			if rec == nil {
				t.Fatal("request 3 has no record")
			}
			got := want{Decision: rec.Decision, Certainty: rec.Certainty, Reason: rec.Reason, Annotation: rec.AuditAnnotations["old-v/v"], Disagrees: len(rec.Disagreements) > 0}
			for _, a := range rec.Alternatives {
				switch {
				case a.Decision == DecisionIndeterminate:
					got.Alternatives = append(got.Alternatives, string(a.Reason))
				case len(a.Warnings) > 0:
					got.Alternatives = append(got.Alternatives, "warns")
				default:
					got.Alternatives = append(got.Alternatives, a.AuditAnnotations["old-v/v"])
				}
			}
			for _, n := range rec.Notes {
				got.FirstNoteOK = got.FirstNoteOK || strings.Contains(n, "the audit annotations the log records are those of")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("request 3 (-want +got):\n%s\nrecord: %s %q %v", diff, rec, rec.Message, rec.Notes)
			}
		})
	}
}

// TestWatchCacheDeleteCollection: a deletecollection deletes each object as a DELETE does, first
// on the watch cache's copy: moments after a write to the resource, what its policies published
// is not known (the versions before it are not followed for a deletecollection): the live
// attempt's annotations are likely.
func TestWatchCacheDeleteCollection(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Delete, nil, "true")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "v", ValueExpression: "string(oldObject.data.v)"}}
	cm := func(rv, v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "resourceVersion": rv, "uid": "u1"}, "data": map[string]any{"v": v}}
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1"}}
	collection := strings.Replace(levelEvent(t, "3", auditlog.LevelRequestResponse, "deletecollection", "configmaps", "ns1", "", 200, "", nil, nil), `/namespaces/ns1/configmaps/"`, `/namespaces/ns1/configmaps"`, 1)
	for _, tc := range []struct {
		name, received string
		want           Certainty
	}{
		{"moments after the write", "02.020000", CertaintyLikely},
		{"a second after", "03.100000", CertaintyCertain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				// The log begins with the cluster's creation: it holds every configmap.
				strings.Replace(timedEvent(t, levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "namespaces", "", "kube-system", 201, "", ns, ns), "00.000000", "00.001000", nil), `"username":"admin"`, `"username":"system:apiserver"`, 1),
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), cm("10", "a")), "01.000000", "01.001000", nil),
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("10", "b"), cm("11", "b")), "02.000000", "02.010000", nil),
				timedEvent(t, collection, tc.received, tc.received[:len(tc.received)-3]+"900", nil),
			)
			rec := recs["3"]
			if rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != tc.want ||
				(tc.want == CertaintyLikely && (len(rec.Alternatives) != 1 || rec.Alternatives[0].Reason != ReasonWatchCache)) {
				t.Errorf("the deletecollection: %+v, want %s", rec, tc.want)
			}
		})
	}
}

// versionedCM is ConfigMap ns1/cm at a resourceVersion, its data v; conflictMessage is the 409
// an update of it that asked for an older version gets.
const conflictMessage = `Operation cannot be fulfilled on configmaps "cm": the object has been modified; please apply your changes to the latest version and try again`

// TestConflictAfterFirstAttempt: an update that asked for the resourceVersion of the version
// before a write that completed moments earlier passed its precondition on the watch cache's
// copy of that version, ran admission on it, and failed with 409 Conflict on the live object:
// the replay decides it on that copy, certain, when the log's annotations show admission ran;
// otherwise the watch cache likely held the write, and the request is refused before
// admission.
func TestConflictAfterFirstAttempt(t *testing.T) {
	t.Parallel()
	cm, conflict := versionedCM, conflictMessage
	for _, tc := range []struct {
		name      string
		annotated bool
		received  string
		certainty Certainty
		skipped   bool
		// uid: the policy's annotation reads the user's uid; lost: the log is read as a GKE
		// log sink's, which does not carry it, and the request is indeterminate.
		uid, lost bool
		// ignore: the policy's failurePolicy is Ignore (an expression that fails on what the
		// export lost publishes nothing).
		ignore bool
		// unannotated: the policy publishes an annotation, which the log records of the
		// update before and not of this one.
		unannotated bool
		// refused: the policy refuses the request on that copy.
		refused bool
	}{
		{name: "the log's annotation shows admission ran", annotated: true, received: "02.020000", certainty: CertaintyCertain},
		// Nothing in the log shows admission ran: the watch cache likely held the write.
		{name: "no annotation", received: "02.020000", skipped: true},
		// Refused on that copy, the request was run again on the live object: 409 either
		// way, the live attempt refused before admission, the first one's refusal noted.
		{name: "refused on that copy", annotated: true, refused: true, received: "02.020000", skipped: true},
		// The log shows the policy installed, and what admission on that copy would have
		// published is not there (random parity seed m:766).
		{name: "the policy's annotation missing", annotated: true, unannotated: true, received: "02.020000", skipped: true},
		// A GKE entry does not carry the user's uid, which the policy reads on that copy too.
		{name: "the user's uid lost by the export", annotated: true, uid: true, received: "02.020000", lost: true},
		{name: "the user's uid lost by the export, the policy's errors ignored", annotated: true, uid: true, ignore: true, received: "02.020000", lost: true},
		// Long after the write the watch cache holds the live version: refused before admission.
		{name: "a second later", received: "03.500000", skipped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expr := "oldObject.data.v != 'z'"
			if tc.refused {
				expr = "oldObject.data.v != 'a'"
			}
			p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Update, nil, expr)
			if tc.ignore {
				p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			}
			if tc.annotated {
				expr := "string(oldObject.data.v)"
				if tc.uid {
					expr += " + ' ' + request.userInfo.uid"
				}
				p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "v", ValueExpression: expr}}
			}
			var annotations, before map[string]string
			if tc.unannotated {
				before = map[string]string{"old-v/v": "a"}
			}
			if tc.annotated && !tc.unannotated {
				annotations = map[string]string{"old-v/v": "a"}
				if tc.uid {
					annotations["old-v/v"] = "a " + "admin-uid"
				}
			}
			lines := []string{
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), cm("10", "a")), "01.000000", "01.001000", nil),
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("10", "b"), cm("11", "b")), "02.000000", "02.010000", before),
				timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 409, conflict, cm("10", "c"), nil), tc.received, tc.received[:3]+"900000", annotations),
			}
			if tc.lost {
				// The export's event says when the request completed, and a request completes
				// within a minute of being received: completed a minute after the update
				// before it, it may have been received moments after that update.
				lines[2] = strings.Replace(lines[2], `"stageTimestamp":"2026-11-24T00:00:`+tc.received[:3]+`900000Z"`, `"stageTimestamp":"2026-11-24T00:01:02.030000Z"`, 1)
				// An update logged after it, which may have run concurrently with it: the
				// state the log's order gives, on which the request is not decided, is the
				// likely one.
				later := timedEvent(t, levelEvent(t, "4", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("11", "d"), cm("12", "d")), "59.000000", "59.000000", nil)
				lines = append(lines, strings.ReplaceAll(later, "2026-11-24T00:00:59.000000Z", "2026-11-24T00:01:02.040000Z"))
				wrapped, err := exporttest.Wrap(exporttest.GKESink, []byte(strings.Join(lines, "\n")+"\n"))
				if err != nil {
					t.Fatal(err)
				}
				lines = []string{strings.TrimSuffix(string(wrapped), "\n")}
			}
			var snapshot []any
			if tc.lost {
				// The export does not say whether the update before was a dry run: the State
				// holds what it stored only of a resource it knows whole.
				other := cm("5", "x")
				other["metadata"].(map[string]any)["name"] = "other"
				snapshot = []any{other}
			}
			sum, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, snapshot, lines...)
			rec := recs["3"]
			switch {
			case tc.lost:
				attempted := rec != nil && slices.ContainsFunc(rec.Notes, func(n string) bool { return strings.Contains(n, "first attempt ran admission") })
				if rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonExportLost || !attempted || !strings.Contains(rec.OldObjectSource, "audit.jsonl:1") {
					t.Errorf("the update: %s, want indeterminate (%s) on the first attempt on the version the create stored", describeRecord(rec), ReasonExportLost)
				}
			case tc.refused:
				noted := slices.ContainsFunc(slices.Collect(maps.Keys(sum.Skipped)), func(k string) bool { return strings.Contains(k, "was refused by validating admission") })
				if rec != nil || !noted {
					t.Errorf("the update: %s, skipped %v, want refused before admission, the first attempt's refusal noted", describeRecord(rec), sum.Skipped)
				}
			case tc.skipped:
				if rec != nil || sum.Skipped["rejected-before-admission (Conflict)"] != 1 {
					t.Errorf("the update: %s, skipped %v, want refused before admission", describeRecord(rec), sum.Skipped)
				}
			case rec == nil:
				t.Fatalf("the update has no record, skipped %v", sum.Skipped)
			case rec.Decision != DecisionAdmit || rec.Certainty != tc.certainty || len(rec.Disagreements) > 0 || (tc.annotated && rec.AuditAnnotations["old-v/v"] != "a"):
				t.Errorf("the update: %s %v, want admit (%s) on the version before", describeRecord(rec), rec.AuditAnnotations, tc.certainty)
			}
		})
	}
}

// TestNotFoundAfterRefusedFirstAttempt: an update received before a DELETE of its object, and
// completed after it, failed 404 while the log's annotations show validating admission ran:
// the store's first attempt ran admission on the watch cache's copy of the version the DELETE
// removed, which refused it, and the store ran it again on the live object, gone. The response
// is 404 whatever admission decided on that copy: the request is refused before admission, the
// first attempt's refusal noted, not indeterminate (random parity seed c:761: a patch a
// policy's binding without params refused on the copy, rebuild before).
func TestNotFoundAfterRefusedFirstAttempt(t *testing.T) {
	t.Parallel()
	cm := versionedCM
	for _, refused := range []bool{false, true} {
		t.Run(map[bool]string{false: "admitted", true: "refused"}[refused], func(t *testing.T) {
			expr := "oldObject.data.v != 'z'"
			if refused {
				expr = "oldObject.data.v != 'a'"
			}
			p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Update, nil, expr)
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "v", ValueExpression: "string(oldObject.data.v)"}}
			lines := []string{
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), cm("10", "a")), "01.000000", "01.001000", nil),
				timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "delete", "configmaps", "ns1", "cm", 200, "", nil, nil), "02.001000", "02.005000", nil),
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 404, `configmaps "cm" not found`, cm("", "c"), nil), "02.000000", "02.010000", map[string]string{"old-v/v": "a"}),
			}
			sum, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil, lines...)
			rec := recs["2"]
			if !refused {
				if rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyCertain {
					t.Errorf("the update: %s, want admit on the version the DELETE removed", describeRecord(rec))
				}
				return
			}
			noted := slices.ContainsFunc(slices.Collect(maps.Keys(sum.Skipped)), func(k string) bool { return strings.Contains(k, "was refused by validating admission") })
			if rec != nil || !noted {
				t.Errorf("the update: %s, skipped %v, want refused before admission, the first attempt's refusal noted", describeRecord(rec), sum.Skipped)
			}
		})
	}
}

// TestWatchCacheFirstAttemptCustomResource: a custom resource's patch, decided on the object
// the log's response holds, may have had its first attempt on the watch cache's copy of the
// version before a write moments earlier; rebuilt from the patch over that version, what the
// handler's field manager wrote before admission is not known, so the attempt decides nothing
// that reads it, and the live decision is likely, not certain.
func TestWatchCacheFirstAttemptCustomResource(t *testing.T) {
	t.Parallel()
	cat, err := vapcschema.Builtin(verify.KubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.LoadCRDs(filepath.Join("..", "..", "testdata", "crd", "widgets.yaml")); err != nil {
		t.Fatal(err)
	}
	p, b := levelPolicy("wv", "widgets", admissionregistrationv1.Update, nil, "true")
	p.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{"example.com"}
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "managers", ValueExpression: "string(size(object.metadata.?managedFields.orValue([])))"}}
	widget := func(rv string, replicas int) map[string]any {
		meta := map[string]any{"name": "w", "namespace": "ns1", "uid": "u1"}
		if rv != "" {
			// As the server stores it: the field manager's entry.
			meta["resourceVersion"] = rv
			meta["managedFields"] = []any{map[string]any{"manager": "kubectl", "operation": "Update", "apiVersion": "example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}}}
		}
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta, "spec": map[string]any{"size": "small", "replicas": replicas}}
	}
	// event is levelEvent's of a widget: its group in the URI and objectRef.
	event := func(id, verb string, code int32, req, resp map[string]any, received, done string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(levelEvent(t, id, auditlog.LevelRequestResponse, verb, "widgets", "ns1", "w", code, "", req, resp)), &m); err != nil {
			t.Fatal(err)
		}
		m["requestURI"] = strings.Replace(m["requestURI"].(string), "/api/v1/", "/apis/example.com/v1/", 1)
		m["objectRef"].(map[string]any)["apiGroup"] = "example.com"
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return timedEvent(t, string(line), received, done, nil)
	}
	r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, WithResources(cat))
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		event("1", "create", 201, widget("", 1), widget("10", 1), "01.000000", "01.001000"),
		event("2", "update", 200, widget("10", 2), widget("11", 2), "02.000000", "02.010000"),
		event("3", "patch", 200, map[string]any{"spec": map[string]any{"replicas": 3}}, widget("12", 3), "02.011000", "02.900000"),
	}
	rec := recordOf(t, r, "3", lines)
	switch {
	case rec == nil:
		t.Fatal("the patch has no record")
	case rec.Decision != DecisionAdmit || rec.Certainty != CertaintyLikely || rec.AuditAnnotations["wv/managers"] != "1":
		t.Errorf("the patch: %s %s %v, want admit, likely, with the annotation of the object the log's response holds", describeRecord(rec), rec.Certainty, rec.AuditAnnotations)
	case len(rec.Alternatives) != 1 || rec.Alternatives[0].Decision != DecisionIndeterminate:
		t.Errorf("the patch's alternatives: %v, want one not decided: the first attempt's managedFields are not known", rec.Alternatives)
	}
}

// recordOf replays the lines and returns the record of the audit ID, nil when it has none.
func recordOf(t *testing.T, r *Replayer, id string, lines []string) *Record {
	t.Helper()
	var rec *Record
	if _, err := r.Run(context.Background(), []Source{{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")}}, func(out *Record) error {
		if out.AuditID == id {
			rec = out
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestFirstAttemptAndInformerLag: a patch received moments after a write to its object and a
// write to its namespace may have read an older copy of the object, a namespace the informer
// had not held yet, or both. When the log's annotations are neither the likely state's nor the
// older copy's but those of the live object with the namespace before its write, they choose
// that state, as they would with no older copy.
func TestFirstAttemptAndInformerLag(t *testing.T) {
	t.Parallel()
	p, b := oldAndEnvPolicy()
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		timedEvent(t, levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", envNamespace("", "a"), envNamespace("5", "a")), "00.000000", "00.001000", nil),
		timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", versionedCM("", "a"), versionedCM("10", "a")), "01.000000", "01.001000", nil),
		timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", versionedCM("10", "b"), versionedCM("11", "b")), "02.000000", "02.010000", nil),
		timedEvent(t, levelEvent(t, "4", auditlog.LevelRequestResponse, "patch", "namespaces", "", "ns1", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": "b"}}}, envNamespace("12", "b")), "02.005000", "02.012000", nil),
		timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", map[string]any{"data": map[string]any{"w": "1"}}, nil), "02.013000", "02.900000", map[string]string{"old-v/v": "b a"}),
	)
	rec := recs["3"]
	switch {
	case rec == nil:
		t.Fatal("the patch has no record")
	case rec.Decision != DecisionAdmit || rec.Certainty != CertaintyCertain || rec.AuditAnnotations["old-v/v"] != "b a" || len(rec.Disagreements) > 0:
		t.Errorf("the patch: %s %s %v %v, want admit, certain, with the log's annotation (the live object, the namespace before its write)", describeRecord(rec), rec.Certainty, rec.AuditAnnotations, rec.Disagreements)
	}
}

// TestUpdateOfLiveVersionInformerLag: an update that sends the resourceVersion of the State's
// copy, received moments after a write to its object and to its namespace. Its first attempt on
// an older copy fails the store's resourceVersion check before admission and publishes nothing,
// so the log's annotations are the live object's, and they choose the namespace's state: the
// informer had not held its relabel (random parity seed c:499, a ReplicaSet's status update).
func TestUpdateOfLiveVersionInformerLag(t *testing.T) {
	t.Parallel()
	p, b := oldAndEnvPolicy()
	lines := func(recorded string) []string {
		return []string{
			timedEvent(t, levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", envNamespace("", "a"), envNamespace("5", "a")), "00.000000", "00.001000", nil),
			timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", versionedCM("", "a"), versionedCM("10", "a")), "01.000000", "01.001000", nil),
			timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", versionedCM("10", "b"), versionedCM("11", "b")), "02.000000", "02.010000", nil),
			timedEvent(t, levelEvent(t, "4", auditlog.LevelRequestResponse, "patch", "namespaces", "", "ns1", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": "b"}}}, envNamespace("12", "b")), "02.005000", "02.012000", nil),
			timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", versionedCM("11", "c"), versionedCM("13", "c")), "02.013000", "02.900000", map[string]string{"old-v/v": recorded}),
		}
	}
	for _, tc := range []struct {
		recorded string
		note     string
	}{
		{recorded: "b a", note: "the informer had not held the relabel"},
		{recorded: "b b", note: "the informer held the relabel"},
	} {
		p, b := p.DeepCopy(), b.DeepCopy()
		_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines(tc.recorded)...)
		rec := recs["3"]
		switch {
		case rec == nil:
			t.Fatal("the update has no record")
		case rec.Decision != DecisionAdmit || rec.Certainty != CertaintyCertain || rec.AuditAnnotations["old-v/v"] != tc.recorded || len(rec.Disagreements) > 0:
			t.Errorf("%s: the update: %s %s %v %v, want admit, certain, with the log's annotation %q", tc.note, describeRecord(rec), rec.Certainty, rec.AuditAnnotations, rec.Disagreements, tc.recorded)
		}
	}
}

// TestStaleObjectInformerLagEvidence: a patch received moments after a write to its object (its
// first attempt may have read the watch cache's older copy) and moments after a write to its
// namespace is decided in the namespace's state the log's verdict gives. The older copy changes
// only what the first attempt published, never the decision (the store runs the live attempt
// again), so the recorded denial rules out the likely state, where the relabel was held and
// the policy did not match.
func TestStaleObjectInformerLagEvidence(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("prod-only", "configmaps", admissionregistrationv1.Update, map[string]string{"env": "prod"}, "")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "v", ValueExpression: "string(object.data.v)"}}
	cm := func(rv, v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": rv}, "data": map[string]any{"v": v}}
	}
	ns := func(rv, env string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "uid": "n1", "resourceVersion": rv, "labels": map[string]any{"env": env}}}
	}
	denied := `configmaps "cm" is forbidden: ValidatingAdmissionPolicy 'prod-only' with binding 'prod-only' denied request: denied by prod-only`
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		timedEvent(t, levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", ns("", "dev"), ns("5", "dev")), "00.000000", "00.001000", nil),
		timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), cm("10", "a")), "01.000000", "01.001000", nil),
		timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "namespaces", "", "ns1", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": "prod"}}}, ns("11", "prod")), "01.500000", "01.501000", nil),
		timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("10", "b"), cm("12", "b")), "02.000000", "02.010000", nil),
		timedEvent(t, levelEvent(t, "4", auditlog.LevelRequestResponse, "patch", "namespaces", "", "ns1", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": "dev"}}}, ns("13", "dev")), "02.005000", "02.012000", nil),
		timedEvent(t, levelEvent(t, "5", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 422, denied, map[string]any{"data": map[string]any{"w": "1"}}, nil), "02.012025", "02.020000", map[string]string{"prod-only/v": "b"}),
	)
	rec := recs["5"]
	switch {
	case rec == nil:
		t.Fatal("the patch has no record")
	case rec.Decision != DecisionDeny || rec.Certainty != CertaintyCertain || len(rec.Disagreements) > 0:
		t.Errorf("the patch: %s %s %v, want deny, certain: the informer had not held the relabel to env=dev", describeRecord(rec), rec.Certainty, rec.Disagreements)
	}
}

// TestDecidedAlike: a DELETE is decided on another version of its object as on the live one,
// without serving it, only when the versions differ in fields no policy it matched reads (its
// selectors included) and the store deletes both alike, and no precondition tells them apart.
func TestDecidedAlike(t *testing.T) {
	t.Parallel()
	pod := func(rv, node, phase string, labels map[string]any, extra map[string]any) []byte {
		meta := map[string]any{"name": "p", "namespace": "ns1", "uid": "u1", "resourceVersion": rv}
		if labels != nil {
			meta["labels"] = labels
		}
		for k, v := range extra {
			meta[k] = v
		}
		spec := map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}, "terminationGracePeriodSeconds": 30}
		if node != "" {
			spec["nodeName"] = node
		}
		raw, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": map[string]any{"phase": phase}})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	live := pod("11", "n1", "Running", map[string]any{"app": "web"}, nil)
	for _, tc := range []struct {
		name     string
		expr     string         // the policy's validation
		selector map[string]any // the binding's object selector's matchLabels
		other    []byte
		body     map[string]any // the DELETE's options
		skipped  bool           // the request's decision: the policy skipped by its matchCondition
		want     bool
	}{
		{name: "status and resourceVersion differ, not read", expr: "oldObject.spec.nodeName != ''", other: pod("10", "n1", "Pending", map[string]any{"app": "web"}, nil), want: true},
		{name: "the same version", expr: "oldObject.status.phase != ''", other: live, want: true},
		{name: "status differs and is read", expr: "oldObject.status.phase == 'Running'", other: pod("10", "n1", "Pending", map[string]any{"app": "web"}, nil)},
		{name: "the whole object is read", expr: "oldObject != null && string(oldObject) != ''", other: pod("10", "n1", "Pending", map[string]any{"app": "web"}, nil)},
		{name: "a label the object selector reads differs", expr: "true", selector: map[string]any{"app": "web"}, other: pod("10", "n1", "Running", map[string]any{"app": "db"}, nil)},
		{name: "another label differs", expr: "true", selector: map[string]any{"app": "web"}, other: pod("10", "n1", "Running", map[string]any{"app": "web", "x": "y"}, nil), want: true},
		// An unscheduled pod is deleted at once, a scheduled one gracefully.
		{name: "the store deletes them otherwise", expr: "true", other: pod("10", "", "Pending", map[string]any{"app": "web"}, nil)},
		{name: "finalizers differ, a graceful deletion marks both", expr: "true", other: pod("10", "n1", "Running", map[string]any{"app": "web"}, map[string]any{"finalizers": []any{"f"}}), want: true},
		{name: "finalizers differ, a deletion at once leaves one", expr: "true", other: pod("10", "n1", "Running", map[string]any{"app": "web"}, map[string]any{"finalizers": []any{"f"}}),
			body: map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}},
		{name: "a uid precondition both versions meet", expr: "true", other: pod("10", "n1", "Pending", map[string]any{"app": "web"}, nil),
			body: map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": map[string]any{"uid": "u1"}}, want: true},
		{name: "a resourceVersion precondition", expr: "true", other: pod("10", "n1", "Pending", map[string]any{"app": "web"}, nil),
			body: map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": map[string]any{"resourceVersion": "11"}}},
		{name: "a uid precondition of an object recreated", expr: "true", other: pod("10", "n1", "Pending", map[string]any{"app": "web"}, map[string]any{"uid": "u0"}),
			body: map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": map[string]any{"uid": "u1"}}},
		// The request's decision: the policy skipped by a matchCondition on the user, which
		// reads neither version (a kubelet deleting its pod).
		{name: "status differs and is read, the policy skipped", expr: "oldObject.status.phase == 'Running'", skipped: true, other: pod("10", "n1", "Pending", map[string]any{"app": "web"}, nil), want: true},
		{name: "the policy skipped, the store deletes them otherwise", expr: "true", skipped: true, other: pod("10", "", "Pending", map[string]any{"app": "web"}, nil)},
		{name: "the policy skipped, a resourceVersion precondition", expr: "true", skipped: true, other: pod("10", "n1", "Pending", map[string]any{"app": "web"}, nil),
			body: map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": map[string]any{"resourceVersion": "11"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := levelPolicy("p", "pods", admissionregistrationv1.Delete, nil, tc.expr)
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "node-controller", Expression: "request.userInfo.username == 'system:serviceaccount:kube-system:node-controller'"}}
			if tc.selector != nil {
				labels := map[string]string{}
				for k, v := range tc.selector {
					labels[k] = v.(string)
				}
				b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: labels}}
			}
			r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b})
			if err != nil {
				t.Fatal(err)
			}
			j := resolvedJob(t, r, levelEvent(t, "1", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "p", 200, "", tc.body, nil), "p")
			j.prior = state.Prior{Kept: true, Found: true, Raw: live}
			if tc.skipped {
				j.result.dec = &verify.Decision{Allowed: true, Results: []verify.Result{{Policy: "p", Binding: "p", Result: verify.ResultAdmit, MatchCondition: "node-controller"}}}
			}
			got := r.decidedAlike(j, state.Prior{Kept: true, Found: true, Raw: tc.other})
			if got != tc.want {
				t.Errorf("decidedAlike = %v, want %v", got, tc.want)
			}
		})
	}
}

// resolvedJob is the job of the event line, matched by the policies named, as the ordered
// stage makes it before it reads the State.
func resolvedJob(t *testing.T, r *Replayer, line string, policies ...string) *job {
	t.Helper()
	ev, err := auditlog.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	tg, skip := r.resolve(ev)
	if skip != "" {
		t.Fatalf("resolve: %s", skip)
	}
	return &job{ev: ev, t: tg, policies: policies}
}

// TestFirstAttemptSkippedNotServed: a DELETE whose first attempt may have read an older
// version is decided again on that version only when a policy it matched may have read what
// differs: one a matchCondition on the user skipped (a kubelet deleting its pod, which the
// guards' matchConditions leave to the node controller) published nothing on either version,
// and the older version is not sent through the pipeline (decideOn is not called).
func TestFirstAttemptSkippedNotServed(t *testing.T) {
	t.Parallel()
	pod := func(rv, phase string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns1","uid":"u1","resourceVersion":"` + rv + `"},` +
			`"spec":{"nodeName":"n1","containers":[{"name":"c","image":"nginx"}]},"status":{"phase":"` + phase + `"}}`)
	}
	for _, tc := range []struct {
		name   string
		result verify.Result
		want   int // the older versions decided
	}{
		{name: "skipped by a matchCondition on the user", result: verify.Result{Policy: "p", Binding: "p", Result: verify.ResultAdmit, MatchCondition: "node-controller"}},
		{name: "evaluated", result: verify.Result{Policy: "p", Binding: "p", Result: verify.ResultAdmit}, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := levelPolicy("p", "pods", admissionregistrationv1.Delete, nil, "oldObject.status.phase != 'Pending'")
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "node-controller", Expression: "request.userInfo.username == 'system:serviceaccount:kube-system:node-controller'"}}
			r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b})
			if err != nil {
				t.Fatal(err)
			}
			j := resolvedJob(t, r, levelEvent(t, "1", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "p", 200, "", nil, nil), "p")
			older := state.Prior{Kept: true, Found: true, Raw: pod("10", "Pending"), Source: "the older version"}
			j.prior = state.Prior{Kept: true, Found: true, Raw: pod("11", "Failed"), Stale: []state.Prior{older}}
			live := &verify.Decision{Allowed: true, Results: []verify.Result{tc.result}}
			out := &Record{Decision: DecisionAdmit, Certainty: CertaintyCertain}
			decided := 0
			r.firstAttempt(j, out, live, func(state.Prior) (*verify.Decision, error) {
				decided++
				return live, nil
			})
			if decided != tc.want || out.Decision != DecisionAdmit || out.Certainty != CertaintyCertain {
				t.Errorf("older versions decided %d times, the record %s; want %d, admit certain", decided, describeRecord(out), tc.want)
			}
		})
	}
}

// TestDecidedAlikeConverted: a HorizontalPodAutoscaler is stored as autoscaling/v2, and an
// autoscaling/v1 request sees its conditions as an annotation: versions that differ only in
// their conditions are decided alike for a policy that reads the annotations only when the
// request is in the stored version.
func TestDecidedAlikeConverted(t *testing.T) {
	t.Parallel()
	hpa := func(rv, status string) []byte {
		return []byte(`{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"h","namespace":"ns1","uid":"u1","resourceVersion":"` + rv + `"},` +
			`"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":3},` +
			`"status":{"currentReplicas":1,"desiredReplicas":1,"conditions":[{"type":"AbleToScale","status":"` + status + `","lastTransitionTime":"2026-11-24T00:00:00Z","reason":"R"}]}}`)
	}
	p, b := levelPolicy("p", "horizontalpodautoscalers", admissionregistrationv1.Delete, nil, "!has(oldObject.metadata.annotations)")
	p.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{"autoscaling"}
	p.Spec.MatchConstraints.ResourceRules[0].APIVersions = []string{"*"}
	r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b})
	if err != nil {
		t.Fatal(err)
	}
	// The same versions, deleted through autoscaling/v1 and autoscaling/v2.
	for version, want := range map[string]bool{"v1": false, "v2": true} {
		line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"1","stage":"ResponseComplete","requestURI":"/apis/autoscaling/` + version + `/namespaces/ns1/horizontalpodautoscalers/h","verb":"delete",` +
			`"user":{"username":"admin"},"objectRef":{"resource":"horizontalpodautoscalers","namespace":"ns1","name":"h","apiGroup":"autoscaling","apiVersion":"` + version + `"},"responseStatus":{"metadata":{},"code":200}}`
		j := resolvedJob(t, r, line, "p")
		j.prior = state.Prior{Kept: true, Found: true, Raw: hpa("11", "True")}
		if got := r.decidedAlike(j, state.Prior{Kept: true, Found: true, Raw: hpa("10", "False")}); got != want {
			t.Errorf("autoscaling/%s: decidedAlike = %v on versions that differ in their conditions, want %v", version, got, want)
		}
	}
}

// TestRevalidated: a DELETE decided again on another state of the namespaces (the informers'
// lag) is not served again, its admissions are (revalidated): each with a record of its own,
// so that the audit annotation the state gives is the one published, not the first pass's.
func TestRevalidated(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("env", "configmaps", admissionregistrationv1.Delete, nil, "true")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "env", ValueExpression: "namespaceObject.metadata.labels['env']"}}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": "10"}, "data": map[string]any{"v": "a"}}
	ns := func(rv, env string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "uid": "n1", "resourceVersion": rv, "labels": map[string]any{"env": env}}}
	}
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		timedEvent(t, levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", ns("", "a"), ns("5", "a")), "00.000000", "00.001000", nil),
		timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm, cm), "01.000000", "01.001000", nil),
		timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "namespaces", "", "ns1", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": "b"}}}, ns("12", "b")), "02.000000", "02.010000", nil),
		timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "delete", "configmaps", "ns1", "cm", 200, "", nil, nil), "02.011000", "02.900000", nil),
	)
	rec := recs["3"]
	if rec == nil {
		t.Fatal("the delete has no record")
	}
	var alts []string
	for _, a := range rec.Alternatives {
		alts = append(alts, a.AuditAnnotations["env/env"])
	}
	if rec.Decision != DecisionAdmit || rec.Certainty != CertaintyLikely || rec.AuditAnnotations["env/env"] != "b" || !slices.Equal(alts, []string{"a"}) {
		t.Errorf("the delete: %s %s %v, alternatives' annotations %q; want admit, likely, env b, alternative env a", describeRecord(rec), rec.Certainty, rec.AuditAnnotations, alts)
	}
}

// TestDecidedAlikeAfterRevision: a job evaluated again on another prior (reviseConcurrent)
// compares other versions with that prior, not with the one it was first evaluated on.
func TestDecidedAlikeAfterRevision(t *testing.T) {
	t.Parallel()
	pod := func(rv, phase string) []byte {
		raw, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "namespace": "ns1", "uid": "u1", "resourceVersion": rv},
			"spec":     map[string]any{"nodeName": "n1", "containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
			"status":   map[string]any{"phase": phase}})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	p, b := levelPolicy("p", "pods", admissionregistrationv1.Delete, nil, "oldObject.status.phase == 'Running'")
	r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b})
	if err != nil {
		t.Fatal(err)
	}
	j := resolvedJob(t, r, levelEvent(t, "1", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "p", 200, "", nil, nil), "p")
	j.done, j.view = make(chan struct{}), r.state.View(false)
	close(j.done)
	first := state.Prior{Kept: true, Found: true, Raw: pod("10", "Pending")}
	j.prior = first
	if !r.decidedAlike(j, first) {
		t.Fatal("a version is not decided alike with itself")
	}
	j.again()
	j.prior = state.Prior{Kept: true, Found: true, Raw: pod("11", "Running")}
	if r.decidedAlike(j, first) {
		t.Error("after the revision, the version it was first evaluated on is decided alike with the new prior, whose phase the policy reads")
	}
}

// snapshotOfCM is a snapshot folder holding namespace ns1 and its ConfigMap cm at
// resourceVersion 12 (data.v c), and the replayer of a policy that publishes the old object's
// data.v (old-v/v) from it.
func snapshotOfCM(t *testing.T) *Replayer {
	t.Helper()
	p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Update, nil, "true")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "v", ValueExpression: "string(oldObject.data.v)"}}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1"}}
	dir := t.TempDir()
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{ns, versionedCM("12", "c")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshot.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, WithSnapshot(dir))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// versionedCM is ConfigMap ns1/cm at a resourceVersion, with data.v.
// oldAndEnvPolicy is a policy that annotates every update of a ConfigMap with its old object's
// data.v and its namespace's env label.
func oldAndEnvPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Update, nil, "true")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "v", ValueExpression: "string(oldObject.data.v) + ' ' + namespaceObject.metadata.labels['env']"}}
	return p, b
}

// versionedCM is ConfigMap ns1/cm at resourceVersion rv, its data.v v.
func versionedCM(rv, v string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": rv}, "data": map[string]any{"v": v}}
}

// TestWatchCacheSnapshotTakenAfter: a snapshot taken while the cluster runs may hold an
// object's version stored after writes the log records after the snapshot was read (their
// results are older than the snapshot's version, or it). A request received moments after such
// a write may have read, from the watch cache, a version older than the snapshot's, which the
// replay does not know: the live attempt's annotations are likely, not certain (random parity
// seed c:473, whose snapshot replay predicted the snapshot's version where the server's first
// attempt had read an older one).
func TestWatchCacheSnapshotTakenAfter(t *testing.T) {
	t.Parallel()
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{"l": "1"}}}
	for _, tc := range []struct {
		name      string
		written   string // the resourceVersion of the result of the write the log records first
		received  string // when the patch was received
		certainty Certainty
	}{
		{"moments after a write the snapshot holds beyond", "11", "02.011000", CertaintyLikely},
		{"moments after the write whose result the snapshot holds", "12", "02.011000", CertaintyLikely},
		{"a second after", "11", "03.100000", CertaintyCertain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := []string{
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", versionedCM("10", "b"), versionedCM(tc.written, "b")), "02.000000", "02.010000", map[string]string{"old-v/v": "a"}),
				timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", patch, nil), tc.received, tc.received[:len(tc.received)-3]+"900", nil),
			}
			rec := recordOf(t, snapshotOfCM(t), "3", lines)
			if rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != tc.certainty || rec.AuditAnnotations["old-v/v"] != "c" {
				t.Errorf("request 3 = %s %q, want admit %s with the snapshot's v=c", describeRecord(rec), rec.AuditAnnotations, tc.certainty)
			}
		})
	}
}

// TestSnapshotHoldsTheWritesResult: a snapshot taken right after a write the log records
// after it was read holds that write's result: the version the write changed (its oldObject) is
// not the snapshot's, and not known (random parity seed c:479: the kubelet's status patch,
// decided on its own result).
func TestSnapshotHoldsTheWritesResult(t *testing.T) {
	t.Parallel()
	patch := map[string]any{"data": map[string]any{"v": "c"}}
	line := timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", patch, versionedCM("12", "c")), "02.000000", "02.010000", nil)
	if rec := recordOf(t, snapshotOfCM(t), "2", []string{line}); rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonOldObjectUnknown {
		t.Errorf("request 2 = %s, want indeterminate (old-object-unknown): the snapshot holds its result, not the version it changed", describeRecord(rec))
	}
}

// TestConflictWithALaterWrite: two updates of one version; the loser's 409 is logged before the
// winner's 200 (the explorer's statefulset controller and persistent-volume binder on one PVC).
// The log's annotation shows the loser's first attempt ran admission, on the version the State
// holds: it is decided there, its annotation predicted, not skipped as refused before admission.
func TestConflictWithALaterWrite(t *testing.T) {
	t.Parallel()
	cm, conflict := versionedCM, conflictMessage
	for _, tc := range []struct {
		name      string
		annotated bool
		// refused: the policy refuses the first attempt, on that version: the store ran the
		// request again on the live object, and answered the 409 of its precondition.
		refused bool
	}{{"the annotation shows admission ran", true, false}, {"no annotation", false, false}, {"refused on that version", true, true}} {
		expr := "oldObject.data.v != 'z'"
		if tc.refused {
			expr = "oldObject.data.v != 'a'"
		}
		p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Update, nil, expr)
		p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "v", ValueExpression: "string(oldObject.data.v)"}}
		var annotations map[string]string
		if tc.annotated {
			annotations = map[string]string{"old-v/v": "a"}
		}
		lines := []string{
			timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), cm("10", "a")), "01.000000", "01.001000", nil),
			timedEvent(t, levelEvent(t, "lost", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 409, conflict, cm("10", "c"), nil), "02.000000", "02.006000", annotations),
			timedEvent(t, levelEvent(t, "won", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("10", "b"), cm("11", "b")), "02.001000", "02.008000", map[string]string{"old-v/v": "a"}),
		}
		sum, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil, lines...)
		rec := recs["lost"]
		switch {
		case !tc.annotated:
			if rec != nil || sum.Skipped["rejected-before-admission (Conflict)"] != 1 {
				t.Errorf("%s: %s, skipped %v, want refused before admission", tc.name, describeRecord(rec), sum.Skipped)
			}
		case tc.refused:
			skipped := slices.ContainsFunc(slices.Collect(maps.Keys(sum.Skipped)), func(k string) bool { return strings.HasPrefix(k, string(SkipBeforeAdmission)) })
			if rec != nil || !skipped {
				t.Errorf("%s: %s, skipped %v, want refused before admission: the refusal is not the server's answer", tc.name, describeRecord(rec), sum.Skipped)
			}
		case rec == nil || rec.Decision != DecisionAdmit || rec.AuditAnnotations["old-v/v"] != "a" || len(rec.Disagreements) > 0:
			t.Errorf("%s: %s (skipped %v), want admit on the version the State holds, its annotation predicted", tc.name, describeRecord(rec), sum.Skipped)
		}
	}
}

// TestConflictOnAnUnknownVersion: a 409 whose annotations show its first attempt ran
// admission, on a version the State does not hold (the create logged at level Request, so
// its resourceVersion is not known; explorer, replica sets' updates at Request level): the
// request reached admission, and is not skipped as refused before it. Its object is the body
// as the store prepared it from the old object, which the log does not hold (a 409 has no
// response): indeterminate, whatever its policies read.
func TestConflictOnAnUnknownVersion(t *testing.T) {
	t.Parallel()
	cm, conflict := versionedCM, conflictMessage
	for _, expr := range []string{"oldObject.data.v != 'z'", "object.data.v != 'z'", "object.data.v != 'c'"} {
		p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Update, nil, expr)
		p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "v", ValueExpression: "'seen'"}}
		lines := []string{
			timedEvent(t, levelEvent(t, "1", auditlog.LevelRequest, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), nil), "01.000000", "01.001000", nil),
			timedEvent(t, levelEvent(t, "lost", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 409, conflict, cm("10", "c"), nil), "02.000000", "02.006000", map[string]string{"old-v/v": "seen"}),
		}
		sum, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil, lines...)
		if rec := recs["lost"]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonOldObjectUnknown || !strings.Contains(rec.Indeterminate, "first attempt ran validating admission") {
			t.Errorf("%s: %s (skipped %v), want indeterminate (old-object-unknown): its first attempt ran admission", expr, describeRecord(rec), sum.Skipped)
		}
	}
}

// TestStaleUnknownSkipped: a patch received moments after an update whose replaced version the
// State does not know (created at level Metadata) may have had its first attempt on that version; the one policy skipped
// the request on a matchCondition of the user, which no version changes: certain.
func TestStaleUnknownSkipped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, user string
		want       Certainty
	}{
		{name: "skipped by its user", user: "bob", want: CertaintyCertain},
		{name: "evaluated", user: "alice", want: CertaintyLikely},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := levelPolicy("old-x", "configmaps", admissionregistrationv1.Update, nil, "true")
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "alice", Expression: "request.userInfo.username == 'alice'"}}
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "x", ValueExpression: "string(oldObject.data.x)"}}
			cm := func(rv, x string) map[string]any {
				return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": rv}, "data": map[string]any{"x": x}}
			}
			patch := levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", map[string]any{"data": map[string]any{"x": "c"}}, cm("12", "c"))
			patch = replaceOnce(t, patch, `"username":"admin"`, `"username":"`+tc.user+`"`)
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				timedEvent(t, levelEvent(t, "0", auditlog.LevelMetadata, "create", "configmaps", "ns1", "cm", 201, "", nil, nil), "00.500000", "00.501000", nil),
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("", "b"), cm("10", "b")), "01.000000", "01.001000", nil),
				timedEvent(t, patch, "01.050000", "01.052000", nil),
			)
			if rec := recs["2"]; rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != tc.want {
				t.Errorf("the patch: %s, want admit %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestStaleUpdateObjectFromOld: an update (PUT) received moments after an update whose
// replaced version the State does not know may have had its first attempt on that version. No
// policy reads oldObject, but an update's object holds what the store copies from the version
// it read (an unconditional update's resourceVersion; a pod's status, PrepareForUpdate): the
// first attempt may have published another annotation, and the audit event keeps it.
func TestStaleUpdateObjectFromOld(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("rv", "configmaps", admissionregistrationv1.Update, nil, "true")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "rv", ValueExpression: "string(object.metadata.resourceVersion)"}}
	cm := func(rv, x string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": rv}, "data": map[string]any{"x": x}}
	}
	upd := levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("", "c"), cm("12", "c"))
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		timedEvent(t, levelEvent(t, "0", auditlog.LevelMetadata, "create", "configmaps", "ns1", "cm", 201, "", nil, nil), "00.500000", "00.501000", nil),
		timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("", "b"), cm("10", "b")), "01.000000", "01.001000", nil),
		timedEvent(t, upd, "01.050000", "01.052000", nil),
	)
	if rec := recs["2"]; rec == nil || rec.Certainty == CertaintyCertain {
		t.Errorf("the update: %s, want not certain: its first attempt may have read another version, whose resourceVersion its object carries", describeRecord(rec))
	}
}

// TestFirstAttemptOnDeletedVersion: a helper's recording (exU), cut to one ConfigMap: a patch
// received moments after a label patch of the object completed, and before a DELETE of it
// completed, failed 404 after admission. It is decided on the version the DELETE removed, on
// which its last attempt ran admission; its first attempt read the watch cache's copy of the
// version before (the log's annotation holds that one's resourceVersion), so what it
// published is not known, where it was given as the removed version's, certain.
func TestFirstAttemptOnDeletedVersion(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "cut", "patch-across-delete-first-attempt")
	recs := replayRecording(t, filepath.Join(dir, "policies.yaml"), filepath.Join(dir, "audit.log.gz"), WithAdmissionPlugins(withoutServiceAccount(t)))
	rec := recs["46552dc0-a99f-405d-8369-304093d66fee"]
	if rec == nil {
		t.Fatal("the patch has no record")
	}
	type outcome struct {
		Decision  string
		Certainty Certainty
		Published string // the annotation the record gives, "" when it gives none
	}
	want := outcome{Decision: DecisionAdmit, Certainty: CertaintyCertain}
	got := outcome{Decision: rec.Decision, Certainty: rec.Certainty, Published: rec.AuditAnnotations["exu-obs-cm/oldv"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the patch (-want +got):\n%s\nnotes: %v", diff, rec.Notes)
	}
}

// TestFirstAttemptBeforeWriteReceived: a helper's recording (exAM), cut to one pod: the job
// controller's patch was received 11.8 ms before the garbage collector's DELETE of the pod
// was, and completed after it. Its first attempt read the version before the DELETE marked
// the pod, then tried again on the marked one: the audit event keeps the first attempt's
// annotations (olddeleting "no"), the likely ones, where the log's order alone would give the
// marked version's; with the log checked they are certain.
func TestFirstAttemptBeforeWriteReceived(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "cut", "retry-first-attempt-pod")
	type outcome struct {
		Decision     string
		Certainty    Certainty
		Published    string // the annotation the record gives
		Alternatives []string
	}
	for _, tc := range []struct {
		check bool
		want  outcome
	}{
		{false, outcome{Decision: DecisionAdmit, Certainty: CertaintyLikely, Published: "no", Alternatives: []string{"yes"}}},
		{true, outcome{Decision: DecisionAdmit, Certainty: CertaintyCertain, Published: "no"}},
	} {
		recs := replayRecording(t, filepath.Join(dir, "policies.yaml"), filepath.Join(dir, "audit.log.gz"), WithAdmissionPlugins(withoutServiceAccount(t)), WithCheckRecorded(tc.check))
		rec := recs["f0d36ce6-936a-40d3-897c-3d66068ce231"]
		if rec == nil {
			t.Fatal("the patch has no record")
		}
		got := outcome{Decision: rec.Decision, Certainty: rec.Certainty, Published: rec.AuditAnnotations["am-pods/olddeleting"]}
		for _, a := range rec.Alternatives {
			got.Alternatives = append(got.Alternatives, a.AuditAnnotations["am-pods/olddeleting"])
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("check %v: the patch (-want +got):\n%s\nnotes: %v", tc.check, diff, rec.Notes)
		}
	}
}

// TestWatchCacheFirstAttemptWebhookPatch: a mutating webhook changed a patch's object, and
// the patch's first attempt may have read the watch cache's copy of the version before a write
// that completed moments earlier. The log holds one attempt's webhook patch (audit annotations
// keep the first value): the first attempt's only where the webhook returned a patch there, which
// the log does not say (one its selectors skipped on that version, or that returned none, logs
// nothing, and the retry's patch is the one logged; a helper's review: taking it as the first
// attempt's claimed admit certain against a logged denial). So the object after the webhook is
// not known on either attempt, and what the first attempt on the older version published is
// not either: the live attempt's annotations are likely where the log does not contradict them,
// and the request is indeterminate where it does (random parity, controllers, seed 2 in CI,
// accepted there as a race: racingIndeterminate).
func TestWatchCacheFirstAttemptWebhookPatch(t *testing.T) {
	t.Parallel()
	cm := func(rv, v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": rv}, "data": map[string]any{"v": v}}
	}
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{"l": "1"}}}
	webhook := map[string]string{
		"mutation.webhook.admission.k8s.io/round_0_index_0": `{"configuration":"injector","webhook":"inject.example.com","mutated":true}`,
		"patch.webhook.admission.k8s.io/round_0_index_0":    `{"configuration":"injector","webhook":"inject.example.com","patch":[{"op":"add","path":"/metadata/labels/w","value":"x"}],"patchType":"JSONPatch"}`,
	}
	type want struct {
		Decision  string
		Certainty Certainty
		Reason    Reason
		// V and W are the record's old-v/v and old-v/w annotations; Alternatives the
		// alternatives' "v w" or the reason they are not decided.
		V, W         string
		Alternatives []string
	}
	for _, tc := range []struct {
		name     string
		check    bool
		recorded map[string]string // the log's old-v annotations
		want     want
	}{{
		name: "the log's annotations are the first attempt's on the older version", check: true,
		recorded: map[string]string{"old-v/v": "a", "old-v/w": "a:x"},
		want:     want{Decision: DecisionIndeterminate, Certainty: CertaintyIndeterminate, Reason: ReasonWatchCache},
	}, {
		// The live attempt's w reads the object after the webhook: not known, and not
		// compared; its v agrees with the log's, and the older version's attempt is not known.
		name: "the log's annotations are the live attempt's", check: true,
		recorded: map[string]string{"old-v/v": "b", "old-v/w": "b:x"},
		want:     want{Decision: DecisionAdmit, Certainty: CertaintyLikely, V: "b", Alternatives: []string{string(ReasonWatchCache)}},
	}, {
		name: "not checked",
		want: want{Decision: DecisionAdmit, Certainty: CertaintyLikely, V: "b", Alternatives: []string{string(ReasonWatchCache)}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Update, nil, "true")
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{
				{Key: "v", ValueExpression: "string(oldObject.data.v)"},
				{Key: "w", ValueExpression: "string(oldObject.data.v) + ':' + object.metadata.labels.w"},
			}
			// An observer's: its errors do not decide.
			p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			annotations := maps.Clone(webhook)
			maps.Copy(annotations, tc.recorded)
			lines := []string{
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), cm("10", "a")), "01.000000", "01.001000", nil),
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("10", "b"), cm("11", "b")), "02.000000", "02.010000", map[string]string{"old-v/v": "a", "old-v/w": "a:"}),
				timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", patch, nil), "02.011000", "02.011900", annotations),
			}
			r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, WithCheckRecorded(tc.check))
			if err != nil {
				t.Fatal(err)
			}
			rec := recordOf(t, r, "3", lines)
			if rec == nil {
				t.Fatal("request 3 has no record")
			}
			got := want{Decision: rec.Decision, Certainty: rec.Certainty, Reason: rec.Reason, V: rec.AuditAnnotations["old-v/v"], W: rec.AuditAnnotations["old-v/w"]}
			for _, a := range rec.Alternatives {
				if a.Decision == DecisionIndeterminate {
					got.Alternatives = append(got.Alternatives, string(a.Reason))
					continue
				}
				got.Alternatives = append(got.Alternatives, a.AuditAnnotations["old-v/v"]+" "+a.AuditAnnotations["old-v/w"])
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("request 3 (-want +got):\n%s\nrecord: %s %q %v %v", diff, rec, rec.Indeterminate, rec.Notes, rec.Disagreements)
			}
		})
	}
}
