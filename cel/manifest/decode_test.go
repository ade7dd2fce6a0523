package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestDecodeTypeErrors: a value of the wrong type is reported at its line and column, with the
// full field path, list indices and map keys included.
func TestDecodeTypeErrors(t *testing.T) {
	const head = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: p\n"
	tests := []struct {
		name, yaml, want string
	}{
		{
			name: "spec is a number",
			yaml: head + "spec: 5\n",
			want: "f.yaml:5:7: spec: expected object, got number",
		},
		{
			name: "expression of the second validation",
			yaml: head + "spec:\n  validations:\n  - expression: 'true'\n  - message: m\n    expression: 5\n",
			want: "f.yaml:9:17: spec.validations[1].expression: expected string, got number",
		},
		{
			name: "object for a string",
			yaml: head + "spec:\n  validations:\n  - expression: {a: 1}\n",
			want: "f.yaml:7:17: spec.validations[0].expression: expected string, got object",
		},
		{
			name: "object for a list",
			yaml: head + "spec:\n  validations: {a: 1}\n",
			want: "f.yaml:6:16: spec.validations: expected array, got object",
		},
		{
			name: "list item of the wrong type",
			yaml: head + "spec:\n  validations: [{expression: x}, 5]\n",
			want: "f.yaml:6:34: spec.validations[1]: expected object, got number",
		},
		{
			name: "nested list",
			yaml: head + "spec:\n  matchConstraints:\n    resourceRules:\n    - operations: [CREATE]\n    - operations: [CREATE, 7]\n",
			want: "f.yaml:9:28: spec.matchConstraints.resourceRules[1].operations[1]: expected string, got number",
		},
		{
			name: "map value",
			yaml: "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: p\n  labels:\n    a: b\n    c: 5\n",
			want: "f.yaml:7:8: metadata.labels[c]: expected string, got number",
		},
		{
			name: "boolean for a string type",
			yaml: head + "spec:\n  failurePolicy: true\n",
			want: "f.yaml:6:18: spec.failurePolicy: expected string, got bool",
		},
		{
			name: "integer overflow",
			yaml: "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: p\n  generation: 1e30\n",
			want: "f.yaml:5:15: metadata.generation: expected integer (int64), got number 1e+30",
		},
		{
			// metav1.Time decodes its own copy of the value: no offset in the document, so
			// the field path without indices places it.
			name: "type with its own decoder",
			yaml: head + "  creationTimestamp: 5\n",
			want: "f.yaml:5:22: metadata.creationTimestamp: expected string, got number",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse("f.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			err = docs[0].Decode(&admissionregistrationv1.ValidatingAdmissionPolicy{})
			got := "<nil>"
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decode() error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
