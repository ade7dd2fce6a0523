package replay

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestLikelyAdmission: the informers' likely state is the one of the middle of a request's
// span, where the store runs validating admission; of its receipt where the handler runs it
// first (a CONNECT, a pod's eviction or binding); of its completion where an export lost its
// receipt.
func TestLikelyAdmission(t *testing.T) {
	t.Parallel()
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	const received, done = "2026-11-24T00:00:00.000000Z", "2026-11-24T00:00:10.000000Z"
	at := func(s int) time.Time { return time.Date(2026, 11, 24, 0, 0, s, 0, time.UTC) }
	for _, tc := range []struct {
		name string
		t    target
		lost bool
		want time.Time
	}{
		{name: "an update", t: target{gvr: pods, op: admission.Update}, want: at(5)},
		{name: "a delete", t: target{gvr: pods, op: admission.Delete}, want: at(5)},
		{name: "a status patch", t: target{gvr: pods, sub: "status", op: admission.Update}, want: at(5)},
		{name: "an exec", t: target{gvr: pods, sub: "exec", op: admission.Connect}, want: at(0)},
		{name: "an eviction", t: target{gvr: pods, sub: "eviction", op: admission.Create}, want: at(0)},
		{name: "a binding", t: target{gvr: pods, sub: "binding", op: admission.Create}, want: at(0)},
		{name: "an export that lost the receipt", t: target{gvr: pods, op: admission.Update}, lost: true, want: at(10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &auditlog.Event{RequestReceivedTimestamp: received, StageTimestamp: done}
			if tc.lost {
				ev.RequestReceivedTimestamp = ""
				ev.Loss.Lost |= auditlog.LostReceived
			}
			if got := likelyAdmission(ev, tc.t); !got.Equal(tc.want) {
				t.Errorf("likelyAdmission = %v, want %v", got, tc.want)
			}
		})
	}
}
