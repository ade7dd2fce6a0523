package replay

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// kubectlUA is kubectl's user agent (client-go's default).
const kubectlUA = "kubectl/v1.37.0 (linux/amd64) kubernetes/unknown"

// TestNumbersUnsaid: a custom resource's create or update may have held whole numbers sent as
// doubles, but from a client-go program (its default user agent), which writes them as ints,
// kubectl's --raw aside (its writes name no field manager);
// a patch's body says how it wrote them, and a built-in kind's are its Go type's.
func TestNumbersUnsaid(t *testing.T) {
	widget := target{op: admission.Create, reqKind: schema.GroupVersionKind{Group: "exac.io", Version: "v1", Kind: "Widget"}}
	pod := target{op: admission.Create, reqKind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}}
	for _, tc := range []struct {
		name          string
		verb, ua, uri string
		t             target
		wantDoubt     bool
	}{
		{"a raw client's create", "create", "vapc-e2e", "", widget, true},
		{"Python's client", "create", "OpenAPI-Generator/31.0.0/python", "", widget, true},
		{"no user agent", "create", "", "", widget, true},
		{"kubectl create", "create", kubectlUA, "/apis/exac.io/v1/namespaces/a/widgets?fieldManager=kubectl-create&fieldValidation=Strict", widget, false},
		{"kubectl apply", "create", kubectlUA, "/apis/exac.io/v1/namespaces/a/widgets?fieldManager=kubectl-client-side-apply&fieldValidation=Strict", widget, false},
		{"kubectl replace", "update", kubectlUA, "/apis/exac.io/v1/namespaces/a/widgets/w?fieldManager=kubectl-replace&fieldValidation=Strict", widget, false},
		{"kubectl create --raw", "create", kubectlUA, "/apis/exac.io/v1/namespaces/a/widgets", widget, true},
		{"kubectl replace --raw", "update", kubectlUA, "/apis/exac.io/v1/namespaces/a/widgets/w", widget, true},
		{"a controller", "create", "kube-controller-manager/v1.37.0 (linux/amd64) kubernetes/abc1234/system:serviceaccount:kube-system:job-controller", "", widget, false},
		{"a patch", "patch", "vapc-e2e", "", widget, false},
		{"a built-in kind", "create", "vapc-e2e", "", pod, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Event{Verb: tc.verb, UserAgent: tc.ua, RequestURI: tc.uri}
			if got := numbersUnsaid(ev, tc.t); got != tc.wantDoubt {
				t.Errorf("numbersUnsaid(%s by %q) = %v, want %v", tc.verb, tc.ua, got, tc.wantDoubt)
			}
		})
	}
}

// TestNumbersAuthorizerAsked: a policy that asks the authorizer beside a condition that
// settles the validation (random parity c:648): the create with its whole numbers as doubles
// asks the same check, whose answer the log does not hold, and decides alike whatever it
// answers: the create is decided, not left to the numbers' type. Where the check's answer
// decides with the doubles only, the numbers' type is not known.
func TestNumbersAuthorizerAsked(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "cut", "crd-float-create")
	// The creates as a user the authorizer answers, not a member of system:masters.
	data := []byte(strings.Join(gunzipLines(t, filepath.Join(dir, "audit.log.gz")), ""))
	log := filepath.Join(t.TempDir(), "audit.log")
	data = bytes.ReplaceAll(data, []byte(`"groups":["system:masters","system:authenticated"]`), []byte(`"groups":["system:authenticated"]`))
	if err := os.WriteFile(log, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, expression string
		want             []string // lines 18 and 19: spec.ratio 2, a number
	}{
		{"settled beside the check", "authorizer.group('').resource('secrets').namespace('cel-d').check('get').allowed() || request.operation != 'DELETE'",
			[]string{"18 admit certain ", "19 admit certain "}},
		{"decided by the check with doubles", "authorizer.group('').resource('secrets').namespace('cel-d').check('get').allowed() || type(object.spec.ratio) == int",
			[]string{"18 indeterminate indeterminate number-type", "19 indeterminate indeterminate number-type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policies := filepath.Join(t.TempDir(), "policies.yaml")
			if err := os.WriteFile(policies, []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: authz-beside
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [exac.io]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [widgets]
  validations:
  - expression: "`+tc.expression+`"
  - expression: "!has(object.spec.ratio) || object.spec.ratio < 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: authz-beside
spec:
  policyName: authz-beside
  validationActions: [Deny]
`), 0o644); err != nil {
				t.Fatal(err)
			}
			recs := replayRecording(t, policies, log, WithAdmissionPlugins(withoutServiceAccount(t)))
			var got []string
			for _, rec := range recs {
				if rec.Line == 18 || rec.Line == 19 {
					got = append(got, fmt.Sprintf("%d %s %s %s", rec.Line, rec.Decision, rec.Certainty, rec.Reason))
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("the creates of whole numbers (-want +got):\n%s", diff)
			}
		})
	}
}
