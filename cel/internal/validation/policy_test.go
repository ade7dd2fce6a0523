package validation

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

type policyCase struct {
	name   string
	mutate func(p *admissionregistrationv1.ValidatingAdmissionPolicy)
	opts   Options
	want   []fieldErr
}

func runPolicyCases(t *testing.T, tests []policyCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := validPolicy()
			if tc.mutate != nil {
				tc.mutate(p)
			}
			got := ValidatePolicy(p, tc.opts)
			if diff := cmp.Diff(tc.want, summarize(got, tc.want)); diff != "" {
				t.Errorf("ValidatePolicy() mismatch (-want +got):\n%s\nerrors: %v", diff, got)
			}
		})
	}
}

func TestValidatePolicyMetadata(t *testing.T) {
	t.Parallel()
	runPolicyCases(t, []policyCase{{
		name: "valid",
	}, {
		name:   "name must be a DNS subdomain",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Name = "!!!!" },
		want:   []fieldErr{invalid("metadata.name").withDetail("a lowercase RFC 1123 subdomain")},
	}, {
		name:   "name is required",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Name = "" },
		want:   []fieldErr{required("metadata.name").withDetail("name or generateName is required")},
	}, {
		name: "auditAnnotations need a name",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Name = ""
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "a", ValueExpression: "'v'"}}
		},
		want: []fieldErr{
			required("metadata.name"),
			invalid("spec.auditAnnotations[0].key").withDetail("requires metadata.name be non-empty"),
		},
	}, {
		name: "generateName stands in for the name",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Name, p.GenerateName = "", "config-"
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "a", ValueExpression: "'v'"}}
		},
	}, {
		name: "namespace is cleared on create, not refused",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Namespace = "default"
		},
	}, {
		name: "generation and status are reset, managedFields that do not decode dropped",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Generation = -3
			p.ManagedFields = []metav1.ManagedFieldsEntry{{Operation: "bogus"}}
			p.Status.ObservedGeneration = -1
		},
	}, {
		// The create handler drops repeated owner references before validation, so only
		// one of the two controllers is left.
		name: "repeated owner references are dropped",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "n", UID: "1", Controller: ptr(true)}
			p.OwnerReferences = []metav1.OwnerReference{ref, ref}
		},
	}, {
		name: "owner references with one UID but not equal are all validated",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "n", UID: "1", Controller: ptr(true)}
			other := ref
			other.Name = "m"
			p.OwnerReferences = []metav1.OwnerReference{ref, other}
		},
		want: []fieldErr{invalid("metadata.ownerReferences").withDetail("Only one reference can have Controller set to true")},
	}, {
		name: "errors of repeated owner references are reported once",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			ok := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "n", UID: "1"}
			bad := ok
			bad.APIVersion = ""
			p.OwnerReferences = []metav1.OwnerReference{ok, bad, bad}
		},
		want: []fieldErr{required("metadata.ownerReferences[1].apiVersion")},
	}, {
		name:   "invalid label",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Labels = map[string]string{"a": "!"} },
		want:   []fieldErr{invalid("metadata.labels")},
	}, {
		name:   "static suffix is reserved",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Name = "config.static.k8s.io" },
		want:   []fieldErr{invalid("metadata.name").withDetail(`names ending with ".static.k8s.io" are reserved`)},
	}})
}

func TestValidatePolicySpec(t *testing.T) {
	t.Parallel()
	runPolicyCases(t, []policyCase{{
		name:   "failurePolicy is required",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.FailurePolicy = nil },
		want:   []fieldErr{required("spec.failurePolicy")},
	}, {
		name: "failurePolicy must be Fail or Ignore",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.FailurePolicy = ptr(admissionregistrationv1.FailurePolicyType("other"))
		},
		want: []fieldErr{notSupported("spec.failurePolicy").withDetail(`supported values: "Fail", "Ignore"`)},
	}, {
		name:   "matchConstraints is required",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.MatchConstraints = nil },
		want:   []fieldErr{required("spec.matchConstraints")},
	}, {
		name: "matchConstraints.resourceRules is required",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules = nil
		},
		want: []fieldErr{required("spec.matchConstraints.resourceRules")},
	}, {
		name: "validations or auditAnnotations are required",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations = nil
		},
		want: []fieldErr{
			required("spec.validations").withDetail("validations or auditAnnotations must contain at least one item"),
			required("spec.auditAnnotations").withDetail("validations or auditAnnotations must contain at least one item"),
		},
	}, {
		name: "validation expression is required",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "  "
		},
		want: []fieldErr{required("spec.validations[0].expression").withDetail("expression is not specified")},
	}, {
		name: "validation expression must compile",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.x in [1, 2, "
		},
		want: []fieldErr{invalid("spec.validations[0].expression").withDetail("compilation failed: ERROR: <input>:1:20: Syntax error: missing ']' at '<EOF>'")},
	}, {
		name: "validation expression must be bool",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "'a string'"
		},
		want: []fieldErr{invalid("spec.validations[0].expression").withDetail("must evaluate to bool but got string")},
	}, {
		// As on the server, the result type must be exactly bool: a bare field of object
		// is typed dyn and refused (kubernetes/kubernetes#120239).
		name: "validation expression of type dyn is refused",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.spec.enabled"
		},
		want: []fieldErr{invalid("spec.validations[0].expression").withDetail("must evaluate to bool but got dyn")},
	}, {
		name: "validation expression compared to a bool is accepted",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.spec.enabled == true"
		},
	}, {
		name: "validation may use authorizer",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "authorizer.group('apps').resource('deployments').check('get').allowed()"
		},
	}, {
		name: "params is undeclared without paramKind",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "params.x == 1"
		},
		want: []fieldErr{invalid("spec.validations[0].expression").withDetail("compilation failed: ERROR: <input>:1:1: undeclared reference to 'params'")},
	}, {
		name: "params is declared with paramKind",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.Validations[0].Expression = "params.x == 1"
		},
	}, {
		name: "messageExpression must be string",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "0 == 0"
		},
		want: []fieldErr{invalid("spec.validations[0].messageExpression").withDetail("must evaluate to string but got bool")},
	}, {
		name: "messageExpression must compile",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "object.x in [1, 2, "
		},
		want: []fieldErr{invalid("spec.validations[0].messageExpression").withDetail("compilation failed: ERROR: <input>:1:20: Syntax error: missing ']' at '<EOF>'")},
	}, {
		name: "messageExpression must not be blank",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "  "
		},
		want: []fieldErr{invalid("spec.validations[0].messageExpression").withDetail("must be non-empty if specified")},
	}, {
		name: "messageExpression cannot use authorizer",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "string(authorizer.group('apps').resource('deployments').check('get').allowed())"
		},
		want: []fieldErr{invalid("spec.validations[0].messageExpression").withDetail("compilation failed: ERROR: <input>:1:8: undeclared reference to 'authorizer'")},
	}, {
		name: "message must not be blank",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Message = " "
		},
		want: []fieldErr{invalid("spec.validations[0].message").withDetail("must be non-empty if specified")},
	}, {
		name: "message must not contain line breaks",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Message = "a\nb"
		},
		want: []fieldErr{invalid("spec.validations[0].message").withDetail("must not contain line breaks")},
	}, {
		name: "reason must be supported",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Reason = ptr(metav1.StatusReason("other"))
		},
		want: []fieldErr{notSupported("spec.validations[0].reason").withDetail(`supported values: "Forbidden", "Invalid", "RequestEntityTooLarge"`)},
	}})
}

func TestValidatePolicyParamKind(t *testing.T) {
	t.Parallel()
	withParamKind := func(pk admissionregistrationv1.ParamKind) func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.ParamKind = &pk }
	}
	runPolicyCases(t, []policyCase{{
		name:   "core group",
		mutate: withParamKind(admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}),
	}, {
		name:   "named group",
		mutate: withParamKind(admissionregistrationv1.ParamKind{APIVersion: "test.example.com/v1", Kind: "ReplicaLimit"}),
	}, {
		name:   "apiVersion is required",
		mutate: withParamKind(admissionregistrationv1.ParamKind{Kind: "ReplicaLimit"}),
		want:   []fieldErr{required("spec.paramKind.apiVersion")},
	}, {
		name:   "group without version",
		mutate: withParamKind(admissionregistrationv1.ParamKind{APIVersion: "test.example.com", Kind: "ReplicaLimit"}),
		want:   []fieldErr{invalid("spec.paramKind.apiVersion").withDetail("a DNS-1035 label")},
	}, {
		name:   "empty version after the slash",
		mutate: withParamKind(admissionregistrationv1.ParamKind{APIVersion: "test.example.com/", Kind: "ReplicaLimit"}),
		want:   []fieldErr{invalid("spec.paramKind.apiVersion").withDetail("version must be specified")},
	}, {
		name:   "too many slashes",
		mutate: withParamKind(admissionregistrationv1.ParamKind{APIVersion: "a/b/c", Kind: "ReplicaLimit"}),
		want:   []fieldErr{invalid("spec.paramKind.apiVersion").withDetail("unexpected GroupVersion string: a/b/c")},
	}, {
		name:   "bad group",
		mutate: withParamKind(admissionregistrationv1.ParamKind{APIVersion: "!!!/v1", Kind: "ReplicaLimit"}),
		want:   []fieldErr{invalid("spec.paramKind.apiVersion").withDetail("a lowercase RFC 1123 subdomain")},
	}, {
		name:   "bad version",
		mutate: withParamKind(admissionregistrationv1.ParamKind{APIVersion: "!!!", Kind: "ReplicaLimit"}),
		want:   []fieldErr{invalid("spec.paramKind.apiVersion").withDetail("a DNS-1035 label")},
	}, {
		name:   "kind is required",
		mutate: withParamKind(admissionregistrationv1.ParamKind{APIVersion: "v1"}),
		want:   []fieldErr{required("spec.paramKind.kind")},
	}, {
		name:   "bad kind",
		mutate: withParamKind(admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Replica_Limit"}),
		want:   []fieldErr{invalid("spec.paramKind.kind").withDetail("may have mixed case, but should otherwise match: a DNS-1035 label")},
	}})
}

func TestValidatePolicyMatchConstraints(t *testing.T) {
	t.Parallel()
	withRules := func(rules ...admissionregistrationv1.NamedRuleWithOperations) func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules = rules
		}
	}
	withResources := func(resources ...string) func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		return withRules(namedRule("a", "v1", resources...))
	}
	withOps := func(ops ...admissionregistrationv1.OperationType) func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		r := namedRule("a", "v1", "a")
		r.Operations = ops
		return withRules(r)
	}
	runPolicyCases(t, []policyCase{{
		name: "matchPolicy is required",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.MatchPolicy = nil
		},
		want: []fieldErr{required("spec.matchConstraints.matchPolicy")},
	}, {
		name: "matchPolicy must be supported",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.MatchPolicy = ptr(admissionregistrationv1.MatchPolicyType("other"))
		},
		want: []fieldErr{notSupported("spec.matchConstraints.matchPolicy").withDetail(`supported values: "Equivalent", "Exact"`)},
	}, {
		name: "selectors are required",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.NamespaceSelector = nil
			p.Spec.MatchConstraints.ObjectSelector = nil
		},
		want: []fieldErr{required("spec.matchConstraints.namespaceSelector"), required("spec.matchConstraints.objectSelector")},
	}, {
		name: "selectors are validated strictly",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}}
			p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}
		},
		want: []fieldErr{invalid("spec.matchConstraints.namespaceSelector.matchLabels"), invalid("spec.matchConstraints.objectSelector.matchExpressions[0].operator")},
	}, {
		name:   "rule needs apiGroups, apiVersions, resources and operations",
		mutate: withRules(admissionregistrationv1.NamedRuleWithOperations{}, admissionregistrationv1.NamedRuleWithOperations{}),
		want: []fieldErr{
			required("spec.matchConstraints.resourceRules[0].operations"),
			required("spec.matchConstraints.resourceRules[0].apiGroups"),
			required("spec.matchConstraints.resourceRules[0].apiVersions"),
			required("spec.matchConstraints.resourceRules[0].resources"),
			required("spec.matchConstraints.resourceRules[1].operations"),
			required("spec.matchConstraints.resourceRules[1].apiGroups"),
			required("spec.matchConstraints.resourceRules[1].apiVersions"),
			required("spec.matchConstraints.resourceRules[1].resources"),
		},
	}, {
		name: "excludeResourceRules are validated",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			r := namedRule("a", "v1", "a")
			r.Operations = nil
			p.Spec.MatchConstraints.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{r}
		},
		want: []fieldErr{required("spec.matchConstraints.excludeResourceRules[0].operations")},
	}, {
		name:   `"" is not an operation`,
		mutate: withOps(""),
		want:   []fieldErr{notSupported("spec.matchConstraints.resourceRules[0].operations[0]")},
	}, {
		name:   "PATCH is not an operation",
		mutate: withOps("PATCH"),
		want:   []fieldErr{notSupported("spec.matchConstraints.resourceRules[0].operations[0]").withDetail(`supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"`)},
	}, {
		name:   "wildcard operation cannot be mixed",
		mutate: withOps(admissionregistrationv1.OperationAll, admissionregistrationv1.Create),
		want:   []fieldErr{invalid("spec.matchConstraints.resourceRules[0].operations").withDetail("if '*' is present, must not specify other operations")},
	}, {
		name: "wildcard apiGroups and apiVersions cannot be mixed; empty version",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			r := namedRule("a", "v1", "a")
			r.APIGroups = []string{"*", "apps"}
			r.APIVersions = []string{"*", ""}
			withRules(r)(p)
		},
		want: []fieldErr{
			invalid("spec.matchConstraints.resourceRules[0].apiGroups").withDetail("if '*' is present, must not specify other API groups"),
			invalid("spec.matchConstraints.resourceRules[0].apiVersions").withDetail("if '*' is present, must not specify other API versions"),
			required("spec.matchConstraints.resourceRules[0].apiVersions[1]"),
		},
	}, {
		name: "scope must be supported",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			r := namedRule("a", "v1", "a")
			r.Scope = ptr(admissionregistrationv1.ScopeType("Global"))
			withRules(r)(p)
		},
		want: []fieldErr{notSupported("spec.matchConstraints.resourceRules[0].scope").withDetail(`supported values: "*", "Cluster", "Namespaced"`)},
	}, {
		name:   `resource "*" can co-exist with subresources`,
		mutate: withResources("*", "a/b", "a/*", "*/b"),
	}, {
		name:   `resource "*" cannot mix with resources without subresources`,
		mutate: withResources("*", "a"),
		want:   []fieldErr{invalid("spec.matchConstraints.resourceRules[0].resources").withDetail("if '*' is present, must not specify other resources without subresources")},
	}, {
		name:   "a/* cannot mix with a/x",
		mutate: withResources("a/*", "a/x"),
		want:   []fieldErr{invalid("spec.matchConstraints.resourceRules[0].resources[1]").withDetail("if 'a/*' is present, must not specify a/x")},
	}, {
		name:   "a/* can mix with a",
		mutate: withResources("a/*", "a"),
	}, {
		name:   "*/a cannot mix with x/a",
		mutate: withResources("*/a", "x/a"),
		want:   []fieldErr{invalid("spec.matchConstraints.resourceRules[0].resources[1]").withDetail("if '*/a' is present, must not specify x/a")},
	}, {
		name:   "*/* cannot mix with other resources",
		mutate: withResources("*/*", "a"),
		want:   []fieldErr{invalid("spec.matchConstraints.resourceRules[0].resources").withDetail("if '*/*' is present, must not specify other resources")},
	}, {
		name:   "empty resource",
		mutate: withResources("a", ""),
		want:   []fieldErr{required("spec.matchConstraints.resourceRules[0].resources[1]")},
	}, {
		name: "resourceNames must be path segments and unique",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].ResourceNames = []string{"/./.", "test", "test"}
		},
		want: []fieldErr{
			invalid("spec.matchConstraints.resourceRules[0].resourceNames[0]").withDetail("may not contain '/'"),
			duplicate("spec.matchConstraints.resourceRules[0].resourceNames[2]"),
		},
	}})
}

func TestValidatePolicyMatchConditions(t *testing.T) {
	t.Parallel()
	withConditions := func(mcs ...admissionregistrationv1.MatchCondition) func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.MatchConditions = mcs }
	}
	tooMany := make([]admissionregistrationv1.MatchCondition, 65)
	for i := range tooMany {
		tooMany[i] = admissionregistrationv1.MatchCondition{Name: fmt.Sprintf("c%d", i), Expression: "true"}
	}
	runPolicyCases(t, []policyCase{{
		name:   "valid",
		mutate: withConditions(admissionregistrationv1.MatchCondition{Name: "example.com/exclude-leases", Expression: "request.resource.resource != 'leases'"}),
	}, {
		name:   "name and expression are required",
		mutate: withConditions(admissionregistrationv1.MatchCondition{}),
		want:   []fieldErr{required("spec.matchConditions[0].expression"), required("spec.matchConditions[0].name")},
	}, {
		name:   "name must be a qualified name",
		mutate: withConditions(admissionregistrationv1.MatchCondition{Name: "bad name!", Expression: "true"}),
		want:   []fieldErr{invalid("spec.matchConditions[0].name").withDetail("name part must consist of alphanumeric characters")},
	}, {
		name: "names must be unique",
		mutate: withConditions(
			admissionregistrationv1.MatchCondition{Name: "a", Expression: "true"},
			admissionregistrationv1.MatchCondition{Name: "a", Expression: "true"},
		),
		want: []fieldErr{duplicate("spec.matchConditions[1].name")},
	}, {
		name:   "expression must be bool",
		mutate: withConditions(admissionregistrationv1.MatchCondition{Name: "a", Expression: "6"}),
		want:   []fieldErr{invalid("spec.matchConditions[0].expression").withDetail("must evaluate to bool")},
	}, {
		name:   "params is undeclared without paramKind",
		mutate: withConditions(admissionregistrationv1.MatchCondition{Name: "a", Expression: "params.x == 1"}),
		want:   []fieldErr{invalid("spec.matchConditions[0].expression").withDetail("compilation failed: ERROR: <input>:1:1: undeclared reference to 'params'")},
	}, {
		name: "params is declared with paramKind",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			withConditions(admissionregistrationv1.MatchCondition{Name: "a", Expression: "params.x == 1"})(p)
		},
	}, {
		name: "variables are not visible to match conditions",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "foo", Expression: "true"}}
			withConditions(admissionregistrationv1.MatchCondition{Name: "a", Expression: "variables.foo"})(p)
		},
		want: []fieldErr{invalid("spec.matchConditions[0].expression").withDetail("compilation failed: ERROR: <input>:1:1: undeclared reference to 'variables'")},
	}, {
		name:   "at most 64",
		mutate: withConditions(tooMany...),
		want:   []fieldErr{{Type: "FieldValueTooMany", Field: "spec.matchConditions"}},
	}})
}

func TestValidatePolicyVariables(t *testing.T) {
	t.Parallel()
	withVariables := func(exprs []string, vs ...admissionregistrationv1.Variable) func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = vs
			p.Spec.Validations = nil
			for _, e := range exprs {
				p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{Expression: e})
			}
		}
	}
	runPolicyCases(t, []policyCase{{
		name:   "valid, with a typed variable",
		mutate: withVariables([]string{"variables.foo > 1"}, admissionregistrationv1.Variable{Name: "foo", Expression: "1"}),
	}, {
		name:   "empty name",
		mutate: withVariables([]string{"true"}, admissionregistrationv1.Variable{Name: " ", Expression: "1"}),
		want:   []fieldErr{required("spec.variables[0].name").withDetail("name is not specified")},
	}, {
		name:   "name is not a CEL identifier",
		mutate: withVariables([]string{"true"}, admissionregistrationv1.Variable{Name: "4ever", Expression: "1"}),
		want:   []fieldErr{invalid("spec.variables[0].name").withDetail("must be a valid CEL identifier")},
	}, {
		name:   "name is a reserved word",
		mutate: withVariables([]string{"true"}, admissionregistrationv1.Variable{Name: "namespace", Expression: "1"}),
		want:   []fieldErr{invalid("spec.variables[0].name").withDetail("must be a valid CEL identifier")},
	}, {
		name:   "expression is required",
		mutate: withVariables([]string{"true"}, admissionregistrationv1.Variable{Name: "foo"}),
		want:   []fieldErr{required("spec.variables[0].expression").withDetail("expression is not specified")},
	}, {
		name:   "expression must compile",
		mutate: withVariables([]string{"true"}, admissionregistrationv1.Variable{Name: "foo", Expression: "114 + '514'"}),
		want:   []fieldErr{invalid("spec.variables[0].expression").withDetail("compilation failed: ERROR: <input>:1:5: found no matching overload for '_+_' applied to '(int, string)'")},
	}, {
		name: "validation refers to a variable that does not exist",
		mutate: withVariables([]string{"variables.foo > 1", "variables.replicas == 2"},
			admissionregistrationv1.Variable{Name: "foo", Expression: "1"}),
		want: []fieldErr{invalid("spec.validations[1].expression").withDetail("compilation failed: ERROR: <input>:1:10: undefined field 'replicas'")},
	}, {
		name: "variables in the wrong order",
		mutate: withVariables([]string{"variables.bar > 1"},
			admissionregistrationv1.Variable{Name: "bar", Expression: "variables.foo + 1"},
			admissionregistrationv1.Variable{Name: "foo", Expression: "1"}),
		want: []fieldErr{invalid("spec.variables[0].expression").withDetail("compilation failed: ERROR: <input>:1:10: undefined field 'foo'")},
	}, {
		// kube-apiserver does not refuse a repeated variable name: the later declaration
		// replaces the earlier one, type included, for the expressions compiled after it.
		name: "duplicate variable names are accepted, the last one wins",
		mutate: withVariables([]string{"variables.foo.startsWith('a')"},
			admissionregistrationv1.Variable{Name: "foo", Expression: "1"},
			admissionregistrationv1.Variable{Name: "foo", Expression: "'abc'"}),
	}, {
		name: "duplicate variable names: the type of the last one is used",
		mutate: withVariables([]string{"variables.foo > 1"},
			admissionregistrationv1.Variable{Name: "foo", Expression: "1"},
			admissionregistrationv1.Variable{Name: "foo", Expression: "'abc'"}),
		want: []fieldErr{invalid("spec.validations[0].expression").withDetail("compilation failed: ERROR: <input>:1:15: found no matching overload for '_>_' applied to '(string, int)'")},
	}, {
		name: "variables see params with paramKind",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			withVariables([]string{"variables.limit > 1"}, admissionregistrationv1.Variable{Name: "limit", Expression: "int(params.data.limit)"})(p)
		},
	}})
}

func TestValidatePolicyAuditAnnotations(t *testing.T) {
	t.Parallel()
	withAnnotations := func(as ...admissionregistrationv1.AuditAnnotation) func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations = nil
			p.Spec.AuditAnnotations = as
		}
	}
	tooMany := make([]admissionregistrationv1.AuditAnnotation, 21)
	for i := range tooMany {
		tooMany[i] = admissionregistrationv1.AuditAnnotation{Key: fmt.Sprintf("k%d", i), ValueExpression: "'v'"}
	}
	runPolicyCases(t, []policyCase{{
		name:   "valid, string",
		mutate: withAnnotations(admissionregistrationv1.AuditAnnotation{Key: "a", ValueExpression: "'value'"}),
	}, {
		name:   "valid, null",
		mutate: withAnnotations(admissionregistrationv1.AuditAnnotation{Key: "a", ValueExpression: "null"}),
	}, {
		name:   "key must make a qualified name with metadata.name",
		mutate: withAnnotations(admissionregistrationv1.AuditAnnotation{Key: "@", ValueExpression: "'value'"}),
		want:   []fieldErr{invalid("spec.auditAnnotations[0].key").withDetail("name part must consist of alphanumeric characters")},
	}, {
		name:   "empty key",
		mutate: withAnnotations(admissionregistrationv1.AuditAnnotation{ValueExpression: "'value'"}),
		want: []fieldErr{
			invalid("spec.auditAnnotations[0].key").withDetail("name part must be non-empty"),
			invalid("spec.auditAnnotations[0].key").withDetail("name part must consist of alphanumeric characters"),
		},
	}, {
		name:   "key too long",
		mutate: withAnnotations(admissionregistrationv1.AuditAnnotation{Key: strings.Repeat("a", 64), ValueExpression: "'value'"}),
		want:   []fieldErr{invalid("spec.auditAnnotations[0].key").withDetail("name part must be no more than 63 bytes")},
	}, {
		name: "bad metadata.name shows in the key",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Name = "nope!"
			withAnnotations(admissionregistrationv1.AuditAnnotation{Key: "key", ValueExpression: "'value'"})(p)
		},
		want: []fieldErr{invalid("metadata.name"), invalid("spec.auditAnnotations[0].key").withDetail("prefix part a lowercase RFC 1123 subdomain")},
	}, {
		name: "keys must be unique",
		mutate: withAnnotations(
			admissionregistrationv1.AuditAnnotation{Key: "a", ValueExpression: "'1'"},
			admissionregistrationv1.AuditAnnotation{Key: "a", ValueExpression: "'2'"},
		),
		want: []fieldErr{duplicate("spec.auditAnnotations[1].key")},
	}, {
		name:   "at most 20",
		mutate: withAnnotations(tooMany...),
		want:   []fieldErr{invalid("spec.auditAnnotations").withDetail("must not have more than 20 auditAnnotations")},
	}, {
		name:   "valueExpression is required",
		mutate: withAnnotations(admissionregistrationv1.AuditAnnotation{Key: "a", ValueExpression: " "}),
		want:   []fieldErr{required("spec.auditAnnotations[0].valueExpression").withDetail("valueExpression is not specified")},
	}, {
		name:   "valueExpression at most 5 KiB",
		mutate: withAnnotations(admissionregistrationv1.AuditAnnotation{Key: "a", ValueExpression: "'" + strings.Repeat("x", 5*1024) + "'"}),
		want:   []fieldErr{required("spec.auditAnnotations[0].valueExpression").withDetail("must not exceed 5120 bytes in length")},
	}, {
		name:   "valueExpression of type bool",
		mutate: withAnnotations(admissionregistrationv1.AuditAnnotation{Key: "a", ValueExpression: "true"}),
		want:   []fieldErr{invalid("spec.auditAnnotations[0].valueExpression").withDetail("must evaluate to one of [string null_type] but got bool")},
	}, {
		// Like the server, only an exact string or null_type result type passes: an
		// expression typed dyn, such as a field of object, is refused.
		name:   "valueExpression of type dyn",
		mutate: withAnnotations(admissionregistrationv1.AuditAnnotation{Key: "a", ValueExpression: "object.metadata.name"}),
		want:   []fieldErr{invalid("spec.auditAnnotations[0].valueExpression").withDetail("must evaluate to one of [string null_type] but got dyn")},
	}, {
		name:   "valueExpression made string",
		mutate: withAnnotations(admissionregistrationv1.AuditAnnotation{Key: "a", ValueExpression: "string(object.metadata.name)"}),
	}, {
		name:   "valueExpression must compile",
		mutate: withAnnotations(admissionregistrationv1.AuditAnnotation{Key: "a", ValueExpression: "object.x in [1, 2, "}),
		// The server compiles the trimmed expression, hence column 19.
		want: []fieldErr{invalid("spec.auditAnnotations[0].valueExpression").withDetail("compilation failed: ERROR: <input>:1:19: Syntax error: missing ']' at '<EOF>'")},
	}})
}

func TestValidatePolicyCompatibilityVersion(t *testing.T) {
	t.Parallel()
	// includes() arrived with the v1 lists library in the 1.37 environment
	// (k8s.io/apiserver pkg/cel/environment/base.go).
	const newFunction = "[1, 2, 3].includes(2)"
	refused := []fieldErr{invalid("spec.validations[0].expression").withDetail("compilation failed: ERROR: <input>:1:19: undeclared reference to 'includes'")}
	useNewFunction := func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.Validations[0].Expression = newFunction
	}
	runPolicyCases(t, []policyCase{{
		name:   "refused by default: kube-apiserver 1.37 compiles new expressions as 1.36",
		mutate: useNewFunction,
		want:   refused,
	}, {
		name:   "refused with compatibility version 1.36",
		mutate: useNewFunction,
		opts:   Options{CompatibilityVersion: version.MajorMinor(1, 36)},
		want:   refused,
	}, {
		name:   "accepted with compatibility version 1.37",
		mutate: useNewFunction,
		opts:   Options{CompatibilityVersion: version.MustParseGeneric("1.37.2")},
	}, {
		name: "also in message expressions, match conditions, variables and audit annotations",
		mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "string(" + newFunction + ")"
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: newFunction}}
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "v", Expression: newFunction}}
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "a", ValueExpression: "string(" + newFunction + ")"}}
		},
		opts: Options{CompatibilityVersion: version.MajorMinor(1, 36)},
		want: []fieldErr{
			invalid("spec.matchConditions[0].expression"),
			invalid("spec.variables[0].expression"),
			invalid("spec.validations[0].messageExpression"),
			invalid("spec.auditAnnotations[0].valueExpression"),
		},
	}, {
		name: "a version without a minor component is an internal error",
		opts: Options{CompatibilityVersion: &version.Version{}},
		want: []fieldErr{{Type: "InternalError", Field: "<nil>"}},
	}})
}

func TestDefaultCompatibilityVersion(t *testing.T) {
	t.Parallel()
	if got, want := DefaultCompatibilityVersion().String(), "1.36"; got != want {
		t.Errorf("DefaultCompatibilityVersion() = %q, want %q", got, want)
	}
}

func TestValidatePolicyNil(t *testing.T) {
	t.Parallel()
	got := ValidatePolicy(nil, Options{})
	want := []fieldErr{{Type: "InternalError", Field: "<nil>"}}
	if diff := cmp.Diff(want, summarize(got, want)); diff != "" {
		t.Errorf("ValidatePolicy(nil) mismatch (-want +got):\n%s", diff)
	}
}

func TestValidatePolicyDoesNotModifyInput(t *testing.T) {
	t.Parallel()
	p := validPolicy()
	p.Name, p.GenerateName, p.Namespace, p.Generation = "", "config-", "default", 7
	want := p.DeepCopy()
	_ = ValidatePolicy(p, Options{})
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("ValidatePolicy() modified its input (-want +got):\n%s", diff)
	}
}
