package vap_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/manifest"
	"github.com/vapc-dev/vapc/cel/vap"
)

// mutatingPolicy uses every option of a MutatingAdmissionPolicy.
func mutatingPolicy(t *testing.T) (*vap.Policy, []*vap.Binding) {
	t.Helper()
	p, err := vap.NewMutatingPolicy("team-label",
		vap.FailurePolicy(admissionregistrationv1.Ignore),
		vap.Resources(vap.Create|vap.Update, "configmaps"),
		vap.ConfigMapParam("kube-system", "team-defaults", admissionregistrationv1.AllowAction),
		vap.MatchCondition("no-team-yet", "!has(object.metadata.labels) || !('team' in object.metadata.labels)"),
		vap.Variable("team", "has(params.data) && 'team' in params.data ? params.data.team : 'unknown'"),
		vap.ApplyConfiguration("Object{metadata: Object.metadata{labels: {'team': variables.team}}}"),
		vap.JSONPatch("[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'labelled-by': 'team-label'}}]"),
		vap.Reinvocation(admissionregistrationv1.IfNeededReinvocationPolicy),
	)
	if err != nil {
		t.Fatal(err)
	}
	b, err := vap.NewBinding(p, vap.BindingMatch(&admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"teams": "on"}}}))
	if err != nil {
		t.Fatal(err)
	}
	return p, []*vap.Binding{b}
}

// TestMutatingEmit checks the YAML of a MutatingAdmissionPolicy against its golden file, and
// that it reads back as the built objects and passes the server's validation.
func TestMutatingEmit(t *testing.T) {
	t.Parallel()
	p, bindings := mutatingPolicy(t)
	if !p.Mutating() || p.Object() != nil || bindings[0].Object(vap.StageDeny) != nil {
		t.Fatalf("a mutating policy has validating objects")
	}
	var got bytes.Buffer
	if err := vap.Emit(&got, p, bindings, vap.StageAudit); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "emit", "team-label-mutating.yaml")
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update): %v", err)
	}
	if d := cmp.Diff(string(want), got.String()); d != "" {
		t.Errorf("Emit mismatch (-want +got):\n%s", d)
	}
	docs, err := manifest.Parse("emitted.yaml", got.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	set, diags := cel.Decode(docs)
	if len(diags) > 0 || len(set.MutatingPolicies) != 1 || len(set.MutatingBindings) != 1 || len(set.Policies)+len(set.Bindings)+len(set.Others) != 0 {
		t.Fatalf("Decode(emitted) = %d mutating policies, %d mutating bindings, diagnostics %v", len(set.MutatingPolicies), len(set.MutatingBindings), diags)
	}
	if d := cmp.Diff(p.MutatingObject(), set.MutatingPolicies[0].MutatingAdmissionPolicy); d != "" {
		t.Errorf("emitted policy mismatch (-built +read):\n%s", d)
	}
	if d := cmp.Diff(bindings[0].MutatingObject(), set.MutatingBindings[0].MutatingAdmissionPolicyBinding); d != "" {
		t.Errorf("emitted binding mismatch (-built +read):\n%s", d)
	}
	checker, err := cel.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range checker.Check(set) {
		// The server's validation of mutating policies is not linked here (it needs
		// k8s.io/kubernetes, which users of cel/vap need not require): cel/mutatingvalidation's
		// tests run it.
		if d.Severity == cel.Error {
			t.Errorf("emitted YAML does not check: %s", d)
		}
	}
}

// TestMutatingErrors checks that what a MutatingAdmissionPolicy cannot hold, and what the
// server refuses, fail at the Go line that wrote it.
func TestMutatingErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		build func() (*vap.Policy, error)
		want  string
	}{
		{"validation in a mutating policy", func() (*vap.Policy, error) {
			return vap.NewMutatingPolicy("m", vap.Resources(vap.Create, "pods"),
				vap.Validation("true"), vap.JSONPatch("[]"))
		}, "a MutatingAdmissionPolicy has no validations"},
		{"mutation in a validating policy", func() (*vap.Policy, error) {
			return vap.NewPolicy("v", vap.Resources(vap.Create, "pods"),
				vap.Validation("true"), vap.JSONPatch("[]"))
		}, "a ValidatingAdmissionPolicy has no mutations"},
		{"no mutations", func() (*vap.Policy, error) {
			return vap.NewMutatingPolicy("m", vap.Resources(vap.Create, "pods"))
		}, "no mutations"},
		{"a typo in a matchCondition", func() (*vap.Policy, error) {
			return vap.NewMutatingPolicy("m", vap.Resources(vap.Create, "pods"),
				vap.MatchCondition("c", "has(object.spec.nodeNmae)"), vap.JSONPatch("[]"))
		}, "undefined field 'nodeNmae'"},
	}
	for _, tc := range tests {
		p, err := tc.build()
		if err == nil {
			t.Errorf("%s: built %s, want an error", tc.name, p.Name())
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not say %q", tc.name, err, tc.want)
		}
		if !strings.Contains(err.Error(), "cel/vap/mutating_test.go:") {
			t.Errorf("%s: error %q is not at a line of mutating_test.go", tc.name, err)
		}
	}
}
