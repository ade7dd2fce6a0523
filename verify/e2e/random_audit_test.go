package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/vapc-dev/vapc/verify/replay"
)

// checkAuditResults holds every decided record that claims the validation_failure annotation
// to results that say the same: each Audit binding's failure (a denial or an error) is one
// entry, with its policy, binding, index and message. The annotation is the dispatcher's own,
// the results the replay's rows: a scorer that reads the results (the recorded logs' does)
// must find the server's entries in them (random parity seed r:1473: a matchCondition's error,
// entry 0 in the annotation, had no index among the results).
func checkAuditResults(t *testing.T, byID map[string]*replay.Record) {
	t.Helper()
	checked := 0
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		rec := byID[id]
		v, ok := rec.AuditAnnotations[replay.ValidationFailureAnnotation]
		if !ok || rec.Decision == replay.DecisionIndeterminate || rec.AnnotationsSource != "" {
			// Another evaluation's annotations (a first attempt's on an older copy, seed
			// r:1521 in make test once), beside the decision's results.
			continue
		}
		var entries []struct {
			Policy, Binding, Message string
			ExpressionIndex          int
		}
		if err := json.Unmarshal([]byte(v), &entries); err != nil {
			errorf(t, "%s: its validation_failure annotation does not decode: %v", rec, err)
			continue
		}
		var annotated, results []string
		for _, e := range entries {
			annotated = append(annotated, fmt.Sprintf("%s/%s[%d] %q", e.Policy, e.Binding, e.ExpressionIndex, e.Message))
		}
		for _, r := range rec.Results {
			if !slices.Contains(r.Actions, "Audit") || r.Result == "admit" {
				continue
			}
			index := "none"
			if r.ExpressionIndex != nil {
				index = fmt.Sprint(*r.ExpressionIndex)
			}
			results = append(results, fmt.Sprintf("%s/%s[%s] %q", r.Policy, r.Binding, index, r.Message))
		}
		slices.Sort(annotated)
		slices.Sort(results)
		if !slices.Equal(annotated, results) {
			errorf(t, "%s: the validation_failure annotation it claims lists %q, its Audit results %q", rec, annotated, results)
		}
		checked++
	}
	t.Logf("records claiming validation_failure whose Audit results say the same: %d", checked)
}
