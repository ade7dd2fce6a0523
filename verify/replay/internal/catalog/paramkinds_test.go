package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestParamRereads: after the log changed a paramKind's CRD, a request that completed before its
// storage's teardown reads the params as the State holds them, one received a few seconds after
// reads them through the new schema, and one between (or twice changed, or of unknown times)
// races the param informer's new list.
func TestParamRereads(t *testing.T) {
	const crd = "widgetlimits.example.com"
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgetlimits"}
	changed := time.Date(2026, 12, 2, 8, 47, 39, 0, time.UTC)
	after := func(d time.Duration) time.Time { return changed.Add(d) }
	// want: "" no reread, "racing", or "reread" (through the new schema for sure).
	for _, tc := range []struct {
		name                string
		changes             []time.Time // when the log changed the CRD
		received, completed time.Time
		want                string
	}{
		{name: "never changed", received: after(time.Minute), completed: after(time.Minute)},
		{name: "completed before the teardown", changes: []time.Time{changed}, received: after(300 * time.Millisecond), completed: after(350 * time.Millisecond)},
		{name: "completed after the teardown began", changes: []time.Time{changed}, received: after(800 * time.Millisecond), completed: after(1200 * time.Millisecond), want: "racing"},
		{name: "received while the informer lists again", changes: []time.Time{changed}, received: after(2600 * time.Millisecond), completed: after(2610 * time.Millisecond), want: "racing"},
		// The informer's backoff may be at its cap, 30 s and as much jitter (seed r:1360: 24 s).
		{name: "received while its backoff may last", changes: []time.Time{changed}, received: after(28 * time.Second), completed: after(28 * time.Second), want: "racing"},
		{name: "received after it listed", changes: []time.Time{changed}, received: after(70 * time.Second), completed: after(70 * time.Second), want: "reread"},
		{name: "only the completion known, after", changes: []time.Time{changed}, completed: after(70 * time.Second), want: "reread"},
		{name: "neither time known", changes: []time.Time{changed}, want: "racing"},
		{name: "changed twice, before the second's teardown", changes: []time.Time{changed.Add(-3 * time.Second), changed}, received: after(100 * time.Millisecond), completed: after(200 * time.Millisecond), want: "racing"},
		{name: "changed twice, long after", changes: []time.Time{changed.Add(-3 * time.Second), changed}, received: after(2 * time.Minute), completed: after(2 * time.Minute), want: "reread"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &paramKind{gvk: gvr.GroupVersion().WithKind("WidgetLimit"), mapping: &meta.RESTMapping{Resource: gvr}, served: true, crd: crd}
			c := &Catalog{crds: map[string]*servedCRD{crd: {}}, paramKinds: map[schema.GroupVersionKind]*paramKind{k.gvk: k}, policyParam: map[string]*paramKind{"limits": k}}
			for i, at := range tc.changes {
				c.respecified(crd, Where("log", 8+i), at)
			}
			rrs := c.ParamRereads([]string{"limits", "other"}, tc.received, tc.completed)
			got := ""
			if rr, ok := rrs[gvr.GroupResource()]; ok {
				got = "reread"
				if rr.Racing != "" {
					got = "racing"
					if !strings.Contains(rr.Racing, crd) || !strings.Contains(rr.Racing, Where("log", 7+len(tc.changes))) {
						t.Errorf("Racing %q does not name the CRD and where it changed", rr.Racing)
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParamRereads (-want +got):\n%s", diff)
			}
		})
	}
}
