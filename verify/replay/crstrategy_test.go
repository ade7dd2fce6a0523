package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/cel"
)

// TestCustomResourceStrategyAfterMutation: kube-apiserver runs mutating admission (here the MAP
// big-widgets, which sets spec.size) before the store's rest.BeforeUpdate (the custom resource
// strategy's PrepareForUpdate bumps the generation on a spec change), and validating admission
// after: the validating policy sees the generation bumped, and denies as the log records.
func TestCustomResourceStrategyAfterMutation(t *testing.T) {
	t.Parallel()
	set, diags := cel.ReadPaths(nil, filepath.Join("..", "..", "testdata", "suites", "mutating-crd", "policy.yaml"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	crd, err := os.ReadFile(filepath.Join("..", "..", "testdata", "crd", "widgets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stored := `
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: app, uid: u-w1, resourceVersion: "30", generation: 1, creationTimestamp: "2026-03-02T09:00:00Z"}
spec: {size: small, replicas: 6}
`
	if err := os.WriteFile(filepath.Join(dir, "snap.yaml"), append(crd, []byte(stored)...), 0o644); err != nil {
		t.Fatal(err)
	}
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-spec-change"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
			}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.generation == oldObject.metadata.generation", Message: "spec changed"}},
		},
	}
	vb := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "no-spec-change"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "no-spec-change", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{vap}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{vb},
		WithCheckRecorded(true), WithSnapshot(dir), WithMutatingPolicies(set.MutatingPolicyList(), set.MutatingBindingList()))
	if err != nil {
		t.Fatal(err)
	}
	// A labels-only update (level Request: the replay rebuilds the object from the body).
	body := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "app", "uid": "u-w1", "resourceVersion": "30", "generation": int64(1), "creationTimestamp": "2026-03-02T09:00:00Z", "labels": map[string]any{"a": "b"}},
		"spec":     map[string]any{"size": "small", "replicas": int64(6)}}
	line := event{id: "w1", verb: "update", group: "example.com", version: "v1", resource: "widgets", ns: "app", name: "w1", code: 422, received: at(t, 2), req: body,
		message: `widgets.example.com "w1" is forbidden: ValidatingAdmissionPolicy 'no-spec-change' with binding 'no-spec-change' denied request: spec changed`}.line(t)
	line = strings.Replace(line, `"level":"RequestResponse"`, `"level":"Request"`, 1)
	rec := replayLine(t, r, line, "w1")
	// The MAP sets spec.size=large, PrepareForUpdate bumps the generation to 2, the VAP
	// denies.
	if rec == nil || rec.Decision != DecisionDeny || len(rec.Disagreements) > 0 {
		t.Errorf("record = %s (%v), want deny: the generation is bumped after the MAP's spec change", describeRecord(rec), rec.Disagreements)
	}
}
