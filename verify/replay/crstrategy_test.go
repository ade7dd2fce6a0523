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

// TestCustomResourceDefinitionThroughItsStrategy: kube-apiserver serves
// CustomResourceDefinitions from the apiextensions apiserver, whose registry strategy
// (PrepareForUpdate) keeps the stored status and bumps the generation on a spec change
// before validating admission. A CRD update the log holds without the object admission saw
// (refused, or logged at level Request) goes through that store: random parity seed r:1510
// (a policy of every resource refused a CRD's update; the replay, which took CRDs for custom
// resources without a CRD of their own, left it indeterminate).
func TestCustomResourceDefinitionThroughItsStrategy(t *testing.T) {
	t.Parallel()
	crd := func(shortNames []any, labels map[string]any, status map[string]any) map[string]any {
		return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "gadgets.example.com", "uid": "u-crd", "resourceVersion": "40", "generation": int64(1), "creationTimestamp": "2026-03-02T09:00:00Z", "labels": labels},
			"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
				"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList", "shortNames": shortNames},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
			"status": status}
	}
	stored := map[string]any{"storedVersions": []any{"v1"}, "acceptedNames": map[string]any{"plural": "gadgets", "kind": "Gadget"}}
	p, b := levelPolicy("frozen-crds", "customresourcedefinitions", admissionregistrationv1.Update, nil, "object.metadata.generation == oldObject.metadata.generation")
	p.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{"apiextensions.k8s.io"}
	p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{Expression: "object.status == oldObject.status", Message: "status written"})
	update := func(id string, code int32, msg string, body map[string]any) event {
		return event{id: id, verb: "update", group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions", name: "gadgets.example.com",
			code: code, message: msg, received: at(t, 2), req: body}
	}
	tampered := map[string]any{"storedVersions": []any{"v1", "v0"}}
	for _, tc := range []struct {
		name string
		ev   event
		want string
	}{
		// A spec change: the strategy bumps the generation, the policy denies.
		{"spec", update("spec", 422, `customresourcedefinitions.apiextensions.k8s.io "gadgets.example.com" is forbidden: ValidatingAdmissionPolicy 'frozen-crds' with binding 'frozen-crds' denied request: denied by frozen-crds`,
			crd([]any{"gd"}, nil, stored)), DecisionDeny},
		// A label, and a status the main resource's update does not write: the strategy keeps
		// the stored status and the generation, the policy admits.
		{"labels", update("labels", 200, "", crd(nil, map[string]any{"team": "a"}, tampered)), DecisionAdmit},
		// A patch of the spec, applied to the stored CRD.
		{"patch", event{id: "patch", verb: "patch", group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions", name: "gadgets.example.com",
			code: 422, message: `customresourcedefinitions.apiextensions.k8s.io "gadgets.example.com" is forbidden: ValidatingAdmissionPolicy 'frozen-crds' with binding 'frozen-crds' denied request: denied by frozen-crds`,
			received: at(t, 2), req: map[string]any{"spec": map[string]any{"names": map[string]any{"shortNames": []any{"gd"}}}}}, DecisionDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			line := strings.Replace(tc.ev.line(t), `"level":"RequestResponse"`, `"level":"Request"`, 1)
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				[]any{crd(nil, nil, stored)}, line)
			rec := recs[tc.name]
			if rec == nil || rec.Decision != tc.want || rec.Certainty != CertaintyCertain || len(rec.Disagreements) > 0 {
				t.Errorf("record = %s (%v), want %s, certain", describeRecord(rec), rec.Disagreements, tc.want)
			}
		})
	}
}

// TestAPIServiceThroughItsStrategy: kube-apiserver serves APIServices from its aggregator, and
// its autoregister controller creates one for every group version a CRD serves (as
// system:apiserver; random parity seed r:1521: a create answered 409, AlreadyExists, which the
// store gives after admission, left indeterminate as a custom resource without a CRD). A create
// the log holds without the object admission saw goes through the aggregator's own store.
func TestAPIServiceThroughItsStrategy(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("low-priority", "apiservices", admissionregistrationv1.Create, nil, "object.spec.versionPriority < 50")
	p.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{"apiregistration.k8s.io"}
	service := func(priority int64) map[string]any {
		return map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": "v1.example.com", "labels": map[string]any{"kube-aggregator.kubernetes.io/automanaged": "true"}},
			"spec":     map[string]any{"group": "example.com", "version": "v1", "groupPriorityMinimum": int64(1000), "versionPriority": priority}, "status": map[string]any{}}
	}
	create := func(id string, code int32, msg string, priority int64) string {
		return event{id: id, verb: "create", group: "apiregistration.k8s.io", version: "v1", resource: "apiservices", name: "v1.example.com",
			code: code, message: msg, received: at(t, 2), user: "system:apiserver", req: service(priority)}.line(t)
	}
	for _, tc := range []struct {
		name, line, want string
	}{
		{"exists", create("exists", 409, `apiservices.apiregistration.k8s.io "v1.example.com" already exists`, 10), DecisionAdmit},
		{"denied", create("denied", 422, `apiservices.apiregistration.k8s.io "v1.example.com" is forbidden: ValidatingAdmissionPolicy 'low-priority' with binding 'low-priority' denied request: denied by low-priority`, 100), DecisionDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil, tc.line)
			rec := recs[tc.name]
			if rec == nil || rec.Decision != tc.want || rec.Certainty != CertaintyCertain || len(rec.Disagreements) > 0 {
				t.Errorf("record = %s (%v), want %s, certain", describeRecord(rec), rec.Disagreements, tc.want)
			}
		})
	}
}

// TestWebhookConfigurationThroughItsStrategy: kube-apiserver's registry strategy of a webhook
// configuration bumps its generation when its webhooks change, and its defaulting gives each
// webhook a timeout, a failure policy and selectors, before validating admission (an admission
// policy sees webhook configurations; cert-manager's CA injector writes their caBundle all
// day). An update or patch the log holds without the object admission saw goes through that
// store.
func TestWebhookConfigurationThroughItsStrategy(t *testing.T) {
	t.Parallel()
	hook := func(path string) map[string]any {
		return map[string]any{"name": "check.example.com", "sideEffects": "None", "admissionReviewVersions": []any{"v1"},
			"clientConfig": map[string]any{"service": map[string]any{"namespace": "ns1", "name": "hooks", "path": path}},
			"rules":        []any{map[string]any{"apiGroups": []any{"example.com"}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"gadgets"}}}}
	}
	config := func(labels map[string]any, hooks ...any) map[string]any {
		return map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
			"metadata": map[string]any{"name": "checks", "uid": "u-hooks", "resourceVersion": "40", "generation": int64(1), "creationTimestamp": "2026-03-02T09:00:00Z", "labels": labels},
			"webhooks": hooks}
	}
	stored := config(nil, hook("/a"))
	stored["webhooks"].([]any)[0].(map[string]any)["timeoutSeconds"] = int64(10)
	p, b := levelPolicy("frozen-hooks", "validatingwebhookconfigurations", admissionregistrationv1.Update, nil, "object.metadata.generation == oldObject.metadata.generation")
	p.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{"admissionregistration.k8s.io"}
	p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{Expression: "object.webhooks.all(w, w.timeoutSeconds == 10 && w.failurePolicy == 'Fail')", Message: "not defaulted"})
	denied := `validatingwebhookconfigurations.admissionregistration.k8s.io "checks" is forbidden: ValidatingAdmissionPolicy 'frozen-hooks' with binding 'frozen-hooks' denied request: denied by frozen-hooks`
	write := func(id, verb string, code int32, msg string, body map[string]any) event {
		return event{id: id, verb: verb, group: "admissionregistration.k8s.io", version: "v1", resource: "validatingwebhookconfigurations", name: "checks",
			code: code, message: msg, received: at(t, 2), req: body}
	}
	for _, tc := range []struct {
		name string
		ev   event
		want string
	}{
		// A webhook's path changed: the strategy bumps the generation, the policy denies.
		{"webhooks", write("webhooks", "update", 422, denied, config(nil, hook("/b"))), DecisionDeny},
		// A label: the generation stays, the defaults fill the webhook the body sent without
		// them, the policy admits.
		{"labels", write("labels", "update", 200, "", config(map[string]any{"team": "a"}, hook("/a"))), DecisionAdmit},
		// A merge patch of the webhooks, applied to the stored configuration.
		{"patch", write("patch", "patch", 422, denied, map[string]any{"webhooks": []any{hook("/c")}}), DecisionDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			line := strings.Replace(tc.ev.line(t), `"level":"RequestResponse"`, `"level":"Request"`, 1)
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []any{stored}, line)
			rec := recs[tc.name]
			if rec == nil || rec.Decision != tc.want || rec.Certainty != CertaintyCertain || len(rec.Disagreements) > 0 {
				t.Errorf("record = %s (%v), want %s, certain", describeRecord(rec), rec.Disagreements, tc.want)
			}
		})
	}
}

// TestStatusUpdateDefaultedOnRead: an update of a ReplicationController's status whose body
// sends no labels and no spec: the status strategy keeps the stored spec, admission sees no
// labels, and the server's defaulting gives the stored object its template's labels when it
// reads it back, so the response is not the object admission saw (apiserver.DefaultedOnRead).
// The replay decided it from the response before, against the server.
func TestStatusUpdateDefaultedOnRead(t *testing.T) {
	t.Parallel()
	rc := func(labels map[string]any, status map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ReplicationController",
			"metadata": map[string]any{"name": "web", "namespace": "ns1", "uid": "u-rc", "resourceVersion": "40", "generation": int64(1), "creationTimestamp": "2026-03-02T09:00:00Z", "labels": labels},
			"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"app": "web"},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}},
			"status": status}
	}
	p, b := levelPolicy("unlabelled-status", "replicationcontrollers/status", admissionregistrationv1.Update, nil, "!has(object.metadata.labels) || !('app' in object.metadata.labels)")
	body := map[string]any{"apiVersion": "v1", "kind": "ReplicationController", "metadata": map[string]any{"name": "web", "namespace": "ns1", "resourceVersion": "40"},
		"status": map[string]any{"replicas": int64(1)}}
	answer := rc(map[string]any{"app": "web"}, map[string]any{"replicas": int64(1)})
	answer["metadata"].(map[string]any)["resourceVersion"] = "41"
	line := event{id: "status", verb: "update", version: "v1", resource: "replicationcontrollers", sub: "status", ns: "ns1", name: "web",
		code: 200, received: at(t, 2), req: body, resp: answer}.line(t)
	_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		[]any{rc(map[string]any{"app": "web"}, map[string]any{"replicas": int64(0)})}, line)
	rec := recs["status"]
	if rec == nil || rec.Decision != DecisionAdmit || len(rec.Disagreements) > 0 {
		t.Errorf("record = %s (%v), want admit", describeRecord(rec), rec.Disagreements)
	}
}

// TestScaleAfterStatusUpdateDefaultedOnRead: after a status update whose body sends no labels,
// the server stores a ReplicationController without labels, and its defaulting gives the
// object its template's labels when it reads it back: the response, and the State. A scale to
// the replicas it has changes nothing the replay's pipeline reads, yet the server writes it
// (the stored bytes lack the labels its read gives): the object written is the one it read,
// at the Scale's resourceVersion. The replay stopped knowing the object there (random parity
// seed r:1561, every level), and the update after it was old-object-unknown.
func TestScaleAfterStatusUpdateDefaultedOnRead(t *testing.T) {
	t.Parallel()
	managed := []any{map[string]any{"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": "2026-03-02T09:00:00Z",
		"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}}}}
	rc := func(rv string, labels map[string]any, status map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ReplicationController",
			"metadata": map[string]any{"name": "web", "namespace": "ns1", "uid": "u-rc", "resourceVersion": rv, "generation": int64(1),
				"creationTimestamp": "2026-03-02T09:00:00Z", "labels": labels, "managedFields": managed},
			"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"app": "web"},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}},
			"status": status}
	}
	scale := func(rv string) map[string]any {
		return map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
			"metadata": map[string]any{"name": "web", "namespace": "ns1", "uid": "u-rc", "resourceVersion": rv, "creationTimestamp": "2026-03-02T09:00:00Z"},
			"spec":     map[string]any{"replicas": int64(2)}, "status": map[string]any{"replicas": int64(1), "selector": "app=web"}}
	}
	pScale, bScale := levelPolicy("scale", "replicationcontrollers/scale", admissionregistrationv1.Update, nil, "object.spec.replicas < 5")
	pRC, bRC := levelPolicy("rc", "replicationcontrollers", admissionregistrationv1.Update, nil, "oldObject.metadata.resourceVersion == '42'")
	statusBody := map[string]any{"apiVersion": "v1", "kind": "ReplicationController", "metadata": map[string]any{"name": "web", "namespace": "ns1", "resourceVersion": "40"},
		"status": map[string]any{"replicas": int64(1)}}
	relabelled := rc("43", map[string]any{"app": "web", "tier": "a"}, map[string]any{"replicas": int64(1)})
	lines := []string{
		event{id: "status", verb: "update", version: "v1", resource: "replicationcontrollers", sub: "status", ns: "ns1", name: "web",
			code: 200, received: at(t, 2), req: statusBody, resp: rc("41", map[string]any{"app": "web"}, map[string]any{"replicas": int64(1)})}.line(t),
		event{id: "scale", verb: "update", version: "v1", resource: "replicationcontrollers", sub: "scale", ns: "ns1", name: "web",
			code: 200, received: at(t, 4), req: scale("41"), resp: scale("42")}.line(t),
		event{id: "label", verb: "patch", version: "v1", resource: "replicationcontrollers", ns: "ns1", name: "web",
			code: 200, received: at(t, 6), req: map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "a"}}}, resp: relabelled}.line(t),
	}
	_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{pScale, pRC}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{bScale, bRC},
		[]any{rc("40", map[string]any{"tier": "x"}, map[string]any{"replicas": int64(0)})}, lines...)
	if rec := recs["scale"]; rec == nil || rec.Decision != DecisionAdmit || len(rec.Disagreements) > 0 {
		t.Errorf("scale: record = %s (%v), want admit", describeRecord(rec), rec.Disagreements)
	}
	if rec := recs["label"]; rec == nil || rec.Decision != DecisionAdmit || len(rec.Disagreements) > 0 {
		t.Errorf("label: record = %s (%v), want admit (the object it updates is the scale's, resourceVersion 42)", describeRecord(rec), rec.Disagreements)
	}
}
