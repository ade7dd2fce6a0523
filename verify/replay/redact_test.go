package replay

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

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

// paramSecret is Secret a/creds holding tok as its token, at resourceVersion rv ("": none).
func paramSecret(rv, tok string) map[string]any {
	md := map[string]any{"name": "creds", "namespace": "a", "uid": "u-creds"}
	if rv != "" {
		md["resourceVersion"] = rv
	}
	return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": md,
		"data": map[string]any{"token": base64.StdEncoding.EncodeToString([]byte(tok))}}
}

// paramNamespace is namespace a, of Secret a/creds (paramSecret).
func paramNamespace() map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "a", "uid": "u-a", "resourceVersion": "2", "labels": map[string]any{"kubernetes.io/metadata.name": "a"}}}
}

// secretsShown fails the test where a text of the replay's outputs (the summary, each record
// as JSON lines and text write it, what the log's verdict it quotes says) holds one of the
// tokens, as it is or in base64: the first n bytes of it (0: all of it; a text cut short may
// hold the beginning of a value).
func secretsShown(t *testing.T, sum *Summary, recs map[string]*Record, n int, toks ...string) {
	t.Helper()
	s, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{"summary": string(s)}
	for id, rec := range recs {
		out, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		texts["record "+id], texts["text of "+id], texts["the log's verdict of "+id] = string(out), rec.String(), rec.recordedVerdict
	}
	for _, tok := range toks {
		for _, f := range []string{tok, base64.StdEncoding.EncodeToString([]byte(tok))} {
			if n > 0 {
				f = f[:n]
			}
			for what, text := range texts {
				if strings.Contains(text, f) {
					t.Errorf("the %s holds %q: %s", what, f, text)
				}
			}
		}
	}
}

// paramEcho is a policy of config map creates whose param is Secret a/creds (its paramKind's
// apiVersion as given) and whose message quotes its token, and its binding.
func paramEcho(apiVersion string) ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	p, b := levelPolicy("param-echo", "configmaps", admissionregistrationv1.Create, nil, "false")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: apiVersion, Kind: "Secret"}
	p.Spec.Validations[0].MessageExpression = "'token ' + string(params.data['token']) + ' for ' + object.data['k']"
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "token", ValueExpression: "string(params.data['token'])"}}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "creds", Namespace: "a"}
	b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}
	return []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
}

// TestParamSecretsScrubbed: a policy whose param is a Secret may quote its values on any
// resource's request (a config map's create here, its message and audit annotation): the
// record the outputs get, its text and the summary hold none of them, in any form, whichever
// version of the Secret the decision read, and keep what is not one (the config map's own
// data). Three cases a review found leaking: a Secret rotated while the request ran, whose
// likely state (the one before the rotation) is evaluated on a copy of the job's view
// (informerLag); two versions the replay rebuilt through the pipeline (updates at level
// Request), which share the pipeline's resourceVersion; and a param the replay does not know,
// where what the log records the policy answered (its audit annotation) is marked.
func TestParamSecretsScrubbed(t *testing.T) {
	t.Parallel()
	const tok0, tok1, tok2 = "TOK0-param-S3CRET-00000000", "TOK1-param-S3CRET-11111111", "TOK2-param-S3CRET-22222222"
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "a"}, "data": map[string]any{"k": "visible-config-value"}}
	ns := paramNamespace()
	refused := timedEvent(t, levelEvent(t, "c1", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c", 422, "", cm, nil), "00.000000", "00.020000", nil)
	annotated := timedEvent(t, levelEvent(t, "c1", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c", 201, "", cm, cm), "00.000000", "00.020000",
		map[string]string{"param-echo/token": base64.StdEncoding.EncodeToString([]byte(tok0))})
	rotate := timedEvent(t, levelEvent(t, "rot", auditlog.LevelRequestResponse, "update", "secrets", "a", "creds", 200, "", paramSecret("3", tok1), paramSecret("10", tok1)), "00.000000", "00.015000", nil)
	rebuilt1 := timedEvent(t, levelEvent(t, "w1", auditlog.LevelRequest, "update", "secrets", "a", "creds", 200, "", paramSecret("3", tok1), nil), "00.000000", "00.005000", nil)
	rebuilt2 := timedEvent(t, levelEvent(t, "w2", auditlog.LevelRequest, "update", "secrets", "a", "creds", 200, "", paramSecret("", tok2), nil), "00.006000", "00.012000", nil)
	for _, tc := range []struct {
		name       string
		apiVersion string // the paramKind's
		snapshot   []any
		lines      []string
		message    string // what the record's message holds, "" for anything
	}{
		{"the param as the log leaves it", "v1", []any{ns, paramSecret("3", tok0)}, []string{refused}, "token <redacted> for visible-config-value"},
		{"rotated while the request ran", "v1", []any{ns, paramSecret("3", tok0)}, []string{rotate, refused}, ""},
		{"two versions rebuilt", "/v1", []any{ns, paramSecret("3", tok0)}, []string{rebuilt1, rebuilt2, refused}, ""},
		{"not known to the replay", "v1", []any{ns}, []string{annotated}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ps, bs := paramEcho(tc.apiVersion)
			sum, got := replaySources(t, ps, bs, []Option{WithCheckRecorded(true), snapshotOf(t, tc.snapshot)},
				Source{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(tc.lines, "\n") + "\n")})
			rec := got["c1"]
			if rec == nil {
				t.Fatal("no record")
			}
			secretsShown(t, sum, got, 0, tok0, tok1, tok2)
			if !strings.Contains(rec.Message, tc.message) {
				t.Errorf("message %q: want %q (the param's value scrubbed, the config map's kept)", rec.Message, tc.message)
			}
		})
	}
}

// TestFollowedMutationParamSecret: where the ordered stage follows a write the log holds
// without its result (level Request) through the cluster's MutatingAdmissionPolicies, a policy
// whose params are Secrets may fail on its param quoting its value (a conversion's error);
// the reason the State forgets the object for is shown by every later request on it, whose
// record reads no Secret: the value is not in it.
func TestFollowedMutationParamSecret(t *testing.T) {
	t.Parallel()
	const tok = "TOK0-param-S3CRET-00000000"
	ns := paramNamespace()
	mp := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
		ParamKind:          &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Secret"},
		MatchConstraints:   createRules("", "configmaps"),
		ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{data: {"n": url(params.data.token).getHost()}}`}}},
	}}
	mb := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
		PolicyName: "p", ParamRef: &admissionregistrationv1.ParamRef{Name: "creds", Namespace: "a"}}}
	p, b := levelPolicy("old-reader", "configmaps", admissionregistrationv1.Update, nil, `!has(oldObject.data.n)`)
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "a"}, "data": map[string]any{"k": "v"}}
	lines := []string{
		timedEvent(t, levelEvent(t, "c1", auditlog.LevelRequest, "create", "configmaps", "a", "c", 201, "", cm, nil), "01.000", "01.010", nil),
		timedEvent(t, levelEvent(t, "u1", auditlog.LevelRequestResponse, "update", "configmaps", "a", "c", 200, "", cm, cm), "09.000", "09.010", nil),
	}
	// The cluster runs it too: the snapshot holds it.
	mp.TypeMeta = metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"}
	mb.TypeMeta = metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"}
	var installed []any
	for _, o := range []any{mp, mb} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		installed = append(installed, u)
	}
	sum, got := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		[]Option{WithMutatingPolicies([]*admissionregistrationv1.MutatingAdmissionPolicy{mp}, []*admissionregistrationv1.MutatingAdmissionPolicyBinding{mb}), snapshotOf(t, append([]any{ns, paramSecret("3", tok)}, installed...))},
		Source{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")})
	secretsShown(t, sum, got, 8, tok)
}
