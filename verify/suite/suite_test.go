package suite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSuites runs every suite under testdata/suites: each behaviour of the evaluator has a
// suite there, and every case must pass.
func TestSuites(t *testing.T) {
	var files []string
	err := filepath.WalkDir("../../testdata/suites", func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".suite.yaml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) < 8 {
		t.Fatalf("found %d suites, want the suites of every behaviour", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			t.Parallel()
			suites, err := Load(f)
			if err != nil {
				t.Fatalf("Load(%q) = %v", f, err)
			}
			for _, s := range suites {
				rep, err := Run(context.Background(), s)
				if err != nil {
					t.Fatalf("Run(%q) = %v", f, err)
				}
				for _, c := range rep.Cases {
					if !c.Passed {
						t.Errorf("%s: case %q failed:\n%s", c.Pos, c.Name, strings.Join(c.Failures, "\n"))
					}
				}
			}
		})
	}
}

// TestLoadErrors checks that bad suites fail with every problem at its file, line and field.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"unknown-field.yaml", []string{
			`testdata/bad/unknown-field.yaml:9:3: unknown field "cases[0].oldObjekt"`,
		}},
		{"missing-file.yaml", []string{
			`testdata/bad/missing-file.yaml:4:12: policies[0]: testdata/bad/no-such-policy.yaml: no such file or folder`,
			`testdata/bad/missing-file.yaml:9:14: cases[0].oldObject: testdata/bad/no-such-pod.yaml: no such file or folder`,
		}},
		{"no-expect.yaml", []string{
			`testdata/bad/no-expect.yaml:10:3: cases[1]: case "no expectation" has no expectation: add expect.decision (admit or deny)`,
			`testdata/bad/no-expect.yaml:16:22: cases[2].expect.decision: decision must be admit or deny, not "allow"`,
		}},
		{"many-problems.yaml", []string{
			`testdata/bad/many-problems.yaml:4:60: policies[1]: testdata/bad/no-such-policy.yaml: no such file or folder`,
			`testdata/bad/many-problems.yaml:5:1: unknown field "objectz"`,
			`testdata/bad/many-problems.yaml:10:3: unknown field "cases[0].oldObjekt"`,
			`testdata/bad/many-problems.yaml:12:3: cases[1]: case "no expectation" has no expectation: add expect.decision (admit or deny)`,
			`testdata/bad/many-problems.yaml:15:11: cases[1].object: testdata/bad/no-such-pod.yaml: no such file or folder`,
		}},
		{"wrong-type.yaml", []string{
			`testdata/bad/wrong-type.yaml:4:12: policies[0]: testdata/bad/no-such-policy.yaml: no such file or folder`,
			`testdata/bad/wrong-type.yaml:9:11: cases[0].expect: expected object, got string`,
			`testdata/bad/wrong-type.yaml:10:3: cases[1]: a case needs a name`,
		}},
		{"wrong-kind.yaml", []string{
			`testdata/bad/wrong-kind.yaml:2:7: kind: want apiVersion vapc.dev/v1alpha1, kind TestSuite; not vapc.dev/v1alpha1 Suite`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			_, err := Load(filepath.Join("testdata/bad", tc.file))
			if err == nil {
				t.Fatalf("Load(%q) = nil error, want %q", tc.file, tc.want)
			}
			got := strings.Split(err.Error(), "\n")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Load(%q) errors mismatch (-want +got):\n%s", tc.file, diff)
			}
		})
	}
}

// TestRunErrors checks that a suite whose policies cannot be what the suite tests fails with
// every problem at its file, line and field.
func TestRunErrors(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"orphan-binding.yaml", []string{
			`testdata/bad/orphan-binding-policies.yaml:6:15: spec.policyName: binding "typo": policy "kosmos-node-not-readdy" is not among the suite's policies: the binding would decide nothing`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			suites, err := Load(filepath.Join("testdata/bad", tc.file))
			if err != nil {
				t.Fatalf("Load(%q) = %v", tc.file, err)
			}
			_, err = Run(context.Background(), suites[0])
			var se *SuiteError
			if !errors.As(err, &se) {
				t.Fatalf("Run(%q) = %v, want a SuiteError", tc.file, err)
			}
			got := strings.Split(err.Error(), "\n")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Run(%q) errors mismatch (-want +got):\n%s", tc.file, diff)
			}
		})
	}
}

// TestResolve checks that a resolved case has the request the evaluator decides and the
// suite's objects with the case's own replacing them.
func TestResolve(t *testing.T) {
	suites, err := Load("../../testdata/suites/kosmos/kosmos.suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := suites[0].Resolve()
	if err != nil {
		t.Fatalf("Resolve() = %v", err)
	}
	if len(res.Cases) != len(suites[0].Cases) || len(res.Policies) != 2 {
		t.Fatalf("Resolve() = %d cases, %d policy documents; want %d, 2", len(res.Cases), len(res.Policies), len(suites[0].Cases))
	}
	for i, rc := range res.Cases {
		if rc.Err != nil {
			t.Errorf("cases[%d]: %v", i, rc.Err)
		}
		seen := map[string]int{}
		for _, u := range rc.Objects {
			k := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
			if seen[k]++; seen[k] > 1 {
				t.Errorf("cases[%d]: %s twice among the objects", i, k)
			}
		}
	}
	if got := res.Cases[1].Request.Kind.Kind; got != "Pod" {
		t.Errorf("the AdmissionReview case's request kind = %q, want Pod", got)
	}
}

// TestMutatingExpectations checks that wrong expectations of what MutatingAdmissionPolicies
// change fail their cases, saying what differs.
func TestMutatingExpectations(t *testing.T) {
	suites, err := Load("testdata/mutating-wrong.suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), suites[0])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"wrong object":                            {"object mismatch (-want +got)", `-`, `"team": string("search")`, `+`, `"team": string("payments")`},
		"wrong patch":                             {"the object with expect.patch applied differs from the object the mutating policies made"},
		"patch that does not apply":               {"expect.patch does not apply to the object the mutating policies received"},
		"no change expected":                      {"differs from the object the mutating policies made", "mutations: unexpected change by [policy=team-label binding=team-label param=shop/team-defaults: add /metadata/labels]"},
		"a change by another policy expected":     {"mutations: no change by [policy=replica-cap]", "mutations: unexpected change by [policy=team-label"},
		"a misspelt field in the expected object": {"expect.object", `unknown field "dataa"`},
	}
	for _, c := range rep.Cases {
		got := strings.Join(c.Failures, "\n")
		if c.Passed {
			t.Errorf("case %q passed, want a failure", c.Name)
			continue
		}
		for _, w := range want[c.Name] {
			if !strings.Contains(got, w) {
				t.Errorf("case %q: failures do not say %q:\n%s", c.Name, w, got)
			}
		}
	}
	if len(rep.Cases) != len(want) {
		t.Errorf("%d cases, want %d", len(rep.Cases), len(want))
	}
}
