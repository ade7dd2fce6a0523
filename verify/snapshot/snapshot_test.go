package snapshot

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay"
)

func inTreePolicies(t *testing.T) []*admissionregistrationv1.ValidatingAdmissionPolicy {
	ps, _ := inTree(t)
	return ps
}

func inTree(t *testing.T) ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	set, diags := cel.ReadPaths(nil, "../../policies")
	if len(diags.Without(cel.Warning).Without(cel.Info)) > 0 {
		t.Fatal(diags)
	}
	var ps []*admissionregistrationv1.ValidatingAdmissionPolicy
	for _, p := range set.Policies {
		ps = append(ps, p.ValidatingAdmissionPolicy)
	}
	var bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, b := range set.Bindings {
		bs = append(bs, b.ValidatingAdmissionPolicyBinding)
	}
	return ps, bs
}

func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, k := range []struct {
		gvk   schema.GroupVersionKind
		scope meta.RESTScope
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "Node"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "LimitRange"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "IngressClass"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Version: "v1", Kind: "Event"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "events.k8s.io", Version: "v1", Kind: "Event"}, meta.RESTScopeNamespace},
	} {
		m.Add(k.gvk, k.scope)
	}
	return m
}

// TestResources: the snapshot of the in-tree guards holds the CRDs, the namespaces, their
// paramKinds' objects (Nodes, ConfigMaps), what they see as oldObject (Nodes, Pods) and what
// the admission plugins read for the pods they see created (ServiceAccounts, LimitRanges, ...).
func TestResources(t *testing.T) {
	got, warnings := Resources(inTreePolicies(t), mapper(), nil)
	var gotS []string
	for _, r := range got {
		gotS = append(gotS, r.GroupVersionResource.String()+": "+r.Why)
	}
	plugins := "admission plugins read them for pods (eviction-toleration-floor)"
	want := []string{
		"apiextensions.k8s.io/v1, Resource=customresourcedefinitions: the kinds of the log and the paramKinds",
		"/v1, Resource=namespaces: namespaceSelector and namespaceObject",
		"/v1, Resource=configmaps: paramKind of eviction-toleration-floor",
		"/v1, Resource=limitranges: " + plugins,
		"/v1, Resource=nodes: oldObject of drainer-cordon-guard; paramKind of kosmos-node-not-ready; " + plugins + "; the nodes pods are bound to",
		"/v1, Resource=pods: oldObject of eviction-toleration-floor; oldObject of kosmos-node-not-ready",
		"scheduling.k8s.io/v1, Resource=priorityclasses: " + plugins,
		"node.k8s.io/v1, Resource=runtimeclasses: " + plugins,
		"/v1, Resource=serviceaccounts: " + plugins,
	}
	if diff := cmp.Diff(want, gotS); diff != "" || len(warnings) > 0 {
		t.Errorf("Resources mismatch (-want +got):\n%s\nwarnings: %v", diff, warnings)
	}

	wild := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	wild.Name = "wild"
	wild.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "Gadget"}
	wild.Spec.MatchConstraints = &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"*"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}},
	}}}
	_, warnings = Resources([]*admissionregistrationv1.ValidatingAdmissionPolicy{wild}, mapper(), nil)
	if len(warnings) != 2 {
		t.Errorf("warnings for a wildcard rule and an unknown paramKind: %q", warnings)
	}

	// Wildcards the cluster's discovery resolves: every resource with a scale subresource of
	// the rule's group, a resource of every group.
	scales := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	scales.Name = "scales"
	scales.Spec.MatchConstraints = &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"UPDATE"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"*/scale"}}},
	}, {
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"DELETE"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"configmaps", "events"}}},
	}}}
	withScale := func(sub string) ([]schema.GroupVersionResource, error) {
		if sub != "scale" {
			return nil, nil
		}
		return []schema.GroupVersionResource{{Group: "apps", Version: "v1", Resource: "deployments"}, {Version: "v1", Resource: "replicationcontrollers"}}, nil
	}
	got, warnings = Resources([]*admissionregistrationv1.ValidatingAdmissionPolicy{scales}, mapper(), withScale)
	gotS = nil
	for _, r := range got {
		if strings.Contains(r.Why, "scales") { // not the CRDs and namespaces every snapshot lists
			gotS = append(gotS, r.GroupVersionResource.String()+": "+r.Why)
		}
	}
	want = []string{
		"/v1, Resource=configmaps: oldObject of scales (configmaps)",
		"apps/v1, Resource=deployments: oldObject of scales (*/scale)",
		"/v1, Resource=events: oldObject of scales (events)", // events.k8s.io's are the same objects
	}
	if diff := cmp.Diff(want, gotS); diff != "" || len(warnings) > 0 {
		t.Errorf("Resources of wildcards mismatch (-want +got):\n%s\nwarnings: %v", diff, warnings)
	}
	// A group whose discovery failed is said.
	failing := func(string) ([]schema.GroupVersionResource, error) {
		return []schema.GroupVersionResource{{Group: "apps", Version: "v1", Resource: "deployments"}}, errors.New("unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: the server is currently unable to handle the request")
	}
	if _, warnings = Resources([]*admissionregistrationv1.ValidatingAdmissionPolicy{scales}, mapper(), failing); len(warnings) != 1 || !strings.Contains(warnings[0], "metrics.k8s.io") {
		t.Errorf("warnings for a discovery that failed for a group: %q", warnings)
	}
}

// TestTakeAndReplay: a snapshot taken lists every page of every resource, without
// managedFields, and vapc replay --snapshot reads what it writes.
func TestTakeAndReplay(t *testing.T) {
	obj := func(apiVersion, kind, ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetManagedFields(nil)
		unstructured.SetNestedSlice(u.Object, []any{map[string]any{"manager": "kubectl"}}, "metadata", "managedFields")
		return u
	}
	objects := []runtime.Object{
		obj("v1", "Namespace", "", "default"),
		obj("v1", "Node", "", "kosmos-cluster7"),
		obj("v1", "Pod", "default", "web-a"),
		obj("v1", "ConfigMap", "kube-system", "eviction-toleration-floor"),
	}
	lists := map[schema.GroupVersionResource]string{}
	for r, kind := range map[string]string{"namespaces": "NamespaceList", "nodes": "NodeList", "pods": "PodList", "configmaps": "ConfigMapList",
		"serviceaccounts": "ServiceAccountList", "limitranges": "LimitRangeList"} {
		lists[schema.GroupVersionResource{Version: "v1", Resource: r}] = kind
	}
	lists[schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}] = "PriorityClassList"
	lists[schema.GroupVersionResource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"}] = "RuntimeClassList"
	lists[crdsGVR] = "CustomResourceDefinitionList"
	c := &Client{Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objects...), Mapper: mapper()}
	resources, _ := Resources(inTreePolicies(t), c.Mapper, nil)
	snap, err := c.Take(context.Background(), resources)
	if err != nil {
		t.Fatal(err)
	}
	var counts []string
	for _, n := range snap.Counts {
		counts = append(counts, n.Resource.GroupVersionResource.Resource+" "+string(rune('0'+n.Objects)))
	}
	if diff := cmp.Diff([]string{"customresourcedefinitions 0", "namespaces 1", "configmaps 1", "limitranges 0", "nodes 1", "pods 1", "priorityclasses 0", "runtimeclasses 0", "serviceaccounts 0"}, counts); diff != "" {
		t.Errorf("counts mismatch (-want +got):\n%s", diff)
	}
	var out bytes.Buffer
	if err := snap.Write(&out); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out.Bytes(), []byte("managedFields")) {
		t.Errorf("the snapshot keeps managedFields:\n%s", out.String())
	}
	// A List a resource as the API lists it, the empty ones too: they tell the replay it
	// knows every object of the resource.
	if !bytes.Contains(out.Bytes(), []byte("items: []\nkind: LimitRangeList\n")) || !bytes.Contains(out.Bytes(), []byte("kind: PodList\n")) ||
		bytes.Count(out.Bytes(), []byte(replay.CompleteListKey+": true\n")) != len(snap.Counts) {
		t.Errorf("the snapshot is not a List a resource, each marked complete (%s):\n%s", replay.CompleteListKey, out.String())
	}
	file := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, bs := inTree(t)
	r, err := replay.New(ps, bs, replay.WithSnapshot(file))
	if err != nil {
		t.Fatalf("replay does not read the snapshot: %v\n%s", err, out.String())
	}
	sum, err := r.Run(context.Background(), []replay.Source{{Name: "-", Reader: strings.NewReader("")}}, func(*replay.Record) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if n := sum.StateObjects; n != 4 {
		t.Errorf("the replay's State holds %d objects of the snapshot, want 4", n)
	}

	// As JSON (-o FILE.json): the same documents, one a line, which the replay seeds alike.
	var js bytes.Buffer
	if err := snap.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var fromYAML []string
	for _, doc := range strings.Split(out.String(), "---\n") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		fromYAML = append(fromYAML, string(j))
	}
	fromJSON := strings.Split(strings.TrimSuffix(js.String(), "\n"), "\n")
	if diff := cmp.Diff(fromYAML, fromJSON); diff != "" {
		t.Errorf("the JSON documents are not the YAML ones (-yaml +json):\n%s", diff)
	}
	jsonFile := filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(jsonFile, js.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = replay.New(ps, bs, replay.WithSnapshot(jsonFile))
	if err != nil {
		t.Fatalf("replay does not read the JSON snapshot: %v\n%s", err, js.String())
	}
	sum, err = r.Run(context.Background(), []replay.Source{{Name: "-", Reader: strings.NewReader("")}}, func(*replay.Record) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if n := sum.StateObjects; n != 4 {
		t.Errorf("the replay's State holds %d objects of the JSON snapshot, want 4", n)
	}
}
