package verify

import (
	"context"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
)

// compositionEnvTemplate mirrors getCompositionEnvTemplateWithStrictCost in
// k8s.io/apiserver/pkg/admission/plugin/policy/validating/plugin.go: the base environment of
// the compatibility version, strict cost enforcement on, built once.
var compositionEnvTemplate = sync.OnceValue(func() *environment.EnvSet {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
})

// compilePolicy mirrors the unexported compilePolicy of
// k8s.io/apiserver/pkg/admission/plugin/policy/validating/plugin.go (v0.37.0) line by line:
// the same composited compiler, variables, match conditions, validations, audit annotations
// and message expressions, in the same modes. Only two things differ, neither of which changes
// a decision: the match-condition matcher and the returned validator are wrapped so that the
// evaluator can say which binding and param decided (see recordingValidator). Keep it in step
// with upstream when the pinned k8s.io/apiserver changes.
func compilePolicy(policy *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	hasParam := false
	if policy.Spec.ParamKind != nil {
		hasParam = true
	}
	optionalVars := plugincel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: true}
	expressionOptionalVars := plugincel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: false}
	failurePolicy := policy.Spec.FailurePolicy
	var matcher matchconditions.Matcher = nil
	matchConditions := policy.Spec.MatchConditions
	filterCompiler, err := plugincel.NewCompositedCompiler(compositionEnvTemplate())
	if err != nil {
		return &recordingValidator{inner: validating.NewValidator(nil, nil, nil, nil, failurePolicy, err)}
	}
	filterCompiler.CompileAndStoreVariables(convertVariables(policy.Spec.Variables), optionalVars, environment.StoredExpressions)

	if len(matchConditions) > 0 {
		matchExpressionAccessors := make([]plugincel.ExpressionAccessor, len(matchConditions))
		for i := range matchConditions {
			matchExpressionAccessors[i] = (*matchconditions.MatchCondition)(&matchConditions[i])
		}
		matcher = &recordingMatcher{
			inner:     matchconditions.NewMatcher(filterCompiler.CompileCondition(matchExpressionAccessors, optionalVars, environment.StoredExpressions), failurePolicy, "policy", "validate", policy.Name),
			paramFree: paramFree(matchConditions),
		}
	}
	res := validating.NewValidator(
		filterCompiler.CompileCondition(convertValidations(policy.Spec.Validations), optionalVars, environment.StoredExpressions),
		matcher,
		filterCompiler.CompileCondition(convertAuditAnnotations(policy.Spec.AuditAnnotations), optionalVars, environment.StoredExpressions),
		filterCompiler.CompileCondition(convertMessageExpressions(policy.Spec.Validations), expressionOptionalVars, environment.StoredExpressions),
		failurePolicy,
		nil,
	)
	return &recordingValidator{inner: res}
}

// convertValidations mirrors convertv1Validations in validating/plugin.go.
func convertValidations(inputValidations []admissionregistrationv1.Validation) []plugincel.ExpressionAccessor {
	celExpressionAccessor := make([]plugincel.ExpressionAccessor, len(inputValidations))
	for i, validation := range inputValidations {
		validation := validating.ValidationCondition{
			Expression: validation.Expression,
			Message:    validation.Message,
			Reason:     validation.Reason,
		}
		celExpressionAccessor[i] = &validation
	}
	return celExpressionAccessor
}

// convertMessageExpressions mirrors convertv1MessageExpressions in validating/plugin.go.
func convertMessageExpressions(inputValidations []admissionregistrationv1.Validation) []plugincel.ExpressionAccessor {
	celExpressionAccessor := make([]plugincel.ExpressionAccessor, len(inputValidations))
	for i, validation := range inputValidations {
		if validation.MessageExpression != "" {
			condition := validating.MessageExpressionCondition{
				MessageExpression: validation.MessageExpression,
			}
			celExpressionAccessor[i] = &condition
		}
	}
	return celExpressionAccessor
}

// convertAuditAnnotations mirrors convertv1AuditAnnotations in validating/plugin.go.
func convertAuditAnnotations(inputValidations []admissionregistrationv1.AuditAnnotation) []plugincel.ExpressionAccessor {
	celExpressionAccessor := make([]plugincel.ExpressionAccessor, len(inputValidations))
	for i, validation := range inputValidations {
		validation := validating.AuditAnnotationCondition{
			Key:             validation.Key,
			ValueExpression: validation.ValueExpression,
		}
		celExpressionAccessor[i] = &validation
	}
	return celExpressionAccessor
}

// convertVariables mirrors convertv1beta1Variables in validating/plugin.go.
func convertVariables(variables []admissionregistrationv1.Variable) []plugincel.NamedExpressionAccessor {
	namedExpressions := make([]plugincel.NamedExpressionAccessor, len(variables))
	for i, variable := range variables {
		namedExpressions[i] = &validating.Variable{Name: variable.Name, Expression: variable.Expression}
	}
	return namedExpressions
}

// recordingValidator passes every call to the apiserver's validator unchanged and records the
// param and the result in the request's trace, found in the context.
type recordingValidator struct {
	inner validating.Validator
}

func (v *recordingValidator) Validate(ctx context.Context, matchedResource schema.GroupVersionResource, versionedAttr *admission.VersionedAttributes, versionedParams runtime.Object, namespace *corev1.Namespace, runtimeCELCostBudget int64, authz authorizer.UnconditionalAuthorizer) validating.ValidateResult {
	t := traceFrom(ctx)
	if t != nil {
		t.beginValidate()
	}
	res := v.inner.Validate(ctx, matchedResource, versionedAttr, versionedParams, namespace, runtimeCELCostBudget, authz)
	if t != nil {
		t.endValidate(res)
	}
	return res
}

func (v *recordingValidator) CompileError() error { return v.inner.CompileError() }

// recordingMatcher passes match-condition evaluation to the apiserver's matcher and records
// which condition, if any, excluded the request.
type recordingMatcher struct {
	inner matchconditions.Matcher
	// paramFree says the conditions read neither params nor variables (which may read params)
	// nor the authorizer: the apiserver's dispatcher evaluates them once per param, and for
	// one request they give the same result for every param, so the trace keeps the first.
	paramFree bool
}

func (m *recordingMatcher) Match(ctx context.Context, versionedAttr *admission.VersionedAttributes, versionedParams runtime.Object, authz authorizer.UnconditionalAuthorizer) matchconditions.MatchResult {
	t := traceFrom(ctx)
	if t != nil && m.paramFree {
		if res, ok := t.matched[m]; ok && res.attr == versionedAttr {
			t.matchConditions(res.result)
			return res.result
		}
	}
	res := m.inner.Match(ctx, versionedAttr, versionedParams, authz)
	if t != nil {
		if m.paramFree {
			if t.matched == nil {
				t.matched = map[*recordingMatcher]matchMemo{}
			}
			t.matched[m] = matchMemo{attr: versionedAttr, result: res}
		}
		t.matchConditions(res)
	}
	return res
}

// paramFree says whether no matchCondition's text names params, variables or the authorizer.
// Checking the text is conservative: a string literal holding one of the words only costs the
// evaluations the dispatcher makes anyway.
func paramFree(conditions []admissionregistrationv1.MatchCondition) bool {
	for _, c := range conditions {
		for _, w := range []string{"params", "variables", "authorizer"} {
			if strings.Contains(c.Expression, w) {
				return false
			}
		}
	}
	return true
}
