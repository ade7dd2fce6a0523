package replay

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLogEvidenceProven replays a recording whose last request's first attempt read the
// version before a cordon (testdata/cut/first-attempt-noop-patch: the log's annotation is that
// version's): the log's verdicts say so, certain, only where the log shows the replayed policy
// and binding created word for word. Where it shows them otherwise, the verdicts may be
// another version's, and the state the log's order gives is likely.
func TestLogEvidenceProven(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "cut", "first-attempt-noop-patch")
	_, ps, bs := readPolicies(t, filepath.Join(dir, "policies.yaml"))
	var lines []string
	for _, l := range gunzipLines(t, filepath.Join(dir, "audit.log.gz")) {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	last := auditIDOf(t, lines[len(lines)-1])
	atMetadata := func(l string) string {
		return edited(t, l, func(m map[string]any) {
			m["level"] = "Metadata"
			delete(m, "requestObject")
			delete(m, "responseObject")
		})
	}
	otherBinding := func(policy string) string {
		// The replayed binding's create, as another binding (of policy) the replay does not give.
		return edited(t, lines[1], func(m map[string]any) {
			m["auditID"] = "other-binding"
			m["objectRef"].(map[string]any)["name"] = "other"
			obj := m["requestObject"].(map[string]any)
			obj["metadata"].(map[string]any)["name"] = "other"
			obj["spec"].(map[string]any)["policyName"] = policy
		})
	}
	// before is the line written gap before the last request was received (200 ms: within the
	// second kube-apiserver's policy source may take to compile it).
	var lastReceived time.Time
	edited(t, lines[len(lines)-1], func(m map[string]any) {
		lastReceived, _ = time.Parse(time.RFC3339Nano, m["requestReceivedTimestamp"].(string))
	})
	before := func(l string, gap time.Duration) string {
		return edited(t, l, func(m map[string]any) {
			at := lastReceived.Add(-gap)
			m["requestReceivedTimestamp"], m["stageTimestamp"] = at.Add(-5*time.Millisecond).Format(time.RFC3339Nano), at.Format(time.RFC3339Nano)
		})
	}
	movedLast := func(i int, gap time.Duration) []string {
		// Line i written gap before the last request, logged there.
		out := append(append([]string{}, lines[:i]...), lines[i+1:len(lines)-1]...)
		return append(out, before(lines[i], gap), lines[len(lines)-1])
	}
	with := func(i int, l string) []string {
		out := append([]string{}, lines[:i]...)
		return append(append(out, l), lines[i:]...)
	}
	replaced := func(i int, l string) []string {
		out := append([]string{}, lines...)
		out[i] = l
		return out
	}
	for _, tc := range []struct {
		name  string
		lines []string
		opts  []Option
		want  Certainty
		// checked says opts hold WithCheckRecorded(true): the summary counts the requests
		// compared with the log's verdicts.
		checked bool
	}{
		{name: "created word for word", lines: lines, want: CertaintyCertain},
		{name: "created word for word, without the log's verdicts", lines: lines, opts: []Option{WithLogEvidence(false)}, want: CertaintyLikely},
		{name: "the policy created at level Metadata", lines: replaced(0, atMetadata(lines[0])), want: CertaintyLikely},
		{name: "the binding created at level Metadata", lines: replaced(1, atMetadata(lines[1])), want: CertaintyLikely},
		{name: "the policy created at level Metadata, checked", lines: replaced(0, atMetadata(lines[0])), opts: []Option{WithCheckRecorded(true)}, want: CertaintyCertain, checked: true},
		{name: "another binding of the policy", lines: with(2, otherBinding("exu-obs-node")), want: CertaintyLikely},
		{name: "another binding of another policy", lines: with(2, otherBinding("not-replayed")), want: CertaintyCertain},
		{name: "another binding whose policy the log does not show", lines: with(2, atMetadata(otherBinding("not-replayed"))), want: CertaintyLikely},
		{name: "no create in the log", lines: lines[2:], want: CertaintyLikely},
		{name: "the binding created just before", lines: movedLast(1, 200*time.Millisecond), want: CertaintyLikely},
		// Past the policy source's two seconds, within as long again, which a loaded server
		// takes (compiledWithin): the log's verdict may still be of the cluster before it.
		{name: "the binding created 3 s before", lines: movedLast(1, 3*time.Second), want: CertaintyLikely},
		{name: "the binding created 5 s before", lines: movedLast(1, 5*time.Second), want: CertaintyCertain},
		{name: "another binding of the policy, its verdict", lines: replaced(2, edited(t, lines[2], func(m map[string]any) {
			m["annotations"].(map[string]any)["validation.policy.admission.k8s.io/validation_failure"] = `[{"message":"m","policy":"exu-obs-node","binding":"other","expressionIndex":0,"validationActions":["Audit"]}]`
		})), want: CertaintyLikely},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sum, recs := replaySources(t, ps, bs, append([]Option{WithAdmissionPlugins(withoutServiceAccount(t))}, tc.opts...), Source{Name: "audit.log", Reader: strings.NewReader(strings.Join(tc.lines, "\n") + "\n")})
			rec := recs[last]
			if rec == nil {
				t.Fatalf("no record of %s", last)
			}
			got := struct {
				Decision  string
				Certainty Certainty
			}{string(rec.Decision), rec.Certainty}
			want := got
			want.Decision, want.Certainty = string(DecisionAdmit), tc.want
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("record (-want +got):\n%s\n%s", diff, rec.Indeterminate)
			}
			if len(rec.Disagreements) > 0 || len(sum.Disagreements) > 0 {
				t.Errorf("disagreements %v, %v", rec.Disagreements, sum.Disagreements)
			}
			if got, want := sum.Checked > 0, tc.checked; got != want {
				t.Errorf("checked %d requests: compared with the log's verdicts only with --check-recorded", sum.Checked)
			}
		})
	}
}

// TestUnreproducedNote: a recording's creates of widgets whose whole numbers the client may
// have sent as doubles (testdata/cut/crd-float-create), the policy's create logged at level
// Metadata: its verdicts are not evidence by default, and the summary says --check-recorded
// would take them as such; checked, they choose, and it says nothing.
func TestUnreproducedNote(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "cut", "crd-float-create")
	policies := filepath.Join(dir, "policies.yaml")
	set, ps, bs := readPolicies(t, policies)
	var lines []string
	for _, l := range gunzipLines(t, filepath.Join(dir, "audit.log.gz")) {
		if strings.Contains(l, `"resource":"validatingadmissionpolicies"`) {
			l = edited(t, l, func(m map[string]any) {
				m["level"] = "Metadata"
				delete(m, "requestObject")
				delete(m, "responseObject")
			})
		}
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	for _, check := range []bool{false, true} {
		opts := []Option{WithCheckRecorded(check), WithAdmissionPlugins(withoutServiceAccount(t)), WithMapOrder(mapOrderOf(t, policies)), WithMutatingPolicies(set.MutatingPolicyList(), set.MutatingBindingList())}
		sum, _ := replaySources(t, ps, bs, opts, Source{Name: "audit.log", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")})
		noted := slices.ContainsFunc(sum.Notes, func(n string) bool { return strings.Contains(n, "--check-recorded takes such verdicts as evidence") })
		if got, want := []any{sum.Unreproduced > 0, noted}, []any{!check, !check}; !cmp.Equal(got, want) {
			t.Errorf("checked %v: unreproduced %d, noted %v, want unreproduced %v and noted %v\n%s", check, sum.Unreproduced, noted, want[0], want[1], strings.Join(sum.Notes, "\n"))
		}
	}
}
