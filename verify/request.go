package verify

import (
	"fmt"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Request is an admission request as the apiserver's handlers build it, before the
// ValidatingAdmissionPolicy plugin sees it.
type Request struct {
	// Operation is CREATE, UPDATE, DELETE or CONNECT.
	Operation admission.Operation
	// Resource is the requested resource, e.g. {"" v1 pods}.
	Resource schema.GroupVersionResource
	// SubResource is the requested subresource, e.g. "eviction", or empty.
	SubResource string
	// Kind is the kind of the object the request carries. When empty it is the kind the
	// Resources give for the resource and subresource (policy/v1 Eviction for pods/eviction).
	Kind schema.GroupVersionKind
	// Namespace and Name default to the object's (for DELETE, the old object's); a
	// namespaced resource without a namespace is in "default".
	Namespace, Name string
	// Object is the new object (CREATE, UPDATE; the options of a CONNECT); OldObject the
	// stored object (UPDATE, DELETE).
	Object, OldObject *unstructured.Unstructured
	// Options is the operation's options (CreateOptions, UpdateOptions, DeleteOptions);
	// when nil, the empty options of the operation, as the apiserver's handlers set them.
	Options *unstructured.Unstructured
	// DryRun is true for a dry-run request.
	DryRun bool
	// UserInfo is the requesting user.
	UserInfo UserInfo
	// Encoded says that Object is as kube-apiserver encodes a stored object of a built-in kind
	// (the response of a create or update), decoded as util/json decodes it (integers as
	// int64): a fixed point of the conversion to its typed object and back, which then changes
	// nothing of it. Where only validating policies run, admission is given it as it is, as
	// the apiserver's CEL admission reads an unstructured object; a mutating policy's patch is
	// applied to the typed object. Ignored for a kind the scheme does not know.
	Encoded bool
	// BeforeValidation, when set, is what the handler's store does to the object between
	// mutating and validating admission (a registry strategy's BeforeCreate or BeforeUpdate):
	// it is given the admission's object, after the MutatingAdmissionPolicies, and its old
	// object, and changes the object in place; an error refuses the request.
	BeforeValidation func(obj, old runtime.Object) error
}

// UserInfo is the authenticated user of a request, as in an AdmissionReview.
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// Info is the user as the apiserver's authentication gives it.
func (u UserInfo) Info() user.Info { return u.info() }

func (u UserInfo) info() user.Info {
	return &user.DefaultInfo{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

// attributes builds the admission attributes of the request.
func (e *Evaluator) attributes(req Request) (*recordingAttributes, error) {
	switch req.Operation {
	case admission.Create, admission.Update, admission.Delete, admission.Connect:
	default:
		return nil, fmt.Errorf("operation %q: want CREATE, UPDATE, DELETE or CONNECT", req.Operation)
	}
	gvr := req.Resource
	if gvr.Resource == "" || gvr.Version == "" {
		return nil, fmt.Errorf("resource %q: want version and resource", gvr.String())
	}
	kind := req.Kind
	if kind.Empty() {
		kind = e.resources.KindFor(gvr, req.SubResource)
		if kind.Empty() {
			return nil, fmt.Errorf("unknown resource %s", describeResource(gvr, req.SubResource))
		}
	}
	mainKind := e.resources.KindFor(gvr, "")
	namespaced := true
	if !mainKind.Empty() {
		m, err := e.resources.RESTMapper().RESTMapping(mainKind.GroupKind(), mainKind.Version)
		if err == nil {
			namespaced = m.Scope.Name() == meta.RESTScopeNameNamespace
		}
	}

	var obj runtime.Object
	var err error
	if req.Encoded && len(e.mhooks) == 0 && req.BeforeValidation == nil && req.Object != nil &&
		req.Object.GroupVersionKind() == kind && clientgoscheme.Scheme.Recognizes(kind) {
		obj = req.Object
	} else if obj, err = requestObject("object", req.Object, kind, !e.dropUnknown, false); err != nil {
		return nil, err
	}
	old, err := requestObject("oldObject", req.OldObject, kind, !e.dropUnknown, true)
	if err != nil {
		return nil, err
	}
	switch req.Operation {
	case admission.Create, admission.Connect:
		if obj == nil && req.Operation == admission.Create {
			return nil, fmt.Errorf("a CREATE request needs an object")
		}
		if old != nil {
			return nil, fmt.Errorf("a %s request has no oldObject", req.Operation)
		}
	case admission.Update:
		if obj == nil || old == nil {
			return nil, fmt.Errorf("an UPDATE request needs an object and an oldObject")
		}
	case admission.Delete:
		if obj != nil {
			return nil, fmt.Errorf("a DELETE request has no object (the deleted object is the oldObject)")
		}
	}

	namespace, name := req.Namespace, req.Name
	for _, u := range []*unstructured.Unstructured{req.Object, req.OldObject} {
		if u == nil {
			continue
		}
		if namespace == "" {
			namespace = u.GetNamespace()
		}
		if name == "" {
			name = u.GetName()
		}
	}
	switch {
	case gvr.Group == "" && gvr.Resource == "namespaces":
		// A namespace is its own namespace in a request (the request info of
		// /api/v1/namespaces/NAME, and the create handler for POST /api/v1/namespaces).
		namespace = name
	case !namespaced:
		if req.Namespace != "" {
			return nil, fmt.Errorf("namespace %q given for the cluster-scoped resource %s", req.Namespace, describeResource(gvr, ""))
		}
		namespace = ""
	case namespace == "":
		namespace = metav1.NamespaceDefault
	}

	options, err := operationOptions(req)
	if err != nil {
		return nil, err
	}
	a := admission.NewAttributesRecord(obj, old, kind, namespace, name, gvr, req.SubResource, req.Operation, options, req.DryRun, req.UserInfo.info())
	return &recordingAttributes{Attributes: a}, nil
}

func describeResource(gvr schema.GroupVersionResource, sub string) string {
	s := gvr.Resource
	if sub != "" {
		s += "/" + sub
	}
	return s + " in " + gvr.GroupVersion().String()
}

// requestObject converts an object of the request to the form the apiserver's admission sees
// after converting it to the request's version: typed for the built-in kinds; stored says it
// was read from storage (the old object), not decoded from the request.
func requestObject(field string, u *unstructured.Unstructured, kind schema.GroupVersionKind, strict, stored bool) (runtime.Object, error) {
	if u == nil {
		return nil, nil
	}
	// u is the caller's: copied before it is changed (the typed conversion does not change it
	// nor keep what it holds).
	given := u
	if u.GetAPIVersion() == "" && u.GetKind() == "" {
		u = u.DeepCopy()
		u.SetGroupVersionKind(kind)
	}
	if got := u.GroupVersionKind(); got != kind {
		return nil, fmt.Errorf("%s: a request for this resource carries %s %s, not %s %s", field, kind.GroupVersion(), kind.Kind, got.GroupVersion(), got.Kind)
	}
	typed, err := toTyped(u, strict)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if typed != nil {
		return typed, nil
	}
	if u == given {
		u = u.DeepCopy()
	}
	// A custom resource's metadata goes through the typed ObjectMeta when the apiextensions
	// apiserver decodes it (unstructuredSchemaCoercer): what ObjectMeta omits when empty
	// (an emptied labels map) is gone before admission; malformed metadata refuses a request
	// (400), and is dropped from an object read from storage (dropInvalidMetadata).
	meta, found, err := objectmeta.GetObjectMeta(u.Object, stored)
	if err != nil {
		return nil, fmt.Errorf("%s: metadata: %w", field, err)
	}
	if found {
		if err := objectmeta.SetObjectMeta(u.Object, meta); err != nil {
			return nil, fmt.Errorf("%s: metadata: %w", field, err)
		}
	}
	return u, nil
}

// operationOptions returns the options object the apiserver's handlers pass to admission: the
// request's, or the operation's empty options, with apiVersion meta.k8s.io/v1.
func operationOptions(req Request) (runtime.Object, error) {
	var opts runtime.Object
	switch req.Operation {
	case admission.Create:
		opts = &metav1.CreateOptions{}
	case admission.Update:
		opts = &metav1.UpdateOptions{}
	case admission.Delete:
		opts = &metav1.DeleteOptions{}
	default:
		if req.Options != nil {
			return nil, fmt.Errorf("a %s request has no options", req.Operation)
		}
		return nil, nil
	}
	gvk := metav1.SchemeGroupVersion.WithKind(reflectKind(opts))
	if req.Options != nil {
		content := req.Options.UnstructuredContent()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(content, opts, true); err != nil {
			return nil, fmt.Errorf("options: %w", err)
		}
		if k := req.Options.GetKind(); k != "" && k != gvk.Kind {
			return nil, fmt.Errorf("options: a %s request has %s, not %s", req.Operation, gvk.Kind, k)
		}
	}
	if req.DryRun {
		setDryRun(opts)
	}
	opts.GetObjectKind().SetGroupVersionKind(gvk)
	return opts, nil
}

func reflectKind(o runtime.Object) string {
	switch o.(type) {
	case *metav1.CreateOptions:
		return "CreateOptions"
	case *metav1.UpdateOptions:
		return "UpdateOptions"
	}
	return "DeleteOptions"
}

// setDryRun sets dryRun: [All] on options that do not say it already: the apiserver derives
// the request's dryRun from its options.
func setDryRun(o runtime.Object) {
	switch t := o.(type) {
	case *metav1.CreateOptions:
		if len(t.DryRun) == 0 {
			t.DryRun = []string{metav1.DryRunAll}
		}
	case *metav1.UpdateOptions:
		if len(t.DryRun) == 0 {
			t.DryRun = []string{metav1.DryRunAll}
		}
	case *metav1.DeleteOptions:
		if len(t.DryRun) == 0 {
			t.DryRun = []string{metav1.DryRunAll}
		}
	}
}

// recordingAttributes are the admission attributes with the audit annotations added to them
// kept, as the apiserver's audit layer (admission.WithAudit) reads them after the plugin ran.
type recordingAttributes struct {
	admission.Attributes
	mu          sync.Mutex
	annotations map[string]string
	// detached keeps the annotations from the wrapped record, which holds those of an earlier
	// evaluation of the same request (inServerOrder): it refuses an overwrite itself.
	detached bool
}

// AddAnnotation adds the annotation to the wrapped record, which checks the key and refuses
// overwrites exactly as the apiserver's does, and keeps it when accepted.
func (r *recordingAttributes) AddAnnotation(key, value string) error {
	return r.AddAnnotationWithLevel(key, value, auditinternal.LevelMetadata)
}

// AddAnnotationWithLevel is AddAnnotation at an audit level.
func (r *recordingAttributes) AddAnnotationWithLevel(key, value string, level auditinternal.Level) error {
	if !r.detached {
		if err := r.Attributes.AddAnnotationWithLevel(key, value, level); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.annotations[key]; ok && r.detached && old != value {
		return fmt.Errorf("admission annotations are not allowed to be overwritten, key:%q, old value: %q, new value:%q", key, old, value)
	}
	if r.annotations == nil {
		r.annotations = map[string]string{}
	}
	r.annotations[key] = value
	return nil
}
