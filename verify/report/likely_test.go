package report

import (
	"context"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify/replay"
)

// TestLikelyRows: the seed incident recorded by a real kube-apiserver (the node controller
// deletes the pods of a NotReady Kosmos leaf node moments after the node's status changed),
// replayed with the in-tree guards (at their Audit stage): each delete the guard flags is a row,
// its decision likely (the nodes informer may not yet have held the status write), in its
// outcome's colour, with the alternative on the row; so is the delete it does not flag moments
// after the node turned Ready again, which the version before would have.
func TestLikelyRows(t *testing.T) {
	d, sum := likelyData(t)
	flagged := map[string]bool{}
	for _, row := range d.Requests.Rows {
		if row.Certainty != "likely" {
			continue
		}
		if row.Verb != "delete" || row.Decision != replay.DecisionAdmit || len(row.Alternatives) == 0 || !strings.Contains(row.Alternatives[0], "the nodes informer had not yet held the write at") {
			t.Errorf("a likely row: %s %s %s/%s: %s (%s), alternatives %q", row.Verb, row.Resource, row.Namespace, row.Name, row.Decision, row.Outcome, row.Alternatives)
		}
		flagged[row.Name] = row.Outcome == "audit"
	}
	want := map[string]bool{"k7-1": true, "k7-2": true, "k7-6": true, "k8-2": true, "k7-5": false}
	if !maps.Equal(flagged, want) {
		t.Errorf("likely rows (flagged by the guard): %v, want %v", flagged, want)
	}
	var bound *replay.BindingSummary
	for _, bs := range sum.Bindings {
		if bs.Policy == "kosmos-node-not-ready" {
			bound = bs
		}
	}
	if bound == nil || bound.Likely != 5 || bound.Audit != 4 {
		t.Errorf("kosmos-node-not-ready's counts: %+v, want 5 likely decisions, 4 flagged", bound)
	}
}

// likelyData replays the seed incident's recorded log with the in-tree guards into a report.
func likelyData(t *testing.T) (*Data, *replay.Summary) {
	t.Helper()
	ps, bs := loadPolicies(t, filepath.Join("..", "..", "policies"))
	return replayInto(t, ps, bs, filepath.Join("..", "replay", "testdata", "recorded", "b", "audit.log.gz"), nil, nil)
}

// replayInto replays log with the policies (without the ServiceAccount plugin, with opts)
// into a report, and gives each record to each too, when not nil.
func replayInto(t *testing.T, ps []*admissionregistrationv1.ValidatingAdmissionPolicy, bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, log string, opts []replay.Option, each func(*replay.Record)) (*Data, *replay.Summary) {
	t.Helper()
	b, err := New(ps, bs)
	if err != nil {
		t.Fatal(err)
	}
	plugins, err := replay.AdmissionPlugins(nil, []string{"ServiceAccount"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(ps, bs, append([]replay.Option{replay.WithAdmissionPlugins(plugins), replay.WithObserver(b.Observer())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	sink := b.Sink(nil)
	sum, err := r.Run(context.Background(), []replay.Source{{Name: log}}, func(rec *replay.Record) error {
		if each != nil {
			each(rec)
		}
		return sink(rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.Data(sum), sum
}

// TestAnnotationsSourceRow: a recording whose updates raced (testdata/races/raced-first-attempt:
// kube-apiserver's first attempt read an older copy, and the event keeps that attempt's audit
// annotations): the rows of those requests say whose evaluation their annotations are, as the
// replay's records do.
func TestAnnotationsSourceRow(t *testing.T) {
	dir := filepath.Join("..", "replay", "testdata", "races")
	ps, bs := loadPolicies(t, filepath.Join(dir, "policies.yaml"))
	sources := map[int]string{}
	d, _ := replayInto(t, ps, bs, filepath.Join(dir, "raced-first-attempt", "audit.log.gz"), []replay.Option{replay.WithCheckRecorded(true)}, func(rec *replay.Record) {
		if rec.AnnotationsSource != "" {
			sources[rec.Line] = rec.AnnotationsSource
		}
	})
	if len(sources) == 0 {
		t.Fatal("no record says its annotations are another evaluation's")
	}
	rows := map[int]string{}
	for _, row := range d.Requests.Rows {
		if row.AnnotationsSource != "" {
			rows[row.Line] = row.AnnotationsSource
		}
	}
	if diff := cmp.Diff(sources, rows); diff != "" {
		t.Errorf("annotations sources of the rows (-records +rows):\n%s", diff)
	}
}
