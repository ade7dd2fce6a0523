package replay

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/vapc-dev/vapc/cel"
	_ "github.com/vapc-dev/vapc/cel/mutatingvalidation" // kube-apiserver's validation of MutatingAdmissionPolicies
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
)

// TestMutatingPoliciesReplay replays the recorded end-to-end log with the mutating form of the
// toleration floor among the policies: the pod creates the validating guard refused in the
// server are repaired by the mutating policy first, so the replay admits them, and each record
// says what the policy changed.
func TestMutatingPoliciesReplay(t *testing.T) {
	set, diags := cel.ReadPaths(nil, filepath.Join("testdata", "toleration-floor-map.yaml"))
	if diags.HasErrors() || len(set.MutatingPolicies) != 1 {
		t.Fatalf("reading the mutating policy: %v", diags)
	}
	dir := filepath.Join(auditData, "recorded-e2e")
	_, without := replayScenario(t, dir, "audit.log.gz")
	_, with := replayScenario(t, dir, "audit.log.gz", WithMutatingPolicies(set.MutatingPolicyList(), set.MutatingBindingList()))
	if len(with) != len(without) {
		t.Fatalf("%d records with the mutating policy, %d without", len(with), len(without))
	}
	repaired, mutated := 0, 0
	for i, w := range with {
		o := without[i]
		if len(o.Mutations) > 0 {
			t.Errorf("line %d: mutations without a mutating policy: %v", o.Line, o.Mutations)
		}
		refusedByFloor := o.Decision == DecisionDeny && strings.Contains(o.Message, "eviction-toleration-floor")
		if len(w.Mutations) > 0 {
			mutated++
			for _, c := range w.Mutations {
				if c.Policy != "toleration-floor" || !strings.Contains(string(c.Patch), `"value":600`) {
					t.Errorf("line %d: unexpected change %+v %s", w.Line, c, c.Patch)
				}
			}
		}
		switch {
		case refusedByFloor && w.Operation == "CREATE":
			if w.Decision != DecisionAdmit || len(w.Mutations) == 0 {
				t.Errorf("line %d: the floor refused the pod (%s); with the mutating policy: %s, mutations %v", w.Line, o.Message, w.Decision, w.Mutations)
			}
			repaired++
		case w.Decision != o.Decision && !refusedByFloor:
			t.Errorf("line %d: decision %s without the mutating policy, %s with it", w.Line, o.Decision, w.Decision)
		}
	}
	if repaired == 0 || mutated < repaired {
		t.Errorf("%d pod creates repaired, %d requests mutated: want some, the repaired among them", repaired, mutated)
	}
	t.Logf("%d pod creates repaired, %d requests mutated", repaired, mutated)
}

// TestPipelineVersion: the request pipeline is built for the version the evaluator decides as.
func TestPipelineVersion(t *testing.T) {
	if apiserver.KubernetesVersion != verify.KubernetesVersion {
		t.Errorf("the pipeline is built for Kubernetes %s, the evaluator decides as %s", apiserver.KubernetesVersion, verify.KubernetesVersion)
	}
}
