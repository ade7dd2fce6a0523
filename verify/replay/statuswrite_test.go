package replay

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// TestStatusWritten follows a pod's status written at level Metadata (a kubelet's patch, its
// result not in the log): what no body of pods/status changes (its spec, its owner
// references), as the request pipeline's probe finds, stays known, the rest does not; a
// DELETE after it is decided on what it reads of the pod.
func TestStatusWritten(t *testing.T) {
	t.Parallel()
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "uid-p", "resourceVersion": "10", "creationTimestamp": "2026-11-24T00:00:00Z",
			"labels":          map[string]any{"app": "web"},
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "uid-rs", "controller": true}}},
		"spec": map[string]any{"nodeName": "leaf-1", "terminationGracePeriodSeconds": int64(30),
			"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
		"status": map[string]any{"phase": "Running"}}
	type want struct {
		Decision string
		Reason   Reason
	}
	for _, tc := range []struct {
		name, expr string
		level      string // of the DELETE
		want       want
	}{
		{name: "the spec", expr: "oldObject.spec.nodeName == 'leaf-1'", level: auditlog.LevelMetadata, want: want{DecisionAdmit, ""}},
		{name: "the owner references", expr: "oldObject.metadata.ownerReferences[0].kind == 'ReplicaSet'", level: auditlog.LevelMetadata, want: want{DecisionAdmit, ""}},
		{name: "the labels", expr: "oldObject.metadata.labels.app == 'web'", level: auditlog.LevelMetadata, want: want{DecisionIndeterminate, ReasonUnknownField}},
		{name: "the status", expr: "oldObject.status.phase == 'Running'", level: auditlog.LevelMetadata, want: want{DecisionIndeterminate, ReasonUnknownField}},
		{name: "the grace period, from the phase", expr: "request.options.gracePeriodSeconds == 30", level: auditlog.LevelRequest, want: want{DecisionIndeterminate, ReasonUnknownField}},
		{name: "the spec, the options logged", expr: "oldObject.spec.nodeName == 'leaf-1'", level: auditlog.LevelRequest, want: want{DecisionAdmit, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", "pods", admissionregistrationv1.Delete, nil, tc.expr)
			status := subresourceEvent(t, levelEvent(t, "status", auditlog.LevelMetadata, "patch", "pods", "ns", "p", 200, "", nil, nil), "status")
			var body map[string]any
			if tc.level != auditlog.LevelMetadata {
				body = map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
			}
			del := levelEvent(t, "del", tc.level, "delete", "pods", "ns", "p", 200, "", body, nil)
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				[]any{map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns"}}, pod}, status, del)
			checkDecision(t, recs["del"], tc.want.Decision, tc.want.Reason)
		})
	}
}

// subresourceEvent is the event line of levelEvent sent to a subresource of its object.
func subresourceEvent(t *testing.T, line, sub string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	m["requestURI"] = m["requestURI"].(string) + "/" + sub
	m["objectRef"].(map[string]any)["subresource"] = sub
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestStatusProbe holds what the request pipeline answers of writes to pods/status and
// nodes/status: the fields no body changes (podStatusStrategy and nodeStatusStrategy put the
// stored spec back, rest.BeforeUpdate the creationTimestamp and generation; a pod's owner
// references and deletionTimestamp are the stored ones), and those a body may change or that
// the pipeline refused to see changed (the deletion marks of an object not being deleted),
// which the probe does not take as kept.
func TestStatusProbe(t *testing.T) {
	t.Parallel()
	r, err := New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, uri string
		obj       map[string]any
		want      statusKept
	}{
		{name: "pods/status", uri: "/api/v1/namespaces/ns/pods/p/status",
			obj: map[string]any{"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "5", "creationTimestamp": "2026-11-24T00:00:00Z"},
				"spec":     map[string]any{"nodeName": "n", "containers": []any{map[string]any{"name": "c", "image": "i"}}}},
			want: statusKept{ok: true, top: map[string]bool{"spec": true}, meta: map[string]bool{"labels": false, "annotations": false, "finalizers": false,
				"ownerReferences": true, "creationTimestamp": true, "generation": true, "deletionTimestamp": true, "deletionGracePeriodSeconds": false}}},
		{name: "nodes/status", uri: "/api/v1/nodes/n/status",
			obj: map[string]any{"apiVersion": "v1", "kind": "Node",
				"metadata": map[string]any{"name": "n", "uid": "u", "resourceVersion": "5", "creationTimestamp": "2026-11-24T00:00:00Z"},
				"spec":     map[string]any{"podCIDR": "10.0.0.0/24"}},
			want: statusKept{ok: true, top: map[string]bool{"spec": true}, meta: map[string]bool{"labels": false, "annotations": false, "finalizers": false,
				"ownerReferences": false, "creationTimestamp": true, "generation": true, "deletionTimestamp": false, "deletionGracePeriodSeconds": false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			u, err := auditlog.DecodeObject(raw)
			if err != nil {
				t.Fatal(err)
			}
			ev := &Event{Verb: "patch", RequestURI: tc.uri + "?fieldManager=kubelet"}
			tg, skip := r.resolve(subresourceOf(ev, u))
			if skip != "" {
				t.Fatalf("resolve: %s", skip)
			}
			got, answered := r.statusProbe(context.Background(), ev, tg, state.Prior{Found: true, Kept: true, Raw: raw}, u)
			if !answered {
				t.Fatalf("the pipeline did not answer")
			}
			if diff := gocmp.Diff(tc.want, got, gocmp.AllowUnexported(statusKept{})); diff != "" {
				t.Errorf("statusProbe mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// subresourceOf gives ev the objectRef of u's status subresource.
func subresourceOf(ev *Event, u *unstructured.Unstructured) *Event {
	ev.Stage = auditlog.StageResponseComplete
	ev.ObjectRef = &ObjectRef{Resource: strings.ToLower(u.GetKind()) + "s", Namespace: u.GetNamespace(), Name: u.GetName(), APIVersion: "v1", Subresource: "status"}
	ev.ResponseStatus = &Status{Code: 200}
	return ev
}
