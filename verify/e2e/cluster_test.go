package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/e2e/harness"
	"github.com/vapc-dev/vapc/verify/replay"
)

// cluster drives a harness server: it writes objects, sends requests as any user, and waits
// until the admission plugin sees every write made so far (sync).
type cluster struct {
	t         *testing.T
	s         *harness.Server
	admin     kubernetes.Interface
	dyn       dynamic.Interface
	catalog   *vapcschema.Catalog // the built-in API and the CRDs the test defines
	mapper    meta.RESTMapper
	resources verify.Resources
	gen       int
	// barrierReady says the barrier's namespace and ServiceAccount exist.
	barrierReady bool
	// barriers are the param kinds sync waits for, ConfigMap and Node always, and the custom
	// kinds the test adds (see addBarrier).
	barriers []barrier

	mu        sync.Mutex
	responses []response // every response to a request sent through as

	// policyWritten is when the test last wrote an admission policy or binding of its own
	// (not a barrier's): sync waits until the replay takes it as compiled (policyCompiled).
	policyWritten time.Time
}

// policyCompiled is how long after a write of an admission policy or binding the replay takes
// kube-apiserver's policy source to have compiled it (it compiles a second after its last
// refresh, and compiling takes time: within two seconds and the informers' lag, a request the
// policy gives a verdict is policy-source indeterminate), with a margin.
const policyCompiled = 2*time.Second + replay.DefaultLag + 100*time.Millisecond

// response is what the apiserver answered to one request of the test.
type response struct {
	auditID  string
	method   string
	url      string
	code     int
	warnings []string // the texts of the Warning headers
}

func newCluster(t *testing.T, s *harness.Server) *cluster {
	t.Helper()
	cat, err := vapcschema.Builtin(verify.KubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, s: s, admin: s.Clientset(), catalog: cat, mapper: cat.RESTMapper(), resources: cat, barriers: []barrier{
		{name: "vapc-barrier-configmap", apiVersion: "v1", kind: "ConfigMap", msg: "'configmap=' + params.data.gen", ref: admissionregistrationv1.ParamRef{Name: "vapc-barrier", Namespace: barrierNS}},
		{name: "vapc-barrier-node", apiVersion: "v1", kind: "Node", msg: "'node=' + params.metadata.labels.gen", ref: admissionregistrationv1.ParamRef{Name: "vapc-barrier"}},
	}}
	c.dyn = c.dynamicFor(rest.ImpersonationConfig{})
	return c
}

// dynamicFor returns a dynamic client acting as the impersonated user (admin when empty) that
// records the audit ID and the warnings of every response.
func (c *cluster) dynamicFor(imp rest.ImpersonationConfig) dynamic.Interface {
	d, err := dynamic.NewForConfig(c.recordingConfig(imp))
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

// recordingConfig returns a client configuration acting as the impersonated user (admin when
// empty) whose every response is recorded in c.responses, warnings included (rather than
// logged).
func (c *cluster) recordingConfig(imp rest.ImpersonationConfig) *rest.Config {
	cfg := c.s.RESTConfig()
	cfg.Impersonate = imp
	cfg.QPS, cfg.Burst = 1000, 1000
	cfg.WarningHandler = rest.NoWarnings{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				r := response{auditID: resp.Header.Get("Audit-Id"), method: req.Method, url: req.URL.String(), code: resp.StatusCode}
				if hs := resp.Header.Values("Warning"); len(hs) > 0 {
					ws, _ := utilnet.ParseWarningHeaders(hs)
					for _, w := range ws {
						r.warnings = append(r.warnings, w.Text)
					}
				}
				c.mu.Lock()
				c.responses = append(c.responses, r)
				c.mu.Unlock()
			}
			return resp, err
		})
	})
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// lastAuditID is the audit ID of the last response recorded.
// auditIDsSince returns the audit IDs of the responses recorded after the first n, and how many
// there are now.
func (c *cluster) auditIDsSince(n int) ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for _, r := range c.responses[min(n, len(c.responses)):] {
		ids = append(ids, r.auditID)
	}
	return ids, len(c.responses)
}

func (c *cluster) lastAuditID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.responses) == 0 {
		return ""
	}
	return c.responses[len(c.responses)-1].auditID
}

// resource maps an object's kind to its resource.
func (c *cluster) resource(u *unstructured.Unstructured) (schema.GroupVersionResource, bool) {
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		c.t.Fatalf("%s %s: %v", gvk, u.GetName(), err)
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace
}

func (c *cluster) client(d dynamic.Interface, u *unstructured.Unstructured) dynamic.ResourceInterface {
	gvr, namespaced := c.resource(u)
	if namespaced {
		ns := u.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		return d.Resource(gvr).Namespace(ns)
	}
	return d.Resource(gvr)
}

// put creates the object or replaces the stored one with it (as admin), status included.
func (c *cluster) put(ctx context.Context, u *unstructured.Unstructured) *unstructured.Unstructured {
	c.t.Helper()
	out, err := c.tryPut(ctx, u)
	if err != nil {
		c.t.Fatalf("writing %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return out
}

func (c *cluster) tryPut(ctx context.Context, u *unstructured.Unstructured) (out *unstructured.Unstructured, err error) {
	untilSchemaKnown(func() error {
		// A controller may write the object between the Get and a write (the node lifecycle
		// controller, when the controllers run): read it and write it again.
		return retry.RetryOnConflict(putBackoff, func() error {
			out, err = c.tryPutOnce(ctx, u)
			return err
		})
	})
	if err == nil && u.GroupVersionKind().Group == "admissionregistration.k8s.io" && !strings.HasPrefix(u.GetName(), "vapc-barrier") {
		c.policyWritten = time.Now()
	}
	return out, err
}

// putBackoff spaces tryPut's attempts when a controller writes the object between its read
// and its write: the node lifecycle and TTL controllers write a node every few seconds, the
// node status heartbeat of its kubelet more often.
var putBackoff = wait.Backoff{Steps: 20, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Cap: time.Second}

// untilSchemaKnown calls send again, for up to 30 seconds, while it fails because a
// MutatingAdmissionPolicy matches a custom resource whose new CRD's schema its plugin has not
// fetched yet (it reads the server's OpenAPI every 5 seconds, and refuses the kind until then).
func untilSchemaKnown(send func() error) {
	for deadline := time.Now().Add(30 * time.Second); ; {
		st, ok := statusOf(send())
		if !ok || st.Code != 503 || !strings.Contains(st.Message, "CustomResourceDefinitions are created") || time.Now().After(deadline) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *cluster) tryPutOnce(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	u = u.DeepCopy()
	ri := c.client(c.dyn, u)
	status, hasStatus := u.Object["status"]
	cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
	var out *unstructured.Unstructured
	switch {
	case apierrors.IsNotFound(err):
		u.SetResourceVersion("") // a stored object's, which a create may not carry
		out, err = ri.Create(ctx, u, metav1.CreateOptions{})
	case err != nil:
		return nil, err
	default:
		u.SetResourceVersion(cur.GetResourceVersion())
		if !hasStatus && cur.Object["status"] != nil && u.GetKind() == "Node" {
			// A node written without status loses the one it has.
			u.Object["status"] = map[string]any{}
			status, hasStatus = u.Object["status"], true
		}
		out, err = ri.Update(ctx, u, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, err
	}
	if hasStatus && hasStatusSubresource(u) {
		out.Object["status"] = status
		return ri.UpdateStatus(ctx, out, metav1.UpdateOptions{})
	}
	return out, err
}

func hasStatusSubresource(u *unstructured.Unstructured) bool {
	switch u.GetKind() {
	case "Node", "Pod", "Namespace":
		return true
	}
	return false
}

// remove deletes the object at once (grace period 0), and waits until it is gone.
func (c *cluster) remove(ctx context.Context, u *unstructured.Unstructured) {
	c.t.Helper()
	ri := c.client(c.dyn, u)
	err := ri.Delete(ctx, u.GetName(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		c.t.Fatalf("deleting %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	c.waitGone(ctx, ri, u.GetName())
}

func (c *cluster) waitGone(ctx context.Context, ri dynamic.ResourceInterface, name string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cur, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err == nil && len(cur.GetFinalizers()) > 0 && cur.GetKind() != "Namespace" {
			cur.SetFinalizers(nil)
			_, _ = ri.Update(ctx, cur, metav1.UpdateOptions{})
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s still exists after 30s: %v", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// defineCRD creates a CustomResourceDefinition, waits until the apiserver has established it,
// and adds it to the cluster's catalog; it returns when the test saw it established.
func (c *cluster) defineCRD(ctx context.Context, u *unstructured.Unstructured) time.Time {
	c.t.Helper()
	crdsGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := c.dyn.Resource(crdsGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("creating CustomResourceDefinition %s: %v", u.GetName(), err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		c.t.Fatal(err)
	}
	if err := c.catalog.AddCRD(crd); err != nil {
		c.t.Fatalf("CustomResourceDefinition %s: %v", u.GetName(), err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cur, err := c.dyn.Resource(crdsGVR).Get(ctx, u.GetName(), metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
			for _, cd := range conds {
				if m, ok := cd.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return time.Now()
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("CustomResourceDefinition %s not established within 30s: %v", u.GetName(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// namespace creates a namespace with labels and its default ServiceAccount.
func (c *cluster) namespace(ctx context.Context, name string, labels map[string]string) {
	c.t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	ns.SetLabels(labels)
	c.put(ctx, ns)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
	if _, err := c.admin.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		c.t.Fatal(err)
	}
}

// grantAll binds cluster-admin to a user, so that requests impersonating it reach admission.
func (c *cluster) grantAll(ctx context.Context, user string) {
	c.t.Helper()
	name := "e2e-admin-" + strings.NewReplacer(":", "-", "@", "-").Replace(user)
	crb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": name},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
	}}
	c.put(ctx, crb)
}

// The barrier: two policies that read a ConfigMap and a Node as params and the namespace
// vapc-barrier, bound to probe objects of the current generation. The apiserver's admission
// plugin reads policies, bindings and params through informers, one watch per resource, that
// deliver changes in order: once the probes see generation N, every write made before the
// barrier's own is visible to admission.
const barrierNS = "vapc-barrier"

// barrier is a param kind the barrier waits for: its policy reads the param object named by
// ref, whose generation msg gives.
type barrier struct {
	name, apiVersion, kind, msg string
	ref                         admissionregistrationv1.ParamRef
	// param is the param object of a generation, for a custom kind; ConfigMap and Node params
	// are written by sync itself.
	param func(gen string) *unstructured.Unstructured
}

// addBarrier makes sync wait for the param kind too, and until the admission plugin has
// resolved the kind: that takes up to 30 seconds once its CRD is established (see
// paramResolveDelay in verify/replay).
func (c *cluster) addBarrier(b barrier) { c.barriers = append(c.barriers, b) }

func barrierPolicy(name, apiVersion, paramKind, msg string, gen int) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: apiVersion, Kind: paramKind},
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": barrierNS}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "false",
				MessageExpression: fmt.Sprintf("'policy=%d ' + %s + ' ns=' + namespaceObject.metadata.labels['gen']", gen, msg),
			}},
		},
	}
}

func barrierBinding(name string, param admissionregistrationv1.ParamRef, gen int) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	param.ParameterNotFoundAction = ptr.To(admissionregistrationv1.DenyAction)
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ParamRef:          &param,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				"vapc.dev/barrier": name, "vapc.dev/barrier-gen": strconv.Itoa(gen),
			}}},
		},
	}
}

// sync waits until the admission plugin sees every write made so far: policies, bindings,
// ConfigMaps, Nodes and Namespaces.
func (c *cluster) sync(ctx context.Context) {
	c.t.Helper()
	c.gen++
	gen := strconv.Itoa(c.gen)
	c.barrierNamespace(ctx)
	c.put(ctx, obj(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "vapc-barrier", "namespace": barrierNS}, "data": map[string]any{"gen": gen}}))
	c.put(ctx, obj(map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "vapc-barrier", "labels": map[string]any{"gen": gen}}}))
	c.put(ctx, obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": barrierNS, "labels": map[string]any{"gen": gen}}}))
	probes := map[string]string{}
	for _, b := range c.barriers {
		if b.param != nil {
			c.put(ctx, b.param(gen))
		}
		c.put(ctx, toUnstructured(c.t, barrierPolicy(b.name, b.apiVersion, b.kind, b.msg, c.gen)))
		c.put(ctx, toUnstructured(c.t, barrierBinding(b.name, b.ref, c.gen)))
		kind := strings.ToLower(b.kind)
		probes[b.name] = fmt.Sprintf("policy=%s %s=%s ns=%s", gen, kind, gen, gen)
	}
	// A custom param kind's first sync waits for the admission plugin's discovery (30 seconds).
	deadline := time.Now().Add(60 * time.Second)
	for name, want := range probes {
		for {
			probe := obj(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
				"name": "probe", "namespace": barrierNS,
				"labels": map[string]any{"vapc.dev/barrier": name, "vapc.dev/barrier-gen": gen},
			}})
			_, err := c.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(barrierNS).
				Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil && strings.Contains(err.Error(), want) {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("sync %s: the admission plugin did not see generation %s within 60s; last probe: %v", name, gen, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The barrier shows the policies written before it compiled; the replay takes them as
	// compiled a policy source's second after they were written.
	time.Sleep(time.Until(c.policyWritten.Add(policyCompiled)))
}

func obj(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }

func toUnstructured(t *testing.T, o runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// statusOf returns the API status of a refused request.
func statusOf(err error) (metav1.Status, bool) {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return s.Status(), true
	}
	return metav1.Status{}, false
}

// auditEvent is an audit.k8s.io/v1 Event.
type auditEvent = auditv1.Event

// forEachFinalEvent calls fn with the ResponseComplete and Panic events of the log.
func forEachFinalEvent(t *testing.T, path string, fn func(*auditEvent)) {
	t.Helper()
	forEachFinalEventLine(t, path, func(_ int, e *auditEvent) { fn(e) })
}

// forEachFinalEventLine is forEachFinalEvent with the (1-based) line of each event.
func forEachFinalEventLine(t *testing.T, path string, fn func(int, *auditEvent)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for line := 1; sc.Scan(); line++ {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if e.Stage == auditv1.StageResponseComplete || e.Stage == auditv1.StagePanic {
			fn(line, &e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// barrierNamespace creates the barrier's namespace and its default ServiceAccount once: before
// any generated policy exists, so that none can refuse them.
func (c *cluster) barrierNamespace(ctx context.Context) {
	if !c.barrierReady {
		c.namespace(ctx, barrierNS, nil)
		c.barrierReady = true
	}
}
