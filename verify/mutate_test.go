package verify_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/yaml"

	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
)

func mustMutatingPolicy(t testing.TB, y string) *admissionregistrationv1.MutatingAdmissionPolicy {
	t.Helper()
	p := &admissionregistrationv1.MutatingAdmissionPolicy{}
	if err := yaml.UnmarshalStrict([]byte(y), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func mutatingBinding(name, policy string) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	b.Name = name
	b.Spec.PolicyName = policy
	return b
}

// The policies of TestMutatingPolicies: "label" sets a label with an apply configuration,
// "floor" raises a pod's too short tolerationSeconds with a JSON patch and runs again when a
// later policy changes the object, "late" (after "floor" by name) lowers it, and "require" (a
// validating policy) refuses a pod without the label.
const (
	labelPolicy = `
metadata: {name: a-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - {name: not-skipped, expression: "!has(object.metadata.labels) || !('skip' in object.metadata.labels)"}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'guarded': 'true'}}}"
`
	floorPolicy = `
metadata: {name: b-floor}
spec:
  reinvocationPolicy: IfNeeded
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        object.spec.tolerations.map(t, t).filter(t, has(t.tolerationSeconds) && t.tolerationSeconds < 300).size() == 0 ? [] :
        [JSONPatch{op: "replace", path: "/spec/tolerations/0/tolerationSeconds", value: 300}]
`
	latePolicy = `
metadata: {name: c-late}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        has(object.metadata.labels) && 'late' in object.metadata.labels ?
        [JSONPatch{op: "replace", path: "/spec/tolerations/0/tolerationSeconds", value: 5}] : []
`
	requireLabel = `
metadata: {name: require}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "has(object.metadata.labels) && 'guarded' in object.metadata.labels"
    message: unguarded
`
)

func TestMutatingPolicies(t *testing.T) {
	e, err := verify.New(
		[]*admissionregistrationv1.ValidatingAdmissionPolicy{mustPolicy(t, requireLabel)},
		[]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("require", "require", admissionregistrationv1.Deny)},
		verify.WithResources(catalog),
		verify.WithMutatingPolicies(
			[]*admissionregistrationv1.MutatingAdmissionPolicy{mustMutatingPolicy(t, labelPolicy), mustMutatingPolicy(t, floorPolicy), mustMutatingPolicy(t, latePolicy)},
			[]*admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("a-label", "a-label"), mutatingBinding("b-floor", "b-floor"), mutatingBinding("c-late", "c-late")}))
	if err != nil {
		t.Fatal(err)
	}
	pod := func(labels string, seconds int) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"` + labels + `},` +
			`"spec":{"containers":[{"name":"c","image":"i"}],"tolerations":[{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":` + itoa(seconds) + `}]}}`
	}
	type change struct {
		Policy    string
		Reinvoked bool
		Patch     string
	}
	tests := []struct {
		name        string
		object      string
		allowed     bool
		changes     []change
		labels      map[string]string
		tolerateFor int64
		// orderDependent: another order could give another object.
		orderDependent bool
	}{
		{
			name: "label and floor", object: pod("", 30), allowed: true,
			changes: []change{
				{"a-label", false, `[{"op":"add","path":"/metadata/labels","value":{"guarded":"true"}}]`},
				{"b-floor", false, `[{"op":"replace","path":"/spec/tolerations/0/tolerationSeconds","value":300}]`},
			},
			// c-late reads the labels a-label wrote: had it run first, it might have
			// decided otherwise; every order, tried with the chain's reinvocation of b-floor,
			// makes the same object.
			labels: map[string]string{"guarded": "true"}, tolerateFor: 300,
		},
		{
			name: "skipped by its match condition: refused by the validating policy", object: pod(`,"labels":{"skip":"1"}`, 600), allowed: false,
			labels: map[string]string{"skip": "1"}, tolerateFor: 600,
		},
		{
			// c-late lowers the floor after b-floor ran: b-floor (IfNeeded) runs again in the
			// chain's second pass; a-label (Never) does not.
			name: "reinvoked", object: pod(`,"labels":{"late":"1"}`, 600), allowed: true,
			changes: []change{
				{"a-label", false, `[{"op":"add","path":"/metadata/labels/guarded","value":"true"}]`},
				{"c-late", false, `[{"op":"replace","path":"/spec/tolerations/0/tolerationSeconds","value":5}]`},
				{"b-floor", true, `[{"op":"replace","path":"/spec/tolerations/0/tolerationSeconds","value":300}]`},
			},
			labels: map[string]string{"guarded": "true", "late": "1"}, tolerateFor: 300,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dec, err := e.Evaluate(context.Background(), verify.Request{
				Resource:  schema.GroupVersionResource{Version: "v1", Resource: "pods"},
				Operation: admission.Create,
				Object:    object(t, tc.object),
			})
			if err != nil {
				t.Fatal(err)
			}
			if dec.Allowed != tc.allowed {
				t.Errorf("allowed = %v, want %v: %s", dec.Allowed, tc.allowed, dec.Summary())
			}
			if dec.Mutation == nil {
				t.Fatal("no mutation")
			}
			if got := dec.Mutation.OrderDependent != ""; got != tc.orderDependent {
				t.Errorf("order dependent: %q, want %v", dec.Mutation.OrderDependent, tc.orderDependent)
			}
			var got []change
			for _, c := range dec.Mutation.Changes {
				got = append(got, change{c.Policy, c.Reinvoked, string(c.Patch)})
			}
			if diff := cmp.Diff(tc.changes, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			var obj struct {
				Metadata struct{ Labels map[string]string }
				Spec     struct {
					Tolerations []struct{ TolerationSeconds int64 }
				}
			}
			raw := dec.Object
			if raw == nil {
				raw = json.RawMessage(tc.object)
			}
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.labels, obj.Metadata.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if got := obj.Spec.Tolerations[0].TolerationSeconds; got != tc.tolerateFor {
				t.Errorf("tolerationSeconds = %d, want %d", got, tc.tolerateFor)
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestOrderIndependent: two policies that neither read nor write what the other writes give
// the same object in any order, and the result says so.
func TestOrderIndependent(t *testing.T) {
	e, err := verify.New(nil, nil, verify.WithResources(catalog), verify.WithMutatingPolicies(
		[]*admissionregistrationv1.MutatingAdmissionPolicy{mustMutatingPolicy(t, labelPolicy), mustMutatingPolicy(t, floorPolicy)},
		[]*admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("a-label", "a-label"), mutatingBinding("b-floor", "b-floor")}))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := e.Evaluate(context.Background(), verify.Request{
		Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Operation: admission.Create,
		Object: object(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c","image":"i"}],"tolerations":[{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":30}]}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(dec.Mutation.Changes); n != 2 {
		t.Fatalf("%d changes, want 2", n)
	}
	if dec.Mutation.OrderDependent != "" {
		t.Errorf("order dependent: %s", dec.Mutation.OrderDependent)
	}
}

// TestOrdersExplored: when the changes of two policies overlap, the evaluator runs them in the
// other orders too, and states the object as certain only when every order makes it.
func TestOrdersExplored(t *testing.T) {
	policy := func(name, condition, patchType, expression string) *admissionregistrationv1.MutatingAdmissionPolicy {
		y := `
metadata: {name: ` + name + `}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
`
		if condition != "" {
			y += "  matchConditions:\n  - {name: c, expression: \"" + condition + "\"}\n"
		}
		if patchType == "ApplyConfiguration" {
			y += "  mutations:\n  - patchType: ApplyConfiguration\n    applyConfiguration:\n      expression: \"" + expression + "\"\n"
		} else {
			y += "  mutations:\n  - patchType: JSONPatch\n    jsonPatch:\n      expression: \"" + expression + "\"\n"
		}
		return mustMutatingPolicy(t, y)
	}
	apply := func(name, key string) *admissionregistrationv1.MutatingAdmissionPolicy {
		return policy(name, "", "ApplyConfiguration", "Object{metadata: Object.metadata{labels: {'"+key+"': '1'}}}")
	}
	replaceLabels := func(name, key string) *admissionregistrationv1.MutatingAdmissionPolicy {
		return policy(name, "", "JSONPatch", "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'"+key+"': '1'}}]")
	}
	tests := []struct {
		name     string
		policies []*admissionregistrationv1.MutatingAdmissionPolicy
		want     map[string]string
		// dependent: some order makes another object.
		dependent bool
	}{
		{"apply configurations of two labels merge in any order", []*admissionregistrationv1.MutatingAdmissionPolicy{apply("a", "a"), apply("b", "b")},
			map[string]string{"a": "1", "b": "1"}, false},
		{"JSON patches that each set the labels: the last wins", []*admissionregistrationv1.MutatingAdmissionPolicy{replaceLabels("a", "a"), replaceLabels("b", "b")},
			map[string]string{"b": "1"}, true},
		{"a match condition that holds in one order only", []*admissionregistrationv1.MutatingAdmissionPolicy{
			apply("a", "a"),
			policy("b", "has(object.metadata.labels) && 'a' in object.metadata.labels", "ApplyConfiguration", "Object{metadata: Object.metadata{labels: {'b': '1'}}}"),
		}, map[string]string{"a": "1", "b": "1"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
			for _, p := range tc.policies {
				bindings = append(bindings, mutatingBinding(p.Name, p.Name))
			}
			e, err := verify.New(nil, nil, verify.WithResources(catalog), verify.WithMutatingPolicies(tc.policies, bindings))
			if err != nil {
				t.Fatal(err)
			}
			dec, err := e.Evaluate(context.Background(), verify.Request{
				Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Operation: admission.Create,
				Object: object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`),
			})
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(dec.Object, &got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got.Metadata.Labels); d != "" {
				t.Errorf("labels in the order of the names (-want +got):\n%s", d)
			}
			if dep := dec.Mutation.OrderDependent != ""; dep != tc.dependent {
				t.Errorf("order dependent: %q, want %v", dec.Mutation.OrderDependent, tc.dependent)
			}
		})
	}
}

// TestOrderOfParams: two params of one binding set one annotation to different values; on an
// object that already holds one of them, the first invocation changes nothing, and yet the
// other order gives the other value: the object is not stated as certain.
func TestOrderOfParams(t *testing.T) {
	p := mustMutatingPolicy(t, `
metadata: {name: mode}
spec:
  reinvocationPolicy: Never
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{annotations: {'mode': params.data.mode}}}"
`)
	allow := admissionregistrationv1.AllowAction
	b := mutatingBinding("mode", "mode")
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Namespace: "params", ParameterNotFoundAction: &allow,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"set": "x"}}}
	store := verify.NewMemoryStore(catalog.RESTMapper())
	for _, y := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p-0","namespace":"params","labels":{"set":"x"}},"data":{"mode":"on"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p-1","namespace":"params","labels":{"set":"x"}},"data":{"mode":"off"}}`,
	} {
		if err := store.Put(object(t, y)); err != nil {
			t.Fatal(err)
		}
	}
	e, err := verify.New(nil, nil, verify.WithResources(catalog), verify.WithStore(store),
		verify.WithMutatingPolicies([]*admissionregistrationv1.MutatingAdmissionPolicy{p}, []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"on", "off"} {
		dec, err := e.Evaluate(context.Background(), verify.Request{
			Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Operation: admission.Create,
			Object: object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","annotations":{"mode":"`+mode+`"}}}`),
		})
		if err != nil {
			t.Fatal(err)
		}
		if dec.Mutation.OrderDependent == "" {
			t.Errorf("annotation %s at first: %d changes, %d invocations, and no order dependence", mode, len(dec.Mutation.Changes), len(dec.Mutation.Invoked))
		}
	}
	// Only the first param sets the annotation: its match condition skips the other. In the
	// param informer's other order, the other sets it.
	p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "unset", Expression: "!has(object.metadata.annotations) || !('mode' in object.metadata.annotations)"}}
	e, err = verify.New(nil, nil, verify.WithResources(catalog), verify.WithStore(store),
		verify.WithMutatingPolicies([]*admissionregistrationv1.MutatingAdmissionPolicy{p}, []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := e.Evaluate(context.Background(), verify.Request{
		Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Operation: admission.Create,
		Object: object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dec.Mutation.Invoked) != 1 || dec.Mutation.OrderDependent == "" {
		t.Errorf("%d invocations, order dependence %q: want one, and the order to matter", len(dec.Mutation.Invoked), dec.Mutation.OrderDependent)
	}
}

// TestOrderOfRefusal: a refusal another order of the policies would not make is not certain.
func TestOrderOfRefusal(t *testing.T) {
	p0 := mustMutatingPolicy(t, `
metadata: {name: 0-add}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/metadata/labels/b', value: '1'}]"
`)
	p1 := mustMutatingPolicy(t, `
metadata: {name: a-labels}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'a': '1'}}}"
`)
	e, err := verify.New(nil, nil, verify.WithResources(catalog), verify.WithMutatingPolicies(
		[]*admissionregistrationv1.MutatingAdmissionPolicy{p0, p1},
		[]*admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("0-add", "0-add"), mutatingBinding("a-labels", "a-labels")}))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := e.Evaluate(context.Background(), verify.Request{
		Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Operation: admission.Create,
		Object: object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if dec.Allowed || dec.Mutation.OrderDependent == "" {
		t.Errorf("allowed %v, order dependent %q: want a refusal that depends on the order", dec.Allowed, dec.Mutation.OrderDependent)
	}
}

// TestMutatingCustomResourceDefaults: a MutatingAdmissionPolicy runs on a custom resource whose
// CRD's schema declares defaults, and the dispatcher's defaulter (the CRD's, as the
// apiextensions apiserver's request scope gives it) puts back a default a patch removed.
func TestMutatingCustomResourceDefaults(t *testing.T) {
	cat, err := vapcschema.Builtin(verify.KubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              shape: {type: string, default: round}
`), crd); err != nil {
		t.Fatal(err)
	}
	if err := cat.AddCRD(crd); err != nil {
		t.Fatal(err)
	}
	e, err := verify.New(nil, nil, verify.WithResources(cat), verify.WithMutatingPolicies(
		[]*admissionregistrationv1.MutatingAdmissionPolicy{mustMutatingPolicy(t, `
metadata: {name: reshape}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [gadgets]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "remove", path: "/spec/shape"}, JSONPatch{op: "replace", path: "/spec/size", value: 2}]'
`)},
		[]*admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("reshape", "reshape")}))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := e.Evaluate(context.Background(), verify.Request{
		Resource:  schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"},
		Operation: admission.Create,
		Object:    object(t, `{apiVersion: example.com/v1, kind: Gadget, metadata: {name: g, namespace: ns}, spec: {size: 1, shape: square}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if dec.Mutation == nil || !dec.Mutation.Allowed || len(dec.Mutation.Changes) != 1 {
		t.Fatalf("mutation = %+v, want the policy run: %s", dec.Mutation, dec.Summary())
	}
	var obj struct {
		Spec struct {
			Size  int64
			Shape string
		}
	}
	if err := json.Unmarshal(dec.Object, &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Spec.Size != 2 || obj.Spec.Shape != "round" {
		t.Errorf("spec = %+v, want size 2 and the default shape round", obj.Spec)
	}
}

// TestReinvokedKind: a Deployment created through two policies with reinvocationPolicy
// IfNeeded: the dispatcher's patchers give back a typed object without its kind, which the
// reinvocation patches again; the object the policies made is given in the request's version
// (it failed with "cannot convert /, Kind= to apps/v1").
func TestReinvokedKind(t *testing.T) {
	mk := func(name, mutation string) *admissionregistrationv1.MutatingAdmissionPolicy {
		return mustMutatingPolicy(t, `
metadata: {name: `+name+`}
spec:
  reinvocationPolicy: IfNeeded
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  mutations:
`+mutation)
	}
	a := mk("a-team", `  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'team': 'x'}}}"
`)
	b := mk("b-replicas", `  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'replace', path: '/spec/replicas', value: 2}]"
`)
	e, err := verify.New(nil, nil, verify.WithResources(catalog), verify.WithMutatingPolicies(
		[]*admissionregistrationv1.MutatingAdmissionPolicy{a, b},
		[]*admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("a-team", "a-team"), mutatingBinding("b-replicas", "b-replicas")}))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := e.Evaluate(context.Background(), verify.Request{
		Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Operation: admission.Create,
		Object: object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"ns"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		APIVersion, Kind string
		Metadata         struct{ Labels map[string]string }
		Spec             struct{ Replicas int }
	}
	if err := json.Unmarshal(dec.Object, &got); err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != "apps/v1" || got.Kind != "Deployment" || got.Metadata.Labels["team"] != "x" || got.Spec.Replicas != 2 {
		t.Errorf("the object the policies made: %s", dec.Object)
	}
}

// TestOrderOfRunnable: only the policies that may run on a request make the order matter:
// those whose binding matches it by its rules and selectors (their matchConditions, which read
// the object, may hold in another order). A policy bound to another namespace that reads what
// another writes does not; one bound here does. Five policies of which two may run are few
// enough to try in every order.
func TestOrderOfRunnable(t *testing.T) {
	policy := func(name, condition, key string) *admissionregistrationv1.MutatingAdmissionPolicy {
		y := `
metadata: {name: ` + name + `}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
`
		if condition != "" {
			y += "  matchConditions:\n  - {name: c, expression: \"" + condition + "\"}\n"
		}
		y += "  mutations:\n  - patchType: ApplyConfiguration\n    applyConfiguration:\n      expression: \"Object{metadata: Object.metadata{labels: {'" + key + "': '1'}}}\"\n"
		return mustMutatingPolicy(t, y)
	}
	inNamespace := func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding, ns string) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
		b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}
		return b
	}
	reads := "!has(object.metadata.labels) || !('a' in object.metadata.labels)"
	for _, tc := range []struct {
		name      string
		readerNS  string // the namespace the reading policy is bound to
		dependent bool
	}{
		{"the reader bound to another namespace", "elsewhere", false},
		// In the other order the reader runs before a sets its label, and sets its own.
		{"the reader bound here", "ns", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := []*admissionregistrationv1.MutatingAdmissionPolicy{policy("a", "", "a"), policy("b", reads, "b")}
			bs := []*admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("a", "a"), inNamespace(mutatingBinding("b", "b"), tc.readerNS)}
			for _, n := range []string{"x", "y", "z"} {
				ps = append(ps, policy(n, reads, n))
				bs = append(bs, inNamespace(mutatingBinding(n, n), "elsewhere"))
			}
			e, err := verify.New(nil, nil, verify.WithResources(catalog), verify.WithMutatingPolicies(ps, bs))
			if err != nil {
				t.Fatal(err)
			}
			dec, err := e.Evaluate(context.Background(), verify.Request{
				Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Operation: admission.Create,
				Object: object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`),
			})
			if err != nil {
				t.Fatal(err)
			}
			if dep := dec.Mutation.OrderDependent != ""; dep != tc.dependent {
				t.Errorf("order dependent: %q, want %v", dec.Mutation.OrderDependent, tc.dependent)
			}
		})
	}
}

// TestMutatingRefusals: the errors of MutatingAdmissionPolicies that refuse a request are
// listed by policy, binding and param, with the message after the dispatcher's "denied
// request: " (kube-apiserver lists each in its status's causes). A policy whose failurePolicy
// is Ignore drops its error; a match condition that errs refuses before any mutation ran.
func TestMutatingRefusals(t *testing.T) {
	atomic := mustMutatingPolicy(t, `
metadata: {name: a-atomic}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{spec: Object.spec{tolerations: [Object.spec.tolerations{key: 'zz', operator: 'Exists'}]}}"
`)
	condition := mustMutatingPolicy(t, `
metadata: {name: b-condition}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - {name: labelled, expression: "object.metadata.labels['team'] == 'a'"}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'b': '1'}}]"
`)
	ignored := condition.DeepCopy()
	ignored.Name = "c-ignored"
	ignore := admissionregistrationv1.Ignore
	ignored.Spec.FailurePolicy = &ignore
	e, err := verify.New(nil, nil, verify.WithResources(catalog), verify.WithMutatingPolicies(
		[]*admissionregistrationv1.MutatingAdmissionPolicy{atomic, condition, ignored},
		[]*admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("a-atomic-b", "a-atomic"), mutatingBinding("b-condition-b", "b-condition"), mutatingBinding("c-ignored-b", "c-ignored")}))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := e.Evaluate(context.Background(), verify.Request{
		Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Operation: admission.Create,
		Object: object(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c","image":"i"}],"tolerations":[{"key":"k","operator":"Exists"}]}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if dec.Allowed || dec.Mutation == nil {
		t.Fatalf("allowed %v (%s), want a refusal by the mutating policies", dec.Allowed, dec.Message)
	}
	var got []string
	for _, r := range dec.Mutation.Refusals {
		got = append(got, r.Policy+"/"+r.Binding+" "+r.Result)
		if !strings.Contains(dec.Message+dec.Mutation.Status.String(), r.Message) || strings.Contains(r.Message, "denied request") {
			t.Errorf("%s/%s: message %q: want the part of a cause after \"denied request: \"", r.Policy, r.Binding, r.Message)
		}
	}
	want := []string{"a-atomic/a-atomic-b error", "b-condition/b-condition-b error"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("refusals (-want +got):\n%s\n%s", d, dec.Mutation.Status)
	}
}

// TestOrderOfOneParam: a policy that reads what it writes (it adds the annotations map when
// there is none), bound with a param selector. With one param selected it runs once, and again
// when reinvoked, in the one order there is; with two, each sets the annotation to its own
// value, and the last in the param informer's order wins.
func TestOrderOfOneParam(t *testing.T) {
	p := mustMutatingPolicy(t, `
metadata: {name: tier}
spec:
  reinvocationPolicy: IfNeeded
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  matchConditions:
  - {name: not-system, expression: "request.namespace != 'kube-system'"}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        (has(object.metadata.annotations) ? [] : [JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}]) +
        [JSONPatch{op: 'add', path: '/metadata/annotations/tier', value: params.data.tier}]
`)
	allow := admissionregistrationv1.AllowAction
	b := mutatingBinding("tier", "tier")
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Namespace: "params", ParameterNotFoundAction: &allow,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"set": "x"}}}
	store := verify.NewMemoryStore(catalog.RESTMapper())
	params := []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p-0","namespace":"params","labels":{"set":"x"}},"data":{"tier":"gold"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p-1","namespace":"params","labels":{"set":"x"}},"data":{"tier":"silver"}}`,
	}
	// The same policy, refusing too: a second mutation is a JSON patch that removes what is not
	// there, an error the dispatcher gathers after running every invocation.
	refusing := p.DeepCopy()
	refusing.Spec.Mutations = append(refusing.Spec.Mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "[JSONPatch{op: 'remove', path: '/data/missing'}]"}})
	for i, param := range params {
		if err := store.Put(object(t, param)); err != nil {
			t.Fatal(err)
		}
		for _, policy := range []*admissionregistrationv1.MutatingAdmissionPolicy{p, refusing} {
			e, err := verify.New(nil, nil, verify.WithResources(catalog), verify.WithStore(store),
				verify.WithMutatingPolicies([]*admissionregistrationv1.MutatingAdmissionPolicy{policy}, []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b}))
			if err != nil {
				t.Fatal(err)
			}
			dec, err := e.Evaluate(context.Background(), verify.Request{
				Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Operation: admission.Create,
				Object: object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`),
			})
			if err != nil {
				t.Fatal(err)
			}
			if dec.Allowed != (policy == p) {
				t.Errorf("%s, %d params selected: allowed %v (%s)", policy.Name, i+1, dec.Allowed, dec.Message)
			}
			if got, want := dec.Mutation.OrderDependent != "", i > 0; got != want {
				t.Errorf("%d params selected, allowed %v (%s): order dependence %q, want it %v (changes %d)", i+1, dec.Allowed, dec.Message, dec.Mutation.OrderDependent, want, len(dec.Mutation.Changes))
			}
		}
	}
}
