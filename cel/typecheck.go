package cel

import (
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
)

// maxTypesToCheck mirrors the limit of the apiserver's TypeChecker (validating/typechecking.go):
// it checks expressions against at most this many kinds of a policy.
const maxTypesToCheck = 10

// typeCheck runs the apiserver's TypeChecker over every expression of the policy (the
// TypeChecker itself covers only validations and messageExpressions; the same checks apply to
// matchConditions, variables and auditAnnotations), then estimates costs and result types with
// the same typed environment. Expressions in skip already failed to compile.
func (c *Checker) typeCheck(r *reporter, p *admissionregistrationv1.ValidatingAdmissionPolicy, skip map[string]bool) {
	gvks := c.coverage(r, p)
	ctx := c.tc.CreateContext(p)
	exprs := policyExpressions(p)
	for _, e := range exprs {
		if skip[e.path] || strings.TrimSpace(e.expr) == "" {
			continue
		}
		for _, res := range c.tc.CheckExpression(ctx, e.expr) {
			kind := gvkString(res.GVK)
			if res.Err != nil {
				r.add(Warning, CategoryType, e.path, kind, "type checking error: "+res.Err.Error())
				continue
			}
			if res.Issues != nil {
				r.addExpr(Error, CategoryType, e.path, e.expr, kind, res.Issues.Error())
				skip[e.path] = true
			}
		}
	}
	c.estimate(r, p, gvks, exprs, skip)
}

// coverage reports, as warnings, every part of a policy the type checker cannot type: wildcard
// rules, subresources, resources and kinds without a schema. It returns the kinds that are
// type-checked, in the TypeChecker's order.
func (c *Checker) coverage(r *reporter, p *admissionregistrationv1.ValidatingAdmissionPolicy) []schema.GroupVersionKind {
	if pk := p.Spec.ParamKind; pk != nil {
		if gvk, ok := gvkOf(pk); ok {
			if _, err := c.catalog.Resolver().ResolveSchema(gvk); err != nil {
				r.add(Warning, CategoryCoverage, "spec.paramKind", "", fmt.Sprintf("no schema for paramKind %s: params is not type-checked (%v)", gvk, schemaErr(err)))
			}
		}
	}
	mc := p.Spec.MatchConstraints
	if mc == nil {
		return nil
	}
	seen := map[schema.GroupVersionKind]bool{}
	var gvks []schema.GroupVersionKind
	for i, rule := range mc.ResourceRules {
		path := fmt.Sprintf("spec.matchConstraints.resourceRules[%d]", i)
		if hasWildcard(rule.APIGroups) || hasWildcard(rule.APIVersions) {
			r.add(Warning, CategoryCoverage, path, "", "wildcard apiGroups or apiVersions: object and oldObject are not type-checked for this rule (the apiserver's type checker skips wildcards)")
			continue
		}
		for j, res := range rule.Resources {
			rpath := fmt.Sprintf("%s.resources[%d]", path, j)
			switch {
			case strings.Contains(res, "*"):
				r.add(Warning, CategoryCoverage, rpath, "", fmt.Sprintf("wildcard resource %q: object and oldObject are not type-checked for it", res))
				continue
			case strings.Contains(res, "/"):
				r.add(Warning, CategoryCoverage, rpath, "", fmt.Sprintf("subresource %q: the apiserver's type checker does not type subresource requests; expressions are not type-checked for it", res))
				continue
			}
			for _, g := range rule.APIGroups {
				for _, v := range rule.APIVersions {
					gvr := schema.GroupVersionResource{Group: g, Version: v, Resource: res}
					kinds, err := c.catalog.RESTMapper().KindsFor(gvr)
					if err != nil || len(kinds) == 0 {
						r.add(Warning, CategoryCoverage, rpath, "", fmt.Sprintf("unknown resource %s: not a built-in resource of Kubernetes %s and no --crd defines it; not type-checked", gvrString(gvr), c.version))
						continue
					}
					for _, k := range kinds {
						if seen[k] {
							continue
						}
						seen[k] = true
						if _, err := c.catalog.Resolver().ResolveSchema(k); err != nil {
							r.add(Warning, CategoryCoverage, rpath, "", fmt.Sprintf("no schema for %s: not type-checked (%v)", k, schemaErr(err)))
							continue
						}
						gvks = append(gvks, k)
					}
				}
			}
		}
	}
	if len(gvks) > maxTypesToCheck {
		r.add(Warning, CategoryCoverage, "spec.matchConstraints", "", fmt.Sprintf("the policy matches %d kinds; the apiserver type-checks only the first %d", len(gvks), maxTypesToCheck))
	}
	return gvks
}

func schemaErr(err error) string {
	if errors.Is(err, resolver.ErrSchemaNotFound) {
		return "schema not found"
	}
	return err.Error()
}

func hasWildcard(s []string) bool {
	for _, x := range s {
		if strings.Contains(x, "*") {
			return true
		}
	}
	return false
}

// gvkString formats a kind as apiVersion/Kind: v1/Pod, apps/v1/Deployment.
func gvkString(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + "/" + gvk.Kind
}

func gvrString(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Version + "/" + gvr.Resource
	}
	return gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}
