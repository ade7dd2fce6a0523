package verify_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
)

// inTreePolicies reads the in-tree guards of policies/.
func inTreePolicies(b *testing.B) ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	b.Helper()
	set, diags := cel.ReadPaths(nil, filepath.Join("..", "policies"))
	if len(diags.Without(cel.Info).Without(cel.Warning)) > 0 {
		b.Fatalf("policies: %v", diags)
	}
	var ps []*admissionregistrationv1.ValidatingAdmissionPolicy
	for _, p := range set.Policies {
		ps = append(ps, p.ValidatingAdmissionPolicy)
	}
	var bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, bd := range set.Bindings {
		bs = append(bs, bd.ValidatingAdmissionPolicyBinding)
	}
	return ps, bs
}

// BenchmarkNew compiles the three in-tree guards into an Evaluator.
func BenchmarkNew(b *testing.B) {
	ps, bs := inTreePolicies(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := verify.New(ps, bs, verify.WithResources(catalog)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluate decides one request with the in-tree guards over a store of 20 Kosmos
// nodes (the params of kosmos-node-not-ready) and the eviction-toleration-floor ConfigMap: a
// pod DELETE by the node controller (one validation per Kosmos node) and a pod CREATE with
// tolerations.
func BenchmarkEvaluate(b *testing.B) {
	ps, bs := inTreePolicies(b)
	store := verify.NewMemoryStore(catalog.RESTMapper())
	for i := 0; i < 20; i++ {
		n := object(b, fmt.Sprintf(`{apiVersion: v1, kind: Node, metadata: {name: kosmos-%d, labels: {kosmos.io/node: "true"}}, status: {conditions: [{type: Ready, status: "True"}]}}`, i))
		if err := store.Put(n); err != nil {
			b.Fatal(err)
		}
	}
	cm := object(b, `{apiVersion: v1, kind: ConfigMap, metadata: {name: eviction-toleration-floor, namespace: kube-system}, data: {minTolerationSeconds: "60"}}`)
	if err := store.Put(cm); err != nil {
		b.Fatal(err)
	}
	e, err := verify.New(ps, bs, verify.WithResources(catalog), verify.WithStore(store))
	if err != nil {
		b.Fatal(err)
	}
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podKind := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	pod := object(b, `
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web}}
spec:
  nodeName: kosmos-3
  containers: [{name: web, image: nginx}]
  tolerations:
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
`)
	for _, tc := range []struct {
		name string
		req  verify.Request
	}{
		{"pod-delete", verify.Request{
			Operation: admission.Delete, Resource: pods, Kind: podKind, Namespace: "shop", Name: "web-0",
			OldObject: pod, UserInfo: verify.UserInfo{Username: "system:serviceaccount:kube-system:node-controller"},
		}},
		{"pod-create", verify.Request{
			Operation: admission.Create, Resource: pods, Kind: podKind, Namespace: "shop", Name: "web-0",
			Object: pod, UserInfo: verify.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller"},
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, err := e.Evaluate(context.Background(), tc.req)
				if err != nil {
					b.Fatal(err)
				}
				if len(d.Results) == 0 {
					b.Fatal("no policy evaluated")
				}
			}
		})
	}
}
