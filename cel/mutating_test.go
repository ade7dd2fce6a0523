package cel

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestMutatingTypeCheck checks that a MutatingAdmissionPolicy's matchConditions and variables
// are type-checked against the matched kinds, each error at its line and character.
func TestMutatingTypeCheck(t *testing.T) {
	set, diags := ReadPaths(nil, "testdata/mutating-typos.yaml")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range c.Check(set) {
		if d.Category == CategoryType {
			got = append(got, d.Pos.String()+" "+d.Field)
		}
	}
	want := []string{
		"testdata/mutating-typos.yaml:11:21 spec.matchConditions[0].expression",
		"testdata/mutating-typos.yaml:14:29 spec.variables[0].expression",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("type errors (-want +got):\n%s", d)
	}
}

// TestMutatingLints: a validating policy that reads what a mutation changes is told so
// (info); a mutating policy with reinvocationPolicy Never that reads what another changes is
// warned; one with IfNeeded, or of other resources, is not.
func TestMutatingLints(t *testing.T) {
	set, diags := ReadPaths(nil, "testdata/mutating-lints.yaml")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, d := range lintMutating(set) {
		got = append(got, fmt.Sprintf("%s %s %s %s", d.Object, d.Field, d.Severity, strings.SplitN(d.Message, ":", 2)[0]))
	}
	slices.Sort(got)
	want := []string{
		"MutatingAdmissionPolicy/a-team spec.mutations[0].applyConfiguration.expression info validating policy team-required reads object.metadata.labels, which this mutation changes (object.metadata.labels.team)",
		"MutatingAdmissionPolicy/b-never spec.reinvocationPolicy warning mutating policy a-team changes object.metadata.labels.team, which this policy reads (object.metadata.labels)",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("lints (-want +got):\n%s", d)
	}
}

func TestMutationWrites(t *testing.T) {
	tests := []struct {
		expr string
		want []string
		all  bool
	}{
		{"Object{metadata: Object.metadata{labels: {'a': 'b', 'c': 'd'}}, spec: Object.spec{replicas: 3}}",
			[]string{"object.metadata.labels.a", "object.metadata.labels.c", "object.spec.replicas"}, false},
		{"[JSONPatch{op: 'replace', path: '/spec/tolerations/0/tolerationSeconds', value: 1}]", []string{"object.spec.tolerations.*.tolerationSeconds"}, false},
		{"object.spec.tolerations.map(t, JSONPatch{op: 'replace', path: '/spec/tolerations/' + string(object.spec.tolerations.indexOf(t)) + '/tolerationSeconds', value: 1})",
			[]string{"object.spec.tolerations"}, false},
		{"[JSONPatch{op: 'add', path: '/metadata/annotations/a~1b', value: 'x'}]", []string{`object.metadata.annotations["a/b"]`}, false},
		{"[JSONPatch{op: 'add', path: variables.p, value: 'x'}]", nil, true},
		{"[JSONPatch{op: 'move', from: '/metadata/labels/a', path: '/metadata/labels/b'}]", []string{"object.metadata.labels.a", "object.metadata.labels.b"}, false},
	}
	for _, tc := range tests {
		m := admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: tc.expr}}
		if strings.HasPrefix(tc.expr, "Object") {
			m = admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: tc.expr}}
		}
		writes, all := MutationWrites(m)
		var got []string
		for _, w := range writes {
			got = append(got, w.String())
		}
		if d := cmp.Diff(tc.want, got); d != "" || (all != "") != tc.all {
			t.Errorf("MutationWrites(%s) = %v, %q; want %v, all %v", tc.expr, got, all, tc.want, tc.all)
		}
	}
}

// TestMutatingNotServed: a Kubernetes version before 1.36 does not serve the v1 mutating kinds.
func TestMutatingNotServed(t *testing.T) {
	set, diags := ReadPaths(nil, "testdata/mutating-lints.yaml")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, tc := range []struct {
		version string
		want    int
	}{{"1.35", len(set.MutatingPolicies)}, {"1.36", 0}} {
		c, err := NewChecker(WithKubernetesVersion(tc.version))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, d := range c.Check(set) {
			if d.Severity == Error && strings.Contains(d.Message, "does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy") {
				n++
			}
		}
		if n != tc.want {
			t.Errorf("Kubernetes %s: %d not-served errors, want %d", tc.version, n, tc.want)
		}
	}
}

// TestMutatingLintsBound: with bindings in the files, a mutating policy none binds reads or
// changes nothing.
func TestMutatingLintsBound(t *testing.T) {
	set, diags := ReadPaths(nil, "testdata/mutating-lints.yaml")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	b.Name, b.Spec.PolicyName = "a-team", "a-team"
	set.MutatingBindings = append(set.MutatingBindings, &MutatingBinding{MutatingAdmissionPolicyBinding: b})
	for _, d := range lintMutating(set) {
		if d.Severity == Warning {
			t.Errorf("a warning about a policy no binding binds: %s", d)
		}
	}
}
