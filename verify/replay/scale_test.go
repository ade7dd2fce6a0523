package replay

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// TestScaleFrom mirrors scaleFromDeployment, scaleFromReplicaSet, scaleFromStatefulSet,
// scaleFromRC and the apiextensions apiserver's scaleFromCustomResource.
func TestScaleFrom(t *testing.T) {
	t.Parallel()
	meta := map[string]any{"name": "web", "namespace": "app", "uid": "u-1", "resourceVersion": "42", "creationTimestamp": "2026-03-02T10:00:00Z",
		"labels": map[string]any{"app": "web"}, "generation": int64(3)}
	scale := func(replicas, status int64, selector string) map[string]any {
		st := map[string]any{"replicas": status}
		if selector != "" {
			st["selector"] = selector
		}
		return map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
			"metadata": map[string]any{"name": "web", "namespace": "app", "uid": "u-1", "resourceVersion": "42", "creationTimestamp": "2026-03-02T10:00:00Z"},
			"spec":     map[string]any{"replicas": replicas}, "status": st}
	}
	for _, tc := range []struct {
		name string
		gr   schema.GroupResource
		obj  map[string]any
		want map[string]any
	}{
		{"deployment, matchLabels and matchExpressions", schema.GroupResource{Group: "apps", Resource: "deployments"},
			map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
				"spec": map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"},
					"matchExpressions": []any{map[string]any{"key": "tier", "operator": "In", "values": []any{"b", "a"}}}}},
				"status": map[string]any{"replicas": int64(2)}},
			scale(3, 2, "app=web,tier in (a,b)")},
		{"statefulset without status", schema.GroupResource{Group: "apps", Resource: "statefulsets"},
			map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta,
				"spec": map[string]any{"replicas": int64(0), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}}},
			scale(0, 0, "app=web")},
		{"replicaset, empty selector", schema.GroupResource{Group: "apps", Resource: "replicasets"},
			map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta, "spec": map[string]any{"replicas": int64(5), "selector": map[string]any{}}},
			scale(5, 0, "")},
		{"replicationcontroller, a set selector", schema.GroupResource{Resource: "replicationcontrollers"},
			map[string]any{"apiVersion": "v1", "kind": "ReplicationController", "metadata": meta,
				"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"app": "web", "tier": "a"}}, "status": map[string]any{"replicas": int64(1)}},
			scale(1, 1, "app=web,tier=a")},
		{"a custom resource by its CRD's paths", schema.GroupResource{Group: "example.com", Resource: "widgets"},
			map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta,
				"spec": map[string]any{"size": int64(7)}, "status": map[string]any{"ready": float64(4), "selector": "app=web"}},
			scale(7, 4, "app=web")},
		{"a custom resource without replicas", schema.GroupResource{Group: "example.com", Resource: "widgets"},
			map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta, "spec": map[string]any{}},
			scale(0, 0, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scaleSubresourceOf(nil, tc.gr.WithVersion("v1"), schema.GroupVersionKind{})
			if tc.gr.Group == "example.com" {
				// As a CRD's subresources.scale gives them: specReplicasPath .spec.size,
				// statusReplicasPath .status.ready, labelSelectorPath .status.selector.
				sc = &scaleSubresource{specReplicas: splitReplicasPath(".spec.size"), statusReplicas: splitReplicasPath(".status.ready"), selector: splitReplicasPath(".status.selector")}
			}
			got, err := scaleFrom(sc, &unstructured.Unstructured{Object: tc.obj})
			if err != nil {
				t.Fatalf("scaleFrom: %v", err)
			}
			if diff := cmp.Diff(tc.want, got.Object); diff != "" {
				t.Errorf("scaleFrom mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScaleRequests: the oldObject of a scale update is the Scale derived from the stored
// Deployment; a refused update or patch takes only spec.replicas of the request; after a
// scale, the State knows the Deployment with the new replicas, resourceVersion and generation.
func TestScaleRequests(t *testing.T) {
	t.Parallel()
	scaleRule := admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments/scale", "deployments"}},
	}}
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "scale"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{scaleRule}},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "object.spec.replicas <= 4",
				MessageExpression: "'old ' + string(oldObject.spec.replicas) + ' ' + oldObject.metadata.resourceVersion + ' ' + oldObject.?status.?selector.orValue('-') + ' gen ' + string(oldObject.metadata.?generation.orValue(0)) + ' new ' + string(object.spec.replicas) + ' ' + object.metadata.resourceVersion + ' managers ' + string(size(oldObject.metadata.?managedFields.orValue([])))",
			}},
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scale"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "scale", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "app", "uid": "u-1", "resourceVersion": "20", "generation": int64(1),
		"managedFields": []any{map[string]any{"manager": "kubectl-create", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-11-21T10:00:00Z", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}, "f:selector": map[string]any{}}}}}},
		"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}, "template": podTemplate("web")}}
	scaleResp := func(replicas int64, rv string) map[string]any {
		return map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": map[string]any{"name": "web", "namespace": "app", "uid": "u-1", "resourceVersion": rv},
			"spec": map[string]any{"replicas": replicas}, "status": map[string]any{"replicas": int64(0), "selector": "app=web"}}
	}
	// A Scale has no generation: 0 for the scale requests.
	denied := func(msg string) string {
		return `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'scale' with binding 'scale' denied request: ` + msg
	}
	scaleE := func(id, verb string, code int32, message string, req, resp map[string]any) event {
		return event{id: id, verb: verb, group: "apps", version: "v1", resource: "deployments", sub: "scale", ns: "app", name: "web", code: code, message: message, received: at(t, 1), req: req, resp: resp}
	}
	lines := []event{
		{id: "create", verb: "create", group: "apps", version: "v1", resource: "deployments", ns: "app", name: "web", code: 201, received: at(t, 0), req: dep, resp: dep},
		// Admitted: the response is the new Scale.
		scaleE("patch-ok", "patch", 200, "", map[string]any{"spec": map[string]any{"replicas": int64(3)}}, scaleResp(3, "21")),
		// Refused: the patch applied to the Scale of the stored (scaled) Deployment.
		scaleE("patch-denied", "patch", 422, denied("old 3 21 app=web gen 0 new 9 21 managers 0"), map[string]any{"spec": map[string]any{"replicas": int64(9)}, "metadata": map[string]any{"labels": map[string]any{"x": "y"}}}, nil),
		// Refused: the body's spec.replicas only, and no resourceVersion takes the stored one.
		scaleE("update-denied", "update", 422, denied("old 3 21 app=web gen 0 new 7 21 managers 0"),
			map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": map[string]any{"name": "web", "namespace": "app", "annotations": map[string]any{"a": "b"}}, "spec": map[string]any{"replicas": int64(7)}}, nil),
		// The main resource after the scale: its oldObject is the Deployment the scale left,
		// with the scale subresource's manager.
		{id: "main-denied", verb: "patch", group: "apps", version: "v1", resource: "deployments", ns: "app", name: "web", code: 422, received: at(t, 2),
			message: denied("old 3 21 - gen 2 new 5 21 managers 2"), req: map[string]any{"spec": map[string]any{"replicas": int64(5)}}},
	}
	var text []string
	for _, e := range lines {
		text = append(text, e.line(t))
	}
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, text...)
	for _, id := range []string{"patch-ok", "patch-denied", "update-denied", "main-denied"} {
		rec := recs[id]
		if rec == nil || rec.Decision == DecisionIndeterminate {
			t.Errorf("%s: %+v (%s), want a decision", id, rec, rec.Indeterminate)
			continue
		}
		if rec.Changed {
			t.Errorf("%s: recorded %s, predicted %s %q", id, rec.Recorded, rec.Decision, rec.Message)
		}
	}
	if rec := recs["patch-ok"]; rec != nil && !strings.Contains(rec.OldObjectSource, "the Scale the apiserver derives from it") {
		t.Errorf("patch-ok: oldObjectSource %q, want the derived Scale", rec.OldObjectSource)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestScaleOfASnapshotObject: kubectl scale of a Deployment the snapshot holds, to the replicas
// it has, logged at level Request (random parity seed m:980). The replay's pipeline changes
// nothing, but the server wrote the object for the managedFields entry of kubectl's manager,
// which the snapshot's copy does not hold: the Deployment's resourceVersion after it is not
// known, and a DELETE whose policy reads it is not decided on the snapshot's.
func TestScaleOfASnapshotObject(t *testing.T) {
	t.Parallel()
	rule := func(op admissionregistrationv1.OperationType, resource string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{op},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{resource}},
		}}
	}
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "rv"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule(admissionregistrationv1.Delete, "deployments"), rule(admissionregistrationv1.Update, "deployments/scale")}},
			Validations:      []admissionregistrationv1.Validation{{Expression: "request.operation != 'DELETE' || oldObject.metadata.resourceVersion != '737'"}},
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "rv"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "rv", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "app", "uid": "u-1", "resourceVersion": "737", "generation": int64(1)},
		"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}, "template": podTemplate("web")}}
	scale := event{id: "scale", verb: "update", group: "apps", version: "v1", resource: "deployments", sub: "scale", ns: "app", name: "web", code: 200, received: at(t, 1),
		req: map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": map[string]any{"name": "web", "namespace": "app", "uid": "u-1"}, "spec": map[string]any{"replicas": int64(2)}}}
	del := event{id: "delete", verb: "delete", group: "apps", version: "v1", resource: "deployments", ns: "app", name: "web", code: 200, received: at(t, 2),
		req: map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"}}
	var lines []string
	for _, e := range []event{scale, del} {
		l := replaceOnce(t, e.line(t), `"level":"RequestResponse"`, `"level":"Request"`)
		lines = append(lines, l)
	}
	_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []any{dep}, lines...)
	rec := recs["delete"]
	if rec == nil || rec.Decision != DecisionIndeterminate || !strings.Contains(rec.Indeterminate, "resourceVersion") {
		t.Errorf("delete: %+v, want indeterminate: the resourceVersion the scale left is not known", rec)
	}
}

// TestScaleMutatedByTheCluster: a MutatingAdmissionPolicy of the cluster (the log shows it
// created; --policies does not give it) matches deployments/scale; a scale update logged at
// level Request leaves what it changed of the Scale unknown, and the Deployment takes only
// its replicas from it (ScaleREST): its replicas, generation and resourceVersion are not known
// after it, its labels are (helper exO: every status update of the scaled Deployments was
// undecided).
func TestScaleMutatedByTheCluster(t *testing.T) {
	t.Parallel()
	rule := func(resources ...string) []admissionregistrationv1.NamedRuleWithOperations {
		return []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: resources},
		}}}
	}
	policy := func(name, expr string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		return &admissionregistrationv1.ValidatingAdmissionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregistrationv1.Fail),
					MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rule("deployments/status")},
					Validations:      []admissionregistrationv1.Validation{{Expression: expr}}}},
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	}
	labels, lb := policy("labels", "oldObject.metadata.labels['tier'] == 'web'")
	replicas, rb := policy("replicas", "oldObject.spec.replicas < 5")
	mapPolicy := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy", "metadata": map[string]any{"name": "cap"},
		"spec": map[string]any{"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
			"apiGroups": []any{"apps"}, "apiVersions": []any{"v1"}, "operations": []any{"UPDATE"}, "resources": []any{"deployments/scale"}}}}}}
	mapBinding := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding", "metadata": map[string]any{"name": "cap"}, "spec": map[string]any{"policyName": "cap"}}
	admissionEvent := func(id, resource string, obj map[string]any) event {
		return event{id: id, verb: "create", group: "admissionregistration.k8s.io", version: "v1", resource: resource, name: "cap", code: 201, received: at(t, 0.1), req: obj, resp: obj}
	}
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "app", "uid": "u-1", "resourceVersion": "20", "generation": int64(1), "labels": map[string]any{"tier": "web"}},
		"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}, "template": podTemplate("web")}}
	status := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "app", "uid": "u-1", "labels": map[string]any{"tier": "web"}},
		"spec": map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}, "template": podTemplate("web")}, "status": map[string]any{"replicas": int64(3)}}
	scale := map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": map[string]any{"name": "web", "namespace": "app"}, "spec": map[string]any{"replicas": int64(9)}}
	var text []string
	for _, e := range []event{
		admissionEvent("map", "mutatingadmissionpolicies", mapPolicy), admissionEvent("mapb", "mutatingadmissionpolicybindings", mapBinding),
		{id: "create", verb: "create", group: "apps", version: "v1", resource: "deployments", ns: "app", name: "web", code: 201, received: at(t, 1), req: dep, resp: dep},
		{id: "scale", verb: "update", group: "apps", version: "v1", resource: "deployments", sub: "scale", ns: "app", name: "web", code: 200, received: at(t, 2), req: scale},
		{id: "status", verb: "update", group: "apps", version: "v1", resource: "deployments", sub: "status", ns: "app", name: "web", code: 200, received: at(t, 3), req: status, resp: status},
	} {
		line := e.line(t)
		if e.id == "scale" {
			line = replaceOnce(t, line, `"level":"RequestResponse"`, `"level":"Request"`)
		}
		text = append(text, line)
	}
	for _, tc := range []struct {
		p    *admissionregistrationv1.ValidatingAdmissionPolicy
		b    *admissionregistrationv1.ValidatingAdmissionPolicyBinding
		want string
	}{{labels, lb, DecisionAdmit}, {replicas, rb, DecisionIndeterminate}} {
		_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{tc.p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{tc.b}, text...)
		if rec := recs["status"]; rec == nil || rec.Decision != tc.want {
			t.Errorf("%s: the status update: %s, want %s", tc.p.Name, describeRecord(rec), tc.want)
		}
	}
}
