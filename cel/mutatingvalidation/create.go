package mutatingvalidation

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicybinding"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/resolver"

	"github.com/vapc-dev/vapc/cel/internal/validation"
)

// A create reaches the registry's validation after the create handler and the store have
// prepared the object: owner references without their duplicates and managedFields as the
// field manager leaves them (the handler), a name generated from generateName, the system
// fields filled, the namespace of a cluster-scoped object cleared and the strategy's
// PrepareForCreate (the store, rest.BeforeCreate). validateCreate prepares the metadata as the
// checks of the validating kinds do (validation.MetaForCreate), then runs the server's own
// strategy: PrepareForCreate and rest.ValidateCreate (the API's validation, the static-suffix
// check and the common metadata checks).

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

// validateCreate validates a create of obj (a defaulted v1 MutatingAdmissionPolicy or binding,
// whose metadata m is) as kube-apiserver does; internal is the object in the internal version,
// as validated. obj is left as the server validates it.
func validateCreate(obj runtime.Object, m *metav1.ObjectMeta, internal runtime.Object) (field.ErrorList, error) {
	kinds, _, err := legacyscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	gvk := kinds[0]
	strategy := strategies[gvk]
	if strategy == nil {
		return nil, fmt.Errorf("no registry strategy for %s", gvk)
	}
	// The create handler and the store, as for the validating kinds.
	prepared, err := validation.MetaForCreate(obj)
	if err != nil {
		return nil, err
	}
	*m = *prepared
	rest.FillObjectMetaSystemFields(m)
	if err := legacyscheme.Scheme.Convert(obj, internal, nil); err != nil {
		return nil, err
	}
	ctx := genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIPrefix: "apis",
		APIGroup: gvk.Group, APIVersion: gvk.Version, Resource: resources[gvk.Kind],
	})
	strategy.PrepareForCreate(ctx, internal)
	return rest.ValidateCreate(ctx, internal, strategy), nil
}
