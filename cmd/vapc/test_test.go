package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTestExitCodes drives `vapc test` through Run: 0 when every case passes, 1 when one
// fails, a suite is wrong, its policy is one vapc check rejects, or a folder holds no suite, 2
// for a bad command line.
func TestTestExitCodes(t *testing.T) {
	dir := t.TempDir()
	policy, err := filepath.Abs("../../testdata/suites/kosmos/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	failing := filepath.Join(dir, "failing.suite.yaml")
	writeFile(t, failing, `apiVersion: vapc.dev/v1alpha1
kind: TestSuite
metadata: {name: failing}
policies: [`+policy+`]
cases:
- name: expects the wrong decision
  operation: DELETE
  resource: pods
  user: {username: system:serviceaccount:kube-system:node-controller}
  oldObject: {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: default}, spec: {nodeName: kosmos-cluster7, containers: [{name: c, image: i}]}}
  objects:
  - {apiVersion: v1, kind: Node, metadata: {name: kosmos-cluster7, labels: {kosmos.io/node: "true"}}, status: {conditions: [{type: Ready, status: "False"}]}}
  expect: {decision: admit}
`)
	bad := filepath.Join(dir, "bad.suite.yaml")
	writeFile(t, bad, "apiVersion: vapc.dev/v1alpha1\nkind: TestSuite\nmetadata: {name: bad}\npolicies: [missing.yaml]\ncases:\n- {name: c, operation: CREATE}\n")
	empty := t.TempDir()
	writeFile(t, filepath.Join(empty, "policy.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
	typo := filepath.Join(dir, "typo.yaml")
	writeFile(t, typo, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: typo}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations:
  - expression: "!has(object.metadata.lables) || !('x' in object.metadata.labels)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: typo}
spec: {policyName: typo, validationActions: [Deny]}
`)
	typoSuite := filepath.Join(dir, "typo.suite.yaml")
	writeFile(t, typoSuite, "apiVersion: vapc.dev/v1alpha1\nkind: TestSuite\nmetadata: {name: typo}\npolicies: [typo.yaml]\ncases:\n- {name: c, operation: CREATE, resource: configmaps, object: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}}, expect: {decision: admit}}\n")
	noCases := filepath.Join(dir, "no-cases.suite.yaml")
	writeFile(t, noCases, "apiVersion: vapc.dev/v1alpha1\nkind: TestSuite\nmetadata: {name: empty}\npolicies: ["+policy+"]\n")

	tests := []struct {
		name      string
		args      []string
		code      int
		stdoutHas string
		stderrHas string
	}{
		{name: "passing suites", args: []string{"test", "../../testdata/suites"}, code: 0, stdoutHas: "0 failed"},
		{name: "failing case", args: []string{"test", failing}, code: 1, stdoutHas: "FAIL expects the wrong decision"},
		{name: "bad suite", args: []string{"test", bad}, code: 1, stderrHas: "bad.suite.yaml:4:12: policies[0]:"},
		{name: "a folder without suites", args: []string{"test", empty}, code: 1, stderrHas: empty + ": no *.suite.yaml files in this folder"},
		{name: "a suite without cases", args: []string{"test", noCases}, code: 1, stderrHas: "no-cases.suite.yaml:1:1: cases: a suite needs cases"},
		// A policy vapc check rejects does not run: its typo would make every case an error
		// that failurePolicy decides.
		{name: "a policy vapc check rejects", args: []string{"test", typoSuite}, code: 1, stderrHas: typo + ":8:22: spec.validations[0].expression: undefined field 'lables' (checked as v1/ConfigMap): did you mean 'labels'?\n | !has(object.metadata.lables) || !('x' in object.metadata.labels)\n | ....^\n"},
		{name: "no suites", args: []string{"test"}, code: 2},
		{name: "bad output", args: []string{"test", "--output", "xml", failing}, code: 2},
		{name: "an output of another verb", args: []string{"test", "--output", "sarif", failing}, code: 2, stderrHas: ""},
		{name: "bad version", args: []string{"test", "--kubernetes-version", "1.31", failing}, code: 2},
		{name: "missing path", args: []string{"test", filepath.Join(dir, "nope")}, code: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := Run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if got := ExitCode(err); got != tc.code {
				t.Fatalf("Run(%q) exit code = %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", tc.args, got, err, tc.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.stdoutHas) {
				t.Errorf("Run(%q) stdout = %q, want it to contain %q", tc.args, stdout.String(), tc.stdoutHas)
			}
			if !strings.Contains(stderr.String(), tc.stderrHas) {
				t.Errorf("Run(%q) stderr = %q, want it to contain %q", tc.args, stderr.String(), tc.stderrHas)
			}
		})
	}
}

// TestTestOutput checks the human output against its golden file, and that JSON, JSON lines
// and JUnit output parse and count the cases.
func TestTestOutput(t *testing.T) {
	suite := "../../testdata/suites/kosmos/kosmos.suite.yaml"
	var stdout, stderr bytes.Buffer
	if err := Run(context.Background(), []string{"test", "-v", suite}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("Run() = %v\n%s", err, stderr.String())
	}
	golden := "../../testdata/suites/kosmos/kosmos.txt.golden"
	if *update {
		if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update): %v", err)
	}
	if diff := cmp.Diff(string(want), stdout.String()); diff != "" {
		t.Errorf("vapc test -v output mismatch (-want +got):\n%s", diff)
	}

	stdout.Reset()
	if err := Run(context.Background(), []string{"test", "--output", "json", suite}, nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var report struct {
		Suites []struct {
			Cases []struct {
				Passed   bool `json:"passed"`
				Decision struct {
					Allowed bool `json:"allowed"`
				} `json:"decision"`
			} `json:"cases"`
		} `json:"suites"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("--output json is not JSON: %v", err)
	}
	if len(report.Suites) != 1 || len(report.Suites[0].Cases) != 5 || report.Suites[0].Cases[0].Decision.Allowed {
		t.Errorf("--output json = %+v, want one suite of 5 cases, the first denied", report)
	}

	stdout.Reset()
	if err := Run(context.Background(), []string{"test", "--output", "jsonl", suite}, nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var c struct {
			Suite, Name string
			Passed      bool
		}
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("--output jsonl: a line is not JSON: %v\n%s", err, l)
		}
		lines = append(lines, c.Suite+": "+c.Name)
	}
	if len(lines) != 5 || lines[0] != "kosmos-node-not-ready: node-controller deletes a pod on a NotReady Kosmos node" {
		t.Errorf("--output jsonl = %q, want a line for each of the 5 cases", lines)
	}

	stdout.Reset()
	if err := Run(context.Background(), []string{"test", "--output", "junit", suite}, nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var junit struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(stdout.Bytes(), &junit); err != nil {
		t.Fatalf("--output junit is not XML: %v", err)
	}
	if junit.Tests != 5 || junit.Failures != 0 {
		t.Errorf("--output junit counts %d tests, %d failures; want 5, 0", junit.Tests, junit.Failures)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTestReportsEveryProblem: vapc test reports every problem of every suite at once (the
// suite files', then those of the policies of the suites that could be read), exit 1.
func TestTestReportsEveryProblem(t *testing.T) {
	const bad = "../../verify/suite/testdata/bad/"
	stdout, stderr, code := runVapc(t, "", "test", bad+"many-problems.yaml", bad+"orphan-binding.yaml")
	want := `../../verify/suite/testdata/bad/many-problems.yaml:4:60: policies[1]: ../../verify/suite/testdata/bad/no-such-policy.yaml: no such file or folder
../../verify/suite/testdata/bad/many-problems.yaml:5:1: unknown field "objectz"
../../verify/suite/testdata/bad/many-problems.yaml:10:3: unknown field "cases[0].oldObjekt"
../../verify/suite/testdata/bad/many-problems.yaml:12:3: cases[1]: case "no expectation" has no expectation: add expect.decision (admit or deny)
../../verify/suite/testdata/bad/many-problems.yaml:15:11: cases[1].object: ../../verify/suite/testdata/bad/no-such-pod.yaml: no such file or folder
../../verify/suite/testdata/bad/orphan-binding-policies.yaml:6:15: spec.policyName: binding "typo": policy "kosmos-node-not-readdy" is not among the suite's policies: the binding would decide nothing
vapc: test: 6 problems in the suites, their policies or their objects
`
	if code != exitFindings || stdout != "" {
		t.Errorf("exit code = %d, stdout = %q; want %d and nothing", code, stdout, exitFindings)
	}
	if diff := cmp.Diff(want, stderr); diff != "" {
		t.Errorf("stderr mismatch (-want +got):\n%s", diff)
	}
}
