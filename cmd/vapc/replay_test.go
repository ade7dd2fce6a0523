package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const auditData = "../../testdata/audit/"

// TestReplayExitCodes drives `vapc replay` through Run and checks each exit code.
func TestReplayExitCodes(t *testing.T) {
	basic := []string{"--policies", auditData + "kosmos-basic/policy.yaml"}
	basicLog := auditData + "kosmos-basic/audit.log.gz"
	flapping := []string{"--policies", auditData + "kosmos-flapping/policy.yaml", "--snapshot", auditData + "kosmos-flapping/snapshot.yaml", auditData + "kosmos-flapping/audit.jsonl"}
	for _, tc := range []struct {
		name     string
		args     []string
		stdin    string
		want     int
		contains string // in stdout, or stderr for errors
	}{
		{"recorded log agrees with itself", append(append([]string{"replay", "--check-recorded"}, basic...), basicLog), "", exitOK, "3 requests, 0 disagreements"},
		{"fail on deny", append(append([]string{"replay", "--fail-on", "deny"}, basic...), basicLog), "", exitFindings, "deny 1"},
		{"fail on any change: none", append(append([]string{"replay", "--fail-on", "any-change"}, basic...), basicLog), "", exitOK, "changed:       0"},
		{"fail on any change", append([]string{"replay", "--fail-on", "any-change"}, flapping...), "", exitFindings, "changed:       2"},
		{"jsonl", append(append([]string{"replay", "--output", "jsonl"}, basic...), basicLog), "", exitOK, `"decision":"deny","certainty":"certain","recorded":"deny"`},
		{"junit", append(append([]string{"replay", "--output", "junit", "--fail-on", "deny"}, basic...), basicLog), "", exitFindings, `<testcase name="kosmos-node-not-ready/kosmos-node-not-ready"`},
		{"stdin", append(append([]string{"replay"}, basic...), "-"), "{oops\n", exitFindings, "malformed lines:     1"},
		{"no policies", []string{"replay", basicLog}, "", exitUsage, "--policies is required"},
		{"no logs", append([]string{"replay"}, basic...), "", exitUsage, "no audit logs given"},
		{"bad output", append(append([]string{"replay", "--output", "xml"}, basic...), basicLog), "", exitUsage, `replay: --output "xml": replay writes text, jsonl or junit`},
		{"bad fail-on", append(append([]string{"replay", "--fail-on", "maybe"}, basic...), basicLog), "", exitUsage, "--fail-on must be"},
		{"bad snapshot", append(append([]string{"replay", "--snapshot", "/nonexistent"}, basic...), basicLog), "", exitUsage, "snapshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runVapc(t, tc.stdin, tc.args...)
			if code != tc.want {
				t.Errorf("vapc %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.want, stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, tc.contains) {
				t.Errorf("vapc %s: output does not contain %q\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), tc.contains, stdout, stderr)
			}
		})
	}
}

// TestReplayReadsStdinLog replays the recorded log from stdin.
func TestReplayReadsStdinLog(t *testing.T) {
	data, err := os.ReadFile(auditData + "kosmos-basic/audit.log.gz")
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runVapc(t, string(data), "replay", "--check-recorded", "--policies", auditData+"kosmos-basic/policy.yaml", "-")
	if code != exitOK || !strings.Contains(stdout, "evaluated:     3 (admit 2, deny 1") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// policyAndBinding is a ValidatingAdmissionPolicy of CREATE of a core resource with the
// validations given as YAML lines, and its binding.
func policyAndBinding(name, resource, validations string) string {
	return `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ` + name + `}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [` + resource + `]}]
  validations:
` + validations + `
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ` + name + `}
spec: {policyName: ` + name + `, validationActions: [Deny]}
`
}

// TestReplayPolicyProblems: replay refuses the policies and bindings kube-apiserver would not
// create (exit 1, as vapc check, each error at its file and line on stderr); it warns of an
// expression that fails type checking for every kind its policy matches (with its
// did-you-mean) and of a messageExpression's, which the server creates and evaluates; it says
// an empty folder is a problem of the input, not of kube-apiserver's; and warns on stderr of a
// binding whose policy is missing, a policy without binding and a document that is neither.
func TestReplayPolicyProblems(t *testing.T) {
	t.Parallel()
	basic, err := os.ReadFile(auditData + "kosmos-basic/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	log := auditData + "kosmos-basic/audit.log.gz"
	dir := t.TempDir()
	file := func(name, extra string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, string(basic)+"---\n"+extra)
		return p
	}
	badExpr := file("bad-expression.yaml", policyAndBinding("bad", "pods", `  - expression: "'a' + 1"`))
	badBinding := file("bad-binding.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-actions}
spec: {policyName: kosmos-node-not-ready, validationActions: []}
`)
	orphan := file("orphan.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: orphan}
spec: {policyName: nowhere, validationActions: [Deny]}
`)
	unbound := file("unbound.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: unbound}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: "true"
`)
	frob := file("frob.yaml", "apiVersion: example.com/v1\nkind: Frobnicator\nmetadata: {name: f}\n")
	typo := file("typo.yaml", policyAndBinding("typo", "pods", `  - expression: "has(object.metadata.lables)"`))
	badMessage := file("bad-message.yaml", policyAndBinding("bad-message", "podtemplates", `  - expression: "true"
    messageExpression: "string(object.metadata.nmae)"`))
	emptyDir := t.TempDir()

	tests := []struct {
		name   string
		policy string
		code   int
		stderr []string // lines of stderr, without the caret lines of an expression
	}{
		{"would not compile", badExpr, exitFindings, []string{
			badExpr + `:43:22: spec.validations[0].expression: compilation failed: found no matching overload for '_+_' applied to '(string, int)'`,
			"vapc: replay: --policies: the policies cannot be replayed: kube-apiserver would refuse to create them (1 error) (vapc check reports the same)",
		}},
		{"binding without actions", badBinding, exitFindings, []string{
			badBinding + `:39:62: spec.validationActions: Required value`,
			"vapc: replay: --policies: the policies cannot be replayed: kube-apiserver would refuse to create them (1 error) (vapc check reports the same)",
		}},
		// kube-apiserver creates the policy (status.typeChecking warns) and evaluates it, as
		// the replay of its log must: has() of a field the kind does not have is false.
		{"a type error for every kind", typo, exitOK, []string{
			typo + `:43:21: spec.validations[0].expression: warning: undefined field 'lables' (checked as v1/Pod): did you mean 'labels'?; kube-apiserver creates the policy and evaluates it: a request it reaches is an error that failurePolicy decides, unless a logical operator absorbs it (vapc check rejects it)`,
		}},
		{"a messageExpression's type error", badMessage, exitOK, []string{
			badMessage + `:44:47: spec.validations[0].messageExpression: warning: undefined field 'nmae' (checked as v1/PodTemplate): did you mean 'name'?; kube-apiserver words the denial with the validation's message instead`,
		}},
		{"an empty folder", emptyDir, exitFindings, []string{
			emptyDir + `: no .yaml, .yml or .json files in this folder (testdata and hidden folders below it are not read)`,
			"vapc: replay: --policies: the policies cannot be replayed: 1 problem in the input",
		}},
		{"binding to a missing policy", orphan, exitOK, []string{
			orphan + `:39:20: spec.policyName: warning: binding "orphan": policy "nowhere" is not among --policies: the binding decides nothing`,
		}},
		{"policy without binding", unbound, exitOK, []string{
			unbound + `:38:18: metadata.name: warning: policy "unbound" has no binding among --policies: it decides nothing`,
		}},
		{"not a policy", frob, exitOK, []string{
			frob + `:36:1: warning: example.com/v1 Frobnicator is not an admission policy or binding: ignored (cluster objects go in --snapshot)`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runVapc(t, "", "replay", "--policies", tc.policy, log)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
				if !strings.HasPrefix(l, " | ") {
					got = append(got, l)
				}
			}
			if diff := cmp.Diff(tc.stderr, got); diff != "" {
				t.Errorf("stderr mismatch (-want +got):\n%s", diff)
			}
			ran := "evaluated:     3 (admit 2, deny 1"
			if tc.policy == typo {
				ran = "evaluated:     6 (admit 2, deny 4" // the log's three pods too: has() is false
			}
			if tc.code == exitOK && !strings.Contains(stdout, ran) {
				t.Errorf("the replay did not run:\n%s", stdout)
			}
		})
	}
}

// TestReplayAdmissionPlugins: --enable-admission-plugins and --disable-admission-plugins set the
// built-in plugins a request is sent through before the policies, as kube-apiserver's flags
// do. The log's pod asked for IfNotPresent; the cluster ran AlwaysPullImages, which set Always,
// so the policy admitted it.
func TestReplayAdmissionPlugins(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	writeFile(t, policy, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: always-pull}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: "object.spec.containers.all(c, c.imagePullPolicy == 'Always')"
    message: images are pulled always
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: always-pull}
spec: {policyName: always-pull, validationActions: [Deny]}
`)
	log := filepath.Join(dir, "audit.jsonl")
	writeFile(t, log, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods","verb":"create","user":{"username":"admin","groups":["system:masters"]},"objectRef":{"resource":"pods","namespace":"default","name":"web","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestObject":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default"},"spec":{"containers":[{"name":"c","image":"nginx:1.27","imagePullPolicy":"IfNotPresent"}]}}}
`)
	for _, tc := range []struct {
		name     string
		flags    []string
		want     int
		contains string
	}{
		{"the cluster's plugin", []string{"--enable-admission-plugins=AlwaysPullImages"}, exitOK, "admit 1"},
		{"the defaults", nil, exitFindings, "1 request would be decided otherwise than the log records"},
		{"enabled and disabled", []string{"--enable-admission-plugins", "AlwaysPullImages", "--disable-admission-plugins", "AlwaysPullImages"}, exitFindings, "deny 1"},
		{"unknown plugin", []string{"--enable-admission-plugins=NoSuchPlugin"}, exitUsage, `unknown admission plugin "NoSuchPlugin"`},
		{"plugin a replay cannot run", []string{"--enable-admission-plugins=ImagePolicyWebhook"}, exitUsage, `"ImagePolicyWebhook" cannot be replayed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"replay", "--fail-on", "any-change", "--policies", policy}, tc.flags...), log)
			stdout, stderr, code := runVapc(t, "", args...)
			if code != tc.want || !strings.Contains(stdout+stderr, tc.contains) {
				t.Errorf("vapc %s: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, tc.want, tc.contains, stdout, stderr)
			}
		})
	}
}

// TestReplayProgress: when standard error is not a terminal (CI), a replay writes a progress
// line every --progress-interval (lines, MB, MB/s, and the share of the input read when its
// size is known: not of standard input); a replay shorter than the interval writes none, and
// --quiet none at all.
func TestReplayProgress(t *testing.T) {
	t.Parallel()
	policies := []string{"--policies", auditData + "kosmos-basic/policy.yaml"}
	log := auditData + "kosmos-basic/audit.log.gz"
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^vapc replay: \d+ lines \(\d+\.\d MB\) in [\d.]+m?s, \d+\.\d MB/s(, \d+% of the input read)?$`)
	for _, tc := range []struct {
		name    string
		args    []string
		stdin   string
		lines   int // at least, when not 0
		percent bool
	}{
		{"every interval", []string{"--progress-interval", "1ns", log}, "", 1, true},
		{"standard input: no share", []string{"--progress-interval", "1ns", "-"}, string(data), 1, false},
		{"shorter than the interval", []string{log}, "", 0, false},
		{"quiet", []string{"--quiet", "--progress-interval", "1ns", log}, "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"replay"}, policies...), tc.args...)
			_, stderr, code := runVapc(t, tc.stdin, args...)
			if code != exitOK {
				t.Fatalf("vapc %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
				if strings.HasPrefix(l, "vapc replay: ") {
					got = append(got, l)
				}
			}
			if (tc.lines == 0) != (len(got) == 0) || len(got) < tc.lines {
				t.Fatalf("vapc %s: %d progress lines, want %d:\n%s", strings.Join(args, " "), len(got), tc.lines, stderr)
			}
			if len(got) > 0 && !strings.HasPrefix(got[len(got)-1], "vapc replay: 1084 lines (1.7 MB)") {
				t.Errorf("the last progress line %q is not of the whole log", got[len(got)-1])
			}
			for _, l := range got {
				m := line.FindStringSubmatch(l)
				if m == nil || (m[1] != "") != tc.percent {
					t.Errorf("vapc %s: progress line %q, want %s (the share of the input: %t)", strings.Join(args, " "), l, line, tc.percent)
				}
			}
		})
	}
	_, stderr, code := runVapc(t, "", append(append([]string{"replay"}, policies...), "--progress-interval", "-1s", log)...)
	if want := "vapc: replay: --progress-interval must be 0 or more, not -1s\n"; code != exitUsage || stderr != want {
		t.Errorf("--progress-interval -1s: exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, want)
	}
}
