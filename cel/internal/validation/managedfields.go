package validation

import (
	"fmt"
	"reflect"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	vapcschema "github.com/vapc-dev/vapc/cel/schema"
)

// kubernetesVersion is the release whose served API the field manager's types come from.
const kubernetesVersion = "1.37"

// requestFieldManager stands in for the manager of the create request, which the server
// takes from ?fieldManager= or the client's user agent ("kubectl-client-side-apply" for
// kubectl apply). It names the entry the field manager adds for the request, which is always
// valid; among entries of the request with the same time to the second, it decides their
// order and so the indices of errors.
const requestFieldManager = "kubectl-client-side-apply"

var (
	policyGVK          = admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy")
	bindingGVK         = admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding")
	mutatingPolicyGVK  = admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy")
	mutatingBindingGVK = admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding")
)

// ManagedFieldsOnCreate returns the managedFields of obj, a v1 ValidatingAdmissionPolicy,
// MutatingAdmissionPolicy or binding of either, as the server validates them: as
// the field manager of kube-apiserver's create handler leaves them, the entry of the request
// included, or nil when obj has none. The indices of the errors about managedFields are
// indices of this list, not of obj's.
func ManagedFieldsOnCreate(obj runtime.Object) ([]metav1.ManagedFieldsEntry, error) {
	return managedFieldsOnCreate(obj)
}

// managedFieldsOnCreate returns the managedFields of obj, a v1 policy or binding (validating or
// mutating), after the field manager of kube-apiserver's create handler
// (scope.FieldManager.UpdateNoErrors in k8s.io/apiserver pkg/endpoints/handlers/create.go)
// has processed them, for ValidateObjectMeta to validate.
//
// The field manager keeps the entries of the request when they all decode (an Apply or
// Update operation, an apiVersion, fieldsType FieldsV1, fields that parse), merges those of
// one manager, drops those whose fields the create takes over or whose apiVersion the server
// does not serve, caps the Update entries at 10 (folding the oldest into "ancient-changes"),
// adds the request's own entry and sorts them; otherwise it keeps only the request's entry.
// It runs the same code, with the types of the admissionregistration.k8s.io/v1 API that
// kube-apiserver v1.37 serves by default. A request without managedFields gets only the
// request's entry, which is always valid: nil is returned for it.
func managedFieldsOnCreate(obj runtime.Object) ([]metav1.ManagedFieldsEntry, error) {
	var gvk schema.GroupVersionKind
	var live runtime.Object
	var entries []metav1.ManagedFieldsEntry
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		gvk, live, entries = policyGVK, &admissionregistrationv1.ValidatingAdmissionPolicy{}, o.ManagedFields
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		gvk, live, entries = bindingGVK, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, o.ManagedFields
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		gvk, live, entries = mutatingPolicyGVK, &admissionregistrationv1.MutatingAdmissionPolicy{}, o.ManagedFields
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		gvk, live, entries = mutatingBindingGVK, &admissionregistrationv1.MutatingAdmissionPolicyBinding{}, o.ManagedFields
	default:
		return nil, fmt.Errorf("no field manager for %T", obj)
	}
	if len(entries) == 0 {
		return nil, nil
	}
	fm, err := createFieldManager(gvk)
	if err != nil {
		return nil, err
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	out, err := fm.Update(live, obj, requestFieldManager)
	if err != nil {
		// As UpdateNoErrors: the managedFields of the live object, which a create has not.
		return nil, nil
	}
	return out.(metav1.ObjectMetaAccessor).GetObjectMeta().GetManagedFields(), nil
}

var fieldManagers = sync.OnceValues(func() (map[schema.GroupVersionKind]*managedfields.FieldManager, error) {
	cat, err := vapcschema.Builtin(kubernetesVersion)
	if err != nil {
		return nil, err
	}
	tc, err := cat.TypeConverter(admissionregistrationv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	// The reset fields of the registry strategies (GetResetFields): the policy's status; the
	// binding has none.
	status := fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	policyReset := fieldpath.NewExcludeFilterSetMap(map[fieldpath.APIVersion]*fieldpath.Set{
		"admissionregistration.k8s.io/v1alpha1": status,
		"admissionregistration.k8s.io/v1beta1":  status,
		"admissionregistration.k8s.io/v1":       status,
	})
	hub := schema.GroupVersion{Group: admissionregistrationv1.GroupName, Version: runtime.APIVersionInternal}
	out := map[schema.GroupVersionKind]*managedfields.FieldManager{}
	// The mutating kinds have no status, and their strategies no reset fields.
	for gvk, reset := range map[schema.GroupVersionKind]map[fieldpath.APIVersion]fieldpath.Filter{policyGVK: policyReset, bindingGVK: nil, mutatingPolicyGVK: nil, mutatingBindingGVK: nil} {
		fm, err := managedfields.NewDefaultFieldManager(tc, versionConvertor{}, noDefaulter{}, versionConvertor{}, gvk, hub, "", reset)
		if err != nil {
			return nil, err
		}
		out[gvk] = fm
	}
	return out, nil
})

// createFieldManager returns the field manager of the create handler of the kind.
func createFieldManager(gvk schema.GroupVersionKind) (*managedfields.FieldManager, error) {
	fms, err := fieldManagers()
	if err != nil {
		return nil, fmt.Errorf("building the field manager: %w", err)
	}
	return fms[gvk], nil
}

// schemeKinds are the kinds and versions of policies and bindings kube-apiserver's scheme
// converts between, served or not: the field manager converts an object to the apiVersion of
// each entry, and an entry of a version the scheme does not know is dropped.
var schemeKinds = func() map[schema.GroupVersionKind]func() runtime.Object {
	out := map[schema.GroupVersionKind]func() runtime.Object{}
	for gv, news := range map[schema.GroupVersion][4]func() runtime.Object{
		admissionregistrationv1.SchemeGroupVersion: {
			func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
			func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
			func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicy{} },
			func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBinding{} },
		},
		admissionregistrationv1beta1.SchemeGroupVersion: {
			func() runtime.Object { return &admissionregistrationv1beta1.ValidatingAdmissionPolicy{} },
			func() runtime.Object { return &admissionregistrationv1beta1.ValidatingAdmissionPolicyBinding{} },
			func() runtime.Object { return &admissionregistrationv1beta1.MutatingAdmissionPolicy{} },
			func() runtime.Object { return &admissionregistrationv1beta1.MutatingAdmissionPolicyBinding{} },
		},
		admissionregistrationv1alpha1.SchemeGroupVersion: {
			func() runtime.Object { return &admissionregistrationv1alpha1.ValidatingAdmissionPolicy{} },
			func() runtime.Object { return &admissionregistrationv1alpha1.ValidatingAdmissionPolicyBinding{} },
			func() runtime.Object { return &admissionregistrationv1alpha1.MutatingAdmissionPolicy{} },
			func() runtime.Object { return &admissionregistrationv1alpha1.MutatingAdmissionPolicyBinding{} },
		},
	} {
		for i, gvk := range []schema.GroupVersionKind{policyGVK, bindingGVK, mutatingPolicyGVK, mutatingBindingGVK} {
			out[gv.WithKind(gvk.Kind)] = news[i]
		}
	}
	return out
}()

// versionConvertor converts policies and bindings between the versions of schemeKinds and the
// internal version, as the server's scheme does. The versions have the same fields, so an
// object converts as its JSON with another apiVersion.
type versionConvertor struct{}

// New implements runtime.ObjectCreater.
func (versionConvertor) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if n, ok := schemeKinds[gvk]; ok {
		return n(), nil
	}
	return nil, runtime.NewNotRegisteredErrForKind("vapc", gvk)
}

// Convert implements runtime.ObjectConvertor; the field manager does not use it.
func (versionConvertor) Convert(in, out, context any) error {
	return fmt.Errorf("converting %T to %T is not supported", in, out)
}

// ConvertFieldLabel implements runtime.ObjectConvertor; the field manager does not use it.
func (versionConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return "", "", fmt.Errorf("field labels of %s are not supported", gvk)
}

// ConvertToVersion implements runtime.ObjectConvertor.
func (versionConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	from := in.GetObjectKind().GroupVersionKind()
	if _, ok := in.(*unstructured.Unstructured); !ok {
		switch in.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			from = policyGVK
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			from = bindingGVK
		case *admissionregistrationv1.MutatingAdmissionPolicy:
			from = mutatingPolicyGVK
		case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
			from = mutatingBindingGVK
		}
	}
	if !known(from) {
		return nil, runtime.NewNotRegisteredErrForKind("vapc", from)
	}
	to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{from})
	if !ok || !known(to) {
		return nil, runtime.NewNotRegisteredErrForTarget("vapc", reflect.TypeOf(in), target)
	}
	u := &unstructured.Unstructured{}
	if src, ok := in.(*unstructured.Unstructured); ok {
		u = src.DeepCopy()
	} else {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
		if err != nil {
			return nil, err
		}
		u.Object = m
	}
	u.SetGroupVersionKind(to)
	if to.Version == runtime.APIVersionInternal {
		return u, nil
	}
	out, _ := versionConvertor{}.New(to)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(to)
	return out, nil
}

// known reports whether the server's scheme has the kind, in the internal version included.
func known(gvk schema.GroupVersionKind) bool {
	if gvk.Version == runtime.APIVersionInternal {
		gvk.Version = admissionregistrationv1.SchemeGroupVersion.Version
	}
	_, ok := schemeKinds[gvk]
	return ok
}

// noDefaulter stands in for the scheme's defaulting, which the field manager applies to
// server-side apply requests only.
type noDefaulter struct{}

// Default implements runtime.ObjectDefaulter.
func (noDefaulter) Default(runtime.Object) {}
