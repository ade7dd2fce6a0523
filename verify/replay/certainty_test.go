package replay

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify"
)

// TestForgetUnknown: the decisions of a request's states (or of the ways it was sent) differ in
// an audit annotation one of them does not know only by what the replay settled of each (the
// server's map order its search found in one and not in another: random parity seed r:1562,
// decided likely in one replay and certain in the next): forgotten in all, they are the same
// outcome; an annotation each knows, and that differs, still tells them apart.
func TestForgetUnknown(t *testing.T) {
	t.Parallel()
	const why = "its valueExpression lists a map's keys in the order CEL iterates the map"
	decision := func(annotations map[string]string, unknown ...string) *verify.Decision {
		d := &verify.Decision{Allowed: false, Code: 422, Message: "denied", AuditAnnotations: annotations}
		for _, k := range unknown {
			d.Forget(k, why)
		}
		return d
	}
	for _, tc := range []struct {
		name      string
		decs      []*verify.Decision
		same      bool
		annotated []string // what each then holds
	}{
		{name: "known in one state, not in the other",
			decs: []*verify.Decision{
				decision(map[string]string{"p/k0": "a", "p/k1": "app=web,limit=2"}),
				decision(map[string]string{"p/k0": "a", "p/k1": "limit=2,app=web"}, "p/k1"),
			},
			same: true, annotated: []string{"p/k0"}},
		{name: "known in both, alike",
			decs: []*verify.Decision{
				decision(map[string]string{"p/k0": "a"}),
				decision(map[string]string{"p/k0": "a"}),
			},
			same: true, annotated: []string{"p/k0"}},
		{name: "known in both, differing",
			decs: []*verify.Decision{
				decision(map[string]string{"p/k0": "a", "p/k1": "x"}),
				decision(map[string]string{"p/k0": "b", "p/k1": "x"}, "p/k1"),
			},
			same: false, annotated: []string{"p/k0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forgetUnknown(tc.decs)
			if got := sameOutcome(tc.decs[0], tc.decs[1]); got != tc.same {
				t.Errorf("sameOutcome = %v, want %v (%s)", got, tc.same, outcomeDiff(tc.decs[0], tc.decs[1]))
			}
			for i, d := range tc.decs {
				if diff := cmp.Diff(tc.annotated, slices.Sorted(maps.Keys(d.AuditAnnotations))); diff != "" {
					t.Errorf("decision %d's audit annotations (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}
