package replay

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// TestUnknownAnnotationsOnly: a refused create's uid is not known (the server generated it, and
// its answer is a Status); a policy's auditAnnotation that reads it has a value the replay does
// not know, which the decision does not depend on: the refusal is decided, the annotation is
// left out with a note, and the log's value of it is no disagreement. A validation that reads
// it decides: the decision stays undecided there.
func TestUnknownAnnotationsOnly(t *testing.T) {
	t.Parallel()
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "a"}, "data": map[string]any{"k": "bad"}}
	const message = `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: denied by guard`
	for _, tc := range []struct {
		name, value string
		failure     admissionregistrationv1.FailurePolicyType
		decision    string
	}{
		{"a uid, failurePolicy Fail", "string(object.metadata.uid)", admissionregistrationv1.Fail, DecisionDeny},
		{"a uid, failurePolicy Ignore", "string(object.metadata.uid)", admissionregistrationv1.Ignore, DecisionDeny},
		// What the validation reads decides: the uid there leaves the decision undecided.
		{"a uid the validation reads too", "string(object.metadata.uid)", admissionregistrationv1.Fail, DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			validation := "object.data.k != 'bad'"
			if tc.decision == DecisionIndeterminate {
				validation += " && object.metadata.uid != 'x'"
			}
			p, b := levelPolicy("guard", "configmaps", admissionregistrationv1.Create, nil, validation)
			p.Spec.FailurePolicy = ptr.To(tc.failure)
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "seen", ValueExpression: tc.value}, {Key: "name", ValueExpression: "string(object.metadata.name)"}}
			line := timedEvent(t, levelEvent(t, "x", "RequestResponse", "create", "configmaps", "a", "c", 422, message, cm, nil), "01.000000", "01.010000",
				map[string]string{"guard/seen": "0b0f7c1e-6b1d-4c8e-9d2a-2f5d3c4b5a69", "guard/name": "c"})
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, line)
			rec := recs["x"]
			if rec == nil || rec.Decision != tc.decision {
				t.Fatalf("decision %s, want %s", describeRecord(rec), tc.decision)
			}
			if tc.decision == DecisionIndeterminate {
				return
			}
			if _, ok := rec.AuditAnnotations["guard/seen"]; ok || rec.AuditAnnotations["guard/name"] != "c" {
				t.Errorf("audit annotations %v: want guard/name alone", rec.AuditAnnotations)
			}
			if !strings.Contains(strings.Join(rec.Notes, "\n"), "audit annotation guard/seen is not known") {
				t.Errorf("notes %q do not say guard/seen is not known", rec.Notes)
			}
			if len(rec.Disagreements) > 0 {
				t.Errorf("disagreements %v", rec.Disagreements)
			}
		})
	}
}

// TestNamespaceUIDUnknowns: the namespace REST gives a DELETE's options without a uid
// precondition the namespace's uid; where the replay does not know it, request.options'
// precondition is not known either (random parity m:1240), unless the request gave it.
func TestNamespaceUIDUnknowns(t *testing.T) {
	t.Parallel()
	uid := vapccel.Unknown{Path: vapccel.FieldPath{Root: "object", Steps: []string{"metadata", "uid"}}, ValueOnly: true, Why: "the uid the server generated"}
	ns := target{gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, op: admission.Delete, name: "n"}
	pods := target{gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, op: admission.Delete, namespace: "n", name: "p"}
	for _, tc := range []struct {
		name string
		t    target
		body string
		p    state.Prior
		want int
	}{
		{"the namespace's uid not known", ns, `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1"}`, state.Prior{Found: true, Unknowns: []vapccel.Unknown{uid}}, 1},
		{"the uid given", ns, `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","preconditions":{"uid":"u"}}`, state.Prior{Found: true, Unknowns: []vapccel.Unknown{uid}}, 0},
		{"the namespace's uid known", ns, `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1"}`, state.Prior{Found: true}, 0},
		{"a pod's", pods, `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1"}`, state.Prior{Found: true, Unknowns: []vapccel.Unknown{uid}}, 0},
	} {
		ev := &Event{Verb: "delete", RequestObject: []byte(tc.body)}
		if got := namespaceUIDUnknowns(ev, tc.t, tc.p); len(got) != tc.want {
			t.Errorf("%s: %v, want %d unknowns", tc.name, got, tc.want)
		}
	}
}

// TestFailureSources: a validation_failure annotation whose failures come from several
// policies, bindings or params lists them in kube-apiserver's informer caches' order (helper
// exAL: the server's [al-obs, al-ns], the replay's [al-ns, al-obs]): the record says so.
func TestFailureSources(t *testing.T) {
	entry := func(policy, binding, param string) string {
		return `{"message":"m","policy":"` + policy + `","binding":"` + binding + `","param":"` + param + `","expressionIndex":0,"validationActions":["Audit"]}`
	}
	for _, tc := range []struct {
		value string
		want  int
	}{
		{"", 0},
		{"not json", 0},
		{"[" + entry("a", "a", "") + "]", 1},
		{"[" + entry("a", "a", "") + "," + entry("a", "a", "") + "]", 1}, // two validations of one
		{"[" + entry("a", "a", "") + "," + entry("b", "b", "") + "]", 2},
		{"[" + entry("a", "a", "p1") + "," + entry("a", "a", "p2") + "]", 2},
	} {
		if got := failureSources(tc.value); got != tc.want {
			t.Errorf("failureSources(%s) = %d, want %d", tc.value, got, tc.want)
		}
	}
	r := &Record{}
	r.fill(&verify.Decision{Allowed: true, AuditAnnotations: map[string]string{ValidationFailureAnnotation: "[" + entry("a", "a", "") + "," + entry("b", "b", "") + "]"}})
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "lists the failures of 2 policies") }) {
		t.Errorf("notes %q: want one on the failures' order", r.Notes)
	}
}
