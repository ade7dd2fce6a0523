package apiserver

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	celschema "github.com/vapc-dev/vapc/cel/schema"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	api "k8s.io/kubernetes/pkg/apis/core"
)

func testServer(t *testing.T) *Server {
	t.Helper()
	s, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// objects are stored objects by resource/namespace/name; a nil value is one not known.
type objects map[string][]byte

func (o objects) Get(gr schema.GroupResource, namespace, name string) ([]byte, bool, error) {
	raw, ok := o[gr.String()+"/"+namespace+"/"+name]
	switch {
	case !ok:
		return nil, false, nil
	case raw == nil:
		return nil, false, errors.New("not known")
	}
	return raw, true, nil
}

func (o objects) List(schema.GroupResource, string) ([][]byte, error) {
	return nil, errors.New("not listed")
}

// cluster is what the admission plugins read, by resource/namespace/name.
type cluster map[string]runtime.Object

func (c cluster) Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	if o, ok := c[gvr.Resource+"/"+namespace+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func (c cluster) List(schema.GroupVersionResource, string) ([]runtime.Object, error) { return nil, nil }

// validated records the attributes validating admission sees.
type validated struct{ attrs []admission.Attributes }

func (v *validated) exchange(objs Objects, plugins *Plugins) *Exchange {
	return &Exchange{Objects: objs, Plugins: plugins, Validate: func(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
		v.attrs = append(v.attrs, a)
		return nil
	}}
}

// TestPodCreate: validating admission sees the pod kube-apiserver would store, not the request
// body: defaulted, prepared by the pod strategy, mutated by the default admission plugins, with
// the managedFields of a manager named after the client.
func TestPodCreate(t *testing.T) {
	s := testServer(t)
	plugins, err := NewPlugins(DefaultPlugins())
	if err != nil {
		t.Fatal(err)
	}
	plugins.SetCluster(cluster{
		"namespaces//default":             &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		"serviceaccounts/default/default": &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"}},
	})
	v := &validated{}
	body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`
	resp, err := s.Do(context.Background(), Request{Method: http.MethodPost, URI: "/api/v1/namespaces/default/pods", Body: []byte(body),
		User: &user.DefaultInfo{Name: "alice"}, UserAgent: "kubectl/v1.37.0 (linux/amd64) kubernetes/abc"}, v.exchange(NoObjects{}, plugins))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != http.StatusCreated || len(v.attrs) != 1 {
		t.Fatalf("Do = %d %v with %d admissions, want 201 and 1", resp.Code, resp.Status, len(v.attrs))
	}
	pod, ok := v.attrs[0].GetObject().(*api.Pod)
	if !ok {
		t.Fatalf("object %T, want the internal Pod", v.attrs[0].GetObject())
	}
	var tolerations []string
	for _, tol := range pod.Spec.Tolerations {
		tolerations = append(tolerations, tol.Key)
	}
	got := map[string]any{
		"phase": string(pod.Status.Phase), "qos": string(pod.Status.QOSClass), "pullPolicy": string(pod.Spec.Containers[0].ImagePullPolicy),
		"serviceAccount": pod.Spec.ServiceAccountName, "volumes": len(pod.Spec.Volumes), "tolerations": tolerations,
		"priority": *pod.Spec.Priority, "manager": pod.ManagedFields[0].Manager, "namespace": pod.Namespace, "uid": pod.UID != "",
	}
	want := map[string]any{
		"phase": "Pending", "qos": "BestEffort", "pullPolicy": "Always", "serviceAccount": "default", "volumes": 1,
		"tolerations": []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}, "priority": int32(0),
		"manager": "kubectl", "namespace": "default", "uid": true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("admitted pod mismatch (-want +got):\n%s", diff)
	}
}

// countedGets is a cluster that counts the reads of each resource.
type countedGets struct {
	cluster
	gets map[string]int
}

func (c *countedGets) Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	c.gets[gvr.Resource]++
	return c.cluster.Get(gvr, namespace, name)
}

// TestPodCreateWithoutServiceAccount: a pod whose namespace has no default service account is
// refused as kube-apiserver refuses it once the ServiceAccount plugin has asked its client
// for the account ten times, 100 to 200 ms apart (getServiceAccount): with the same status and
// message, the client answering the first time (the replay's cluster does not change while
// the plugin waits), so that the account is read twice, from the lister and the client.
func TestPodCreateWithoutServiceAccount(t *testing.T) {
	s := testServer(t)
	plugins, err := NewPlugins(DefaultPlugins())
	if err != nil {
		t.Fatal(err)
	}
	c := &countedGets{cluster: cluster{"namespaces//default": &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}, gets: map[string]int{}}
	plugins.SetCluster(c)
	for _, sa := range []string{"", "robot"} {
		c.gets["serviceaccounts"] = 0
		body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"serviceAccountName":"` + sa + `","containers":[{"name":"c","image":"nginx"}]}}`
		resp, err := s.Do(context.Background(), Request{Method: http.MethodPost, URI: "/api/v1/namespaces/default/pods", Body: []byte(body),
			User: &user.DefaultInfo{Name: "alice"}}, (&validated{}).exchange(NoObjects{}, plugins))
		if err != nil {
			t.Fatal(err)
		}
		name := sa
		if name == "" {
			name = "default"
		}
		want := `pods "p" is forbidden: error looking up service account default/` + name + `: serviceaccount "` + name + `" not found`
		if resp.Code != http.StatusForbidden || resp.Status == nil || resp.Status.Message != want {
			t.Errorf("service account %q: %d %+v, want 403 %q", name, resp.Code, resp.Status, want)
		}
		if n := c.gets["serviceaccounts"]; n != 2 {
			t.Errorf("service account %q read %d times, want 2 (the lister, the client once)", name, n)
		}
	}
}

// TestPatchAndStorage: a patch applies to the stored object the Objects give, whatever it
// lacks that a stored object always has, and a read the Objects cannot answer fails the
// request and says what was not known.
func TestPatchAndStorage(t *testing.T) {
	s := testServer(t)
	ns := []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns1","labels":{"tier":"gold"}}}`)
	tests := []struct {
		name     string
		objects  objects
		code     int
		tier     string
		unknown  bool
		admitted int
	}{
		{"stored", objects{"namespaces//ns1": ns}, http.StatusOK, "silver", false, 1},
		{"absent", objects{}, http.StatusNotFound, "", false, 0},
		{"not known", objects{"namespaces//ns1": nil}, http.StatusServiceUnavailable, "", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &validated{}
			resp, err := s.Do(context.Background(), Request{Method: http.MethodPatch, URI: "/api/v1/namespaces/ns1", ContentType: "application/merge-patch+json",
				Body: []byte(`{"metadata":{"labels":{"tier":"silver"}}}`), User: &user.DefaultInfo{Name: "alice"}}, v.exchange(tt.objects, nil))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Code != tt.code || (resp.Unknown != nil) != tt.unknown || len(v.attrs) != tt.admitted {
				t.Fatalf("Do = %d %v (unknown %v) with %d admissions, want %d (unknown %v) with %d", resp.Code, resp.Status, resp.Unknown, len(v.attrs), tt.code, tt.unknown, tt.admitted)
			}
			if tt.code == http.StatusNotFound && (resp.Status == nil || resp.Status.Reason != metav1.StatusReasonNotFound || resp.Status.Message != `namespaces "ns1" not found`) {
				t.Errorf("status %+v, want NotFound: namespaces \"ns1\" not found", resp.Status)
			}
			if tt.admitted == 0 {
				return
			}
			obj, old := v.attrs[0].GetObject().(*api.Namespace), v.attrs[0].GetOldObject().(*api.Namespace)
			if obj.Labels["tier"] != tt.tier || old.Labels["tier"] != "gold" || old.ResourceVersion != storedVersion {
				t.Errorf("object tier %q, old tier %q rv %q; want %q, gold, %s", obj.Labels["tier"], old.Labels["tier"], old.ResourceVersion, tt.tier, storedVersion)
			}
		})
	}
}

// TestSelectPlugins: --enable-admission-plugins and --disable-admission-plugins apply to the
// defaults; a plugin a replay cannot run is an error.
func TestSelectPlugins(t *testing.T) {
	got, err := SelectPlugins([]string{"AlwaysPullImages"}, []string{"ServiceAccount", "PodSecurity"})
	if err != nil {
		t.Fatal(err)
	}
	has := map[string]bool{}
	for _, n := range got {
		has[n] = true
	}
	if !has["AlwaysPullImages"] || has["ServiceAccount"] || has["PodSecurity"] || !has["DefaultTolerationSeconds"] {
		t.Errorf("SelectPlugins = %v", got)
	}
	if _, err := SelectPlugins([]string{"ImagePolicyWebhook"}, nil); err == nil {
		t.Errorf("SelectPlugins(ImagePolicyWebhook) succeeded, want an error: it needs a webhook")
	}
	if _, err := SelectPlugins(nil, []string{"NoSuchPlugin"}); err == nil {
		t.Errorf("SelectPlugins(disable NoSuchPlugin) succeeded, want an error")
	}
}

// TestEquivalentResources: the server's EquivalentResourceRegistry keys resources by their etcd
// prefix, as kube-apiserver's does, so that cohabiting resources of two groups are equivalent.
func TestEquivalentResources(t *testing.T) {
	s := testServer(t)
	for _, tc := range []struct {
		gvr  schema.GroupVersionResource
		want []schema.GroupVersionResource
	}{
		{schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"},
			[]schema.GroupVersionResource{{Version: "v1", Resource: "events"}, {Group: "events.k8s.io", Version: "v1", Resource: "events"}}},
		{schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"},
			[]schema.GroupVersionResource{{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}, {Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}}},
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}}},
	} {
		got := s.EquivalentResources().EquivalentResourcesFor(tc.gvr, "")
		sort.Slice(got, func(i, j int) bool { return got[i].String() < got[j].String() })
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("EquivalentResourcesFor(%s) (-want +got):\n%s", tc.gvr, diff)
		}
	}
}

// TestCreatesOnUpdate: the stores' own update strategies say which resources an update
// creates (a lease, an event, a service, RBAC), which not (a config map, a node, a pod), and
// the Server says it does not know a resource it has no store for.
func TestCreatesOnUpdate(t *testing.T) {
	s := testServer(t)
	type answer struct{ Creates, Known bool }
	for _, tc := range []struct {
		gr   schema.GroupResource
		want answer
	}{
		{schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, answer{true, true}},
		{schema.GroupResource{Resource: "events"}, answer{true, true}},
		{schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, answer{true, true}},
		// RBAC's stores are wrapped in the escalation check's (policybased.Storage), which
		// shows no strategy, and the namespace REST holds its store: their registries'.
		{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, answer{true, true}},
		{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}, answer{true, true}},
		{schema.GroupResource{Resource: "namespaces"}, answer{false, true}},
		{schema.GroupResource{Resource: "services"}, answer{true, true}},
		{schema.GroupResource{Resource: "configmaps"}, answer{false, true}},
		{schema.GroupResource{Resource: "nodes"}, answer{false, true}},
		{schema.GroupResource{Resource: "pods"}, answer{false, true}},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, answer{false, true}},
		{schema.GroupResource{Group: "example.com", Resource: "widgets"}, answer{false, false}},
	} {
		var got answer
		got.Creates, got.Known = s.CreatesOnUpdate(tc.gr)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("CreatesOnUpdate(%s) (-want +got):\n%s", tc.gr, diff)
		}
	}
}

// TestDeleteLeaves: the stores' own delete strategies say what a deletion leaves.
func TestDeleteLeaves(t *testing.T) {
	s := testServer(t)
	zero, ten := int64(0), int64(10)
	pods := schema.GroupResource{Resource: "pods"}
	configMaps := schema.GroupResource{Resource: "configmaps"}
	const deleting = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n","deletionTimestamp":"2099-01-01T00:00:30Z","deletionGracePeriodSeconds":30},"spec":{"nodeName":"w","containers":[{"name":"c","image":"i"}]}}`
	for _, tc := range []struct {
		name    string
		gr      schema.GroupResource
		obj     string
		options *metav1.DeleteOptions
		want    Deletion
	}{
		{"a scheduled pod: graceful", pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n"},"spec":{"nodeName":"w","terminationGracePeriodSeconds":45,"containers":[{"name":"c","image":"i"}]}}`, nil,
			Deletion{Remains: true, Marked: true, GracePeriodSeconds: 45}},
		{"a scheduled pod, grace period 0", pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n"},"spec":{"nodeName":"w","containers":[{"name":"c","image":"i"}]}}`, &metav1.DeleteOptions{GracePeriodSeconds: &zero}, Deletion{}},
		{"an unscheduled pod: at once", pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, nil, Deletion{}},
		{"a pod being deleted: pending", pods, deleting, nil, Deletion{Remains: true, GracePeriodSeconds: 30}},
		{"a pod being deleted, a shorter grace period", pods, deleting, &metav1.DeleteOptions{GracePeriodSeconds: &ten}, Deletion{Remains: true, GracePeriodSeconds: 10, Shortened: true}},
		{"a pod being deleted, shortened to none", pods, deleting, &metav1.DeleteOptions{GracePeriodSeconds: &zero}, Deletion{}},
		{"a pod being deleted with no grace period left", pods, strings.Replace(deleting, `"deletionGracePeriodSeconds":30`, `"deletionGracePeriodSeconds":0`, 1), nil, Deletion{}},
		{"a pod being deleted, shortened to none, with a finalizer", pods, strings.Replace(deleting, `"namespace":"n",`, `"namespace":"n","finalizers":["x/y"],`, 1), &metav1.DeleteOptions{GracePeriodSeconds: &zero}, Deletion{Remains: true, Shortened: true}},
		{"a scheduled pod of generation 1: graceful, generation 2", pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n","generation":1},"spec":{"nodeName":"w","containers":[{"name":"c","image":"i"}]}}`, nil,
			Deletion{Remains: true, Marked: true, GracePeriodSeconds: 30, Generation: 2}},
		{"an unscheduled pod of generation 3 with a finalizer: generation 4", pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n","generation":3,"finalizers":["x/y"]},"spec":{"containers":[{"name":"c","image":"i"}]}}`, nil,
			Deletion{Remains: true, Marked: true, Generation: 4}},
		{"a ConfigMap", configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n"}}`, nil, Deletion{}},
		{"a ConfigMap with a finalizer", configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n","finalizers":["x/y"]}}`, nil, Deletion{Remains: true, Marked: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.DeleteLeaves(tc.gr, []byte(tc.obj), tc.options)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DeleteLeaves (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJobCreateLabels: a Job created without labels gets its pod template's labels
// (batch/v1 SetDefaults_Job assigns the template's map itself), and the job strategy then
// adds the job-name and controller-uid labels to that map: validating admission sees them on
// the Job too, as kube-apiserver's does.
func TestJobCreateLabels(t *testing.T) {
	s := testServer(t)
	v := &validated{}
	body := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"default"},"spec":{"template":{"metadata":{"labels":{"app":"x"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`
	resp, err := s.Do(context.Background(), Request{Method: http.MethodPost, URI: "/apis/batch/v1/namespaces/default/jobs", Body: []byte(body),
		User: &user.DefaultInfo{Name: "alice"}}, v.exchange(NoObjects{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != http.StatusCreated || len(v.attrs) != 1 {
		t.Fatalf("Do = %d %v with %d admissions, want 201 and 1", resp.Code, resp.Status, len(v.attrs))
	}
	acc, err := meta.Accessor(v.attrs[0].GetObject())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range acc.GetLabels() {
		got = append(got, k)
	}
	sort.Strings(got)
	want := []string{"app", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name", "controller-uid", "job-name"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Job's labels at admission (-want +got):\n%s", diff)
	}
}

// TestStoredShared: the stores share what they decode of a stored object (storedCache). A
// request that writes the object (a patch, a status update, a graceful deletion that marks it,
// a deletion) leaves the shared object as it was decoded, and the same request over the same
// JSON in another slice is served the same.
func TestStoredShared(t *testing.T) {
	s := testServer(t)
	pods := schema.GroupResource{Resource: "pods"}
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default","resourceVersion":"5","uid":"u1","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}],"nodeName":"n1"},"status":{"phase":"Running"}}`
	uri := "/api/v1/namespaces/default/pods/p"
	tests := []struct {
		name     string
		req      Request
		code     int
		admitted int
	}{
		{"patch", Request{Method: http.MethodPatch, URI: uri, ContentType: "application/merge-patch+json", Body: []byte(`{"metadata":{"labels":{"app":"db"}}}`)}, http.StatusOK, 1},
		{"status update", Request{Method: http.MethodPut, URI: uri + "/status", Body: []byte(strings.Replace(pod, `"Running"`, `"Succeeded"`, 1))}, http.StatusOK, 1},
		{"graceful deletion", Request{Method: http.MethodDelete, URI: uri}, http.StatusOK, 1},
		{"deletion", Request{Method: http.MethodDelete, URI: uri, Body: []byte(`{"gracePeriodSeconds":0}`)}, http.StatusOK, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.User = &user.DefaultInfo{Name: "alice"}
			shared, err := s.stored.decode(pods, []byte(pod))
			if err != nil {
				t.Fatal(err)
			}
			want := shared.DeepCopyObject()
			var writes [2][]Write
			for i := range writes {
				v := &validated{}
				resp, err := s.Do(context.Background(), tt.req, v.exchange(objects{"pods/default/p": []byte(pod)}, nil))
				if err != nil {
					t.Fatal(err)
				}
				if resp.Code != tt.code || len(v.attrs) != tt.admitted {
					t.Fatalf("pass %d: Do = %d %v with %d admissions, want %d and %d", i, resp.Code, resp.Status, len(v.attrs), tt.code, tt.admitted)
				}
				writes[i] = resp.Writes
			}
			if again, err := s.stored.decode(pods, []byte(pod)); err != nil || again != shared {
				t.Fatalf("the stored JSON decoded again: %p (%v), want the shared %p", again, err, shared)
			}
			if diff := cmp.Diff(want, shared); diff != "" {
				t.Errorf("the request changed the shared object (-decoded +after):\n%s", diff)
			}
			// A deletion is marked at the server's clock.
			clock := cmp.Transformer("clock", func(m metav1.ObjectMeta) metav1.ObjectMeta {
				if m.DeletionTimestamp != nil {
					m.DeletionTimestamp = &metav1.Time{}
				}
				return m
			})
			if diff := cmp.Diff(writes[0], writes[1], clock); diff != "" {
				t.Errorf("the second pass wrote otherwise (-first +second):\n%s", diff)
			}
			if len(writes[0]) == 0 {
				t.Errorf("no writes: the request did not reach the store")
			}
		})
	}
}

// TestDeleteCollectionOfOneName: a deletecollection whose field selector names one object
// reads that object alone, as the store does (ListPredicate's MatchesSingle: etcd reads its
// key, not the namespace's), so the namespace's other objects need not be known.
func TestDeleteCollectionOfOneName(t *testing.T) {
	s := testServer(t)
	cm := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1","namespace":"a","resourceVersion":"5"}}`)
	for _, tt := range []struct {
		name     string
		uri      string
		code     int
		unknown  bool
		admitted int
	}{
		{"named", "/api/v1/namespaces/a/configmaps?fieldSelector=metadata.name%3Dcm1", http.StatusOK, false, 1},
		{"named, absent", "/api/v1/namespaces/a/configmaps?fieldSelector=metadata.name%3Dcm2", http.StatusOK, false, 0},
		{"all of the namespace", "/api/v1/namespaces/a/configmaps", http.StatusServiceUnavailable, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := &validated{}
			resp, err := s.Do(context.Background(), Request{Method: http.MethodDelete, URI: tt.uri, User: &user.DefaultInfo{Name: "alice"}},
				v.exchange(objects{"configmaps/a/cm1": cm}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Code != tt.code || (resp.Unknown != nil) != tt.unknown || len(v.attrs) != tt.admitted {
				t.Errorf("Do = %d %v (unknown %v) with %d admissions, want %d (unknown %v) with %d", resp.Code, resp.Status, resp.Unknown, len(v.attrs), tt.code, tt.unknown, tt.admitted)
			}
		})
	}
}

// TestLeadingKindPlain: the decoder-free reading of a stored object's kind agrees with the
// decoder's wherever it answers, and leaves the rest to it.
func TestLeadingKindPlain(t *testing.T) {
	for _, raw := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{}}`,
		`{"kind":"Pod","apiVersion":"v1"}`,
		` { "apiVersion" : "apps/v1" ,	"kind" : "Deployment" }`,
		`{"apiVersion":"v1","metadata":{},"kind":"Pod"}`,
		`{"apiVersion":"v1","apiVersion":"v2","kind":"Pod"}`,
		`{"apiVersion":"v\u0031","kind":"Pod"}`,
		`{"apiVersion":"a/b/c","kind":"Pod"}`,
		`{"apiVersion":"v1","kind":""}`,
		`{"apiVersion":"v1","kind":"Pöd"}`,
		`{"apiVersion":1,"kind":"Pod"}`,
		`{"apiVersion":"v1"`,
		`{"apiVersion":"v1",`,
		`["apiVersion","v1"]`,
		``,
	} {
		want, wantOK := leadingKindDecoded([]byte(raw))
		got, ok := leadingKindPlain([]byte(raw))
		if ok && (!wantOK || got != want) {
			t.Errorf("leadingKindPlain(%s) = %v, the decoder's %v (%v)", raw, got, want, wantOK)
		}
		if all, allOK := leadingKind([]byte(raw)); all != want || allOK != wantOK {
			t.Errorf("leadingKind(%s) = %v, %v; the decoder's %v, %v", raw, all, allOK, want, wantOK)
		}
	}
	if _, ok := leadingKindPlain([]byte(`{"apiVersion":"v1","kind":"Pod"}`)); !ok {
		t.Error("leadingKindPlain does not read the common case")
	}
}

// TestServesEveryWrittenResource: the pipeline serves every resource and subresource
// kube-apiserver 1.37 serves by default that takes a write an admission policy sees (the
// catalog's discovery; the reviews and the admission policies and bindings are kept from every
// policy). A resource it did not serve was rebuilt from the body alone, without the server's
// defaulting and strategy (webhook configurations: a label's update denied, the defaulted
// timeout missing). serviceaccounts/token is not served: its store signs a token with the
// server's keys; the replay gives a TokenRequest what that store sets before admission
// (tokenRequestDefaults in package replay).
func TestServesEveryWrittenResource(t *testing.T) {
	srv, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := celschema.Builtin("1.37")
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{"authentication.k8s.io": true, "authorization.k8s.io": true}
	policies := map[string]bool{"validatingadmissionpolicies": true, "validatingadmissionpolicybindings": true, "mutatingadmissionpolicies": true, "mutatingadmissionpolicybindings": true}
	var missing []string
	for _, gv := range cat.GroupVersions() {
		if !gv.ServedByDefault || gv.Custom || kept[gv.GroupVersion.Group] {
			continue
		}
		for _, name := range cat.Resources(gv.GroupVersion) {
			if gv.GroupVersion.Group == "admissionregistration.k8s.io" && policies[name] {
				continue
			}
			gvr := gv.GroupVersion.WithResource(name)
			info, _ := cat.Resource(gvr, "")
			for _, sub := range append([]string{""}, info.Subresources...) {
				si, _ := cat.Resource(gvr, sub)
				if !slices.ContainsFunc(si.Verbs, func(v string) bool { return v == "create" || v == "update" || v == "patch" || v == "delete" }) {
					continue
				}
				if !srv.Serves(gvr, sub) && !(gvr.Group == "" && name == "serviceaccounts" && sub == "token") {
					missing = append(missing, strings.TrimSuffix(gvr.String()+"/"+sub, "/"))
				}
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("the pipeline does not serve %d written resources: %v", len(missing), missing)
	}
}
