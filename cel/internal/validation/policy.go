package validation

import (
	"fmt"
	"regexp"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

const (
	maxAuditAnnotations = 20
	// use a 5kb limit the CEL expression, note that this is less than the length limit
	// for the audit annotation value limit (10kb) since an expressions that concatenates
	// strings will often produce a longer value than the expression
	maxAuditAnnotationValueExpressionLength = 5 * 1024
)

var supportedFailurePolicies = sets.NewString(
	string(admissionregistrationv1.Ignore),
	string(admissionregistrationv1.Fail),
)

var supportedValidationPolicyReason = sets.NewString(
	string(metav1.StatusReasonForbidden),
	string(metav1.StatusReasonInvalid),
	string(metav1.StatusReasonRequestEntityTooLarge),
)

// validationOptions mirrors the parts of validationOptions in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation that matter on create: match conditions are
// always validated and no expression is pre-existing.
type validationOptions struct {
	allowParamsInMatchConditions bool
}

// ValidatePolicy returns the errors kube-apiserver v1.37 reports when asked to create the
// ValidatingAdmissionPolicy p, which must already hold the server's defaults. A nil policy
// yields a single internal error. ValidatePolicy does not modify p.
//
// It mirrors ValidateValidatingAdmissionPolicy in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation as the validatingadmissionpolicy registry
// strategy runs it on create (after PrepareForCreate, followed by ValidateStaticSuffix), and
// the metadata checks of rest.BeforeCreate and rest.ValidateCreate. It does not run the
// paramKind authorization check, which needs the requesting user.
//
// Like the server, it requires each expression's static type to be exactly the one
// expected (bool, string, or string or null_type): an expression typed dyn, such as a
// bare field of object, is refused.
//
// Only the major and minor components of opts.CompatibilityVersion are used.
func ValidatePolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy, opts Options) field.ErrorList {
	if p == nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("no ValidatingAdmissionPolicy given"))}
	}
	c, err := compilersFor(opts.CompatibilityVersion)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	meta, err := metaForCreate(p)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	allErrors := validateObjectMeta(meta)
	allErrors = append(allErrors, validateValidatingAdmissionPolicySpec(c, *meta, &p.Spec, validationOptions{}, field.NewPath("spec"))...)
	allErrors = append(allErrors, validateStaticSuffix(meta.Name, field.NewPath("metadata", "name"))...)
	allErrors = validateCreateCommon(meta, allErrors)
	// ValidatingAdmissionPolicy has no enforced declarative rules in v1.37, but the server
	// still passes the errors through the declarative filter, which drops repeated errors.
	return applyDeclarative(allErrors, nil)
}

// validateValidatingAdmissionPolicySpec mirrors validateValidatingAdmissionPolicySpec in
// k8s.io/kubernetes pkg/apis/admissionregistration/validation.
func validateValidatingAdmissionPolicySpec(c *compilers, meta metav1.ObjectMeta, spec *admissionregistrationv1.ValidatingAdmissionPolicySpec, opts validationOptions, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	var compiler plugincel.Compiler // composition compiler is stateful, create one lazily per policy
	getCompiler := func() plugincel.Compiler {
		if compiler == nil {
			needsComposition := len(spec.Variables) > 0
			compiler = c.createCompiler(needsComposition)
		}
		return compiler
	}
	if spec.FailurePolicy == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("failurePolicy"), ""))
	} else if !supportedFailurePolicies.Has(string(*spec.FailurePolicy)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("failurePolicy"), *spec.FailurePolicy, supportedFailurePolicies.List()))
	}
	if spec.ParamKind != nil {
		opts.allowParamsInMatchConditions = true
		allErrors = append(allErrors, validateParamKind(*spec.ParamKind, fldPath.Child("paramKind"))...)
	}
	if spec.MatchConstraints == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("matchConstraints"), ""))
	} else {
		allErrors = append(allErrors, validateMatchResources(spec.MatchConstraints, fldPath.Child("matchConstraints"))...)
		// at least one resourceRule must be defined to provide type information
		if len(spec.MatchConstraints.ResourceRules) == 0 {
			allErrors = append(allErrors, field.Required(fldPath.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	allErrors = append(allErrors, validateMatchConditions(c.stateless, spec.MatchConditions, opts, fldPath.Child("matchConditions"))...)
	for i := range spec.Variables {
		allErrors = append(allErrors, validateVariable(getCompiler(), &spec.Variables[i], spec.ParamKind, fldPath.Child("variables").Index(i))...)
	}
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("validations"), "validations or auditAnnotations must contain at least one item"))
		allErrors = append(allErrors, field.Required(fldPath.Child("auditAnnotations"), "validations or auditAnnotations must contain at least one item"))
	} else {
		for i := range spec.Validations {
			allErrors = append(allErrors, validateValidation(getCompiler(), &spec.Validations[i], spec.ParamKind, opts, fldPath.Child("validations").Index(i))...)
		}
		if spec.AuditAnnotations != nil {
			keys := sets.NewString()
			if len(spec.AuditAnnotations) > maxAuditAnnotations {
				allErrors = append(allErrors, field.Invalid(fldPath.Child("auditAnnotations"), internalAuditAnnotations(spec.AuditAnnotations), fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
			}
			for i := range spec.AuditAnnotations {
				auditAnnotation := &spec.AuditAnnotations[i]
				allErrors = append(allErrors, validateAuditAnnotation(getCompiler(), meta, auditAnnotation, spec.ParamKind, fldPath.Child("auditAnnotations").Index(i))...)
				if keys.Has(auditAnnotation.Key) {
					allErrors = append(allErrors, field.Duplicate(fldPath.Child("auditAnnotations").Index(i).Child("key"), auditAnnotation.Key))
				}
				keys.Insert(auditAnnotation.Key)
			}
		}
	}
	return allErrors
}

// validateParamKind mirrors validateParamKind in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation.
func validateParamKind(gvk admissionregistrationv1.ParamKind, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(gvk.APIVersion) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("apiVersion"), ""))
	} else if gv, err := parseGroupVersion(gvk.APIVersion); err != nil {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("apiVersion"), gvk.APIVersion, err.Error()))
	} else {
		// this matches the APIService group field validation
		if len(gv.Group) > 0 {
			if errs := utilvalidation.IsDNS1123Subdomain(gv.Group); len(errs) > 0 {
				allErrors = append(allErrors, field.Invalid(fldPath.Child("apiVersion"), gv.Group, strings.Join(errs, ",")))
			}
		}
		// this matches the APIService version field validation
		if len(gv.Version) == 0 {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("apiVersion"), gvk.APIVersion, "version must be specified"))
		} else {
			if errs := utilvalidation.IsDNS1035Label(gv.Version); len(errs) > 0 {
				allErrors = append(allErrors, field.Invalid(fldPath.Child("apiVersion"), gv.Version, strings.Join(errs, ",")))
			}
		}
	}
	if len(gvk.Kind) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("kind"), ""))
	} else if errs := utilvalidation.IsDNS1035Label(strings.ToLower(gvk.Kind)); len(errs) > 0 {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("kind"), gvk.Kind, "may have mixed case, but should otherwise match: "+strings.Join(errs, ",")))
	}
	return allErrors
}

// groupVersion mirrors groupVersion in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation.
type groupVersion struct {
	Group   string
	Version string
}

// parseGroupVersion mirrors parseGroupVersion in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation: it turns "group/version" into a groupVersion
// and reports an error if the string has more than one slash.
func parseGroupVersion(gv string) (groupVersion, error) {
	if (len(gv) == 0) || (gv == "/") {
		return groupVersion{}, nil
	}
	switch strings.Count(gv, "/") {
	case 0:
		return groupVersion{"", gv}, nil
	case 1:
		i := strings.Index(gv, "/")
		return groupVersion{gv[:i], gv[i+1:]}, nil
	default:
		return groupVersion{}, fmt.Errorf("unexpected GroupVersion string: %v", gv)
	}
}

// validateVariable mirrors validateVariable in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation. Like the server, it does not reject a
// repeated variable name: the later variable replaces the earlier one for the expressions
// that follow.
func validateVariable(compiler plugincel.Compiler, v *admissionregistrationv1.Variable, paramKind *admissionregistrationv1.ParamKind, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(v.Name) == 0 || strings.TrimSpace(v.Name) == "" {
		allErrors = append(allErrors, field.Required(fldPath.Child("name"), "name is not specified"))
	} else {
		if !isCELIdentifier(v.Name) {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("name"), v.Name, "must be a valid CEL identifier"))
		}
	}
	if len(v.Expression) == 0 || strings.TrimSpace(v.Expression) == "" {
		allErrors = append(allErrors, field.Required(fldPath.Child("expression"), "expression is not specified"))
	} else {
		if compiler, ok := compiler.(*plugincel.CompositedCompiler); ok {
			variable := &validatingadmissionpolicy.Variable{
				Name:       v.Name,
				Expression: v.Expression,
			}
			result := compiler.CompileAndStoreVariable(variable, plugincel.OptionalVariableDeclarations{
				HasParams:     paramKind != nil,
				HasAuthorizer: true,
			}, environment.NewExpressions)
			if result.Error != nil {
				allErrors = append(allErrors, convertCELErrorToValidationError(fldPath.Child("expression"), variable, result.Error))
			}
		} else {
			allErrors = append(allErrors, field.InternalError(fldPath, fmt.Errorf("variable composition is not allowed")))
		}
	}
	return allErrors
}

// validateValidation mirrors validateValidation in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation.
func validateValidation(compiler plugincel.Compiler, v *admissionregistrationv1.Validation, paramKind *admissionregistrationv1.ParamKind, opts validationOptions, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	trimmedExpression := strings.TrimSpace(v.Expression)
	trimmedMsg := strings.TrimSpace(v.Message)
	trimmedMessageExpression := strings.TrimSpace(v.MessageExpression)
	if len(trimmedExpression) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("expression"), "expression is not specified"))
	} else {
		allErrors = append(allErrors, validateValidationExpression(compiler, v.Expression, paramKind != nil, fldPath.Child("expression"))...)
	}
	if len(v.MessageExpression) > 0 && len(trimmedMessageExpression) == 0 {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	} else if len(trimmedMessageExpression) != 0 {
		// use v.MessageExpression instead of trimmedMessageExpression so that
		// the compiler output shows the correct column.
		allErrors = append(allErrors, validateMessageExpression(compiler, v.MessageExpression, opts, fldPath.Child("messageExpression"))...)
	}
	if len(v.Message) > 0 && len(trimmedMsg) == 0 {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("message"), v.Message, "must be non-empty if specified"))
	} else if hasNewlines(trimmedMsg) {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("message"), v.Message, "must not contain line breaks"))
	}
	// The reference has a third branch here, (hasNewlines(trimmedMsg) && trimmedMsg == ""),
	// which can never be taken.
	if v.Reason != nil && !supportedValidationPolicyReason.Has(string(*v.Reason)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("reason"), *v.Reason, supportedValidationPolicyReason.List()))
	}
	return allErrors
}

// validateValidationExpression mirrors validateValidationExpression in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation: the expression must compile to bool.
func validateValidationExpression(compiler plugincel.Compiler, expression string, hasParams bool, fldPath *field.Path) field.ErrorList {
	return validateCELCondition(compiler, &validatingadmissionpolicy.ValidationCondition{
		Expression: expression,
	}, plugincel.OptionalVariableDeclarations{
		HasParams:     hasParams,
		HasAuthorizer: true,
	}, environment.NewExpressions, fldPath)
}

// validateMessageExpression mirrors validateMessageExpression in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation: the expression must compile to string. As in
// the reference, params is declared when the policy has a paramKind and authorizer is not
// declared.
func validateMessageExpression(compiler plugincel.Compiler, expression string, opts validationOptions, fldPath *field.Path) field.ErrorList {
	return validateCELCondition(compiler, &validatingadmissionpolicy.MessageExpressionCondition{
		MessageExpression: expression,
	}, plugincel.OptionalVariableDeclarations{
		HasParams:     opts.allowParamsInMatchConditions,
		HasAuthorizer: false,
	}, environment.NewExpressions, fldPath)
}

// validateAuditAnnotation mirrors validateAuditAnnotation in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation. "<metadata.name>/<key>" must be a qualified
// name, and valueExpression must compile to exactly string or null_type: like the server,
// an expression whose type is only known as dyn is refused.
func validateAuditAnnotation(compiler plugincel.Compiler, meta metav1.ObjectMeta, v *admissionregistrationv1.AuditAnnotation, paramKind *admissionregistrationv1.ParamKind, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(meta.GetName()) != 0 {
		name := meta.GetName()
		allErrors = append(allErrors, validateQualifiedName(name+"/"+v.Key, fldPath.Child("key"))...)
	} else {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("key"), v.Key, "requires metadata.name be non-empty"))
	}

	trimmedValueExpression := strings.TrimSpace(v.ValueExpression)
	if len(trimmedValueExpression) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("valueExpression"), "valueExpression is not specified"))
	} else if len(trimmedValueExpression) > maxAuditAnnotationValueExpressionLength {
		allErrors = append(allErrors, field.Required(fldPath.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
	} else {
		result := compiler.CompileCELExpression(&validatingadmissionpolicy.AuditAnnotationCondition{
			ValueExpression: trimmedValueExpression,
		}, plugincel.OptionalVariableDeclarations{HasParams: paramKind != nil, HasAuthorizer: true}, environment.NewExpressions)
		if result.Error != nil {
			switch result.Error.Type {
			case cel.ErrorTypeRequired:
				allErrors = append(allErrors, field.Required(fldPath.Child("valueExpression"), result.Error.Detail))
			case cel.ErrorTypeInvalid:
				allErrors = append(allErrors, field.Invalid(fldPath.Child("valueExpression"), v.ValueExpression, result.Error.Detail))
			default:
				allErrors = append(allErrors, field.InternalError(fldPath.Child("valueExpression"), result.Error))
			}
		}
	}
	return allErrors
}

// internalAuditAnnotation has the fields of the internal AuditAnnotation type of
// k8s.io/kubernetes, which has no JSON tags: the server renders the bad value of the
// "too many auditAnnotations" error with Go field names, and so does this package.
type internalAuditAnnotation struct {
	Key             string
	ValueExpression string
}

// internalAuditAnnotations converts v1 audit annotations to internalAuditAnnotation.
func internalAuditAnnotations(in []admissionregistrationv1.AuditAnnotation) []internalAuditAnnotation {
	out := make([]internalAuditAnnotation, len(in))
	for i, a := range in {
		out[i] = internalAuditAnnotation{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	return out
}

var newlineMatcher = regexp.MustCompile(`[\n\r]+`) // valid newline chars in CEL grammar

// hasNewlines mirrors hasNewlines in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation.
func hasNewlines(s string) bool {
	return newlineMatcher.MatchString(s)
}
