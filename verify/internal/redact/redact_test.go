package redact

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    schema.GroupResource
		wantErr bool
	}{
		{"secrets", schema.GroupResource{Resource: "secrets"}, false},
		{"ConfigMaps", schema.GroupResource{Resource: "configmaps"}, false},
		{"example.com/credentials", schema.GroupResource{Group: "example.com", Resource: "credentials"}, false},
		{"", schema.GroupResource{}, true},
		{"a/b/c", schema.GroupResource{}, true},
		{"example.com/", schema.GroupResource{}, true},
		{"two words", schema.GroupResource{}, true},
	} {
		got, err := Parse(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestSensitive(t *testing.T) {
	t.Parallel()
	r := New(schema.GroupResource{Group: "example.com", Resource: "credentials"})
	for _, tc := range []struct {
		group      string
		groupKnown bool
		resource   string
		want       bool
	}{
		{"", true, "secrets", true},
		{"", false, "secrets", true},
		{"example.com", true, "credentials", true},
		{"other.io", true, "credentials", false},
		{"", false, "credentials", true}, // no object says which group: hide
		{"", true, "configmaps", false},
	} {
		if got := r.Sensitive(tc.group, tc.groupKnown, tc.resource); got != tc.want {
			t.Errorf("Sensitive(%q, %v, %q) = %v, want %v", tc.group, tc.groupKnown, tc.resource, got, tc.want)
		}
	}
	if diff := cmp.Diff([]string{"example.com/credentials", "secrets"}, r.Resources()); diff != "" {
		t.Errorf("Resources() mismatch (-want +got):\n%s", diff)
	}
}

func TestObject(t *testing.T) {
	t.Parallel()
	meta := func() map[string]any {
		return map[string]any{"name": "x", "annotations": map[string]any{"note": "the value is hunter22"},
			"managedFields": []any{map[string]any{"manager": "kubectl"}}}
	}
	for _, tc := range []struct {
		name      string
		in        map[string]any
		sensitive bool
		want      map[string]any
		scrubbed  string // Scrub of "hunter22 aGVsbG8gd29ybGQ= hello world plain"
	}{{
		name: "secret",
		in: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": meta(), "type": "Opaque",
			"data": map[string]any{"a": "aGVsbG8gd29ybGQ="}, "stringData": map[string]any{"b": "hunter22"}},
		sensitive: true,
		want: map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
			"metadata":   map[string]any{"name": "x", "annotations": map[string]any{"note": "<redacted: 21 bytes>"}},
			"data":       map[string]any{"a": "<redacted: 11 bytes>"},
			"stringData": map[string]any{"b": "<redacted: 8 bytes>"}},
		scrubbed: "<redacted> <redacted> <redacted> plain",
	}, {
		name:      "another sensitive kind",
		in:        map[string]any{"apiVersion": "example.com/v1", "kind": "Credential", "metadata": meta(), "spec": map[string]any{"token": "hunter22", "port": int64(8443), "hosts": []any{"a.example.com"}}},
		sensitive: true,
		want: map[string]any{"apiVersion": "example.com/v1", "kind": "Credential",
			"metadata": map[string]any{"name": "x", "annotations": map[string]any{"note": "<redacted: 21 bytes>"}},
			"spec":     map[string]any{"token": "<redacted: 8 bytes>", "port": "<redacted>", "hosts": []any{"<redacted: 13 bytes>"}}},
		scrubbed: "<redacted> aGVsbG8gd29ybGQ= hello world plain",
	}, {
		name: "not sensitive",
		in:   map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(), "data": map[string]any{"a": "hunter22"}},
		want: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "x", "annotations": map[string]any{"note": "the value is hunter22"}},
			"data":     map[string]any{"a": "hunter22"}},
		scrubbed: "hunter22 aGVsbG8gd29ybGQ= hello world plain",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var vals Values
			got := Object(&unstructured.Unstructured{Object: tc.in}, tc.sensitive, &vals)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Object mismatch (-want +got):\n%s", diff)
			}
			if got := vals.Scrub("hunter22 aGVsbG8gd29ybGQ= hello world plain"); got != tc.scrubbed {
				t.Errorf("Scrub = %q, want %q", got, tc.scrubbed)
			}
			if _, ok := tc.in["metadata"].(map[string]any)["managedFields"]; !ok {
				t.Error("Object changed its input")
			}
		})
	}
}

// TestQuoted: a sensitive request's disagreements keep what they compare, not the
// messages and annotation values they quote, which the server may have answered on a version
// of the object the row does not hold.
func TestQuoted(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`recorded denial 403 "password \"hunter2\" leaked", predicted 403 "password x"`, `recorded denial 403 "<redacted>", predicted 403 "<redacted>"`},
		{`audit annotation p/k: recorded "hunter2", predicted none`, `audit annotation p/k: recorded "<redacted>", predicted none`},
		{`recorded admit (200), predicted denial 403 "a \\ b"`, `recorded admit (200), predicted denial 403 "<redacted>"`},
		{`validation.policy.admission.k8s.io/validation_failure: recorded [x "]" y], predicted []`, `validation.policy.admission.k8s.io/validation_failure: recorded and predicted differ: <redacted>`},
		{`recorded denial by ValidatingAdmissionPolicy 'p', predicted admit`, `recorded denial by ValidatingAdmissionPolicy 'p', predicted admit`},
		{`a "quote never closed`, `a "<redacted>"`},
	} {
		if diff := cmp.Diff([]string{tc.want}, Quoted([]string{tc.in})); diff != "" {
			t.Errorf("Quoted(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestShown: a value a text shown anyway holds (a service account token Secret's namespace,
// the account its name begins with) is not scrubbed; the others are.
func TestShown(t *testing.T) {
	var v Values
	v.Of(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "builder-token-x2", "namespace": "team-a", "annotations": map[string]any{"kubernetes.io/service-account.name": "builder"}},
		"data":     map[string]any{"namespace": "dGVhbS1h", "token": "c2VjcmV0LXRva2Vu"}}})
	v.Shown("team-a", "builder-token-x2")
	got := v.Scrub("builder-token-x2 in team-a: secret-token, dGVhbS1h")
	if want := "builder-token-x2 in team-a: " + Mark + ", " + Mark; got != want {
		t.Errorf("Scrub = %q, want %q", got, want)
	}
}

// TestScrubForms: a value is scrubbed as a text quotes it (as it is, JSON-escaped as in the
// audit annotation that lists an Audit binding's failures, escaped once more, Go-quoted), and
// where the object's name holds it, the name stays whole and the value goes elsewhere.
func TestScrubForms(t *testing.T) {
	var v Values
	v.Of(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "app-admin-pass", "namespace": "shop", "annotations": map[string]any{"note": `say "hi" <now>`}},
		"stringData": map[string]any{"user": "admin"}}})
	v.Shown("shop", "app-admin-pass")
	for _, tc := range []struct{ in, want string }{
		{"secret app-admin-pass: user admin", "secret app-admin-pass: user " + Mark},
		{`note say "hi" <now>`, "note " + Mark},
		{`{"message":"note say \"hi\" \u003cnow\u003e"}`, `{"message":"note ` + Mark + `"}`},
		{`[{\"message\":\"note say \\\"hi\\\" \\u003cnow\\u003e\"}]`, `[{\"message\":\"note ` + Mark + `\"}]`},
		{`recorded "note say \"hi\" <now>"`, `recorded "note ` + Mark + `"`},
	} {
		if got := v.Scrub(tc.in); got != tc.want {
			t.Errorf("Scrub(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
