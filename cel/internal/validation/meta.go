package validation

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	genericvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
)

// StaticConfigSuffix is the metadata.name suffix kube-apiserver reserves for policies and
// bindings loaded from static manifests; the API refuses to create objects that use it.
const StaticConfigSuffix = ".static.k8s.io"

// generatedNameSuffix stands in for the 5 random characters names.SimpleNameGenerator
// appends to metadata.generateName; any 5 characters of its alphabet validate the same.
const generatedNameSuffix = "xxxxx"

// MetaForCreate is metaForCreate, for the mutating kinds' create-time checks (package
// cel/mutatingvalidation).
func MetaForCreate(obj runtime.Object) (*metav1.ObjectMeta, error) { return metaForCreate(obj) }

// metaForCreate returns a copy of the metadata of obj, a v1 policy or binding (validating or
// mutating), as the server holds it when it validates a create of the
// cluster-scoped object: owner references without their duplicates, then managedFields as
// the field manager leaves them (the create handler, before the registry sees the object),
// the name generated from generateName if there is no name (genericregistry.Store.Create),
// the namespace cleared (rest.EnsureObjectNamespaceMatchesRequestNamespace) and generation 1
// (the strategies' PrepareForCreate). The error is internal: the field manager could not be
// built.
func metaForCreate(obj runtime.Object) (*metav1.ObjectMeta, error) {
	obj = obj.DeepCopyObject()
	var m *metav1.ObjectMeta
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		m = &o.ObjectMeta
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		m = &o.ObjectMeta
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		m = &o.ObjectMeta
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		m = &o.ObjectMeta
	default:
		return nil, fmt.Errorf("no metadata for %T", obj)
	}
	if deduped, duplicates := dedupOwnerReferences(m.OwnerReferences); len(duplicates) > 0 {
		m.OwnerReferences = deduped
	}
	managed, err := managedFieldsOnCreate(obj)
	if err != nil {
		return nil, err
	}
	m.ManagedFields = managed
	if len(m.GenerateName) > 0 && len(m.Name) == 0 {
		base := m.GenerateName
		if len(base) > names.MaxGeneratedNameLength {
			base = base[:names.MaxGeneratedNameLength]
		}
		m.Name = base + generatedNameSuffix
	}
	m.Namespace = ""
	m.Generation = 1
	return m, nil
}

// validateObjectMeta mirrors the metadata check of ValidateValidatingAdmissionPolicy and
// ValidateValidatingAdmissionPolicyBinding in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation: genericvalidation.ValidateObjectMeta,
// cluster-scoped, with names that are DNS subdomains.
func validateObjectMeta(meta *metav1.ObjectMeta) field.ErrorList {
	return genericvalidation.ValidateObjectMeta(meta, false, genericvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
}

// validateStaticSuffix mirrors ValidateStaticSuffix in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation, which the registry strategies run on create
// when the ManifestBasedAdmissionControlConfig feature gate is enabled, as it is by default
// in v1.37.
func validateStaticSuffix(name string, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if strings.HasSuffix(name, StaticConfigSuffix) {
		allErrors = append(allErrors, field.Invalid(fldPath, name,
			fmt.Sprintf("names ending with %q are reserved for static manifest-based configurations and cannot be managed via the API", StaticConfigSuffix)))
	}
	return allErrors
}

// validateCreateCommon mirrors rest.ValidateCreate in k8s.io/apiserver: when the strategy
// found nothing, the metadata is checked once more with names that are path segments.
func validateCreateCommon(meta *metav1.ObjectMeta, errs field.ErrorList) field.ErrorList {
	if len(errs) != 0 {
		return errs
	}
	return genericvalidation.ValidateObjectMeta(meta, false, validatePathSegment, field.NewPath("metadata"))
}

// validatePathSegment mirrors validatePathSegment in k8s.io/apiserver pkg/registry/rest.
func validatePathSegment(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

// applyDeclarative mirrors rest.ValidateDeclarativelyWithMigrationChecks in k8s.io/apiserver
// with the v1.37 default feature gates (DeclarativeValidation and DeclarativeValidationBeta
// enabled): a handwritten error marked as covered by declarative validation is dropped when
// an enforced declarative error matches it, and the enforced declarative errors are
// appended. As on the server, the filtering also drops errors that repeat an earlier one
// word for word (field.ErrorList.Filter).
func applyDeclarative(errs, declarative field.ErrorList) field.ErrorList {
	matcher := field.ErrorMatcher{}.ByType().ByOrigin().RequireOriginWhenInvalid().ByField()
	errs = errs.Filter(func(e error) bool {
		fe, ok := e.(*field.Error)
		if !ok || !fe.CoveredByDeclarative {
			return false
		}
		for _, d := range declarative {
			if d.IsBeta() && matcher.Matches(fe, d) {
				return true
			}
		}
		return false
	})
	return append(errs, declarative...)
}

// dedupOwnerReferences mirrors dedupOwnerReferences in k8s.io/apiserver
// pkg/endpoints/handlers/rest.go, which the create handler applies to the request's object
// before anything else (dedupOwnerReferencesAndAddWarning): of owner references that are
// semantically equal, it keeps the first. It returns the references kept and the UIDs of
// those dropped; the handler replaces the references only when it dropped some, and warns.
func dedupOwnerReferences(refs []metav1.OwnerReference) ([]metav1.OwnerReference, []string) {
	var result []metav1.OwnerReference
	var duplicates []string
	seen := make(map[types.UID]struct{})
	for _, ref := range refs {
		_, ok := seen[ref.UID]
		// Short-circuit if we haven't seen the UID before. Otherwise
		// check the entire list we have so far.
		if !ok || !hasOwnerReference(result, ref) {
			seen[ref.UID] = struct{}{}
			result = append(result, ref)
		} else {
			duplicates = append(duplicates, string(ref.UID))
		}
	}
	return result, duplicates
}

// hasOwnerReference mirrors hasOwnerReference in k8s.io/apiserver
// pkg/endpoints/handlers/rest.go: whether refs has an item semantically equal to ref.
func hasOwnerReference(refs []metav1.OwnerReference, ref metav1.OwnerReference) bool {
	for _, r := range refs {
		if apiequality.Semantic.DeepEqual(r, ref) {
			return true
		}
	}
	return false
}
