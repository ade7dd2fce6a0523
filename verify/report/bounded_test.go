package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay"
)

// TestBounded feeds a Builder far more than a million-event log holds of what a report draws
// (a day of 200 nodes flapping every quarter of an hour, every flap followed by denied
// deletions, 40 bindings each denying with long messages) and checks that the report stays
// under 10 MB and says what it left out.
func TestBounded(t *testing.T) {
	d, records := boundedData(t)
	var html bytes.Buffer
	if err := WriteHTML(&html, d); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records, %d node writes: report of %.1f MB; %d rows (%d left out), %d lanes (%d left out), decisions in buckets of %s",
		records, 2*boundedFlaps*boundedNodes, float64(html.Len())/1e6, len(d.Requests.Rows), d.Requests.LeftOut, len(d.Nodes.Lanes), d.Nodes.LeftOut, time.Duration(d.Decisions.Bucket)*time.Millisecond)
	if html.Len() >= 10e6 {
		t.Errorf("the report is %d bytes, want under 10 MB", html.Len())
	}
	if d.Requests.Total != records || d.Requests.LeftOut != records-len(d.Requests.Rows) || d.Requests.LeftOutBy[OutcomeDeny] != d.Requests.LeftOut {
		t.Errorf("requests: total %d, %d rows, left out %d %v; want every record counted", d.Requests.Total, len(d.Requests.Rows), d.Requests.LeftOut, d.Requests.LeftOutBy)
	}
	if len(d.Nodes.Lanes)+d.Nodes.LeftOut != boundedNodes {
		t.Errorf("%d lanes and %d left out, want %d nodes", len(d.Nodes.Lanes), d.Nodes.LeftOut, boundedNodes)
	}
	if len(d.Decisions.Series) != boundedBindings {
		t.Errorf("%d series, want %d", len(d.Decisions.Series), boundedBindings)
	}
}

const (
	boundedNodes    = 200
	boundedFlaps    = 96 // a day, every 15 minutes
	boundedBindings = 40
)

// boundedData builds the report of TestBounded.
func boundedData(t testing.TB) (*Data, int) {
	const (
		nodes    = boundedNodes
		flaps    = boundedFlaps
		deletes  = 4 // per flap
		bindings = boundedBindings
	)
	var ps []*admissionregistrationv1.ValidatingAdmissionPolicy
	var bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for i := range bindings {
		name := fmt.Sprintf("guard-%02d", i)
		ps = append(ps, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}})
		bs = append(bs, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}})
	}
	b, err := New(ps, bs, WithInputs([]string{"audit.log"}, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	line := 0
	ts := func(d time.Duration) string { return start.Add(d).Format(time.RFC3339Nano) }
	ready := func(name, status string, tainted bool) *nodeInfo {
		n := &nodeInfo{Kind: "Node"}
		n.Metadata.Name = name
		n.Metadata.Labels = map[string]string{"kosmos.io/node": "true", "topology.kubernetes.io/zone": "zone-" + name[len(name)-1:]}
		n.Status.Conditions = append(n.Status.Conditions, struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		}{"Ready", status})
		if tainted {
			n.Spec.Taints = append(n.Spec.Taints, struct {
				Key    string `json:"key"`
				Effect string `json:"effect"`
			}{"node.kubernetes.io/unreachable", "NoExecute"})
		}
		return n
	}
	message := strings.Repeat("the guard refuses this deletion because the node is not ready; ", 5)
	records := 0
	for f := range flaps {
		for n := range nodes {
			node := fmt.Sprintf("leaf-%03d", n)
			at := time.Duration(f)*15*time.Minute + time.Duration(n)*time.Second
			line++
			b.event("audit.log", line, &replay.Event{Verb: "update", ObjectRef: &replay.ObjectRef{Resource: "nodes", Name: node, Subresource: "status"}, ResponseStatus: &replay.Status{Code: 200}, StageTimestamp: ts(at)}, &prepared{node: ready(node, "Unknown", true)})
			for d := range deletes {
				line++
				pod := fmt.Sprintf("web-%03d-%d-%d", n, f, d)
				ev := &replay.Event{Verb: "delete", User: verify.UserInfo{Username: "system:serviceaccount:kube-system:node-controller"},
					ObjectRef: &replay.ObjectRef{Resource: "pods", Namespace: "shop", Name: pod}, ResponseStatus: &replay.Status{Code: 200}, StageTimestamp: ts(at + time.Minute)}
				b.event("audit.log", line, ev, &prepared{podNode: node, hasNode: true})
				old := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
					"metadata": map[string]any{"name": pod, "namespace": "shop", "labels": map[string]any{"app": "web"}},
					"spec":     map[string]any{"nodeName": node, "containers": []any{map[string]any{"name": "web", "image": "registry.example.com/web:" + strings.Repeat("1", 200)}}}}}
				r := &replay.Record{Request: replay.Request{File: "audit.log", Line: line, AuditID: fmt.Sprintf("id-%d", line), StageTimestamp: ev.StageTimestamp,
					Verb: "delete", Operation: "DELETE", Resource: "pods", Namespace: "shop", Name: pod, User: ev.User.Username},
					Decision: replay.DecisionDeny, Code: 422, Message: message, Logged: replay.Logged{Recorded: replay.RecordedAdmit, Changed: true}, OldObject: old}
				for k := range 3 {
					p := ps[(n+k)%bindings].Name
					r.Policies = append(r.Policies, p)
					r.Results = append(r.Results, replay.RecordResult{Policy: p, Binding: p, Param: node, Result: "deny", Actions: []string{"Deny"}, Message: message})
				}
				b.Sink(nil)(r)
				records++
			}
			line++
			b.event("audit.log", line, &replay.Event{Verb: "update", ObjectRef: &replay.ObjectRef{Resource: "nodes", Name: node, Subresource: "status"}, ResponseStatus: &replay.Status{Code: 200}, StageTimestamp: ts(at + 2*time.Minute)}, &prepared{node: ready(node, "True", false)})
		}
	}
	d := b.Data(&replay.Summary{Read: replay.Read{Files: []string{"audit.log"}, Lines: line, Requests: line}, Decided: replay.Decided{Evaluated: records, Deny: records, Changed: records}})
	return d, records
}
