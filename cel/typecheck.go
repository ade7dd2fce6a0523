package cel

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	celgo "github.com/google/cel-go/cel"
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
// the same typed environment, for the kinds gvks (coverage's). Expressions in skip already
// failed to compile.
func (c *Checker) typeCheck(r *reporter, p *admissionregistrationv1.ValidatingAdmissionPolicy, gvks []schema.GroupVersionKind, skip map[string]bool) {
	ctx := c.tc.CreateContext(p)
	// The kinds the type checker checks every expression for: results come only for those
	// that fail.
	var all []string
	for _, gvk := range gvks[:min(len(gvks), maxTypesToCheck)] {
		all = append(all, gvkString(gvk))
	}
	exprs := policyExpressions(p)
	// The typed environments of the kinds, built once for the hints of the issues of the
	// kinds an expression fails for and for the estimates of every kind: neither changes them.
	kindEnvs := map[schema.GroupVersionKind]kindEnvResult{}
	kindEnvOf := func(gvk schema.GroupVersionKind) (*typedEnv, *celgo.Env, error) {
		k, ok := kindEnvs[gvk]
		if !ok {
			k.typed, k.env, k.err = c.kindEnv(p, gvk)
			kindEnvs[gvk] = k
		}
		return k.typed, k.env, k.err
	}
	envOf := func(gvk schema.GroupVersionKind) hinter {
		var h hinter
		if typed, env, err := kindEnvOf(gvk); err == nil {
			h = hinter{env: env, types: typed.types}
		}
		return h
	}
	for _, e := range exprs {
		if skip[e.path] || strings.TrimSpace(e.expr) == "" {
			continue
		}
		var failed []kindIssues
		for _, res := range c.tc.CheckExpression(ctx, e.expr) {
			kind := ""
			if !res.GVK.Empty() {
				kind = gvkString(res.GVK)
			}
			if res.Err != nil {
				r.add(Warning, CategoryType, e.path, kind, "type checking error: "+res.Err.Error())
				continue
			}
			if res.Issues == nil {
				continue
			}
			ki := kindIssues{kind: kind, issues: parseIssues(typeNames(res.Issues.Error()))}
			for i := range ki.issues {
				is := &ki.issues[i]
				var typeName string
				is.hint, is.fields, typeName = envOf(res.GVK).hintOf(e.expr, *is)
				if m := undefinedFieldRE.FindStringSubmatch(is.msg); m != nil && typeName != "" {
					is.untyped = c.untypedField(typeName, m[1])
				}
			}
			skip[e.path] = true
			failed = append(failed, ki)
		}
		reportTypeIssues(r, e, all, failed)
	}
	c.estimate(r, p, gvks, exprs, skip, kindEnvOf)
}

// kindEnvResult is what kindEnv returned for a kind.
type kindEnvResult struct {
	typed *typedEnv
	env   *celgo.Env
	err   error
}

// kindIssues are the type errors of an expression checked as one kind.
type kindIssues struct {
	kind   string
	issues []celIssue
}

// requestResourceUnresolved is what the type checker says of authorizer.requestResource, which
// it resolves as a field of authorizer (see checkerOnly).
const requestResourceUnresolved = "unexpected failed resolution of 'kubernetes.authorization.Authorizer'"

// checkerOnly is why an issue is the type checker's alone, the expression working at runtime,
// as the hint of the warning kube-controller-manager reports; "" for an issue of the
// expression. A field in the schema in a form the checker does not type; authorizer.requestResource,
// which kube-apiserver's compiler declares (plugin/cel.RequestResourceAuthorizerVarName) and
// the checker does not (it resolves it as a field of authorizer).
func checkerOnly(is celIssue) string {
	switch {
	case is.untyped != "":
		return is.untyped + ": kube-controller-manager reports this as a warning, and the expression works on the object at runtime"
	case strings.Contains(is.msg, requestResourceUnresolved):
		return "kube-controller-manager's type checker does not declare authorizer.requestResource, which kube-apiserver declares: it reports this as a warning in status.typeChecking, and the expression works at runtime"
	}
	return ""
}

// reportTypeIssues reports the type errors of an expression with the severity the server
// means: kube-controller-manager writes every one as a warning into status.typeChecking, and
// the apiserver accepts the policy. An issue at a place of the expression where it fails for
// every kind the policy matches is an error: the expression cannot work. An issue for some of
// the kinds only (a branch that request.kind guards, a field of one kind) is a warning that
// names those kinds and the kinds the expression type-checks for. --warnings-as-errors makes
// both fail.
func reportTypeIssues(r *reporter, e policyExpression, all []string, failed []kindIssues) {
	for _, ki := range failed {
		if !slices.Contains(all, ki.kind) {
			all = append(all, ki.kind) // object typed as dyn: no kind
		}
	}
	type place struct{ line, col int }
	failing := map[place][]string{} // the kinds with an issue at the place
	for _, ki := range failed {
		seen := map[place]bool{}
		for _, is := range ki.issues {
			p := place{is.line, is.col}
			if !seen[p] {
				seen[p] = true
				failing[p] = append(failing[p], ki.kind)
			}
		}
	}
	reported := map[place]bool{}
	for _, ki := range failed {
		for _, is := range ki.issues {
			p := place{is.line, is.col}
			kinds := failing[p]
			if hint := checkerOnly(is); hint != "" {
				// Only the type checker fails here: its warning, not an expression that cannot
				// work.
				if reported[p] {
					continue
				}
				reported[p] = true
				r.addIssue(Warning, CategoryType, e.path, e.expr, strings.Join(kinds, ", "), hint, is)
				continue
			}
			if len(kinds) == len(all) {
				// Every kind fails here: one error, for all of them.
				if reported[p] {
					continue
				}
				reported[p] = true
				r.addIssue(Error, CategoryType, e.path, e.expr, strings.Join(kinds, ", "), joinHints(is.hint, is.fields), is)
				continue
			}
			var others []string
			for _, k := range all {
				if !slices.Contains(kinds, k) {
					others = append(others, k)
				}
			}
			hint := fmt.Sprintf("fails here for %s only, not for %s: kube-apiserver accepts the policy and kube-controller-manager reports this as a warning; make sure this part is not evaluated for %s (a branch on request.kind)",
				strings.Join(kinds, ", "), strings.Join(others, ", "), strings.Join(kinds, ", "))
			if is.hint != "" {
				hint = is.hint + "; " + hint
			}
			r.addIssue(Warning, CategoryType, e.path, e.expr, ki.kind, hint, is)
		}
	}
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
