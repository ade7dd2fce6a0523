package verify_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/yaml"

	vapccel "github.com/vapc-dev/vapc/cel"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
)

func mustPolicy(t testing.TB, y string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := yaml.UnmarshalStrict([]byte(y), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func binding(name, policy string, actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	b.Name = name
	b.Spec.PolicyName = policy
	b.Spec.ValidationActions = actions
	return b
}

func object(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

var (
	configmaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	catalog    = func() *vapcschema.Catalog {
		c, err := vapcschema.Builtin(verify.KubernetesVersion)
		if err != nil {
			panic(err)
		}
		return c
	}()
)

const annotatePolicy = `
metadata: {name: annotate}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: "true"
  auditAnnotations:
  - {key: value, valueExpression: "string(object.data.v)"}
`

// TestMapOrderAnnotation: an audit annotation WithMapOrder names (its value may follow the
// order CEL iterates a map in, the server's chance) is evaluated again: where its value changes
// it is not in the decision's AuditAnnotations nor its results', but in UnknownAnnotations,
// with a note; where it does not (a map of one key) it stands; where the caller knows the
// server's value (WithMessageOrder), the decision is the order that gives it.
func TestMapOrderAnnotation(t *testing.T) {
	policy := strings.Replace(annotatePolicy, "string(object.data.v)", "object.data.map(k, k).join(',')", 1)
	e, err := verify.New([]*admissionregistrationv1.ValidatingAdmissionPolicy{mustPolicy(t, policy)},
		[]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("b", "annotate", admissionregistrationv1.Audit)},
		verify.WithResources(catalog), verify.WithMapOrder(vapccel.MapOrder{Annotations: map[string][]string{"annotate": {"value"}}}))
	if err != nil {
		t.Fatal(err)
	}
	serverSaid := func(v string) verify.MessageOrder {
		return func(d *verify.Decision) verify.OrderAgreement {
			return verify.OrderAgreement{Known: true, Agrees: d.AuditAnnotations["annotate/value"] == v}
		}
	}
	for _, tc := range []struct {
		name   string
		data   string
		server verify.MessageOrder
		want   string // the annotation's value, "" for not known
	}{
		{"several keys", "{a: one, b: two, c: three}", nil, ""},
		{"one key", "{a: one}", nil, "a"},
		{"the server's order", "{a: one, b: two, c: three}", serverSaid("c,a,b"), "c,a,b"},
		{"the server's other order", "{a: one, b: two, c: three}", serverSaid("b,c,a"), "b,c,a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.server != nil {
				ctx = verify.WithMessageOrder(ctx, tc.server)
			}
			dec, err := e.Evaluate(ctx, verify.Request{Operation: admission.Create, Resource: configmaps, Object: object(t, `{metadata: {name: c, namespace: ns}, data: `+tc.data+`}`)})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := dec.AuditAnnotations["annotate/value"]
			_, unknown := dec.UnknownAnnotations["annotate/value"]
			switch {
			case tc.want == "" && (ok || !unknown || !slices.ContainsFunc(dec.Notes, func(n string) bool { return strings.HasPrefix(n, "audit annotation annotate/value is not known") })):
				t.Errorf("AuditAnnotations %v, UnknownAnnotations %v, notes %v: want annotate/value not known, with a note", dec.AuditAnnotations, dec.UnknownAnnotations, dec.Notes)
			case tc.want != "" && (got != tc.want || unknown):
				t.Errorf("annotate/value = %q (not known: %v), want %q", got, unknown, tc.want)
			}
			for _, r := range dec.Results {
				if v, ok := r.AuditAnnotations["value"]; ok && v != got {
					t.Errorf("result %v holds %q, the decision %q", r, v, got)
				}
			}
		})
	}
}

// firstOnConfigMaps begins the policy "first" of ConfigMap CREATEs, in YAML.
const firstOnConfigMaps = `
metadata: {name: first}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]`

// firstDenied is an Evaluator of the policy "first" (its spec in YAML) bound by "b" with the
// Deny action, the map order given.
func firstDenied(t *testing.T, policy string, order vapccel.MapOrder) *verify.Evaluator {
	return firstBound(t, policy, order, admissionregistrationv1.Deny)
}

// firstBound is an Evaluator of the policy "first" bound by "b" with the actions.
func firstBound(t *testing.T, policy string, order vapccel.MapOrder, actions ...admissionregistrationv1.ValidationAction) *verify.Evaluator {
	t.Helper()
	e, err := verify.New([]*admissionregistrationv1.ValidatingAdmissionPolicy{mustPolicy(t, policy)},
		[]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("b", "first", actions...)},
		verify.WithResources(catalog), verify.WithMapOrder(order))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestMapOrderVerdicts: a validation whose outcome follows the order CEL iterates a map, and
// an audit annotation whose value does, where the caller's server took an order whose
// annotation no evaluation gives (it evaluated another version of the object, say): the
// decision is an order that gives the server's verdict (OrderAgreement.Verdicts), the
// annotation not known, with a note; without such an order, the decision is by chance.
func TestMapOrderVerdicts(t *testing.T) {
	const policy = firstOnConfigMaps + `
  validations:
  - {expression: "object.data.map(k, k)[0] != 'a'", message: first is a}
  auditAnnotations:
  - {key: keys, valueExpression: "object.data.map(k, k).join(',')"}
`
	e := firstDenied(t, policy, vapccel.MapOrder{Annotations: map[string][]string{"first": {"keys"}}, Outcomes: map[string]bool{"first": true}})
	server := func(allowed bool) verify.MessageOrder {
		return func(d *verify.Decision) verify.OrderAgreement {
			return verify.OrderAgreement{Known: true, Agrees: d.Allowed == allowed && d.AuditAnnotations["first/keys"] == "z", Verdicts: d.Allowed == allowed}
		}
	}
	for _, allowed := range []bool{false, true} {
		t.Run(fmt.Sprintf("allowed %v", allowed), func(t *testing.T) {
			ctx := verify.WithMessageOrder(context.Background(), server(allowed))
			dec, err := e.Evaluate(ctx, verify.Request{Operation: admission.Create, Resource: configmaps, Object: object(t, `{metadata: {name: c, namespace: ns}, data: {a: one, b: two, c: three, d: four}}`)})
			if err != nil {
				t.Fatal(err)
			}
			_, claimed := dec.AuditAnnotations["first/keys"]
			_, unknown := dec.UnknownAnnotations["first/keys"]
			if dec.Allowed != allowed || dec.ByChance != "" || claimed || !unknown {
				t.Errorf("allowed %v, by chance %q, annotations %v, not known %v: want the server's verdict (allowed %v), first/keys not known", dec.Allowed, dec.ByChance, dec.AuditAnnotations, dec.UnknownAnnotations, allowed)
			}
		})
	}
	never := func(d *verify.Decision) verify.OrderAgreement { return verify.OrderAgreement{Known: true} }
	dec, err := e.Evaluate(verify.WithMessageOrder(context.Background(), never), verify.Request{Operation: admission.Create, Resource: configmaps, Object: object(t, `{metadata: {name: c, namespace: ns}, data: {a: one, b: two, c: three, d: four}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if dec.ByChance == "" {
		t.Errorf("no order gives the server's verdicts: the decision (allowed %v) is not by chance", dec.Allowed)
	}
}

// TestMapOrderKnownLater: where the server's values can be compared with an evaluation's only
// in some orders (here only where the binding refused, as the server's response names it), an
// evaluation that does not is not the end of the search: one the caller knows agrees is the
// server's order (random parity seed r:1482, the response's binding refusing one order in
// eight, another binding's outcome not shown otherwise). Each run evaluates afresh: with four
// keys the first evaluation admits in most of them.
func TestMapOrderKnownLater(t *testing.T) {
	const policy = firstOnConfigMaps + `
  validations:
  - {expression: "object.data.map(k, k)[0] != 'a'", message: first is a}
`
	e := firstDenied(t, policy, vapccel.MapOrder{Outcomes: map[string]bool{"first": true}})
	deniedOnly := func(d *verify.Decision) verify.OrderAgreement {
		return verify.OrderAgreement{Known: !d.Allowed, Agrees: !d.Allowed, Verdicts: !d.Allowed}
	}
	for run := range 20 {
		dec, err := e.Evaluate(verify.WithMessageOrder(context.Background(), deniedOnly), verify.Request{Operation: admission.Create, Resource: configmaps, Object: object(t, `{metadata: {name: c, namespace: ns}, data: {a: one, b: two, c: three, d: four}}`)})
		if err != nil {
			t.Fatal(err)
		}
		if dec.Allowed || dec.ByChance != "" {
			t.Fatalf("run %d: allowed %v, by chance %q: want the server's refusal, which an order gives", run, dec.Allowed, dec.ByChance)
		}
	}
}

// TestMapOrderWarnOnly: a binding with the Warn action alone, whose policy's outcome follows
// the order CEL iterates a map: no log shows whether it failed (its warning is in no log, a
// success shows only that no Deny binding refused), so where the caller knows the server's
// values that follow map order and they agree, its warnings are not claimed all the same where
// its outcome changes in another order, with a note (random parity seed c:761: a ConfigMap's
// keys joined, the server warning where the replay's order did not); where it cannot change (a
// map of one key), they are claimed.
func TestMapOrderWarnOnly(t *testing.T) {
	const policy = firstOnConfigMaps + `
  validations:
  - {expression: "object.data.map(k, k)[0] >= 'e'", message: first is early}
`
	e := firstBound(t, policy, vapccel.MapOrder{Outcomes: map[string]bool{"first": true}}, admissionregistrationv1.Warn)
	// What the replay's log says of a success where the policy ran: the Warn binding refused
	// nothing, as in every order.
	succeeded := func(d *verify.Decision) verify.OrderAgreement {
		return verify.OrderAgreement{Known: true, Agrees: d.Allowed, Verdicts: d.Allowed}
	}
	warning := verify.WarningPrefix("first", "b") + "first is early"
	for _, tc := range []struct {
		name, data string
		known      bool   // the warnings claimed
		want       string // the warning claimed, where known
	}{
		{"eight keys", "{a: '1', b: '2', c: '3', d: '4', e: '5', f: '6', g: '7', h: '8'}", false, ""},
		{"one early key", "{a: '1'}", true, warning},
		{"one late key", "{z: '1'}", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for run := range 5 {
				dec, err := e.Evaluate(verify.WithMessageOrder(context.Background(), succeeded), verify.Request{Operation: admission.Create, Resource: configmaps, Object: object(t, `{metadata: {name: c, namespace: ns}, data: `+tc.data+`}`)})
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				if tc.want != "" {
					want = []string{tc.want}
				}
				switch {
				case !dec.Allowed:
					t.Fatalf("run %d: refused (%s): a Warn binding refuses nothing", run, dec.Message)
				case dec.WarningsNotKnown() == tc.known:
					t.Fatalf("run %d: warnings not known %v, want %v (warnings %q, notes %q)", run, dec.WarningsNotKnown(), !tc.known, dec.Warnings, dec.Notes)
				case tc.known && !slices.Equal(dec.Warnings, want):
					t.Fatalf("run %d: warnings %q, want %q", run, dec.Warnings, want)
				case !tc.known && len(dec.Warnings) > 0:
					t.Fatalf("run %d: warnings %q claimed, their outcome not known", run, dec.Warnings)
				}
			}
		})
	}
}

// TestMapOrderMessageResult: a failure whose message a messageExpression WithMapOrder names
// worded is marked (kube-apiserver's may list the map's keys in another order); one worded by
// kube-apiserver's fallbacks (the static message, the expression) is not, nor one of a
// validation it does not name.
func TestMapOrderMessageResult(t *testing.T) {
	const policy = `
metadata: {name: keys}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations:
  - {expression: "false", messageExpression: "object.data.map(k, k).join(',')", message: static}
  - {expression: "false", messageExpression: "object.data.map(k, k).join(',')"}
  - {expression: "false", messageExpression: "'name ' + object.metadata.name"}
`
	for _, tc := range []struct {
		name    string
		actions []admissionregistrationv1.ValidationAction
		data    string
		want    []bool // MessageByChance of the results in order
		wantAny bool   // MessagesByChance
	}{
		{"deny", []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, "{a: one, b: two}", []bool{true, true, false}, true},
		{"audit", []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}, "{a: one, b: two}", []bool{true, true, false}, true},
		{"warn", []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}, "{a: one, b: two}", []bool{true, true, false}, false},
		{"fallbacks", []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, "{}", []bool{false, false, false}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := verify.New([]*admissionregistrationv1.ValidatingAdmissionPolicy{mustPolicy(t, policy)},
				[]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("b", "keys", tc.actions...)},
				verify.WithResources(catalog), verify.WithMapOrder(vapccel.MapOrder{Messages: map[string][]int{"keys": {0, 1}}}))
			if err != nil {
				t.Fatal(err)
			}
			dec, err := e.Evaluate(context.Background(), verify.Request{Operation: admission.Create, Resource: configmaps, Object: object(t, `{metadata: {name: c, namespace: ns}, data: `+tc.data+`}`)})
			if err != nil {
				t.Fatal(err)
			}
			var got []bool
			for _, r := range dec.Results {
				got = append(got, r.MessageByChance)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("MessageByChance of the results (-want +got):\n%s\n%v", diff, dec.Results)
			}
			if dec.MessagesByChance() != tc.wantAny {
				t.Errorf("MessagesByChance() = %v, want %v", dec.MessagesByChance(), tc.wantAny)
			}
		})
	}
}

// TestAuditAnnotationSizeCap checks the dispatcher's 10 KiB cap on audit annotation values.
func TestAuditAnnotationSizeCap(t *testing.T) {
	e, err := verify.New([]*admissionregistrationv1.ValidatingAdmissionPolicy{mustPolicy(t, annotatePolicy)},
		[]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("b", "annotate", admissionregistrationv1.Audit)},
		verify.WithResources(catalog))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, value, want string
	}{
		{"short", "  hello  ", "hello"},
		{"at the cap", strings.Repeat("x", 10*1024), strings.Repeat("x", 10*1024)},
		{"over the cap", strings.Repeat("y", 10*1024+7), strings.Repeat("y", 10*1024)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}}")
			obj.Object["data"] = map[string]any{"v": tc.value}
			d, err := e.Evaluate(context.Background(), verify.Request{Operation: admission.Create, Resource: configmaps, Object: obj})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]string{"annotate/value": tc.want}, d.AuditAnnotations); diff != "" {
				t.Errorf("AuditAnnotations mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

const paramPolicy = `
metadata: {name: max-keys}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: "size(object.data) <= int(params.data.max)"
    messageExpression: "'at most ' + params.data.max + ' keys'"
`

// TestStoreChangesBetweenRequests checks that a decision reads the store as it is when the
// request is evaluated, as audit-log replay needs.
func TestStoreChangesBetweenRequests(t *testing.T) {
	store := verify.NewMemoryStore(catalog.RESTMapper())
	b := binding("b", "max-keys", admissionregistrationv1.Deny)
	deny := admissionregistrationv1.DenyAction
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "config", ParameterNotFoundAction: &deny}
	e, err := verify.New([]*admissionregistrationv1.ValidatingAdmissionPolicy{mustPolicy(t, paramPolicy)},
		[]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, verify.WithResources(catalog), verify.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	req := verify.Request{Operation: admission.Create, Resource: configmaps,
		Object: object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {a: "1", b: "2"}}`)}
	steps := []struct {
		name    string
		put     string
		delete  bool
		allowed bool
		message string
	}{
		{name: "no param", allowed: false, message: `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'b' denied request: failed to configure binding: no params found for policy binding with ` + "`Deny`" + ` parameterNotFoundAction`},
		{name: "param allows 5", put: `{apiVersion: v1, kind: ConfigMap, metadata: {name: limits, namespace: config}, data: {max: "5"}}`, allowed: true},
		{name: "param allows 1", put: `{apiVersion: v1, kind: ConfigMap, metadata: {name: limits, namespace: config}, data: {max: "1"}}`, message: `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'b' denied request: at most 1 keys`},
		{name: "param deleted", delete: true, message: `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'b' denied request: failed to configure binding: no params found for policy binding with ` + "`Deny`" + ` parameterNotFoundAction`},
	}
	for _, s := range steps {
		if s.put != "" {
			if err := store.Put(object(t, s.put)); err != nil {
				t.Fatal(err)
			}
		}
		if s.delete {
			if err := store.Delete(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "config", "limits"); err != nil {
				t.Fatal(err)
			}
		}
		d, err := e.Evaluate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != s.allowed || d.Message != s.message {
			t.Errorf("%s: Evaluate() = %v %q, want %v %q", s.name, d.Allowed, d.Message, s.allowed, s.message)
		}
	}
}

const authzPolicy = `
metadata: {name: authz}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: "authorizer.group('').resource('secrets').namespace('ns').check('get').allowed()"
`

// authzMutating labels the configmaps of users who may get the secrets of ns.
const authzMutating = `
metadata: {name: authz-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  matchConditions:
  - {name: reader, expression: "authorizer.group('').resource('secrets').namespace('ns').check('get').allowed()"}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'reader': 'true'}}}"
`

// TestAuthorizerDependency checks that the checks a decision made, validating and mutating,
// are reported, and that a member of system:masters is allowed whatever the configured
// authorizer says, as kube-apiserver's chain begins with its privileged-group authorizer.
func TestAuthorizerDependency(t *testing.T) {
	alice := verify.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}
	admin := verify.UserInfo{Username: "admin", Groups: []string{"system:masters", "system:authenticated"}}
	for _, tc := range []struct {
		name       string
		authz      verify.Option
		user       verify.UserInfo
		allowed    bool
		privileged bool
	}{
		{"allow all", verify.WithAuthorizer(verify.AllowAll()), alice, true, false},
		{"deny all", verify.WithAuthorizer(verify.DenyAll()), alice, false, false},
		{"default", nil, alice, false, false},
		{"system:masters, deny all", verify.WithAuthorizer(verify.DenyAll()), admin, true, true},
		{"system:masters, default", nil, admin, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []verify.Option{verify.WithResources(catalog), verify.WithMutatingPolicies(
				[]*admissionregistrationv1.MutatingAdmissionPolicy{mustMutatingPolicy(t, authzMutating)},
				[]*admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("authz-label", "authz-label")})}
			if tc.authz != nil {
				opts = append(opts, tc.authz)
			}
			e, err := verify.New([]*admissionregistrationv1.ValidatingAdmissionPolicy{mustPolicy(t, authzPolicy)},
				[]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("b", "authz", admissionregistrationv1.Deny)}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			d, err := e.Evaluate(context.Background(), verify.Request{Operation: admission.Create, Resource: configmaps,
				UserInfo: tc.user,
				Object:   object(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}}")})
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.allowed {
				t.Errorf("Allowed = %v, want %v", d.Allowed, tc.allowed)
			}
			decision := "no opinion"
			if tc.allowed {
				decision = "allow"
			}
			want := []verify.AuthorizerCheck{{User: tc.user.Username, Verb: "get", Version: "*", Resource: "secrets", Namespace: "ns", Decision: decision, Privileged: tc.privileged}}
			if tc.allowed && !tc.privileged {
				want[0].Reason = "vapc: allow all"
			}
			if diff := cmp.Diff(want, d.Authorizer); diff != "" {
				t.Errorf("validating checks (-want +got):\n%s", diff)
			}
			if d.Mutation == nil {
				t.Fatal("no mutation")
			}
			// A mutation makes the chain run again, and the policy's matchCondition with it.
			wantMutating := want
			if tc.allowed {
				wantMutating = append(want, want...)
			}
			if diff := cmp.Diff(wantMutating, d.Mutation.Authorizer); diff != "" {
				t.Errorf("mutating checks (-want +got):\n%s", diff)
			}
			if got := len(d.Mutation.Changes) > 0; got != tc.allowed {
				t.Errorf("mutated = %v, want %v", got, tc.allowed)
			}
			notes := strings.Join(d.Notes, "\n")
			for _, what := range []string{"the decision depended on the authorizer", "the mutation depended on the authorizer"} {
				if got, want := strings.Contains(notes, what), !tc.privileged; got != want {
					t.Errorf("Notes = %q: a note that %s: %v, want %v", d.Notes, what, got, want)
				}
			}
		})
	}
}

const everything = `
metadata: {name: everything}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["*"], apiVersions: ["*"], operations: ["*"], resources: ["*"]}
  validations:
  - expression: "false"
`

// TestRequests checks what the evaluator refuses and the resources no policy sees.
func TestRequests(t *testing.T) {
	e, err := verify.New([]*admissionregistrationv1.ValidatingAdmissionPolicy{mustPolicy(t, everything)},
		[]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("b", "everything", admissionregistrationv1.Deny)},
		verify.WithResources(catalog), verify.WithImplicitNamespaces(false))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		req     verify.Request
		wantErr string
		allowed bool
		code    int32
	}{
		{name: "object of another kind", req: verify.Request{Operation: admission.Create, Resource: configmaps,
			Object: object(t, "{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: ns}}")},
			wantErr: "object: a request for this resource carries v1 ConfigMap, not v1 Secret"},
		{name: "unknown field", req: verify.Request{Operation: admission.Create, Resource: configmaps,
			Object: object(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: s, namespace: ns}, dta: {}}")},
			wantErr: `object: strict decoding error: unknown field "dta"`},
		{name: "unknown resource", req: verify.Request{Operation: admission.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "nope"}},
			wantErr: "unknown resource nope in v1"},
		{name: "bad operation", req: verify.Request{Operation: "GET", Resource: configmaps}, wantErr: `operation "GET"`},
		{name: "excluded resource", req: verify.Request{Operation: admission.Create,
			Resource: schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"},
			Object:   object(t, "{apiVersion: authorization.k8s.io/v1, kind: SubjectAccessReview, metadata: {name: x}, spec: {user: a}}")},
			allowed: true, code: 200},
		{name: "missing namespace without implicit namespaces", req: verify.Request{Operation: admission.Create, Resource: configmaps,
			Object: object(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: gone}}")},
			code: 404},
		{name: "cluster-scoped", req: verify.Request{Operation: admission.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"},
			Object: object(t, "{apiVersion: v1, kind: Node, metadata: {name: node-1}}")},
			code: 422},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := e.Evaluate(context.Background(), tc.req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Evaluate() error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.allowed || d.Code != tc.code {
				t.Errorf("Evaluate() = %v %d (%s), want %v %d", d.Allowed, d.Code, d.Message, tc.allowed, tc.code)
			}
		})
	}
}

// Example evaluates a policy against one request.
func Example() {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	_ = yaml.Unmarshal([]byte(`
metadata: {name: no-latest}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))"
    message: "images must not use the latest tag"
`), policy)
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	b.Name, b.Spec.PolicyName = "no-latest", "no-latest"
	b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}

	e, err := verify.New([]*admissionregistrationv1.ValidatingAdmissionPolicy{policy}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b})
	if err != nil {
		panic(err)
	}
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:latest"}}},
	}}
	d, err := e.Evaluate(context.Background(), verify.Request{
		Operation: admission.Create,
		Resource:  schema.GroupVersionResource{Version: "v1", Resource: "pods"},
		Object:    pod,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Code, d.Message)
	// Output: 422 pods "web" is forbidden: ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest' denied request: images must not use the latest tag
}

// TestDenials: when two policies and two bindings deny, the apiserver answers with the first
// in its informers' order, so every refusal is among the Decision's Denials, each built as the
// dispatcher builds it (recorded by kube-apiserver v1.37.0 in verify/e2e TestDecisionParity):
// of each binding the first validation that fails, which the validator evaluates in order.
func TestDenials(t *testing.T) {
	huge := func(name, failure string) *admissionregistrationv1.ValidatingAdmissionPolicy {
		return mustPolicy(t, `
metadata: {name: `+name+`}
spec:
  failurePolicy: `+failure+`
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - {expression: "object.data.size != 'huge'", message: huge configmaps are not allowed}
  - {expression: "object.data.size != 'huge'", message: huge, reason: Forbidden}
`)
	}
	e, err := verify.New(
		[]*admissionregistrationv1.ValidatingAdmissionPolicy{huge("e2e-runtime-fail", "Fail"), huge("e2e-runtime-ignore", "Ignore")},
		[]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			binding("e2e-runtime-fail", "e2e-runtime-fail", admissionregistrationv1.Deny, admissionregistrationv1.Audit),
			binding("e2e-runtime-fail-audit", "e2e-runtime-fail", admissionregistrationv1.Audit),
			binding("e2e-runtime-ignore", "e2e-runtime-ignore", admissionregistrationv1.Deny),
		}, verify.WithResources(catalog))
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Evaluate(context.Background(), verify.Request{
		Operation: admission.Create, Resource: configmaps,
		Object: object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: r-7, namespace: e2e-runtime}, data: {size: huge}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	prefix := `configmaps "r-7" is forbidden: ValidatingAdmissionPolicy `
	want := []verify.Refusal{
		{Code: 422, Reason: "Invalid", Message: prefix + `'e2e-runtime-fail' with binding 'e2e-runtime-fail' denied request: huge configmaps are not allowed`},
		{Code: 422, Reason: "Invalid", Message: prefix + `'e2e-runtime-ignore' with binding 'e2e-runtime-ignore' denied request: huge configmaps are not allowed`},
	}
	if diff := cmp.Diff(want, d.Denials); diff != "" {
		t.Errorf("Denials mismatch (-want +got):\n%s", diff)
	}
	// The message kube-apiserver v1.37.0 answered with.
	if got := prefix + `'e2e-runtime-ignore' with binding 'e2e-runtime-ignore' denied request: huge configmaps are not allowed`; !d.Refuses(422, got) {
		t.Errorf("Refuses(422, %q) = false, want true", got)
	}
	if d.Refuses(422, prefix+`'e2e-runtime-fail' with binding 'e2e-runtime-fail-audit' denied request: huge`) {
		t.Errorf("Refuses() = true for an Audit-only binding, want false")
	}
	if d.Refuses(403, prefix+`'e2e-runtime-fail' with binding 'e2e-runtime-fail' denied request: huge`) {
		t.Errorf("Refuses() = true for a binding's second failing validation, want false")
	}
}

// TestCustomResourceMetadata: a custom resource's metadata is decoded through ObjectMeta, as
// the apiextensions apiserver decodes it: an emptied labels map is gone before admission, in
// the evaluator's copy, not in the caller's object; malformed metadata refuses the request (the
// server's decoder answers 400), and is dropped from the old object (read from storage).
func TestCustomResourceMetadata(t *testing.T) {
	cat, err := vapcschema.Builtin(verify.KubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.LoadCRDs("../testdata/crd/widgets.yaml"); err != nil {
		t.Fatal(err)
	}
	p := mustPolicy(t, `
metadata: {name: labelled}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: ["*"], resources: [widgets], operations: [CREATE]}
  validations:
  - expression: "!has(object.metadata.labels)"
`)
	e, err := verify.New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p},
		[]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("b", "labelled", admissionregistrationv1.Deny)},
		verify.WithResources(cat))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		labels string
		want   bool
	}{{`{}`, true}, {`{"a":"b"}`, false}} {
		widget := object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"n","labels":`+tc.labels+`}}`)
		dec, err := e.Evaluate(context.Background(), verify.Request{
			Resource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Operation: admission.Create, Object: widget,
		})
		if err != nil {
			t.Fatal(err)
		}
		if dec.Allowed != tc.want {
			t.Errorf("labels %s: allowed %v, want %v: %s", tc.labels, dec.Allowed, tc.want, dec.Summary())
		}
		if _, ok := widget.Object["metadata"].(map[string]any)["labels"]; !ok {
			t.Errorf("labels %s: the caller's widget lost its labels: %v", tc.labels, widget.Object["metadata"])
		}
	}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	malformed := object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"n","labels":{"a":1}}}`)
	if dec, err := e.Evaluate(context.Background(), verify.Request{Resource: widgets, Operation: admission.Create, Object: malformed}); err == nil || !strings.Contains(err.Error(), "object: metadata") {
		t.Errorf("malformed labels in the request: %v, %v; want an error on object.metadata", dec, err)
	}
	u, err := verify.New([]*admissionregistrationv1.ValidatingAdmissionPolicy{mustPolicy(t, `
metadata: {name: old-labels}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: ["*"], resources: [widgets], operations: [UPDATE]}
  validations:
  - expression: "!has(oldObject.metadata.labels)"
`)}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("b", "old-labels", admissionregistrationv1.Deny)}, verify.WithResources(cat))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := u.Evaluate(context.Background(), verify.Request{Resource: widgets, Operation: admission.Update, Name: "w", Namespace: "n", OldObject: malformed,
		Object: object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"n"}}`)})
	if err != nil || !dec.Allowed {
		t.Errorf("malformed labels in the stored object: %v, %v; want them dropped, admitted", dec, err)
	}
}

// userSkippedPolicy is a policy of ConfigMap creates with ConfigMap params, skipped for the
// user "skipped" and on the condition given, that denies with the param's name unless
// validation holds.
func userSkippedPolicy(name, condition, validation string) string {
	return `
metadata: {name: ` + name + `}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  variables:
  - {name: skip, expression: "has(params.data) && 'skip' in params.data"}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  matchConditions:
  - {name: user, expression: "request.userInfo.username != 'skipped'"}
  - ` + condition + `
  validations:
  - expression: "` + validation + `"
    messageExpression: "'denied by ' + params.metadata.name"
`
}

var (
	perParamPolicy   = userSkippedPolicy("per-param", `{name: param, expression: "!has(params.data) || !('skip' in params.data)"}`, "false")
	perRequestPolicy = userSkippedPolicy("per-request", `{name: name, expression: "request.name != 'skip-me'"}`, "!has(params.data)")
	// A matchCondition that reads params through a variable is evaluated for each param.
	perVariablePolicy = userSkippedPolicy("per-variable", `{name: variable, expression: "!variables.skip"}`, "false")
)

// TestMatchConditionsPerParam checks the matchConditions of a binding with several params:
// those that read no param are evaluated once per request (the dispatcher evaluates them for
// every param, with the same result), those that read one for each param, and nothing is kept
// from one request to the next.
func TestMatchConditionsPerParam(t *testing.T) {
	store := verify.NewMemoryStore(catalog.RESTMapper())
	for _, p := range []string{
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: p1, namespace: config, labels: {param: "yes"}}}`,
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: p2, namespace: config, labels: {param: "yes"}}, data: {skip: "1"}}`,
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: p3, namespace: config, labels: {param: "yes"}}}`,
	} {
		if err := store.Put(object(t, p)); err != nil {
			t.Fatal(err)
		}
	}
	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, p := range []string{"per-param", "per-request", "per-variable"} {
		b := binding(p, p, admissionregistrationv1.Deny)
		b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Namespace: "config", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"param": "yes"}}}
		bindings = append(bindings, b)
	}
	e, err := verify.New([]*admissionregistrationv1.ValidatingAdmissionPolicy{mustPolicy(t, perParamPolicy), mustPolicy(t, perRequestPolicy), mustPolicy(t, perVariablePolicy)},
		bindings, verify.WithResources(catalog), verify.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ Policy, Param, Result, MatchCondition, Message string }
	for _, tc := range []struct {
		user, name string
		want       []row
	}{
		{"skipped", "c", []row{
			{"per-param", "p1", "admit", "user", ""}, {"per-param", "p2", "admit", "user", ""}, {"per-param", "p3", "admit", "user", ""},
			{"per-request", "p1", "admit", "user", ""}, {"per-request", "p2", "admit", "user", ""}, {"per-request", "p3", "admit", "user", ""},
			{"per-variable", "p1", "admit", "user", ""}, {"per-variable", "p2", "admit", "user", ""}, {"per-variable", "p3", "admit", "user", ""},
		}},
		{"alice", "c", []row{
			{"per-param", "p1", "deny", "", "denied by p1"},
			{"per-param", "p2", "admit", "param", ""},
			{"per-param", "p3", "deny", "", "denied by p3"},
			{"per-request", "p1", "admit", "", ""},
			{"per-request", "p2", "deny", "", "denied by p2"},
			{"per-request", "p3", "admit", "", ""},
			{"per-variable", "p1", "deny", "", "denied by p1"},
			{"per-variable", "p2", "admit", "variable", ""},
			{"per-variable", "p3", "deny", "", "denied by p3"},
		}},
		{"alice", "skip-me", []row{
			{"per-param", "p1", "deny", "", "denied by p1"},
			{"per-param", "p2", "admit", "param", ""},
			{"per-param", "p3", "deny", "", "denied by p3"},
			{"per-request", "p1", "admit", "name", ""}, {"per-request", "p2", "admit", "name", ""}, {"per-request", "p3", "admit", "name", ""},
			{"per-variable", "p1", "deny", "", "denied by p1"},
			{"per-variable", "p2", "admit", "variable", ""},
			{"per-variable", "p3", "deny", "", "denied by p3"},
		}},
	} {
		d, err := e.Evaluate(context.Background(), verify.Request{Operation: admission.Create, Resource: configmaps,
			UserInfo: verify.UserInfo{Username: tc.user},
			Object:   object(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: "+tc.name+", namespace: ns}}")})
		if err != nil {
			t.Fatal(err)
		}
		var got []row
		for _, r := range d.Results {
			g := row{Policy: r.Policy, Param: r.Param.Name, Result: r.Result, MatchCondition: r.MatchCondition}
			if r.Result == "deny" {
				g.Message = r.Message
			}
			got = append(got, g)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %s: results (-want +got):\n%s", tc.user, tc.name, diff)
		}
	}
}

// TestPreparedIsItsOwn checks that what the store keeps of an object shares nothing with the
// caller's object, and that evaluating a request leaves its object as it was (Prepare and
// Evaluate copy only what they change).
func TestPreparedIsItsOwn(t *testing.T) {
	u := object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: config, labels: {a: b}}, data: {k: v}}`)
	store := verify.NewMemoryStore(catalog.RESTMapper())
	p, err := store.Prepare(u)
	if err != nil {
		t.Fatal(err)
	}
	u.Object["metadata"].(map[string]any)["labels"].(map[string]any)["a"] = "changed"
	u.Object["data"].(map[string]any)["k"] = "changed"
	cm, ok := p.Object().(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("Prepare() = %T, want a typed ConfigMap", p.Object())
	}
	if cm.Labels["a"] != "b" || cm.Data["k"] != "v" {
		t.Errorf("the prepared ConfigMap changed with the caller's object: labels %v, data %v", cm.Labels, cm.Data)
	}

	// Every branch of Prepare: the caller's object is neither changed by it nor shared with
	// what it prepared.
	cat, err := vapcschema.Builtin(verify.KubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.LoadCRDs("../testdata/crd/widgets.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, obj string
		wantNS    string
	}{
		{"a typed object", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, labels: {a: b}}}`, "ns"},
		{"a namespaced object without a namespace", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, labels: {a: b}}}`, "default"},
		{"a namespace, given its defaults", `{apiVersion: v1, kind: Namespace, metadata: {name: ns1, labels: {a: b}}}`, ""},
		{"a custom resource", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: ns, labels: {a: b}}}`, "ns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, tc.obj)
			given := u.DeepCopy()
			p, err := verify.NewMemoryStore(cat.RESTMapper()).Prepare(u)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(given.Object, u.Object); diff != "" {
				t.Errorf("Prepare changed the caller's object (-given +now):\n%s", diff)
			}
			u.Object["metadata"].(map[string]any)["labels"].(map[string]any)["a"] = "changed"
			a, err := meta.Accessor(p.Object())
			if err != nil {
				t.Fatal(err)
			}
			if a.GetLabels()["a"] != "b" || p.Labels()["a"] != "b" {
				t.Errorf("the prepared object's labels %v (%v) changed with the caller's object", a.GetLabels(), p.Labels())
			}
			if a.GetNamespace() != tc.wantNS || p.Namespace() != tc.wantNS {
				t.Errorf("the prepared object's namespace = %q (%q), want %q", a.GetNamespace(), p.Namespace(), tc.wantNS)
			}
			if ns, ok := p.Object().(*corev1.Namespace); ok && (ns.Labels["kubernetes.io/metadata.name"] != ns.Name || ns.Status.Phase != corev1.NamespaceActive) {
				t.Errorf("the prepared namespace = labels %v, phase %q, want its defaults", ns.Labels, ns.Status.Phase)
			}
		})
	}

	// A request's object without apiVersion and kind: the evaluator gives its copy the
	// request's kind, not the caller's object.
	e, err := verify.New([]*admissionregistrationv1.ValidatingAdmissionPolicy{mustPolicy(t, annotatePolicy)},
		[]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("b", "annotate", admissionregistrationv1.Audit)}, verify.WithResources(catalog))
	if err != nil {
		t.Fatal(err)
	}
	obj := object(t, `{metadata: {name: c, namespace: ns}, data: {v: one}}`)
	dec, err := e.Evaluate(context.Background(), verify.Request{Operation: admission.Create, Resource: configmaps, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	if got := dec.AuditAnnotations["annotate/value"]; got != "one" {
		t.Errorf("annotation = %q, want one", got)
	}
	if obj.GetAPIVersion() != "" || obj.GetKind() != "" {
		t.Errorf("the caller's object became %s %s, want it as given", obj.GetAPIVersion(), obj.GetKind())
	}
}
