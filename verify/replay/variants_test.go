package replay

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestPickServedUnknownAnnotation: two ways of sending a patch that differ only in an audit
// annotation one of them does not know (its map order not found) are alike: the annotation is
// claimed of neither, and the outcome is decided. Ways that differ in a known value are not.
func TestPickServedUnknownAnnotation(t *testing.T) {
	ev := &Event{Verb: "patch", ResponseStatus: &auditlog.Status{Code: 200}}
	way := func(name string, annotations map[string]string, unknown string) served {
		dec := &verify.Decision{Allowed: true, Code: 200, AuditAnnotations: annotations}
		if unknown != "" {
			dec.Forget(unknown, "its map order")
		}
		return served{variant: name, calls: []admitted{{dec: dec}}}
	}
	for _, tc := range []struct {
		name      string
		ways      []served
		wantOK    bool
		wantAnnos map[string]string
	}{
		{
			name: "one does not know it",
			ways: []served{
				way(variantName(types.MergePatchType), map[string]string{"obs/labels": "a,b", "obs/op": "UPDATE"}, ""),
				way(variantName(types.StrategicMergePatchType), map[string]string{"obs/labels": "b,a", "obs/op": "UPDATE"}, "obs/labels"),
			},
			wantOK:    true,
			wantAnnos: map[string]string{"obs/op": "UPDATE"},
		},
		{
			name: "both know it otherwise",
			ways: []served{
				way(variantName(types.MergePatchType), map[string]string{"obs/labels": "a,b"}, ""),
				way(variantName(types.StrategicMergePatchType), map[string]string{"obs/labels": "a"}, ""),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ok, why, _ := pickServed(ev, tc.ways, nil)
			if ok != tc.wantOK {
				t.Fatalf("pickServed ok = %v (%s), want %v", ok, why, tc.wantOK)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(tc.wantAnnos, s.calls[0].dec.AuditAnnotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}
