package replay

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestWatchCacheFirstAttempt: kube-apiserver runs an update's or a delete's first attempt on
// its watch cache's copy of the object, which may be the version before a write that completed
// moments earlier, and the audit event keeps the annotations of that attempt. The decision is
// the live object's; the annotations are decided only when every version the attempt may have
// read publishes the same, or, when the replay checks the log, when the log's own annotations
// of the loaded policies say which one it read.
func TestWatchCacheFirstAttempt(t *testing.T) {
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
		Reason      Reason
		Annotation  string // the record's old-v/v
		Disagrees   bool
		FirstNoteOK bool // a note says which attempt the log's annotations come from
	}
	for _, tc := range []struct {
		name     string
		check    bool
		verb     string
		body     map[string]any
		received string // seconds after the write that changed v from a to b completed
		recorded string // the log's old-v/v annotation, "" for none
		noAudit  bool   // the policy publishes nothing
		want     want
	}{{
		name: "moments after, not checked", verb: "patch", body: patch, received: "02.011000",
		want: want{Decision: DecisionIndeterminate, Reason: ReasonWatchCache},
	}, {
		name: "moments after, the log says the first attempt read the older version", check: true, verb: "patch", body: patch, received: "02.011000", recorded: "a",
		want: want{Decision: DecisionAdmit, Annotation: "a", FirstNoteOK: true},
	}, {
		name: "moments after, the log says the first attempt read the live version", check: true, verb: "patch", body: patch, received: "02.011000", recorded: "b",
		want: want{Decision: DecisionAdmit, Annotation: "b", FirstNoteOK: true},
	}, {
		name: "moments after, the log matches neither version", check: true, verb: "patch", body: patch, received: "02.011000", recorded: "z",
		want: want{Decision: DecisionIndeterminate, Reason: ReasonWatchCache},
	}, {
		name: "an update that asks for the live resourceVersion conflicts on an older one", verb: "update", body: cm("11", "c"), received: "02.011000",
		want: want{Decision: DecisionAdmit, Annotation: "b"},
	}, {
		name: "an unconditional update may read the older version", verb: "update", body: cm("", "c"), received: "02.011000",
		want: want{Decision: DecisionIndeterminate, Reason: ReasonWatchCache},
	}, {
		name: "a delete", verb: "delete", received: "02.011000", check: true, recorded: "a",
		want: want{Decision: DecisionAdmit, Annotation: "a", FirstNoteOK: true},
	}, {
		name: "a second later", verb: "patch", body: patch, received: "03.100000",
		want: want{Decision: DecisionAdmit, Annotation: "b"},
	}, {
		name: "no policy publishes annotations", verb: "patch", body: patch, received: "02.011000", noAudit: true,
		want: want{Decision: DecisionAdmit},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Update, nil, "true")
			p.Spec.MatchConstraints.ResourceRules[0].Operations = append(p.Spec.MatchConstraints.ResourceRules[0].Operations, admissionregistrationv1.Delete)
			if !tc.noAudit {
				p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "v", ValueExpression: "string(oldObject.data.v)"}}
			}
			at := func(line, received, done string, annotations map[string]string) string {
				return timedEvent(t, line, received, done, annotations)
			}
			var recorded map[string]string
			if tc.recorded != "" {
				recorded = map[string]string{"old-v/v": tc.recorded}
			}
			lines := []string{
				at(levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), cm("10", "a")), "01.000000", "01.001000", nil),
				at(levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("10", "b"), cm("11", "b")), "02.000000", "02.010000", map[string]string{"old-v/v": "a"}),
				at(levelEvent(t, "3", auditlog.LevelRequestResponse, tc.verb, "configmaps", "ns1", "cm", 200, "", tc.body, nil), tc.received, tc.received[:len(tc.received)-3]+"900", recorded),
			}
			opts := []Option{WithCheckRecorded(tc.check)}
			r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			var rec *Record
			if _, err := r.Run(context.Background(), []Source{{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")}}, func(out *Record) error {
				if out.AuditID == "3" {
					rec = out
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if rec == nil {
				t.Fatal("request 3 has no record")
			}
			got := want{Decision: rec.Decision, Reason: rec.Reason, Annotation: rec.AuditAnnotations["old-v/v"], Disagrees: len(rec.Disagreements) > 0}
			for _, n := range rec.Notes {
				got.FirstNoteOK = got.FirstNoteOK || strings.Contains(n, "the audit annotations the log records are those of")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("request 3 (-want +got):\n%s\nrecord: %s %q %v", diff, rec, rec.Message, rec.Notes)
			}
		})
	}
}
