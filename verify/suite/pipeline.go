package suite

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
)

// A case with `pipeline: true` is sent as a request through kube-apiserver's own request
// pipeline (verify/internal/apiserver), as replay sends the requests of a log: its object is
// the request body, decoded, defaulted, converted and prepared by the resource's registry
// strategy, and the built-in admission plugins kube-apiserver enables by default run on it
// before the policies, reading the suite's objects as the cluster. Its oldObject is the stored
// object. What the policies see is then the object kube-apiserver would validate for that
// request, not the object as the case writes it.

// pipelineServer is the process's request pipeline.
func pipelineServer() (*apiserver.Server, error) { return apiserver.Shared() }

// plugins are the default admission plugins, built once; a request sets their cluster.
var plugins = sync.OnceValues(func() (*apiserver.Plugins, error) {
	return apiserver.NewPlugins(apiserver.DefaultPlugins())
})

// pluginsMu serialises the requests that use plugins: they read one cluster at a time.
var pluginsMu sync.Mutex

// servePipeline decides a case's request sent through the request pipeline.
func (e *env) servePipeline(ctx context.Context, req verify.Request) (_ *verify.Decision, objs objectPair, err error) {
	srv, err := pipelineServer()
	if err != nil {
		return nil, objs, err
	}
	if !srv.Serves(req.Resource, req.SubResource) {
		return nil, objs, fmt.Errorf("pipeline: the request pipeline serves the built-in resources of Kubernetes %s, not %s", verify.KubernetesVersion, describeResource(req.Resource, req.SubResource))
	}
	name := req.Name
	for _, o := range []*unstructured.Unstructured{req.Object, req.OldObject} {
		if name == "" && o != nil {
			name = o.GetName()
		}
	}
	namespace := req.Namespace
	for _, o := range []*unstructured.Unstructured{req.Object, req.OldObject} {
		if namespace == "" && o != nil {
			namespace = o.GetNamespace()
		}
	}
	r := apiserver.Request{User: req.UserInfo.Info(), UserAgent: "vapc-test"}
	collection := false
	switch req.Operation {
	case admission.Create:
		r.Method, collection = http.MethodPost, req.SubResource == ""
	case admission.Update:
		r.Method = http.MethodPut
	case admission.Delete:
		r.Method = http.MethodDelete
	default:
		return nil, objs, fmt.Errorf("pipeline: operation %s is not sent through the pipeline (CREATE, UPDATE and DELETE are)", req.Operation)
	}
	path := resourcePath(req.Resource, namespace)
	if !collection {
		if name == "" {
			return nil, objs, fmt.Errorf("pipeline: the request needs a name (resourceName, or the object's)")
		}
		path += "/" + url.PathEscape(name)
		if req.SubResource != "" {
			path += "/" + req.SubResource
		}
	}
	if req.DryRun {
		path += "?dryRun=All"
	}
	r.URI = path
	var body *unstructured.Unstructured
	switch req.Operation {
	case admission.Create, admission.Update:
		body = req.Object
	case admission.Delete:
		body = req.Options
	}
	if body != nil {
		if r.Body, err = body.MarshalJSON(); err != nil {
			return nil, objs, fmt.Errorf("pipeline: %w", err)
		}
	}
	stored := &caseObjects{gr: req.Resource.GroupResource(), namespace: namespace, name: name}
	if old := req.OldObject; old != nil {
		old = old.DeepCopy()
		if old.GetResourceVersion() == "" && req.Object != nil {
			// The update asks for the stored object's resourceVersion: the case's oldObject
			// is that object.
			old.SetResourceVersion(req.Object.GetResourceVersion())
		}
		if stored.stored, err = old.MarshalJSON(); err != nil {
			return nil, objs, fmt.Errorf("pipeline: oldObject: %w", err)
		}
	}
	p, err := plugins()
	if err != nil {
		return nil, objs, err
	}
	pluginsMu.Lock()
	defer pluginsMu.Unlock()
	p.SetCluster(suiteCluster{e.store})
	defer p.SetCluster(nil)
	var decisions []*verify.Decision
	var mut *verify.Mutation
	ex := &apiserver.Exchange{Objects: stored, Plugins: p}
	if e.eval.HasMutatingPolicies() {
		ex.MutatingPolicies = func(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
			if mut == nil {
				if objs.input, err = e.eval.RequestObject(a, o); err != nil {
					return apierrors.NewInternalError(err)
				}
			}
			m, err := e.eval.AdmitAttributes(ctx, a, o)
			if err != nil {
				return apierrors.NewInternalError(err)
			}
			mut = e.eval.Then(mut, m)
			if objs.mutated, err = e.eval.RequestObject(a, o); err != nil {
				return apierrors.NewInternalError(err)
			}
			if !m.Allowed && m.Status != nil {
				return &apierrors.StatusError{ErrStatus: *m.Status}
			}
			return nil
		}
	}
	ex.Validate = func(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
		dec, err := e.eval.EvaluateAttributes(ctx, a, o)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		if objs.validated, err = e.eval.RequestObject(a, o); err != nil {
			return apierrors.NewInternalError(err)
		}
		decisions = append(decisions, dec)
		if !dec.Allowed && dec.Status != nil {
			return &apierrors.StatusError{ErrStatus: *dec.Status}
		}
		return nil
	}
	resp, err := srv.Do(ctx, r, ex)
	switch {
	case err != nil:
		return nil, objs, fmt.Errorf("pipeline: %w", err)
	case resp.Unknown != nil:
		return nil, objs, fmt.Errorf("pipeline: the request read %v, which the case does not give", resp.Unknown)
	}
	finish := func(d *verify.Decision) (*verify.Decision, objectPair, error) {
		d.Mutation = mut
		d.Notes = append(d.Notes, mut.Notes()...)
		if mut != nil && len(mut.Changes) > 0 {
			d.Object = objs.validated
		}
		if mut == nil {
			objs.input, objs.mutated = objs.validated, objs.validated
		}
		return d, objs, nil
	}
	for _, d := range decisions {
		if !d.Allowed {
			return finish(d)
		}
	}
	if len(decisions) > 0 {
		return finish(decisions[len(decisions)-1])
	}
	// Refused before validating admission, or completed without it.
	dec := &verify.Decision{Allowed: resp.Code < 300, Code: int32(resp.Code)}
	note := "the request did not reach validating admission"
	if resp.Status != nil {
		dec.Reason, dec.Message, dec.Status = resp.Status.Reason, resp.Status.Message, resp.Status
		note += ": " + resp.Status.Message
	}
	dec.Notes = append(dec.Notes, note)
	return finish(dec)
}

// resourcePath is the path of a resource's collection.
func resourcePath(gvr schema.GroupVersionResource, namespace string) string {
	p := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		p = "/api/" + gvr.Version
	}
	if namespace != "" {
		p += "/namespaces/" + url.PathEscape(namespace)
	}
	return p + "/" + gvr.Resource
}

func describeResource(gvr schema.GroupVersionResource, sub string) string {
	s := gvr.GroupResource().String()
	if sub != "" {
		s += "/" + sub
	}
	return s
}

// caseObjects is what the pipeline's storage holds for a case: the old object.
type caseObjects struct {
	gr              schema.GroupResource
	namespace, name string
	stored          []byte
}

func (o *caseObjects) Get(gr schema.GroupResource, namespace, name string) ([]byte, bool, error) {
	if gr == o.gr && namespace == o.namespace && name == o.name {
		return o.stored, o.stored != nil, nil
	}
	return nil, false, fmt.Errorf("give it as the case's oldObject")
}

func (o *caseObjects) List(gr schema.GroupResource, namespace string) ([][]byte, error) {
	return nil, fmt.Errorf("a case does not list %s", gr)
}

// suiteCluster is what the admission plugins read: the suite's objects. A namespace or
// ServiceAccount the suite does not give is taken to exist, holding its name only, as the
// evaluator takes a request's namespace to exist.
type suiteCluster struct{ store verify.ObjectStore }

func (c suiteCluster) Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	obj, err := c.store.Get(gvr, namespace, name)
	if err == nil || !apierrors.IsNotFound(err) {
		return obj, err
	}
	switch gvr.GroupResource() {
	case schema.GroupResource{Resource: "namespaces"}:
		return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}, nil
	case schema.GroupResource{Resource: "serviceaccounts"}:
		return &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}, nil
	}
	return nil, err
}

func (c suiteCluster) List(gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error) {
	return c.store.List(gvr, namespace, labels.Everything())
}

// Pipelined says whether a case is sent through the request pipeline: its own setting, else
// the suite's.
func (s *Suite) Pipelined(c *Case) bool { return s.pipelineOf(c) }

// pipelineOf says whether a case is sent through the pipeline: its own setting, else the
// suite's.
func (s *Suite) pipelineOf(c *Case) bool {
	if c.Pipeline != nil {
		return *c.Pipeline
	}
	return s.Pipeline
}
