package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/internal/auditgen"
	"github.com/vapc-dev/vapc/verify/replay"
)

// generatedReport replays a generated log (verify/auditgen) of 40,000 events, about five
// hours of a cluster of 120 nodes with ten times as many node flaps and drains as the default
// mix, through the in-tree guards of policies/, the Kosmos guard at its Deny stage, into a
// report.
func generatedReport(t testing.TB) *Data {
	t.Helper()
	var log, snapshot bytes.Buffer
	mix := auditgen.DefaultMix()
	mix[auditgen.ActivityNodeFlap] *= 10
	mix[auditgen.ActivityDrain] *= 10
	cfg := auditgen.Config{Seed: 3, Events: 40000, Nodes: 120, KosmosNodes: 12, Duration: 6 * time.Hour, Mix: mix, SnapshotWriter: &snapshot}
	if _, err := auditgen.Generate(&log, cfg); err != nil {
		t.Fatal(err)
	}
	set, diags := cel.ReadPaths(nil, filepath.Join("..", "..", "policies"))
	if len(diags.Without(cel.Info).Without(cel.Warning)) > 0 {
		t.Fatalf("policies: %v", diags)
	}
	var ps []*admissionregistrationv1.ValidatingAdmissionPolicy
	for _, p := range set.Policies {
		ps = append(ps, p.ValidatingAdmissionPolicy)
	}
	var bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, b := range set.Bindings {
		if b.Spec.PolicyName == "kosmos-node-not-ready" {
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}
		}
		bs = append(bs, b.ValidatingAdmissionPolicyBinding)
	}
	snap := filepath.Join(t.TempDir(), "snapshot.yaml")
	if err := writeFile(snap, snapshot.Bytes()); err != nil {
		t.Fatal(err)
	}
	b, err := New(ps, bs, WithInputs([]string{"generated.log"}, []string{"policies/"}, []string{"snapshot.yaml"}))
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(ps, bs, replay.WithSnapshot(snap), replay.WithObserver(b.Observer()))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(context.Background(), []replay.Source{{Name: "generated.log", Reader: &log}}, b.Sink(nil))
	if err != nil {
		t.Fatal(err)
	}
	return b.Data(sum)
}

func writeFile(path string, data []byte) error { return os.WriteFile(path, data, 0o644) }
