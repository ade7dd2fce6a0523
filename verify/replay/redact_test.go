package replay

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestSizedMutations: what a mutating policy wrote into a Secret is shown by its size, the
// paths kept, and metadata but annotations as it is.
func TestSizedMutations(t *testing.T) {
	for _, tc := range []struct{ name, patch, want string }{
		{"data", `[{"op":"add","path":"/data/token","value":"c2VjcmV0"}]`, `[{"op":"add","path":"/data/token","value":"<redacted: 8 bytes>"}]`},
		{"stringData whole", `[{"op":"replace","path":"/stringData","value":{"password":"hunter2"}}]`, `[{"op":"replace","path":"/stringData","value":{"password":"<redacted: 7 bytes>"}}]`},
		{"a label", `[{"op":"add","path":"/metadata/labels/team","value":"a"}]`, `[{"op":"add","path":"/metadata/labels/team","value":"a"}]`},
		{"an annotation", `[{"op":"add","path":"/metadata/annotations/x","value":"hunter2"}]`, `[{"op":"add","path":"/metadata/annotations/x","value":"<redacted: 7 bytes>"}]`},
		{"a test and a removal", `[{"op":"test","path":"/data/a","value":"eA=="},{"op":"remove","path":"/data/b"}]`, `[{"op":"test","path":"/data/a","value":"<redacted: 4 bytes>"},{"op":"remove","path":"/data/b"}]`},
		{"not a patch", `{"x":1}`, `"<redacted>"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []verify.Change{{Policy: "p", Binding: "b", Patch: json.RawMessage(tc.patch)}}
			got := sizedMutations(in)
			if diff := cmp.Diff(tc.want, string(got[0].Patch)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if string(in[0].Patch) != tc.patch {
				t.Errorf("the record's change was changed in place: %s", in[0].Patch)
			}
		})
	}
}

// TestParamSecretsScrubbed: a policy whose param is a Secret may quote its values on any
// resource's request (a config map's create here, its message and audit annotation): the
// record the outputs get holds none of them, in any form, and keeps what is not one (the
// config map's own data).
func TestParamSecretsScrubbed(t *testing.T) {
	t.Parallel()
	const value = "param-S3CRET-value-12345"
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "creds", "namespace": "a", "uid": "u-creds", "resourceVersion": "3"},
		"data":     map[string]any{"token": base64.StdEncoding.EncodeToString([]byte(value))}}
	p, b := levelPolicy("param-echo", "configmaps", admissionregistrationv1.Create, nil, "false")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Secret"}
	p.Spec.Validations[0].MessageExpression = "'token ' + string(params.data['token']) + ' for ' + object.data['k']"
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "token", ValueExpression: "string(params.data['token'])"}}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "creds", Namespace: "a"}
	b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "a"}, "data": map[string]any{"k": "visible-config-value"}}
	line := levelEvent(t, "c1", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c", 422, "", cm, nil)
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "a", "uid": "u-a", "resourceVersion": "2", "labels": map[string]any{"kubernetes.io/metadata.name": "a"}}}
	_, got := replayLinesWith(t, ps, bs, []any{ns, secret}, line)
	rec := got["c1"]
	if rec == nil || rec.Decision != DecisionDeny {
		t.Fatalf("record %s, want deny", describeRecord(rec))
	}
	out, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{value, base64.StdEncoding.EncodeToString([]byte(value))} {
		if strings.Contains(string(out), f) {
			t.Errorf("the record holds the param's value as %q: %s", f, out)
		}
	}
	if !strings.Contains(rec.Message, "token <redacted> for visible-config-value") {
		t.Errorf("message %q: want the param's value scrubbed, the config map's kept", rec.Message)
	}
}
