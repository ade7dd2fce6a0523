package cel

import (
	"errors"
	"testing"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vapc-dev/vapc/cel/manifest"
)

// corePolicy is a policy named p of one operation on a resource of the core group, v1, with
// one validation.
func corePolicy(op admissionregistrationv1.OperationType, resource, expr string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{op},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expr}},
		},
	}
}

// noSource places every diagnostic at the start of an unnamed file.
type noSource struct{}

func (noSource) FieldPos(string) manifest.Position          { return manifest.Position{} }
func (noSource) ExprPos(string, int, int) manifest.Position { return manifest.Position{} }

// TestLintEnvironmentError: when the environment expressions are parsed in cannot be built, the
// DELETE lint says it cannot look into each expression (a warning) instead of reading the
// expression with no environment. Not parallel: it replaces parseEnv while it runs.
func TestLintEnvironmentError(t *testing.T) {
	deleteOnly := corePolicy(admissionregistrationv1.Delete, "pods", "object.metadata.name != 'x'")
	lint := func() []string {
		r := &reporter{src: noSource{}, object: "ValidatingAdmissionPolicy/p"}
		lintDeleteReadsObject(r, deleteOnly, policyExpressions(deleteOnly))
		var out []string
		for _, d := range r.diags {
			out = append(out, d.Field+": "+d.Message)
		}
		return out
	}
	if diff := cmp.Diff([]string{"spec.validations[0].expression: the policy matches only DELETE, where object is null: read oldObject instead"}, lint()); diff != "" {
		t.Errorf("lint mismatch (-want +got):\n%s", diff)
	}

	saved := parseEnv
	t.Cleanup(func() { parseEnv = saved })
	parseEnv = func() (*celgo.Env, error) { return nil, errors.New("no environment") }
	if diff := cmp.Diff([]string{"spec.validations[0].expression: cannot look into the expression: no environment"}, lint()); diff != "" {
		t.Errorf("with an environment error, lint mismatch (-want +got):\n%s", diff)
	}
}
