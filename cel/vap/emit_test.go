package vap_test

import (
	"bytes"
	"flag"
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

var update = flag.Bool("update", false, "rewrite golden files")

// fullPolicy uses every option of the package.
func fullPolicy(t *testing.T) (*vap.Policy, []*vap.Binding) {
	t.Helper()
	p, err := vap.NewPolicy("replica-floor",
		vap.FailurePolicy(admissionregistrationv1.Ignore),
		vap.ResourcesIn("apps", "v1", vap.Create|vap.Update, "deployments", "deployments/scale"),
		vap.ConfigMapParam("kube-system", "replica-floor", admissionregistrationv1.AllowAction),
		vap.MatchCondition("not-kube-system", "request.namespace != 'kube-system'"),
		vap.UserIn("alice", "bob"),
		vap.Variable("floor", "has(params.data) && 'minReplicas' in params.data ? int(params.data.minReplicas) : 2"),
		vap.Validation(`!has(object.spec.replicas) ||
  object.spec.replicas >= variables.floor`,
			vap.MessageExpression("'replicas must be at least ' + string(variables.floor)"),
			vap.Reason(metav1.StatusReasonForbidden)),
		vap.Validation("object.metadata.name != 'latest'", vap.Message("the name latest is reserved")),
		vap.AuditAnnotation("replicas", "has(object.spec.replicas) ? string(object.spec.replicas) : 'unset'"),
	)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := vap.NewBinding(p)
	if err != nil {
		t.Fatal(err)
	}
	deny := admissionregistrationv1.DenyAction
	b2, err := vap.NewBinding(p, vap.BindingName("replica-floor-team-a"),
		vap.BindingParamRef(&admissionregistrationv1.ParamRef{Name: "replica-floor-team-a", Namespace: "team-a", ParameterNotFoundAction: &deny}),
		vap.BindingMatch(&admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}))
	if err != nil {
		t.Fatal(err)
	}
	return p, []*vap.Binding{b1, b2}
}

func TestEmitGolden(t *testing.T) {
	t.Parallel()
	p, bindings := fullPolicy(t)
	for _, stage := range []vap.Stage{vap.StageAudit, vap.StageWarn, vap.StageDeny} {
		t.Run(string(stage), func(t *testing.T) {
			var got bytes.Buffer
			if err := vap.Emit(&got, p, bindings, stage); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "emit", "replica-floor-"+strings.ToLower(string(stage))+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading golden file (run go test -update): %v", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("Emit(%s) mismatch (-want +got):\n%s", stage, diff)
			}
			var again bytes.Buffer
			if err := vap.Emit(&again, p, bindings, stage); err != nil {
				t.Fatal(err)
			}
			if again.String() != got.String() {
				t.Errorf("Emit(%s) is not deterministic", stage)
			}
		})
	}
}

// TestEmitRoundTrip reads the emitted YAML back as the apiserver's types and checks it: the
// emitted objects are the built ones, and clean.
func TestEmitRoundTrip(t *testing.T) {
	t.Parallel()
	p, bindings := fullPolicy(t)
	var out bytes.Buffer
	if err := vap.Emit(&out, p, bindings, vap.StageDeny); err != nil {
		t.Fatal(err)
	}
	docs, err := manifest.Parse("emitted.yaml", out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	set, diags := cel.Decode(docs)
	if len(diags) > 0 || len(set.Policies) != 1 || len(set.Bindings) != 2 || len(set.Others) != 0 {
		t.Fatalf("Decode(emitted) = %d policies, %d bindings, %d others, diagnostics %v", len(set.Policies), len(set.Bindings), len(set.Others), diags)
	}
	if diff := cmp.Diff(p.Object(), set.Policies[0].ValidatingAdmissionPolicy); diff != "" {
		t.Errorf("emitted policy mismatch (-built +read):\n%s", diff)
	}
	for i, b := range bindings {
		if diff := cmp.Diff(b.Object(vap.StageDeny), set.Bindings[i].ValidatingAdmissionPolicyBinding); diff != "" {
			t.Errorf("emitted binding %d mismatch (-built +read):\n%s", i, diff)
		}
	}
	checker, err := cel.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range checker.Check(set) {
		if d.Severity == cel.Error {
			t.Errorf("emitted YAML does not check: %s", d)
		}
	}
}

func TestEmitErrors(t *testing.T) {
	t.Parallel()
	p, bindings := fullPolicy(t)
	other, err := vap.NewPolicy("other", vap.Resources(vap.Create, "pods"), vap.Validation("true"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		policy   *vap.Policy
		bindings []*vap.Binding
		stage    vap.Stage
		want     string
	}{
		{"bad stage", p, bindings, "Enforce", `unknown stage "Enforce"`},
		{"binding of another policy", other, bindings[:1], vap.StageDeny, "binds policy replica-floor, not other"},
		{"nil policy", nil, nil, vap.StageDeny, "nil policy"},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		err := vap.Emit(&out, tc.policy, tc.bindings, tc.stage)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Emit error = %v, want it to contain %q", tc.name, err, tc.want)
		}
		if out.Len() > 0 {
			t.Errorf("%s: Emit wrote %d bytes despite the error", tc.name, out.Len())
		}
	}
}
