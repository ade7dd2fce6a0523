package validation

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	genericvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var validValidationActions = sets.NewString(
	string(admissionregistrationv1.Deny),
	string(admissionregistrationv1.Warn),
	string(admissionregistrationv1.Audit),
)

// ValidateBinding returns the errors kube-apiserver v1.37 reports when asked to create the
// ValidatingAdmissionPolicyBinding b, which must already hold the server's defaults. A nil
// binding yields a single internal error. ValidateBinding does not modify b and does not
// look up the bound policy: the server does not either.
//
// It mirrors ValidateValidatingAdmissionPolicyBinding in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation as the validatingadmissionpolicybinding registry
// strategy runs it on create (followed by ValidateStaticSuffix), the metadata checks of
// rest.BeforeCreate, and the declarative validation of
// Validate_ValidatingAdmissionPolicyBindingSpec, which with the v1.37 default feature gates
// replaces the handwritten "required" errors of spec.policyName and spec.validationActions
// and reports them last. It does not run the paramRef authorization check, which needs the
// requesting user.
func ValidateBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	if b == nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("no ValidatingAdmissionPolicyBinding given"))}
	}
	meta, err := metaForCreate(b)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	allErrors := validateObjectMeta(meta)
	allErrors = append(allErrors, validateValidatingAdmissionPolicyBindingSpec(&b.Spec, field.NewPath("spec"))...)
	allErrors = append(allErrors, validateStaticSuffix(meta.Name, field.NewPath("metadata", "name"))...)
	allErrors = validateCreateCommon(meta, allErrors)
	return applyDeclarative(allErrors, validateBindingSpecDeclaratively(&b.Spec, field.NewPath("spec")))
}

// validateValidatingAdmissionPolicyBindingSpec mirrors
// validateValidatingAdmissionPolicyBindingSpec in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation.
func validateValidatingAdmissionPolicyBindingSpec(spec *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(spec.PolicyName) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("policyName"), "").MarkCoveredByDeclarative())
	} else {
		for _, msg := range genericvalidation.NameIsDNSSubdomain(spec.PolicyName, false) {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("policyName"), spec.PolicyName, msg))
		}
	}
	allErrors = append(allErrors, validateParamRef(spec.ParamRef, fldPath.Child("paramRef"))...)
	allErrors = append(allErrors, validateMatchResources(spec.MatchResources, fldPath.Child("matchResources"))...)
	allErrors = append(allErrors, validateValidationActions(spec.ValidationActions, fldPath.Child("validationActions"))...)
	return allErrors
}

// validateParamRef mirrors validateParamRef in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation: exactly one of name and selector, and a
// parameterNotFoundAction of Allow or Deny. The namespace is not checked.
func validateParamRef(pr *admissionregistrationv1.ParamRef, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if pr == nil {
		return allErrors
	}
	if len(pr.Name) > 0 {
		for _, msg := range content.IsPathSegmentName(pr.Name) {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("name"), pr.Name, msg))
		}
		if pr.Selector != nil {
			allErrors = append(allErrors, field.Forbidden(fldPath.Child("name"), `name and selector are mutually exclusive`))
		}
	}
	if pr.Selector != nil {
		labelSelectorValidationOpts := metav1validation.LabelSelectorValidationOptions{}
		allErrors = append(allErrors, metav1validation.ValidateLabelSelector(pr.Selector, labelSelectorValidationOpts, fldPath.Child("selector"))...)
		if len(pr.Name) > 0 {
			allErrors = append(allErrors, field.Forbidden(fldPath.Child("selector"), `name and selector are mutually exclusive`))
		}
	}
	if len(pr.Name) == 0 && pr.Selector == nil {
		allErrors = append(allErrors, field.Required(fldPath, `one of name or selector must be specified`))
	}
	if pr.ParameterNotFoundAction == nil || len(*pr.ParameterNotFoundAction) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("parameterNotFoundAction"), ""))
	} else {
		if *pr.ParameterNotFoundAction != admissionregistrationv1.DenyAction && *pr.ParameterNotFoundAction != admissionregistrationv1.AllowAction {
			// The reference passes the pointer as the bad value; field.Error prints what it points to.
			allErrors = append(allErrors, field.NotSupported(fldPath.Child("parameterNotFoundAction"), pr.ParameterNotFoundAction, []string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}))
		}
	}
	return allErrors
}

// validateValidationActions mirrors validateValidationActions in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation.
func validateValidationActions(va []admissionregistrationv1.ValidationAction, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	actions := sets.NewString()
	for i, action := range va {
		if !validValidationActions.Has(string(action)) {
			allErrors = append(allErrors, field.NotSupported(fldPath.Index(i), action, validValidationActions.List()))
		}
		if actions.Has(string(action)) {
			allErrors = append(allErrors, field.Duplicate(fldPath.Index(i), action))
		}
		actions.Insert(string(action))
	}
	if actions.Has(string(admissionregistrationv1.Deny)) && actions.Has(string(admissionregistrationv1.Warn)) {
		allErrors = append(allErrors, field.Invalid(fldPath, va, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if len(actions) == 0 {
		allErrors = append(allErrors, field.Required(fldPath, "at least one validation action is required").MarkCoveredByDeclarative())
	}
	return allErrors
}

// validateBindingSpecDeclaratively mirrors Validate_ValidatingAdmissionPolicyBindingSpec in
// k8s.io/kubernetes pkg/apis/admissionregistration/v1 (zz_generated.validations.go) on
// create: +k8s:required on policyName and validationActions, both at beta stability.
func validateBindingSpecDeclaratively(spec *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.PolicyName == "" {
		errs = append(errs, field.Required(fldPath.Child("policyName"), "").MarkBeta())
	}
	if len(spec.ValidationActions) == 0 {
		errs = append(errs, field.Required(fldPath.Child("validationActions"), "").MarkBeta())
	}
	return errs
}
