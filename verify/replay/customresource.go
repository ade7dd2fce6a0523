package replay

import (
	"context"
	"fmt"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
)

// What the apiextensions apiserver's handler of a custom resource does to the object of a
// create or update before validating admission, which the replay does for an object it
// rebuilds from the request outside the request pipeline (the pipeline serves built-in
// resources only): its registry strategy's rest.BeforeCreate (after
// FillObjectMetaSystemFields, as Store.Create does) or rest.BeforeUpdate, the status
// subresource's for a /status update. The log holds a create's or update's body as the
// handler decoded it (pruned and defaulted: audit.LogRequestObject runs after the decoder); a
// patched object the replay decodes itself (decodeCustomResource). What the handler's field
// manager writes stays unknown (see evaluate).

// crStrategies are the registry strategies of a CRD's version.
type crStrategies struct {
	main interface {
		rest.RESTCreateStrategy
		rest.RESTUpdateStrategy
	}
	status rest.RESTUpdateStrategy // nil without a status subresource
	err    error
}

type crStrategyKey struct {
	crd     *apiextensionsv1.CustomResourceDefinition
	version string
}

// customResourceStrategies are the registry strategies of the custom resource kind as the
// crdHandler builds them (getOrCreateServingInfoFor), or nil when the catalog does not hold
// its CRD.
func (r *Replayer) customResourceStrategies(gvk schema.GroupVersionKind) *crStrategies {
	if r.cat.catalog == nil {
		return nil
	}
	crd := r.cat.catalog.CustomResourceDefinitionOf(gvk)
	if crd == nil {
		return nil
	}
	key := crStrategyKey{crd, gvk.Version}
	if s, ok := r.cat.crStrategies.Load(key); ok {
		return s.(*crStrategies)
	}
	structural, _ := r.cat.catalog.CustomResourceSchema(gvk)
	s, _ := r.cat.crStrategies.LoadOrStore(key, newCRStrategies(crd, gvk, structural))
	return s.(*crStrategies)
}

// newCRStrategies builds the strategies of the kind's CRD, with the structural schema the
// handler serves its version with (the catalog's, see schema.Catalog.CustomResourceSchema).
func newCRStrategies(crd *apiextensionsv1.CustomResourceDefinition, kind schema.GroupVersionKind, structural *structuralschema.Structural) *crStrategies {
	fail := func(err error) *crStrategies { return &crStrategies{err: err} }
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
	s := &crStrategies{main: main}
	if status != nil {
		s.status = customresource.NewStatusStrategy(main)
	}
	return s
}

// prepareCustomResource gives the request of a custom resource's create or update the replay
// rebuilt from its request what the handler's store does to its object between mutating and
// validating admission (see above; verify.Request.BeforeValidation: after the
// MutatingAdmissionPolicies, as the server runs them), and adds to b what of it the log does
// not hold (the uid it generates, its clock: settle), found on a copy, which the record shows.
// A request the replay cannot take through it is indeterminate.
func (r *Replayer) prepareCustomResource(ev *Event, t target, b *rebuilt) {
	u := b.req.Object
	if u == nil || b.indeterminate.is() || b.objectSource == SourceResponse || kubescheme.Knows(u.GroupVersionKind()) ||
		(t.op != admission.Create && t.op != admission.Update) || (t.sub != "" && t.sub != "status") {
		return
	}
	s := r.customResourceStrategies(u.GroupVersionKind())
	switch {
	case s == nil:
		b.indeterminate = because(ReasonRebuild, "the CustomResourceDefinition of "+describe(t.gvr, "")+" is not known, and so neither what its handler sets before admission")
		return
	case s.err != nil:
		b.indeterminate = because(ReasonRebuild, "the strategy of "+describe(t.gvr, "")+": "+s.err.Error())
		return
	case t.op == admission.Update && b.req.OldObject == nil:
		b.indeterminate = because(ReasonOldObjectUnknown, "the stored object, which the handler's update starts from")
		return
	case t.sub == "status" && s.status == nil:
		return // no status subresource: the server does not serve the request
	}
	prepare := func(obj, old runtime.Object) ([]vapccel.Unknown, error) {
		ctx := request.WithNamespace(context.Background(), t.namespace)
		var err error
		switch {
		case t.op == admission.Create:
			if m, merr := meta.Accessor(obj); merr == nil {
				rest.FillObjectMetaSystemFields(m)
			}
			err = rest.BeforeCreate(s.main, ctx, obj)
			old = nil
		case t.sub == "status":
			err = rest.BeforeUpdate(s.status, ctx, obj, old)
		default:
			err = rest.BeforeUpdate(s.main, ctx, obj, old)
		}
		if err != nil {
			return nil, fmt.Errorf("the object the replay rebuilt does not pass what the handler of %s checks before admission: %w", describe(t.gvr, t.sub), err)
		}
		return settle(ev, t, admission.NewAttributesRecord(obj, old, t.reqKind, t.namespace, t.name, t.gvr, t.sub, t.op, nil, false, nil), ev.RequestObject), nil
	}
	prepared := u.DeepCopy()
	var old runtime.Object
	if b.req.OldObject != nil {
		old = b.req.OldObject.DeepCopy()
	}
	unknowns, err := prepare(prepared, old)
	if err != nil {
		b.indeterminate = because(ReasonRebuild, err.Error())
		return
	}
	b.unknowns = append(b.unknowns, unknowns...)
	b.prepared = prepared
	b.req.BeforeValidation = func(obj, old runtime.Object) error {
		_, err := prepare(obj, old)
		return err
	}
}

// decodeCustomResource does to a custom resource's patched object, in place, what the patcher's
// codec does (cel/schema Catalog.CustomResourceDecoder: pruning, embedded metadata, the
// schema's defaults).
func (r *Replayer) decodeCustomResource(t target, u *unstructured.Unstructured) error {
	if r.cat.catalog == nil || u == nil || kubescheme.Knows(u.GroupVersionKind()) {
		return nil
	}
	if decode, ok := r.cat.catalog.CustomResourceDecoder(u.GroupVersionKind()); ok {
		return decode(u.Object)
	}
	return nil
}
