package main

import (
	"os"
	"path/filepath"
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
		{"bad output", append(append([]string{"replay", "--output", "xml"}, basic...), basicLog), "", exitUsage, "--output must be"},
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

// TestReplayPolicyProblems: replay refuses policies and bindings kube-apiserver would not
// create (exit 1, as vapc check, each error at its file and line on stderr), and warns on stderr of a binding
// whose policy is missing, a policy without binding and a document that is neither.
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
	badExpr := file("bad-expression.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: bad}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: "'a' + 1"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: bad}
spec: {policyName: bad, validationActions: [Deny]}
`)
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

	tests := []struct {
		name   string
		policy string
		code   int
		stderr []string // lines of stderr, without the caret lines of an expression
	}{
		{"would not compile", badExpr, exitFindings, []string{
			badExpr + `:43:22: spec.validations[0].expression: compilation failed: found no matching overload for '_+_' applied to '(string, int)'`,
			"vapc: replay: 1 errors in the policies and bindings: kube-apiserver would not create them (vapc check tells more)",
		}},
		{"binding without actions", badBinding, exitFindings, []string{
			badBinding + `:39:62: spec.validationActions: Required value`,
			"vapc: replay: 1 errors in the policies and bindings: kube-apiserver would not create them (vapc check tells more)",
		}},
		{"binding to a missing policy", orphan, exitOK, []string{
			orphan + `:39:20: spec.policyName: warning: binding "orphan": policy "nowhere" is not among --policies: the binding decides nothing`,
		}},
		{"policy without binding", unbound, exitOK, []string{
			unbound + `:38:18: metadata.name: warning: policy "unbound" has no binding among --policies: it decides nothing`,
		}},
		{"not a policy", frob, exitOK, []string{
			frob + `:36:1: warning: example.com/v1 Frobnicator is not a ValidatingAdmissionPolicy or ValidatingAdmissionPolicyBinding: ignored (cluster objects go in --snapshot)`,
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
			if tc.code == exitOK && !strings.Contains(stdout, "evaluated:     3 (admit 2, deny 1") {
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
