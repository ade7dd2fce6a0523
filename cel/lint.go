package cel

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/common/ast"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vapcschema "github.com/vapc-dev/vapc/cel/schema"
)

// lintPolicy reports mistakes the apiserver accepts but that users hit in practice.
func lintPolicy(r *reporter, p *admissionregistrationv1.ValidatingAdmissionPolicy, cat *vapcschema.Catalog) {
	exprs := policyExpressions(p)
	lintDeleteReadsObject(r, p, exprs)
	lintScaleSubresource(r, p, exprs, cat)
}

// lintDeleteReadsObject: on DELETE, object is null; a policy that matches only DELETE and
// reads object (rather than oldObject) fails or never does what it says.
func lintDeleteReadsObject(r *reporter, p *admissionregistrationv1.ValidatingAdmissionPolicy, exprs []policyExpression) {
	if p.Spec.MatchConstraints == nil || len(p.Spec.MatchConstraints.ResourceRules) == 0 {
		return
	}
	for _, rule := range p.Spec.MatchConstraints.ResourceRules {
		if len(rule.Operations) == 0 {
			return
		}
		for _, op := range rule.Operations {
			if op != admissionregistrationv1.Delete {
				return
			}
		}
	}
	for _, e := range exprs {
		reads, err := readsVariable(e.expr, "object")
		if err != nil {
			r.add(Warning, CategoryLint, e.path, "", "cannot look into the expression: "+err.Error())
			continue
		}
		if reads {
			r.add(Warning, CategoryLint, e.path, "", "the policy matches only DELETE, where object is null: read oldObject instead")
		}
	}
}

// lintScaleSubresource: a rule on a resource with a scale subresource whose expressions read
// spec.replicas is bypassed by `kubectl scale`, which writes through <resource>/scale.
func lintScaleSubresource(r *reporter, p *admissionregistrationv1.ValidatingAdmissionPolicy, exprs []policyExpression, cat *vapcschema.Catalog) {
	mc := p.Spec.MatchConstraints
	if mc == nil {
		return
	}
	readsReplicas := false
	for _, e := range exprs {
		if strings.Contains(e.expr, "spec.replicas") {
			readsReplicas = true
			break
		}
	}
	if !readsReplicas {
		return
	}
	matched := map[string]bool{}
	for _, rule := range mc.ResourceRules {
		for _, res := range rule.Resources {
			matched[res] = true
		}
	}
	if matched["*"] || matched["*/*"] || matched["*/scale"] {
		return
	}
	for i, rule := range mc.ResourceRules {
		for j, res := range rule.Resources {
			if strings.Contains(res, "/") || strings.Contains(res, "*") || matched[res+"/scale"] || matched[res+"/*"] {
				continue
			}
			if !hasScale(cat, rule.APIGroups, rule.APIVersions, res) {
				continue
			}
			r.add(Warning, CategoryLint, fmt.Sprintf("spec.matchConstraints.resourceRules[%d].resources[%d]", i, j), "",
				fmt.Sprintf("expressions read spec.replicas but the policy does not match %s/scale: `kubectl scale` changes replicas through the scale subresource and is not checked", res))
		}
	}
}

func hasScale(cat *vapcschema.Catalog, groups, versions []string, res string) bool {
	for _, g := range groups {
		for _, v := range versions {
			if _, ok := cat.Resource(schema.GroupVersionResource{Group: g, Version: v, Resource: res}, "scale"); ok {
				return true
			}
		}
	}
	return false
}

// lintBinding reports a binding that cannot work with its policy's params.
func lintBinding(r *reporter, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	switch {
	case p.Spec.ParamKind != nil && b.Spec.ParamRef == nil:
		r.add(Warning, CategoryLint, "spec", "", fmt.Sprintf("policy %q has a paramKind but the binding has no paramRef: every matched request is a configuration error that failurePolicy decides", p.Name))
	case p.Spec.ParamKind == nil && b.Spec.ParamRef != nil:
		r.add(Warning, CategoryLint, "spec.paramRef", "", fmt.Sprintf("policy %q has no paramKind: the paramRef is ignored", p.Name))
	}
}

// readsVariable reports whether the expression refers to the top-level variable name, parsed
// with the apiserver's macros.
func readsVariable(expr, name string) (bool, error) {
	env, err := parseEnv()
	if err != nil {
		return false, err
	}
	a, iss := env.Parse(expr)
	if iss != nil && iss.Err() != nil {
		// A syntax error is reported where the expression is compiled.
		return false, nil
	}
	found := false
	ast.PostOrderVisit(a.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() == ast.IdentKind && e.AsIdent() == name {
			found = true
		}
	}))
	return found, nil
}
