package mutatingvalidation

import (
	"context"
	"fmt"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicybinding"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/resolver"

	"github.com/vapc-dev/vapc/cel/internal/validation"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
)

// A create reaches the registry's validation after the create handler and the store have
// prepared the object: owner references without their duplicates and managedFields as the
// field manager leaves them (the handler), a name generated from generateName, the system
// fields filled, the namespace of a cluster-scoped object cleared and the strategy's
// PrepareForCreate (the store, rest.BeforeCreate). validateCreate runs those steps with the
// server's own strategies, scheme and field manager, then rest.ValidateCreate: the strategy's
// validation (the API's validation and the static-suffix check) and the common metadata checks.

// strategies are the registry strategies of the two kinds, without an authorizer: the
// paramKind and paramRef checks authorize the requesting user, whom a check does not have
// (the binding's strategy wants a resolver all the same).
var strategies = map[schema.GroupVersionKind]rest.RESTCreateStrategy{
	admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy"):        mutatingadmissionpolicy.NewStrategy(nil, unresolved),
	admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding"): mutatingadmissionpolicybinding.NewStrategy(nil, nil, unresolved),
}

// unresolved resolves no kind: without an authorizer, nothing asks it.
var unresolved = resolver.ResourceResolverFunc(func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	return schema.GroupVersionResource{}, fmt.Errorf("%s: not resolved by a check", gvk)
})

// resources are the kinds' resources.
var resources = map[string]string{
	"MutatingAdmissionPolicy":        "mutatingadmissionpolicies",
	"MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings",
}

// validateCreate validates a create of obj (a defaulted v1 MutatingAdmissionPolicy or binding)
// as kube-apiserver does; internal is the object in the internal version, as validated.
func validateCreate(obj runtime.Object, internal runtime.Object) (field.ErrorList, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	strategy := strategies[gvk]
	if strategy == nil {
		return nil, fmt.Errorf("no registry strategy for %s", gvk)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	// The create handler.
	if refs, dups := validation.DedupOwnerReferences(m.GetOwnerReferences()); len(dups) > 0 {
		m.SetOwnerReferences(refs)
	}
	managed, err := managedFieldsOnCreate(obj, gvk)
	if err != nil {
		return nil, err
	}
	m.SetManagedFields(managed)
	// The store.
	if m.GetGenerateName() != "" && m.GetName() == "" {
		m.SetName(validation.GeneratedName(m.GetGenerateName()))
	}
	rest.FillObjectMetaSystemFields(m)
	if err := legacyscheme.Scheme.Convert(obj, internal, nil); err != nil {
		return nil, err
	}
	im, err := meta.Accessor(internal)
	if err != nil {
		return nil, err
	}
	ctx := genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIPrefix: "apis",
		APIGroup: gvk.Group, APIVersion: gvk.Version, Resource: resources[gvk.Kind],
	})
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(rest.ExpectedNamespaceForScope(metav1.NamespaceNone, strategy.NamespaceScoped()), im); err != nil {
		return nil, err
	}
	strategy.PrepareForCreate(ctx, internal)
	return rest.ValidateCreate(ctx, internal, strategy), nil
}

// managedFieldsOnCreate returns obj's managedFields as the create handler's field manager
// leaves them (scope.FieldManager.UpdateNoErrors over an empty live object), or nil when obj
// has none: the request's own entry is always valid.
func managedFieldsOnCreate(obj runtime.Object, gvk schema.GroupVersionKind) ([]metav1.ManagedFieldsEntry, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if len(m.GetManagedFields()) == 0 {
		return nil, nil
	}
	fm, err := fieldManager(gvk)
	if err != nil {
		return nil, err
	}
	live, err := legacyscheme.Scheme.New(gvk.GroupKind().WithVersion(runtime.APIVersionInternal))
	if err != nil {
		return nil, err
	}
	in, err := legacyscheme.Scheme.New(gvk.GroupKind().WithVersion(runtime.APIVersionInternal))
	if err != nil {
		return nil, err
	}
	if err := legacyscheme.Scheme.Convert(obj, in, nil); err != nil {
		return nil, err
	}
	out, err := fm.Update(live, in, validation.RequestFieldManager)
	if err != nil {
		// As UpdateNoErrors: the managedFields of the live object, which a create has not.
		return nil, nil
	}
	om, err := meta.Accessor(out)
	if err != nil {
		return nil, err
	}
	return om.GetManagedFields(), nil
}

// fieldManagers are the create handler's field managers of the two kinds: the server's scheme
// converts, defaults and creates, with the type converter of admissionregistration.k8s.io/v1.
var fieldManagers = sync.OnceValues(func() (map[schema.GroupVersionKind]*managedfields.FieldManager, error) {
	cat, err := vapcschema.Builtin(validation.KubernetesVersion)
	if err != nil {
		return nil, err
	}
	tc, err := cat.TypeConverter(admissionregistrationv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	hub := schema.GroupVersion{Group: admissionregistration.GroupName, Version: runtime.APIVersionInternal}
	out := map[schema.GroupVersionKind]*managedfields.FieldManager{}
	for gvk := range strategies {
		fm, err := managedfields.NewDefaultFieldManager(tc, legacyscheme.Scheme, legacyscheme.Scheme, legacyscheme.Scheme, gvk, hub, "", nil)
		if err != nil {
			return nil, err
		}
		out[gvk] = fm
	}
	return out, nil
})

func fieldManager(gvk schema.GroupVersionKind) (*managedfields.FieldManager, error) {
	fms, err := fieldManagers()
	if err != nil {
		return nil, fmt.Errorf("building the field manager: %w", err)
	}
	return fms[gvk], nil
}
