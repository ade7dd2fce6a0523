package catalog

import (
	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Strategies are the registry strategies of a CRD's version, as the crdHandler builds them
// (getOrCreateServingInfoFor).
type Strategies struct {
	Main interface {
		rest.RESTCreateStrategy
		rest.RESTUpdateStrategy
	}
	Status rest.RESTUpdateStrategy // nil without a status subresource
	// Err is why the strategies could not be built.
	Err error
}

type strategyKey struct {
	crd     *apiextensionsv1.CustomResourceDefinition
	version string
}

// Strategies are the registry strategies of the custom resource kind, or nil when the catalog
// does not hold its CRD. They compile the CRD's CEL rules once, and are shared.
func (c *Catalog) Strategies(gvk schema.GroupVersionKind) *Strategies {
	if c.schema == nil {
		return nil
	}
	crd := c.schema.CustomResourceDefinitionOf(gvk)
	if crd == nil {
		return nil
	}
	key := strategyKey{crd, gvk.Version}
	if s, ok := c.strategies.Load(key); ok {
		return s.(*Strategies)
	}
	structural, _ := c.schema.CustomResourceSchema(gvk)
	s, _ := c.strategies.LoadOrStore(key, newStrategies(crd, gvk, structural))
	return s.(*Strategies)
}

// newStrategies builds the strategies of the kind's CRD, with the structural schema the
// handler serves its version with (the catalog's, see schema.Catalog.CustomResourceSchema).
func newStrategies(crd *apiextensionsv1.CustomResourceDefinition, kind schema.GroupVersionKind, structural *structuralschema.Structural) *Strategies {
	fail := func(err error) *Strategies { return &Strategies{Err: err} }
	val, err := apiextensionshelpers.GetSchemaForVersion(crd, kind.Version)
	if err != nil {
		return fail(err)
	}
	var props *apiextensionsinternal.JSONSchemaProps
	if val != nil {
		internal := &apiextensionsinternal.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
			return fail(err)
		}
		props = internal.OpenAPIV3Schema
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		return fail(err)
	}
	subresources, err := apiextensionshelpers.GetSubresourcesForVersion(crd, kind.Version)
	if err != nil {
		return fail(err)
	}
	var status *apiextensionsinternal.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	if subresources != nil && subresources.Status != nil {
		status = &apiextensionsinternal.CustomResourceSubresourceStatus{}
		if props != nil && props.Properties != nil {
			if statusSchema, ok := props.Properties["status"]; ok {
				if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&statusSchema); err != nil {
					return fail(err)
				}
			}
		}
	}
	var scale *apiextensionsinternal.CustomResourceSubresourceScale
	if subresources != nil && subresources.Scale != nil {
		scale = &apiextensionsinternal.CustomResourceSubresourceScale{}
		if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(subresources.Scale, scale, nil); err != nil {
			return fail(err)
		}
	}
	var selectable []apiextensionsv1.SelectableField
	for _, v := range crd.Spec.Versions {
		if v.Name == kind.Version {
			selectable = v.SelectableFields
		}
	}
	main := customresource.NewStrategy(crdserverscheme.NewUnstructuredObjectTyper(), crd.Spec.Scope == apiextensionsv1.NamespaceScoped, kind,
		validator, statusValidator, structural, status, scale, selectable)
	s := &Strategies{Main: main}
	if status != nil {
		s.Status = customresource.NewStatusStrategy(main)
	}
	return s
}
