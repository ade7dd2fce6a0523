package cel

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestMapOrderLint: an expression whose value lists a map's keys in the order CEL iterates the
// map (kube-apiserver's: Go's map order, changing from request to request) is linted, and its
// audit annotation named for the replay; one that only counts or tests the list, or iterates a
// list, is not.
func TestMapOrderLint(t *testing.T) {
	checker, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		expr string
		want bool
	}{
		{"object.data.map(k, k + '=' + object.data[k]).join(',')", true},
		{"string(object.metadata.labels.map(k, k)[0])", true},
		{"object.data.filter(k, k.startsWith('a')).join(',')", true},
		{"string(object.data.filter(k, k.startsWith('a')).size())", false},
		{"string(size(object.data.filter(k, k.startsWith('a'))))", false},
		{"string(object.data.map(k, k).exists(x, x == 'a'))", false},
		{"string(object.data.all(k, k != ''))", false},
		{"string('a' in object.data.map(k, k))", false},
		{"[1, 2].map(x, string(x)).join(',')", false},
		{"string(object.data.size())", false},
	} {
		t.Run(tt.expr, func(t *testing.T) {
			p := corePolicy(admissionregistrationv1.Create, "configmaps", "true")
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "k", ValueExpression: tt.expr}}
			set := &Set{Policies: []*Policy{{ValidatingAdmissionPolicy: p, Source: noSource{}}}}
			diags := checker.CheckPolicy(set.Policies[0])
			got := false
			for _, d := range diags {
				if d.Message == MapOrderMessage {
					got = d.Field == "spec.auditAnnotations[0].valueExpression"
				}
			}
			if got != tt.want {
				t.Errorf("linted %v, want %v: %v", got, tt.want, diags)
			}
			var want map[string][]string
			if tt.want {
				want = map[string][]string{"p": {"k"}}
			}
			if diff := cmp.Diff(want, checker.MapOrderOf(set, diags).Annotations, cmpEmptyMaps); diff != "" {
				t.Errorf("MapOrderOf (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMapOrderVariable: an audit annotation or a validation's messageExpression that reads a
// variable whose value follows map iteration is named too, as is a messageExpression that
// iterates a map itself.
func TestMapOrderVariable(t *testing.T) {
	checker, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	p := corePolicy(admissionregistrationv1.Create, "configmaps", "true")
	p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "keys", Expression: "object.data.map(k, k)"}}
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{
		{Key: "joined", ValueExpression: "variables.keys.join(',')"},
		{Key: "name", ValueExpression: "object.metadata.name"},
	}
	p.Spec.Validations = []admissionregistrationv1.Validation{
		{Expression: "true", MessageExpression: "'keys: ' + variables.keys.join(',')"},
		{Expression: "true", MessageExpression: "'name: ' + object.metadata.name"},
		{Expression: "true", Message: "static"},
		{Expression: "true", MessageExpression: "'bad: ' + object.data.filter(k, k.startsWith('x')).join(',')"},
	}
	set := &Set{Policies: []*Policy{{ValidatingAdmissionPolicy: p, Source: noSource{}}}}
	want := MapOrder{Annotations: map[string][]string{"p": {"joined"}}, Messages: map[string][]int{"p": {0, 3}}, Outcomes: map[string]bool{}}
	if diff := cmp.Diff(want, checker.MapOrderOf(set, checker.CheckPolicy(set.Policies[0]))); diff != "" {
		t.Errorf("MapOrderOf (-want +got):\n%s", diff)
	}
	// A validation's expression or a matchCondition that reads the variable: the policy's
	// outcome.
	p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{Expression: "variables.keys[0] != 'b'"})
	want.Outcomes = map[string]bool{"p": true}
	if diff := cmp.Diff(want, checker.MapOrderOf(set, checker.CheckPolicy(set.Policies[0]))); diff != "" {
		t.Errorf("MapOrderOf (-want +got):\n%s", diff)
	}
	p.Spec.Validations = p.Spec.Validations[:4]
	p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "first", Expression: "object.data.map(k, k)[0] == 'a'"}}
	if diff := cmp.Diff(want, checker.MapOrderOf(set, checker.CheckPolicy(set.Policies[0]))); diff != "" {
		t.Errorf("MapOrderOf (-want +got):\n%s", diff)
	}
}

// cmpEmptyMaps compares a nil map and an empty one alike.
var cmpEmptyMaps = cmp.FilterValues(func(a, b map[string][]string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Comparer(func(_, _ map[string][]string) bool { return true }))

// TestMapOrderUntyped: for a replay, an expression the lint cannot type (a policy no kind
// types, for a wildcard rule; one whose fields are another kind's, read with ?.) that iterates
// an untyped value, which kube-apiserver may find a map, is named; the lint (vapc check) names
// only what it types a map.
func TestMapOrderUntyped(t *testing.T) {
	checker, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, resource, expr string
		lint, named          bool
	}{
		{"typed list", "pods", "object.spec.containers.map(c, c.name).join(',')", false, false},
		{"typed map", "configmaps", "object.data.map(k, k).join(',')", true, true},
		{"another kind's field", "pods", "object.?data.orValue({}).filter(k, k != 'big').join(',') + object.?spec.?nodeName.orValue('')", false, true},
		{"a wildcard rule", "*", "object.metadata.labels.map(k, k).join(',')", false, true},
		{"a wildcard rule, tested only", "*", "object.metadata.labels.exists(k, k == 'a') ? 'a' : 'b'", false, false},
		{"a variable", "configmaps", "variables.o.metadata.?labels.orValue({}).map(k, k).join('|')", false, true},
		{"a variable's list of objects", "pods", "variables.s.containers.map(c, c.name).join(',')", false, false},
		{"an untyped list of objects", "*", "object.status.conditions.filter(c, c.type == 'Ready').map(c, c.status).join(',')", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := corePolicy(admissionregistrationv1.Create, tc.resource, "true")
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "k", ValueExpression: tc.expr}}
			p.Spec.Variables = []admissionregistrationv1.Variable{
				{Name: "o", Expression: "request.operation == 'DELETE' ? oldObject : object"},
				{Name: "s", Expression: "request.kind.kind == 'Pod' ? object.spec : object.spec.template.spec"},
			}
			set := &Set{Policies: []*Policy{{ValidatingAdmissionPolicy: p, Source: noSource{}}}}
			diags := checker.CheckPolicy(set.Policies[0])
			lint := slices.ContainsFunc(diags, func(d Diagnostic) bool { return d.Message == MapOrderMessage })
			named := len(checker.MapOrderOf(set, diags).Annotations["p"]) > 0
			if lint != tc.lint || named != tc.named {
				t.Errorf("linted %v, named %v; want %v, %v: %v", lint, named, tc.lint, tc.named, diags)
			}
		})
	}
}
