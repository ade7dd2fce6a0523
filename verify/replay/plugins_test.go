package replay

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestPluginUnknownsOfTheRequest: what the built-in plugins set from objects the replay does
// not know depends on the request: LimitRanger reads LimitRanges for a pod and for a
// PersistentVolumeClaim, and sets resources of the pod's containers only.
func TestPluginUnknownsOfTheRequest(t *testing.T) {
	t.Parallel()
	pvcs := schema.GroupResource{Resource: "persistentvolumeclaims"}
	pc := &pluginCluster{misses: []pluginMiss{{gr: limitRangesGR, what: "limitranges ns1/(all)"}}}
	for _, tc := range []struct {
		name string
		gr   schema.GroupResource
		want int
	}{
		{"a pod", podsGR, len(pluginUnknowns[limitRangesGR])},
		{"a claim", pvcs, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pc.unknowns(tc.gr); len(got) != tc.want {
				t.Errorf("unknowns of %s: %v, want %d", tc.gr, got, tc.want)
			}
		})
	}
}
