package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify/e2e/harness"
	"github.com/vapc-dev/vapc/verify/replay"
)

// TestMutatingWebhookReplay: a mutating webhook changes pods and ConfigMaps before
// ValidatingAdmissionPolicy runs, and the policies deny what it added. A replay cannot call the
// webhook; it applies the patches the log records (at level Request and above) and decides
// what the server decided. At level Metadata the log holds neither objects nor patches, and
// the replay says so rather than decide from the request alone. A MutatingAdmissionPolicy
// leaves no trace in the log: the replay knows it from the log's writes, and the object of a
// request it may have changed is not known unless the log holds the response.
func TestMutatingWebhookReplay(t *testing.T) {
	policy, err := filepath.Abs("testdata/webhook/audit-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := harness.Start(t, harness.WithAPIServerFlags("--audit-policy-file="+policy))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c := newCluster(t, s)
	hookURL, caBundle := startInjector(t)

	namespaces := []string{"wh-rr", "wh-req", "wh-meta", "wh-off", "wh-map", "wh-map-req"}
	for _, ns := range namespaces {
		labels := map[string]string{"webhook": "on"}
		switch ns {
		case "wh-off":
			labels = nil
		case "wh-map", "wh-map-req":
			labels = map[string]string{"map": "on"}
		}
		c.namespace(ctx, ns, labels)
	}
	policies, bindings := webhookGuards()
	for _, p := range policies {
		c.put(ctx, toUnstructured(t, p))
	}
	for _, b := range bindings {
		c.put(ctx, toUnstructured(t, b))
	}
	c.put(ctx, toUnstructured(t, injectorConfig(hookURL, caBundle, map[string]string{"webhook": "on"})))
	mp, mb := labellingPolicy()
	c.put(ctx, toUnstructured(t, mp))
	c.put(ctx, toUnstructured(t, mb))
	c.sync(ctx)
	waitForInjector(ctx, t, c, "wh-rr")
	waitForLabellingPolicy(ctx, t, c, "wh-map")

	// The scenario, in each namespace; the denials are those of the namespaces the webhook
	// mutates in.
	type step struct {
		what string
		err  error
	}
	var steps []step
	pods := c.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	cms := c.dyn.Resource(configMapsGVR)
	for _, ns := range namespaces {
		try := func(what string, err error) { steps = append(steps, step{ns + ": " + what, err}) }
		_, err := pods.Namespace(ns).Create(ctx, webhookPod(ns, "blue"), metav1.CreateOptions{})
		try("a blue pod", err)
		_, err = pods.Namespace(ns).Create(ctx, webhookPod(ns, "red"), metav1.CreateOptions{})
		try("a red pod", err)
		_, err = cms.Namespace(ns).Create(ctx, configMap(ns, "blocked", nil, map[string]any{"block": "x"}), metav1.CreateOptions{})
		try("a configmap that blocks", err)
		_, err = cms.Namespace(ns).Create(ctx, configMap(ns, "open", nil, map[string]any{"a": "b"}), metav1.CreateOptions{})
		try("a configmap", err)
		_, err = cms.Namespace(ns).Patch(ctx, "open", types.MergePatchType, []byte(`{"data":{"block":"y"}}`), metav1.PatchOptions{})
		try("a patch that blocks", err)
	}
	denied := map[string]bool{}
	for _, st := range steps {
		ns, _, _ := strings.Cut(st.what, ":")
		var wantDenied bool
		switch ns {
		case "wh-off":
		case "wh-map", "wh-map-req":
			wantDenied = strings.Contains(st.what, "blocks")
		default:
			wantDenied = strings.Contains(st.what, "red") || strings.Contains(st.what, "blocks")
		}
		if (st.err != nil) != wantDenied {
			t.Fatalf("%s: err %v, want denied %v: the webhook or the policies do not work as the test expects", st.what, st.err, wantDenied)
		}
		if st.err != nil {
			if stt, ok := statusOf(st.err); ok {
				denied[stt.Message] = true
			}
		}
	}
	c.put(ctx, configMap("wh-rr", "wh-end", nil, nil))
	last := c.lastAuditID()
	waitForAuditEvent(ctx, t, s.AuditLogPath(), func(e *auditEvent) bool {
		return string(e.AuditID) == last && e.Stage == "ResponseComplete"
	})

	r, err := replay.New(policies, bindings, replay.WithCheckRecorded(true))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*replay.Record
	sum, err := r.Run(context.Background(), []replay.Source{{Name: s.AuditLogPath()}}, func(rec *replay.Record) error {
		if strings.HasPrefix(rec.Namespace, "wh-") {
			recs = append(recs, rec)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range sum.Disagreements {
		t.Errorf("disagreement at line %d: %s", d.Line, d.Detail)
	}
	decidedDenials := map[string]int{}
	mapIndeterminate := map[string]int{}
	for _, rec := range recs {
		if rec.Changed {
			t.Errorf("wrong decision at line %d (%s): recorded %s, predicted %s", rec.Line, describeRecord(rec), rec.Recorded, rec.Decision)
		}
		switch {
		case strings.HasPrefix(rec.Namespace, "wh-map") && rec.Decision == replay.DecisionIndeterminate:
			if !strings.Contains(rec.Indeterminate, "MutatingAdmissionPolicy wh-map") {
				t.Errorf("indeterminate at line %d (%s): %s, want the MutatingAdmissionPolicy named", rec.Line, describeRecord(rec), rec.Indeterminate)
			}
			mapIndeterminate[rec.Namespace]++
		case rec.Namespace == "wh-meta":
			if rec.Decision != replay.DecisionIndeterminate {
				t.Errorf("line %d (%s): decided at level Metadata, where the log holds no object", rec.Line, describeRecord(rec))
			}
		case rec.Decision == replay.DecisionIndeterminate:
			t.Errorf("indeterminate at line %d (%s): %s", rec.Line, describeRecord(rec), rec.Indeterminate)
		case rec.Decision == replay.DecisionDeny:
			decidedDenials[rec.Namespace]++
		}
	}
	// Three denials in each namespace the webhook mutates in and whose log holds the patches.
	for _, ns := range []string{"wh-rr", "wh-req"} {
		if decidedDenials[ns] != 3 {
			t.Errorf("%s: %d denials decided, want 3", ns, decidedDenials[ns])
		}
	}
	// The refused ConfigMap writes the policy changed are not decided (2), nor, at level
	// Request, the admitted create (3).
	for ns, want := range map[string]int{"wh-map": 2, "wh-map-req": 3} {
		if mapIndeterminate[ns] != want {
			t.Errorf("%s: %d requests indeterminate for the MutatingAdmissionPolicy, want %d", ns, mapIndeterminate[ns], want)
		}
	}
	if len(denied) == 0 {
		t.Errorf("the server denied nothing")
	}
}

// labellingPolicy is a MutatingAdmissionPolicy that labels ConfigMaps mapped=yes in the
// namespaces labelled map=on.
func labellingPolicy() (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "wh-map"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"map": "on"}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}},
			},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: "Object{metadata: Object.metadata{labels: {'mapped': 'yes'}}}",
				},
			}},
		},
	}
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "wh-map"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "wh-map"},
	}
	return p, b
}

// waitForLabellingPolicy waits until the server runs the MutatingAdmissionPolicy: a dry-run
// ConfigMap comes back labelled.
func waitForLabellingPolicy(ctx context.Context, t *testing.T, c *cluster, namespace string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := c.dyn.Resource(configMapsGVR).Namespace(namespace).Create(ctx, configMap(namespace, "vapc-map-probe", nil, nil),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil && out.GetLabels()["mapped"] == "yes" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server does not run the MutatingAdmissionPolicy within 30s (last probe: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// webhookGuards deny what the injector adds: a sidecar in a red pod, a blocking key in an
// injected ConfigMap.
func webhookGuards() ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	guard := func(name, resource string, ops []admissionregistrationv1.OperationType, expr, msg string) *admissionregistrationv1.ValidatingAdmissionPolicy {
		return &admissionregistrationv1.ValidatingAdmissionPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{
					NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
						Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"wh-rr", "wh-req", "wh-meta", "wh-off", "wh-map", "wh-map-req"},
					}}},
					ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: ops,
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
					}}},
				},
				Validations: []admissionregistrationv1.Validation{{Expression: expr, Message: msg}},
			},
		}
	}
	bind := func(name string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		}
	}
	ps := []*admissionregistrationv1.ValidatingAdmissionPolicy{
		guard("wh-pods", "pods", []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			"!(object.metadata.?labels.?color.orValue('') == 'red' && object.spec.containers.exists(c, c.name == 'sidecar'))", "red pods get no sidecar"),
		guard("wh-configmaps", "configmaps", []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			"!(has(object.data) && 'block' in object.data && object.data.?injected.orValue('') == 'yes')", "injected configmaps do not block"),
		guard("wh-mapped", "configmaps", []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			"!(has(object.data) && 'block' in object.data && object.metadata.?labels.?mapped.orValue('') == 'yes')", "mapped configmaps do not block"),
	}
	return ps, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{bind("wh-pods"), bind("wh-configmaps"), bind("wh-mapped")}
}

func webhookPod(ns, color string) *unstructured.Unstructured {
	return obj(map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": color, "namespace": ns, "labels": map[string]any{"color": color}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27"}}},
	})
}

// injectorConfig registers the injector for pods and ConfigMaps in the namespaces with the
// labels.
func injectorConfig(url string, caBundle []byte, labels map[string]string) *admissionregistrationv1.MutatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "vapc-e2e-injector"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "inject.e2e.vapc.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules: []admissionregistrationv1.RuleWithOperations{
				{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}},
				{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}},
			},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: labels},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
}

// waitForInjector waits until the server calls the injector for a ConfigMap in the namespace:
// the audit event of a dry-run create says the webhook mutated it (a policy may still refuse
// the create).
func waitForInjector(ctx context.Context, t *testing.T, c *cluster, namespace string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		// With labels and data: a MutatingAdmissionPolicy whose JSON patch adds to either
		// (failurePolicy Fail) would otherwise refuse the probe before the webhook is called.
		_, err := c.dyn.Resource(configMapsGVR).Namespace(namespace).Create(ctx, configMap(namespace, fmt.Sprintf("vapc-injector-probe-%d", i), map[string]any{"vapc-probe": "yes"}, map[string]any{"probe": "yes"}),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		id := c.lastAuditID()
		ev := waitForAuditEvent(ctx, t, c.s.AuditLogPath(), func(e *auditEvent) bool {
			return string(e.AuditID) == id && e.Stage == "ResponseComplete"
		})
		for k, v := range ev.Annotations {
			if strings.HasPrefix(k, "mutation.webhook.admission.k8s.io/") && strings.Contains(v, `"mutated":true`) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server does not call the injector within 30s (last probe: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startInjector serves a mutating webhook over TLS on loopback: it labels pods injected=yes and
// adds a sidecar container, and adds injected=yes to a ConfigMap's data. It returns its URL
// and the CA bundle that verifies it.
func startInjector(t *testing.T) (string, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vapc-e2e-ca"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(injector))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL + "/inject", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

func injector(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	req := review.Request
	var obj struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	_ = json.Unmarshal(req.Object.Raw, &obj)
	var patch []map[string]any
	switch req.Resource.Resource {
	case "pods":
		if obj.Metadata.Labels == nil {
			patch = append(patch, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]any{}})
		}
		patch = append(patch,
			map[string]any{"op": "add", "path": "/metadata/labels/injected", "value": "yes"},
			map[string]any{"op": "add", "path": "/spec/containers/-", "value": map[string]any{"name": "sidecar", "image": "busybox:1.36"}})
	case "configmaps":
		if obj.Data == nil {
			patch = append(patch, map[string]any{"op": "add", "path": "/data", "value": map[string]any{"injected": "yes"}})
		} else {
			patch = append(patch, map[string]any{"op": "add", "path": "/data/injected", "value": "yes"})
		}
	}
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if len(patch) > 0 {
		raw, _ := json.Marshal(patch)
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = raw, &pt
	}
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}
