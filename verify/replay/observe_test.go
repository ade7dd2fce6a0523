package replay

import (
	"path/filepath"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestObserver: an Observer sees every snapshot object, and every final event once, in log
// order, with what its Prepare returned; Records carry the rebuilt objects and the policies
// that can match.
func TestObserver(t *testing.T) {
	t.Parallel()
	var snapshot []string
	var prepared atomic.Int32
	var events []int
	o := Observer{
		Snapshot: func(u *unstructured.Unstructured) { snapshot = append(snapshot, u.GetKind()+"/"+u.GetName()) },
		Prepare: func(ev *Event) any {
			prepared.Add(1)
			return ev.AuditID
		},
		Event: func(file string, line int, ev *Event, p any) {
			if p != ev.AuditID {
				t.Errorf("%s:%d: prepared %v, want the event's audit ID %s", file, line, p, ev.AuditID)
			}
			if len(events) > 0 && line <= events[len(events)-1] {
				t.Errorf("%s:%d observed after line %d", file, line, events[len(events)-1])
			}
			events = append(events, line)
		},
	}
	dir := filepath.Join(auditData, "kosmos-flapping")
	_, recs := replayScenario(t, dir, "audit.jsonl", WithObserver(o))
	if len(snapshot) == 0 || snapshot[0] != "Node/kosmos-member1" {
		t.Errorf("snapshot objects observed: %v, want the Node first", snapshot)
	}
	if len(events) != 32 || prepared.Load() != 32 {
		t.Errorf("observed %d events, prepared %d, want 32 each", len(events), prepared.Load())
	}
	for _, r := range recs {
		if r.Operation == "DELETE" && r.Decision != DecisionIndeterminate && (r.OldObject == nil || r.OldObject.GetName() != r.Name) {
			t.Errorf("%s: OldObject = %v, want the deleted pod", r, r.OldObject)
		}
		if len(r.Policies) != 1 || r.Policies[0] != "kosmos-protect-notready-node-pods" {
			t.Errorf("%s: Policies = %v", r, r.Policies)
		}
	}
}
