package policies_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/cel"
	_ "github.com/vapc-dev/vapc/cel/mutatingvalidation" // the server's validation of MutatingAdmissionPolicies
	"github.com/vapc-dev/vapc/cel/vap"
	"github.com/vapc-dev/vapc/policies"
	"github.com/vapc-dev/vapc/verify/suite"
)

var update = flag.Bool("update", false, "rewrite the emitted YAML and the golden files")

// render builds the guards with the settings and emits them.
func render(t *testing.T, s *policies.Settings) []policies.File {
	t.Helper()
	guards, err := policies.Guards(s)
	if err != nil {
		t.Fatalf("Guards() error:\n%v", err)
	}
	for _, d := range policies.Diagnostics(guards) {
		if d.Severity == cel.Warning {
			t.Errorf("Guards() warning: %s", d)
		}
	}
	files, err := policies.Render(guards)
	if err != nil {
		t.Fatalf("Render() error: %v", err)
	}
	return files
}

// compareFolder compares the files with those of dir (rewriting them with -update).
func compareFolder(t *testing.T, dir string, files []policies.File) {
	t.Helper()
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading %s (run make policies, or go test -update): %v", path, err)
		}
		if diff := cmp.Diff(string(want), string(f.Data)); diff != "" {
			t.Errorf("%s is stale: run make policies (-committed +emitted):\n%s", path, diff)
		}
	}
}

// TestEmittedUpToDate: the committed YAML is what the Go policies and settings.yaml emit.
func TestEmittedUpToDate(t *testing.T) {
	t.Parallel()
	s, err := policies.LoadSettings(filepath.Join("settings", "settings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := render(t, s)
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	want := []string{"drainer-cordon-guard.yaml", "eviction-toleration-floor.yaml", "kosmos-node-not-ready.yaml"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("Render() files mismatch (-want +got):\n%s", diff)
	}
	compareFolder(t, ".", files)
	for _, f := range files {
		if !strings.HasPrefix(string(f.Data), vap.Header+"\n# Source: policies/") {
			t.Errorf("%s does not start with the header and its Go source:\n%s", f.Name, f.Data)
		}
	}
}

// TestDenyStageGolden emits the guards at StageDeny into testdata/deny, where the suites read
// them: the decisions the guards make once enforced.
func TestDenyStageGolden(t *testing.T) {
	t.Parallel()
	s := policies.DefaultSettings()
	s.Stage = vap.StageDeny
	compareFolder(t, filepath.Join("testdata", "deny"), render(t, s))
}

// TestMutateGolden emits the eviction-toleration-floor guard in its mutating form
// (evictionTolerationFloor.mode: mutate) into testdata/mutate, where its suite reads it.
func TestMutateGolden(t *testing.T) {
	t.Parallel()
	s := policies.DefaultSettings()
	s.EvictionTolerationFloor.Mode = policies.TolerationMutate
	var files []policies.File
	for _, f := range render(t, s) {
		if f.Name == policies.EvictionTolerationFloorName+".yaml" {
			files = append(files, f)
		}
	}
	compareFolder(t, filepath.Join("testdata", "mutate"), files)
	checker, err := cel.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	set, diags := cel.ReadPaths(nil, filepath.Join("testdata", "mutate"))
	diags = append(diags, checker.Check(set)...)
	for _, d := range diags {
		if d.Severity != cel.Info {
			t.Errorf("check testdata/mutate: %s", d)
		}
	}
	if len(set.MutatingPolicies) != 1 || len(set.MutatingBindings) != 1 || len(set.Policies)+len(set.Bindings) != 0 {
		t.Errorf("testdata/mutate holds %d mutating policies, %d mutating bindings, %d validating policies; want 1, 1, 0", len(set.MutatingPolicies), len(set.MutatingBindings), len(set.Policies))
	}
}

// TestEmittedYAMLChecks: `vapc check` finds nothing in the emitted YAML, neither in what
// `kubectl apply -f policies/` applies (the folder's own files) nor in the StageDeny renders.
func TestEmittedYAMLChecks(t *testing.T) {
	t.Parallel()
	checker, err := cel.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{"*.yaml", filepath.Join("testdata", "deny", "*.yaml")} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		set, diags := cel.ReadPaths(nil, files...)
		diags = append(diags, checker.Check(set)...)
		for _, d := range diags {
			if d.Severity != cel.Info {
				t.Errorf("check %s: %s", pattern, d)
			}
		}
		if len(set.Policies) != 3 || len(set.Bindings) != 3 || len(set.Others) != 0 {
			t.Errorf("check %s: %d policies, %d bindings, %d other objects; want 3, 3, 0", pattern, len(set.Policies), len(set.Bindings), len(set.Others))
		}
	}
}

// TestStages: the settings choose each guard's stage, without touching the Go policies.
func TestStages(t *testing.T) {
	t.Parallel()
	s := policies.DefaultSettings()
	s.Stage = vap.StageWarn
	s.KosmosNodeNotReady.Stage = vap.StageDeny
	guards, err := policies.Guards(s)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]vap.Stage{}
	for _, g := range guards {
		got[g.Policy.Name()] = g.Stage
	}
	want := map[string]vap.Stage{
		policies.KosmosNodeNotReadyName:      vap.StageDeny,
		policies.DrainerCordonGuardName:      vap.StageWarn,
		policies.EvictionTolerationFloorName: vap.StageWarn,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stages mismatch (-want +got):\n%s", diff)
	}
}

// TestSettingsReachTheGuards: users, labels, conditions and the floor from the settings are in
// the emitted YAML, quoted for CEL.
func TestSettingsReachTheGuards(t *testing.T) {
	t.Parallel()
	s := policies.DefaultSettings()
	s.KosmosNodeNotReady.NodeLabel = "example.com/leaf"
	s.KosmosNodeNotReady.EvictingUsers = []string{"system:serviceaccount:kube-system:node-controller", "o'brien"}
	s.DrainerCordonGuard.ProblemConditions = []string{"FrequentKubeletRestart"}
	s.EvictionTolerationFloor.DefaultMinTolerationSeconds = 90
	out := ""
	for _, f := range render(t, s) {
		out += string(f.Data)
	}
	for _, want := range []string{
		"key: example.com/leaf",
		`request.userInfo.username in ['system:serviceaccount:kube-system:node-controller', 'o\'brien']`,
		`expression: "['FrequentKubeletRestart']"`,
		`expression: "90"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("emitted YAML lacks %s", want)
		}
	}
}

func TestGuardsRefuseInvalidSettings(t *testing.T) {
	t.Parallel()
	s := policies.DefaultSettings()
	s.DrainerCordonGuard.DrainerUsers = nil
	if _, err := policies.Guards(s); err == nil || !strings.Contains(err.Error(), "drainerCordonGuard.drainerUsers: no user") {
		t.Errorf("Guards() with no drainer = %v, want an error about drainerUsers", err)
	}
}

// TestSuites runs the decision suites of testdata/*.suite.yaml through the apiserver's own
// validating dispatcher (package verify) against the guards emitted at StageDeny.
func TestSuites(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "*.suite.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no suites: %v", err)
	}
	for _, file := range files {
		suites, err := suite.Load(file)
		if err != nil {
			t.Fatalf("loading %s:\n%v", file, err)
		}
		for _, s := range suites {
			t.Run(s.Metadata.Name, func(t *testing.T) {
				rep, err := suite.Run(context.Background(), s)
				if err != nil {
					t.Fatalf("running %s: %v", file, err)
				}
				for _, c := range rep.Cases {
					if !c.Passed {
						var b strings.Builder
						_ = suite.WriteText(&b, []*suite.SuiteReport{{Name: rep.Name, File: rep.File, Cases: []suite.CaseReport{c}}}, true)
						t.Errorf("%s", b.String())
					}
				}
			})
		}
	}
}

// TestSetStage: SetStage puts every guard at the stage, whatever the guards' own settings say.
func TestSetStage(t *testing.T) {
	t.Parallel()
	s := policies.DefaultSettings()
	s.KosmosNodeNotReady.Stage = vap.StageDeny
	s.DrainerCordonGuard.Stage = vap.StageAudit
	s.EvictionTolerationFloor.Stage = vap.StageDeny
	s.SetStage(vap.StageWarn)
	guards, err := policies.Guards(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range guards {
		if g.Stage != vap.StageWarn {
			t.Errorf("after SetStage(Warn), %s is at stage %s", g.Policy.Name(), g.Stage)
		}
	}
}
