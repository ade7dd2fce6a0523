package cel

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestHints: a diagnostic of an undefined field says which fields of the schema the type
// checker used were meant (the fields, when none is close and they are few), one of an
// undeclared reference which function or variable of the CEL environment, one of a function
// without an overload for its arguments what it takes; in the type checker's errors and in the
// compile errors kube-apiserver returns on create alike.
func TestHints(t *testing.T) {
	t.Parallel()
	checker, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		resource  string // of the core group, v1
		paramKind string // a v1 kind
		variables []admissionregistrationv1.Variable
		expr      string
		want      string   // Message: Hint
		also      []string // the expression's other errors
	}{
		{name: "a field of the schema", resource: "pods", expr: "has(object.metadata.lables)",
			want: "undefined field 'lables': did you mean 'labels'?"},
		{name: "in a macro", resource: "pods", expr: "object.spec.containers.all(c, c.ports.all(p, p.containerPrt > 0))",
			want: "undefined field 'containerPrt': did you mean 'containerPort'?"},
		{name: "a two-variable comprehension over a map", resource: "configmaps", expr: "object.metadata.labels.all(k, v, object.metadata.nme != v)",
			want: "undefined field 'nme': did you mean 'name'?"},
		{name: "in a map's transform", resource: "pods", expr: "object.spec.containers.map(c, c.nme).size() > 0",
			want: "undefined field 'nme': did you mean 'name'?"},
		{name: "the fields, when none is close", resource: "pods", expr: "object.spec.dnsConfig.servers.size() > 0",
			want: "undefined field 'servers': the fields here are nameservers, options, searches"},
		{name: "params", resource: "pods", paramKind: "ConfigMap", expr: "params.dat.size() > 0",
			want: "undefined field 'dat': did you mean 'data'?"},
		{name: "a function, on create", resource: "pods", expr: "object.metadata.name.startWith('a')",
			want: "compilation failed: undeclared reference to 'startWith' (in container ''): did you mean 'startsWith'?"},
		{name: "a variable, on create", resource: "pods", expr: "objct.metadata.name == 'a'",
			want: "compilation failed: undeclared reference to 'objct' (in container ''): did you mean 'object'?"},
		{name: "a library namespace is not a variable", resource: "pods", expr: "math.greatest(1, 2) == 2",
			want: "compilation failed: undeclared reference to 'math' (in container '')", also: []string{"compilation failed: undeclared reference to 'greatest' (in container '')"}},
		{name: "the request, on create", resource: "pods", expr: "request.usrInfo.username == 'a'",
			want: "compilation failed: undefined field 'usrInfo': did you mean 'userInfo'?"},
		{name: "variables", resource: "pods", variables: []admissionregistrationv1.Variable{{Name: "names", Expression: "object.spec.containers.map(c, c.name)"}},
			expr: "variables.nams.size() > 0", want: "compilation failed: undefined field 'nams': did you mean 'names'?"},
		{name: "an overload", resource: "pods", expr: "object.metadata.name.startsWith(1)",
			want: "compilation failed: found no matching overload for 'startsWith' applied to 'dyn.(int)': startsWith takes string.startsWith(string) -> bool"},
		{name: "nothing close", resource: "pods", expr: "object.metadata.frobnicate == 'a'",
			want: "undefined field 'frobnicate'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := corePolicy(admissionregistrationv1.Create, tc.resource, tc.expr)
			p.Spec.Variables = tc.variables
			if tc.paramKind != "" {
				p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: tc.paramKind}
			}
			var got []string
			for _, d := range checker.CheckPolicy(&Policy{ValidatingAdmissionPolicy: p, Source: noSource{}}) {
				if d.Field != "spec.validations[0].expression" || d.Severity != Error {
					continue
				}
				if d.Hint != "" {
					d.Message += ": " + d.Hint
				}
				got = append(got, d.Message)
			}
			want := append([]string{tc.want}, tc.also...)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("CheckPolicy(%q) mismatch (-want +got):\n%s", tc.expr, diff)
			}
		})
	}
}

// TestClosest: the names a mistyped one may have meant, closest first.
func TestClosest(t *testing.T) {
	t.Parallel()
	candidates := []string{"labels", "annotations", "name", "namespace", "nodeName", "image", "imagePullPolicy", "check", "replay"}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"lables", []string{"labels"}},     // a swap is one edit
		{"nodeNmae", []string{"nodeName"}}, // the README's typo
		{"NODENAME", []string{"nodeName"}}, // case
		{"nam", []string{"name", "namespace"}},
		{"imag", []string{"image", "imagePullPolicy"}}, // close, then a prefix
		{"chek", []string{"check"}},
		{"math", nil}, // one edit from path, not from these
		{"xyz", nil},
		{"name", []string{"namespace"}}, // not itself
	} {
		got := Closest(tc.name, candidates)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Closest(%q) mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}
