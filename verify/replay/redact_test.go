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

// TestParamSecretsOfOtherStates: the values of a param Secret are scrubbed from the record
// whichever version of it the decision read: here a config map's create ran while the Secret
// was rotated, and the likely state of the informers is the one before the rotation (the old
// token), evaluated on a copy of the job's view (informerLag); and where the replay does not
// know the param (not in the snapshot), what the log records the policy answered (its audit
// annotation, quoting the token) is marked. Found by a review of TestParamSecretsScrubbed's
// change, which scrubbed the values of the job's own view only.
func TestParamSecretsOfOtherStates(t *testing.T) {
	t.Parallel()
	const oldTok, newTok = "OLD-param-S3CRET-aaaaaaaa", "NEW-param-S3CRET-bbbbbbbb"
	secret := func(rv, tok string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "creds", "namespace": "a", "uid": "u-creds", "resourceVersion": rv},
			"data":     map[string]any{"token": base64.StdEncoding.EncodeToString([]byte(tok))}}
	}
	p, b := levelPolicy("param-echo", "configmaps", admissionregistrationv1.Create, nil, "false")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Secret"}
	p.Spec.Validations[0].MessageExpression = "'token ' + string(params.data['token'])"
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "creds", Namespace: "a"}
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "a"}, "data": map[string]any{"k": "v"}}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "a", "uid": "u-a", "resourceVersion": "2", "labels": map[string]any{"kubernetes.io/metadata.name": "a"}}}
	rotate := timedEvent(t, levelEvent(t, "rot", auditlog.LevelRequestResponse, "update", "secrets", "a", "creds", 200, "", secret("3", newTok), secret("10", newTok)), "00.000000", "00.015000", nil)
	refused := timedEvent(t, levelEvent(t, "c1", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c", 422, "", cm, nil), "00.000000", "00.020000", nil)
	annotated := timedEvent(t, levelEvent(t, "c1", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c", 201, "", cm, cm), "00.000000", "00.020000",
		map[string]string{"param-echo/token": base64.StdEncoding.EncodeToString([]byte(oldTok))})
	for _, tc := range []struct {
		name     string
		snapshot []any
		lines    []string
	}{
		{"rotated while the request ran", []any{ns, secret("3", oldTok)}, []string{rotate, refused}},
		{"not known to the replay", []any{ns}, []string{annotated}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sum, got := replaySources(t, ps, bs, []Option{WithCheckRecorded(true), snapshotOf(t, tc.snapshot)},
				Source{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(tc.lines, "\n") + "\n")})
			rec := got["c1"]
			if rec == nil {
				t.Fatal("no record")
			}
			out, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			s, err := json.Marshal(sum)
			if err != nil {
				t.Fatal(err)
			}
			texts := map[string]string{"record": string(out), "text": rec.String(), "summary": string(s), "the log's verdict": rec.recordedVerdict}
			for _, tok := range []string{oldTok, newTok} {
				for _, f := range []string{tok, base64.StdEncoding.EncodeToString([]byte(tok))} {
					for what, text := range texts {
						if strings.Contains(text, f) {
							t.Errorf("the %s holds %q (%s): %s", what, f, describeRecord(rec), text)
						}
					}
				}
			}
		})
	}
}

// TestParamSecretsRebuilt: two versions of a param Secret the replay rebuilt through the
// pipeline (updates logged at level Request) share the pipeline's resourceVersion and differ
// in their content: both are scrubbed, whichever state the decision read (found by a review:
// the Secrets served were told apart by their resourceVersion, and the second was dropped).
func TestParamSecretsRebuilt(t *testing.T) {
	t.Parallel()
	const tok0, tok1, tok2 = "TOK0-param-S3CRET-00000000", "TOK1-param-S3CRET-11111111", "TOK2-param-S3CRET-22222222"
	secret := func(rv, tok string) map[string]any {
		md := map[string]any{"name": "creds", "namespace": "a", "uid": "u-creds"}
		if rv != "" {
			md["resourceVersion"] = rv
		}
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": md,
			"data": map[string]any{"token": base64.StdEncoding.EncodeToString([]byte(tok))}}
	}
	p, b := levelPolicy("param-echo", "configmaps", admissionregistrationv1.Create, nil, "false")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "/v1", Kind: "Secret"}
	p.Spec.Validations[0].MessageExpression = "'token ' + string(params.data['token'])"
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "creds", Namespace: "a"}
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "a"}, "data": map[string]any{"k": "v"}}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "a", "uid": "u-a", "resourceVersion": "2", "labels": map[string]any{"kubernetes.io/metadata.name": "a"}}}
	w1 := timedEvent(t, levelEvent(t, "w1", auditlog.LevelRequest, "update", "secrets", "a", "creds", 200, "", secret("3", tok1), nil), "00.000000", "00.005000", nil)
	w2 := timedEvent(t, levelEvent(t, "w2", auditlog.LevelRequest, "update", "secrets", "a", "creds", 200, "", secret("", tok2), nil), "00.006000", "00.012000", nil)
	refused := timedEvent(t, levelEvent(t, "c1", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c", 422, "", cm, nil), "00.000000", "00.020000", nil)
	sum, got := replaySources(t, ps, bs, []Option{WithCheckRecorded(true), snapshotOf(t, []any{ns, secret("3", tok0)})},
		Source{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join([]string{w1, w2, refused}, "\n") + "\n")})
	if got["c1"] == nil {
		t.Fatal("no record")
	}
	s, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(got["c1"])
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{tok0, tok1, tok2} {
		for _, f := range []string{tok, base64.StdEncoding.EncodeToString([]byte(tok))} {
			for what, text := range map[string]string{"summary": string(s), "record": string(out)} {
				if strings.Contains(text, f) {
					t.Errorf("the %s holds %q: %s", what, f, describeRecord(got["c1"]))
				}
			}
		}
	}
}
