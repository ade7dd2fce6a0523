// Package difftest checks github.com/vapc-dev/vapc/cel/internal/validation and
// github.com/vapc-dev/vapc/cel/defaults against the kube-apiserver v1.37 code they mirror:
// the registry strategies, rest.ValidateCreate (with declarative validation) and the scheme
// defaulting of k8s.io/kubernetes, compared error string for error string.
package difftest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/resolver"
	vapstrategy "k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicy"
	vapbstrategy "k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicybinding"

	"github.com/vapc-dev/vapc/cel/defaults"
	"github.com/vapc-dev/vapc/cel/internal/validation"
)

func ptr[T any](v T) *T { return &v }

func ctx() context.Context {
	c := genericapirequest.WithNamespace(context.Background(), "")
	c = genericapirequest.WithRequestInfo(c, &genericapirequest.RequestInfo{APIGroup: "admissionregistration.k8s.io", APIVersion: "v1", IsResourceRequest: true})
	c = genericapirequest.WithUser(c, &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}})
	return c
}

func serverCreate(t *testing.T, obj runtime.Object, strategy rest.RESTCreateStrategy) []string {
	t.Helper()
	internal, err := legacyscheme.Scheme.ConvertToVersion(obj, admissionregistration.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	// What genericregistry.Store.Create and rest.BeforeCreate do before validating: system
	// fields, name generation (with a fixed suffix), namespace clearing. The cases carry no
	// managedFields and no repeated owner references, which the create handler processes
	// before (verify/e2e's TestCheckParity holds those against a real server).
	m, _ := metav1Accessor(internal)
	rest.FillObjectMetaSystemFields(m)
	if m.GetGenerateName() != "" && m.GetName() == "" {
		b := m.GetGenerateName()
		if len(b) > 58 {
			b = b[:58]
		}
		m.SetName(b + "xxxxx")
	}
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace("", m); err != nil {
		t.Fatal(err)
	}
	m.SetManagedFields(nil)
	strategy.PrepareForCreate(ctx(), internal)
	return render(rest.ValidateCreate(ctx(), internal, strategy))
}

func metav1Accessor(o runtime.Object) (metav1.Object, error) {
	return o.(metav1.ObjectMetaAccessor).GetObjectMeta(), nil
}

func render(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func basePolicy() *v1.ValidatingAdmissionPolicy {
	return &v1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "config"},
		Spec: v1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &v1.MatchResources{ResourceRules: []v1.NamedRuleWithOperations{rule("apps", "v1", "deployments")}},
			Validations:      []v1.Validation{{Expression: "object.x < 100"}},
		},
	}
}

func rule(g, v string, res ...string) v1.NamedRuleWithOperations {
	return v1.NamedRuleWithOperations{RuleWithOperations: v1.RuleWithOperations{
		Operations: []v1.OperationType{v1.Create},
		Rule:       v1.Rule{APIGroups: []string{g}, APIVersions: []string{v}, Resources: res},
	}}
}

type pmut func(p *v1.ValidatingAdmissionPolicy)

func policyMutations() map[string]pmut {
	m := map[string]pmut{
		"valid":       func(p *v1.ValidatingAdmissionPolicy) {},
		"badname":     func(p *v1.ValidatingAdmissionPolicy) { p.Name = "!!!" },
		"noname":      func(p *v1.ValidatingAdmissionPolicy) { p.Name = "" },
		"static":      func(p *v1.ValidatingAdmissionPolicy) { p.Name = "a.static.k8s.io" },
		"static+bad":  func(p *v1.ValidatingAdmissionPolicy) { p.Name = "A.static.k8s.io" },
		"ns":          func(p *v1.ValidatingAdmissionPolicy) { p.Namespace = "default" },
		"gen":         func(p *v1.ValidatingAdmissionPolicy) { p.Generation = -5 },
		"labels":      func(p *v1.ValidatingAdmissionPolicy) { p.Labels = map[string]string{"a": "!"} },
		"annotations": func(p *v1.ValidatingAdmissionPolicy) { p.Annotations = map[string]string{"!": "a"} },
		"finalizers":  func(p *v1.ValidatingAdmissionPolicy) { p.Finalizers = []string{"bad/"} },
		"fp":          func(p *v1.ValidatingAdmissionPolicy) { p.Spec.FailurePolicy = ptr(v1.FailurePolicyType("x")) },
		"pk-empty":    func(p *v1.ValidatingAdmissionPolicy) { p.Spec.ParamKind = &v1.ParamKind{} },
		"pk-gv":       func(p *v1.ValidatingAdmissionPolicy) { p.Spec.ParamKind = &v1.ParamKind{APIVersion: "a.b", Kind: "K"} },
		"pk-slash":    func(p *v1.ValidatingAdmissionPolicy) { p.Spec.ParamKind = &v1.ParamKind{APIVersion: "a/", Kind: "K_"} },
		"pk-3": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &v1.ParamKind{APIVersion: "a/b/c", Kind: "K"}
		},
		"pk-group": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &v1.ParamKind{APIVersion: "!!/v1", Kind: "K"}
		},
		"pk-ok+params": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &v1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.Validations[0].Expression = "params.x == 1"
		},
		"params-no-pk": func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Expression = "params.x == 1" },
		"nomc":         func(p *v1.ValidatingAdmissionPolicy) { p.Spec.MatchConstraints = nil },
		"norules":      func(p *v1.ValidatingAdmissionPolicy) { p.Spec.MatchConstraints.ResourceRules = nil },
		"emptyrules": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules = []v1.NamedRuleWithOperations{{}, {}}
		},
		"excl": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ExcludeResourceRules = []v1.NamedRuleWithOperations{{}}
		},
		"mp": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.MatchPolicy = ptr(v1.MatchPolicyType("x"))
		},
		"sel": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}}
		},
		"ops": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].Operations = []v1.OperationType{"*", "PATCH", ""}
		},
		"scope": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].Scope = ptr(v1.ScopeType("x"))
		},
		"groups": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{"*", "a"}
		},
		"versions": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].APIVersions = []string{"*", ""}
		},
		"res1": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].Resources = []string{"*", "a"}
		},
		"res2": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].Resources = []string{"a/*", "a/x", "*/x", "b/x", ""}
		},
		"res3": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].Resources = []string{"*/*", "a"}
		},
		"res4": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].Resources = []string{"a", "*", "a/b"}
		},
		"resnames": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].ResourceNames = []string{"/./.", "t", "t", "..", "%"}
		},
		"mc-empty": func(p *v1.ValidatingAdmissionPolicy) { p.Spec.MatchConditions = []v1.MatchCondition{{}} },
		"mc-dup": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConditions = []v1.MatchCondition{{Name: "a", Expression: "true"}, {Name: "a", Expression: "6"}}
		},
		"mc-name": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConditions = []v1.MatchCondition{{Name: "a b/c/d", Expression: "params.x"}}
		},
		"mc-var": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []v1.Variable{{Name: "a", Expression: "true"}}
			p.Spec.MatchConditions = []v1.MatchCondition{{Name: "a", Expression: "variables.a"}}
		},
		"mc-authz": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConditions = []v1.MatchCondition{{Name: "a", Expression: "authorizer.requestResource.check('get').allowed()"}}
		},
		"novalidations": func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations = nil },
		"v-empty": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0] = v1.Validation{Expression: " ", Message: " ", MessageExpression: " "}
		},
		"v-syntax":      func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Expression = "object.x in [1, 2, " },
		"v-string":      func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Expression = "'x'" },
		"v-dyn":         func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Expression = "object.x" },
		"v-msgexpr":     func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].MessageExpression = "0 == 0" },
		"v-msgexpr-dyn": func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].MessageExpression = "object.x" },
		"v-msgexpr-authz": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "string(authorizer.requestResource.check('get').allowed())"
		},
		"v-msgexpr-params": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &v1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.Validations[0].MessageExpression = "string(params.x)"
		},
		"v-msg-nl": func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Message = "a\nb" },
		"v-reason": func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Reason = ptr(metav1.StatusReason("x")) },
		"v-reason-ok": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Reason = ptr(metav1.StatusReasonForbidden)
		},
		"v-includes": func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Expression = "[1,2].includes(1)" },
		"v-isSorted": func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Expression = "[1,2].isSorted()" },
		"v-semver":   func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Expression = "isSemver('1.0.0')" },
		"var-bad": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []v1.Variable{{Name: "4ever", Expression: "114 + '514'"}, {Name: " ", Expression: " "}, {Name: "in", Expression: "1"}}
		},
		"var-order": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []v1.Variable{{Name: "b", Expression: "variables.a + 1"}, {Name: "a", Expression: "1"}}
			p.Spec.Validations = []v1.Validation{{Expression: "variables.a > 1"}, {Expression: "variables.c == 2"}, {Expression: "variables.b == 2"}}
		},
		"var-dup": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []v1.Variable{{Name: "a", Expression: "1"}, {Name: "a", Expression: "'x'"}}
			p.Spec.Validations = []v1.Validation{{Expression: "variables.a > 1"}, {Expression: "variables.a == 'x'"}}
		},
		"var-bool": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []v1.Variable{{Name: "a", Expression: "true"}}
			p.Spec.Validations = []v1.Validation{{Expression: "variables.a"}}
		},
		"var-includes": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []v1.Variable{{Name: "a", Expression: "[1].includes(1)"}}
		},
		"aa": func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.Validations = nil
			p.Spec.AuditAnnotations = []v1.AuditAnnotation{
				{Key: "a", ValueExpression: "'x'"}, {Key: "a", ValueExpression: "null"}, {Key: "@", ValueExpression: "true"},
				{Key: "", ValueExpression: " "}, {Key: strings.Repeat("k", 70), ValueExpression: "object.x"},
				{Key: "b", ValueExpression: " object.x in [1, 2, "}, {Key: "c", ValueExpression: "'" + strings.Repeat("x", 6000) + "'"},
				{Key: "d", ValueExpression: "string(object.x)"}, {Key: "e", ValueExpression: "authorizer.requestResource.check('get').reason()"},
			}
		},
		"aa-noname": func(p *v1.ValidatingAdmissionPolicy) {
			p.Name = ""
			p.Spec.AuditAnnotations = []v1.AuditAnnotation{{Key: "a", ValueExpression: "'x'"}}
		},
		"aa-badname": func(p *v1.ValidatingAdmissionPolicy) {
			p.Name = "nope!"
			p.Spec.AuditAnnotations = []v1.AuditAnnotation{{Key: "a", ValueExpression: "'x'"}}
		},
	}
	many := make([]v1.AuditAnnotation, 21)
	for i := range many {
		many[i] = v1.AuditAnnotation{Key: fmt.Sprintf("k%d", i), ValueExpression: "'v'"}
	}
	m["aa-many"] = func(p *v1.ValidatingAdmissionPolicy) { p.Spec.AuditAnnotations = many }
	mcs := make([]v1.MatchCondition, 65)
	for i := range mcs {
		mcs[i] = v1.MatchCondition{Name: fmt.Sprintf("c%d", i), Expression: "true"}
	}
	m["mc-many"] = func(p *v1.ValidatingAdmissionPolicy) { p.Spec.MatchConditions = mcs }
	m["genname"] = func(p *v1.ValidatingAdmissionPolicy) {
		p.Name, p.GenerateName = "", "cfg-"
		p.Spec.AuditAnnotations = []v1.AuditAnnotation{{Key: strings.Repeat("a", 60), ValueExpression: "'x'"}}
	}
	m["genname-long"] = func(p *v1.ValidatingAdmissionPolicy) { p.Name, p.GenerateName = "", strings.Repeat("a", 300) }
	m["genname-bad"] = func(p *v1.ValidatingAdmissionPolicy) { p.Name, p.GenerateName = "", "Bad_" }
	m["genname-and-name"] = func(p *v1.ValidatingAdmissionPolicy) { p.GenerateName = "Bad_" }
	m["nodefaults"] = nil // marker: skip defaulting
	return m
}

func TestPolicyDifferential(t *testing.T) {
	strategy := vapstrategy.NewStrategy(nil, nil)
	for name, mut := range policyMutations() {
		t.Run(name, func(t *testing.T) {
			p := basePolicy()
			if mut != nil {
				mut(p)
				legacyscheme.Scheme.Default(p)
			}
			var mine v1.ValidatingAdmissionPolicy
			p.DeepCopyInto(&mine)
			if mut != nil {
				// defaults package must agree with the server defaulting
				q := basePolicy()
				mut(q)
				defaults.SetPolicyDefaults(q)
				if d := cmp.Diff(p, q); d != "" {
					t.Errorf("defaults differ: %s", d)
				}
			}
			want := serverCreate(t, p, strategy)
			got := render(validation.ValidatePolicy(&mine, validation.Options{}))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("mismatch (-server +vapc):\n%s", d)
			}
			t.Logf("%d errors", len(want))
		})
	}
}

func TestBindingDifferential(t *testing.T) {
	strategy := vapbstrategy.NewStrategy(nil, nil, resolver.ResourceResolverFunc(func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
		return schema.GroupVersionResource{}, nil
	}))
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	muts := map[string]func(b *v1.ValidatingAdmissionPolicyBinding){
		"valid": func(b *v1.ValidatingAdmissionPolicyBinding) {},
		"empty": func(b *v1.ValidatingAdmissionPolicyBinding) { b.Spec = v1.ValidatingAdmissionPolicyBindingSpec{} },
		"empty+bad": func(b *v1.ValidatingAdmissionPolicyBinding) {
			b.Spec = v1.ValidatingAdmissionPolicyBindingSpec{}
			b.Name = "X"
		},
		"static":     func(b *v1.ValidatingAdmissionPolicyBinding) { b.Name = "b.static.k8s.io" },
		"policyname": func(b *v1.ValidatingAdmissionPolicyBinding) { b.Spec.PolicyName = "Bad_" },
		"pr-both":    func(b *v1.ValidatingAdmissionPolicyBinding) { b.Spec.ParamRef = &v1.ParamRef{Name: "a", Selector: sel} },
		"pr-none": func(b *v1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &v1.ParamRef{Namespace: "x", ParameterNotFoundAction: ptr(v1.ParameterNotFoundActionType(""))}
		},
		"pr-bad": func(b *v1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &v1.ParamRef{Name: "a/b", ParameterNotFoundAction: ptr(v1.ParameterNotFoundActionType("Ignore"))}
		},
		"pr-sel": func(b *v1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &v1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}}, ParameterNotFoundAction: ptr(v1.AllowAction)}
		},
		"pr-ok": func(b *v1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &v1.ParamRef{Name: "a", Namespace: "Bad!", ParameterNotFoundAction: ptr(v1.DenyAction)}
		},
		"va-dw": func(b *v1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []v1.ValidationAction{"Deny", "Warn", "Deny", "x"}
		},
		"va-none":     func(b *v1.ValidatingAdmissionPolicyBinding) { b.Spec.ValidationActions = nil },
		"va-emptystr": func(b *v1.ValidatingAdmissionPolicyBinding) { b.Spec.ValidationActions = []v1.ValidationAction{""} },
		"mr": func(b *v1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &v1.MatchResources{ResourceRules: []v1.NamedRuleWithOperations{{}}, ExcludeResourceRules: []v1.NamedRuleWithOperations{rule("a", "v1", "*/*", "x")}}
		},
		"mr-empty": func(b *v1.ValidatingAdmissionPolicyBinding) { b.Spec.MatchResources = &v1.MatchResources{} },
		"dupe-errs": func(b *v1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &v1.MatchResources{ResourceRules: []v1.NamedRuleWithOperations{rule("a", "v1", "a/*", "a/x", "a/x")}}
		},
	}
	for name, mut := range muts {
		t.Run(name, func(t *testing.T) {
			b := &v1.ValidatingAdmissionPolicyBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: "config"},
				Spec:       v1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []v1.ValidationAction{v1.Deny}},
			}
			mut(b)
			q := b.DeepCopy()
			legacyscheme.Scheme.Default(b)
			defaults.SetBindingDefaults(q)
			if d := cmp.Diff(b, q); d != "" {
				t.Errorf("defaults differ: %s", d)
			}
			want := serverCreate(t, b, strategy)
			got := render(validation.ValidateBinding(q))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("mismatch (-server +vapc):\n%s", d)
			}
			t.Logf("%d errors: %v", len(want), want)
		})
	}
}
