package replay

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestServiceAllocations: of a Service create, what kube-apiserver's allocators set that the
// request did not ask for is unknown; what it asked for is what the server allocated (or it
// refused before admission).
func TestServiceAllocations(t *testing.T) {
	t.Parallel()
	// The object as the replay's pipeline gives it: its allocators hand out an address and
	// node ports of their own.
	svc := func(typ api.ServiceType, clusterIP string, nodePorts ...int32) *api.Service {
		s := &api.Service{Spec: api.ServiceSpec{Type: typ, ClusterIP: clusterIP, ClusterIPs: []string{clusterIP}, IPFamilies: []api.IPFamily{api.IPv4Protocol}}}
		for _, p := range nodePorts {
			s.Spec.Ports = append(s.Spec.Ports, api.ServicePort{NodePort: p})
		}
		return s
	}
	for _, tc := range []struct {
		name string
		obj  *api.Service
		body string
		want []string
	}{
		{"a cluster IP service", svc(api.ServiceTypeClusterIP, "10.0.0.1", 0),
			`{"spec":{"ports":[{"port":80}]}}`, []string{"object.spec.clusterIP", "object.spec.clusterIPs", "object.spec.ipFamilies"}},
		{"its address given", svc(api.ServiceTypeClusterIP, "10.0.0.7", 0),
			`{"spec":{"clusterIP":"10.0.0.7","ports":[{"port":80}]}}`, nil},
		{"its address given, dual stack preferred", svc(api.ServiceTypeClusterIP, "10.0.0.7", 0),
			`{"spec":{"clusterIP":"10.0.0.7","ipFamilyPolicy":"PreferDualStack","ports":[{"port":80}]}}`, []string{"object.spec.clusterIPs", "object.spec.ipFamilies"}},
		{"headless", svc(api.ServiceTypeClusterIP, "None", 0),
			`{"spec":{"clusterIP":"None","ports":[{"port":80}]}}`, []string{"object.spec.ipFamilies"}},
		{"headless, its family given", svc(api.ServiceTypeClusterIP, "None", 0),
			`{"spec":{"clusterIP":"None","ipFamilies":["IPv4"],"ports":[{"port":80}]}}`, nil},
		{"external name", &api.Service{Spec: api.ServiceSpec{Type: api.ServiceTypeExternalName}},
			`{"spec":{"type":"ExternalName","externalName":"db.example.com"}}`, nil},
		{"node ports, one asked for", svc(api.ServiceTypeNodePort, "10.0.0.1", 30050, 30000),
			`{"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":30050},{"port":81}]}}`,
			[]string{"object.spec.clusterIP", "object.spec.clusterIPs", "object.spec.ipFamilies", "object.spec.ports.*.nodePort"}},
		{"node ports and address asked for", svc(api.ServiceTypeNodePort, "10.0.0.9", 30050),
			`{"spec":{"type":"NodePort","clusterIP":"10.0.0.9","ports":[{"port":80,"nodePort":30050}]}}`, nil},
		{"no body", svc(api.ServiceTypeNodePort, "10.0.0.1", 30000), ``,
			[]string{"object.spec.ports.*.nodePort", "object.spec.healthCheckNodePort", "object.spec.clusterIP", "object.spec.clusterIPs", "object.spec.ipFamilies"}},
	} {
		var got []string
		for _, u := range serviceAllocations(tc.obj, []byte(tc.body)) {
			got = append(got, u.Path.String())
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: unknown fields (-want +got):\n%s", tc.name, d)
		}
	}
}

// TestMessageOfAPassingValidation: a ConfigMap created with a generated name, which the log does
// not hold when the create was refused. A validation that passes does not evaluate its
// messageExpression, which reads the name: the refusal by another validation is decided; one by
// the validation itself is not, its message reading the name.
func TestMessageOfAPassingValidation(t *testing.T) {
	t.Parallel()
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "names"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: createRules("", "configmaps"),
			Validations: []admissionregistrationv1.Validation{
				{Expression: "size(object.?data.orValue({})) < 2", MessageExpression: "'too much data in ' + object.metadata.name"},
				{Expression: "has(object.metadata.labels)", Message: "labels required"},
			},
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "names"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "names", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	denied := func(msg string) string {
		return `configmaps "" is forbidden: ValidatingAdmissionPolicy 'names' with binding 'names' denied request: ` + msg
	}
	cm := func(labels bool, keys ...string) map[string]any {
		md := map[string]any{"generateName": "cfg-", "namespace": "app"}
		if labels {
			md["labels"] = map[string]any{"app": "web"}
		}
		data := map[string]any{}
		for _, k := range keys {
			data[k] = "v"
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data}
	}
	create := func(id string, seconds float64, msg string, req map[string]any) event {
		return event{id: id, verb: "create", version: "v1", resource: "configmaps", ns: "app", code: 422, message: denied(msg), received: at(t, seconds), req: req}
	}
	var text []string
	for _, e := range []event{
		create("no-labels", 1, "labels required", cm(false, "a")),
		create("too-much", 2, "too much data in cfg-x7k2p", cm(true, "a", "b")),
	} {
		text = append(text, e.line(t))
	}
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, text...)
	if rec := recs["no-labels"]; rec == nil || rec.Decision != DecisionDeny || rec.Message == "" {
		t.Errorf("no-labels: %+v, want deny: only the failing validation's message is evaluated", rec)
	}
	if rec := recs["too-much"]; rec == nil || rec.Decision != DecisionIndeterminate || !strings.Contains(rec.Indeterminate, "metadata.name") {
		t.Errorf("too-much: %+v, want indeterminate: the failing validation's message reads the generated name", rec)
	}
}

// TestUpdateWithoutOldObject: an update of a ConfigMap the log never showed, answered with the
// object it stored. A policy that does not read oldObject decides it; one that reads it, or
// selects on labels (which an update matches on the old object's too), does not.
func TestUpdateWithoutOldObject(t *testing.T) {
	t.Parallel()
	updates := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}}}
	policy := func(expr string, selector *metav1.LabelSelector) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		mr := updates.DeepCopy()
		mr.ObjectSelector = selector
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchConstraints: mr,
				Validations: []admissionregistrationv1.Validation{{Expression: expr}}}}
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
		return p, b
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "app", "resourceVersion": "7", "uid": "u-1",
		"labels": map[string]any{"app": "web"}}, "data": map[string]any{"k": "v2"}}
	line := event{id: "patch", verb: "patch", version: "v1", resource: "configmaps", ns: "app", name: "c", code: 200, received: at(t, 1),
		req: map[string]any{"data": map[string]any{"k": "v2"}}, resp: cm}.line(t)
	for _, tc := range []struct {
		name, expr string
		selector   *metav1.LabelSelector
		decided    bool
	}{
		{"reads the object only", "object.data.k != 'v3'", nil, true},
		{"reads the old object", "!has(oldObject.data) || oldObject.data.k != 'v3'", nil, false},
		{"selects on labels", "object.data.k != 'v3'", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, false},
		// The store gives the object of an unconditional update the old object's version.
		{"reads the object's resourceVersion", "has(object.metadata.resourceVersion) && object.metadata.resourceVersion != ''", nil, false},
		// The validator evaluates every messageExpression, on what is left of the budget.
		{"a passing validation's message reads the old object", "object.data.k != 'v3'", nil, false},
	} {
		p, b := policy(tc.expr, tc.selector)
		if strings.HasPrefix(tc.name, "a passing validation's message") {
			p.Spec.Validations[0].MessageExpression = "'was ' + string(oldObject.data.size())"
		}
		_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, line)
		rec := recs["patch"]
		if rec == nil {
			t.Errorf("%s: no record", tc.name)
			continue
		}
		if decided := rec.Decision != DecisionIndeterminate; decided != tc.decided {
			t.Errorf("%s: %s (%s), want decided %v", tc.name, rec.Decision, rec.Indeterminate, tc.decided)
		}
		if tc.decided && (rec.Decision != DecisionAdmit || rec.OldObjectSource != SourceUnknown) {
			t.Errorf("%s: %s, old object from %q: want admit, without the old object", tc.name, rec.Decision, rec.OldObjectSource)
		}
	}
}

// TestStoredAfterMutation: of an object taken from the response, the fields kube-apiserver set
// after mutating admission are unknown to the mutating policies where the stored value is not
// the one the log shows them seeing (the request's object; the object before a patch, unless
// the patch names the field).
func TestStoredAfterMutation(t *testing.T) {
	obj := func(s string) *unstructured.Unstructured {
		t.Helper()
		u := auditlog.DecodeAnyObject([]byte(s))
		if u == nil {
			t.Fatalf("%s does not decode", s)
		}
		return u
	}
	stored := obj(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d-x1","generateName":"d-","uid":"u1","creationTimestamp":"2026-12-01T00:00:00Z","generation":2},"status":{"replicas":1}}`)
	before := obj(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d-x1","uid":"u1","creationTimestamp":"2026-12-01T00:00:00Z","generation":2},"status":{"replicas":1}}`)
	bumped := obj(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d-x1","uid":"u1","creationTimestamp":"2026-12-01T00:00:00Z","generation":1},"status":{"replicas":1}}`)
	deployments := target{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}}
	for _, tc := range []struct {
		name   string
		verb   string
		op     admission.Operation
		body   string
		old    *unstructured.Unstructured
		stored *unstructured.Unstructured
		want   []string
	}{
		{"a create with generateName", "create", admission.Create, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generateName":"d-"}}`, nil, stored,
			[]string{"object.metadata.generation", "object.status", "object.metadata.uid", "object.metadata.creationTimestamp", "object.metadata.name", "request.name"}},
		{"a patch that changes nothing the strategy sets", "patch", admission.Update, `{"spec":{"paused":true}}`, before, before, nil},
		{"a patch after which the generation was raised", "patch", admission.Update, `{"spec":{"replicas":3}}`, bumped, before, []string{"object.metadata.generation"}},
		{"a JSON patch of the status", "patch", admission.Update, `[{"op":"replace","path":"/status/replicas","value":5}]`, before, before, []string{"object.status"}},
		{"an update that sends the stored status", "update", admission.Update, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d-x1","generation":2},"status":{"replicas":1}}`, before, before, nil},
		{"an update without the status", "update", admission.Update, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d-x1","generation":2}}`, before, before, []string{"object.status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := deployments
			tg.op = tc.op
			ev := &Event{}
			ev.Verb, ev.RequestObject = tc.verb, []byte(tc.body)
			var got []string
			for _, u := range storedAfterMutation(ev, tg, tc.stored, tc.old) {
				got = append(got, u.Path.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unknown fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWriteTouches: the fields a successful patch may have changed, which a write that may have
// been a dry run leaves unknown; the others are in its response as stored.
func TestWriteTouches(t *testing.T) {
	labels := vapccel.FieldPath{Root: "object", Steps: []string{"metadata", "labels"}}
	data := vapccel.FieldPath{Root: "object", Steps: []string{"data", "k"}}
	finalizers := vapccel.FieldPath{Root: "object", Steps: []string{"metadata", "finalizers"}}
	for _, tc := range []struct {
		name, uri, body          string
		labels, data, finalizers bool
	}{
		{"a merge patch of labels", "/api/v1/namespaces/n/configmaps/c", `{"metadata":{"labels":{"a":"b"}}}`, true, false, false},
		{"a merge patch of data", "/api/v1/namespaces/n/configmaps/c", `{"data":{"k":"v"}}`, false, true, false},
		{"a JSON patch of a label", "/api/v1/namespaces/n/configmaps/c", `[{"op":"add","path":"/metadata/labels/a","value":"b"}]`, true, false, false},
		{"a JSON patch of the whole object", "/api/v1/namespaces/n/configmaps/c", `[{"op":"replace","path":"","value":{}}]`, true, true, true},
		{"a strategic merge directive in metadata", "/api/v1/namespaces/n/configmaps/c", `{"metadata":{"$deleteFromPrimitiveList/finalizers":["x"]}}`, false, false, true},
		{"a strategic merge directive of the object", "/api/v1/namespaces/n/configmaps/c", `{"$patch":"replace","data":{}}`, true, true, true},
		{"a server-side apply", "/api/v1/namespaces/n/configmaps/c?fieldManager=m&force=true", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"a":"b"}}}`, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Event{}
			ev.Verb, ev.RequestURI, ev.RequestObject = "patch", tc.uri, []byte(tc.body)
			touches := writeTouches(ev)
			if got := touches(labels); got != tc.labels {
				t.Errorf("labels touched: %v, want %v", got, tc.labels)
			}
			if got := touches(data); got != tc.data {
				t.Errorf("data touched: %v, want %v", got, tc.data)
			}
			if got := touches(finalizers); got != tc.finalizers {
				t.Errorf("finalizers touched: %v, want %v", got, tc.finalizers)
			}
		})
	}
}

// TestGeneratedPrefix: a name the server generates is its base and a random suffix; the log
// holds neither the name of a create logged at level Request nor the name of the token volume
// the ServiceAccount plugin added to a refused pod. A comparison the base decides reads nothing
// the replay does not know: the request is decided; one the suffix decides is not.
func TestGeneratedPrefix(t *testing.T) {
	t.Parallel()
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"generateName": "cfg-", "namespace": "app"}, "data": map[string]any{"a": "v"}}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "app"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
	sa := map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": "app", "uid": "3c1f3a52-7a47-4f39-9a34-0d1b6f7b2d10", "resourceVersion": "10"}}
	for _, tc := range []struct {
		name, resource, expression string
		want                       string
	}{
		{"a generated name's base", "configmaps", "object.metadata.name.startsWith('cfg-')", DecisionAdmit},
		{"a generated name, another", "configmaps", "object.metadata.name != 'web' && request.name != 'cfg' && !(request.name in ['a', 'b'])", DecisionAdmit},
		{"a generated name's suffix", "configmaps", "!object.metadata.name.startsWith('cfg-x')", DecisionIndeterminate},
		{"a generated name's length", "configmaps", "size(object.metadata.name) > 3", DecisionIndeterminate},
		{"the token volume's base", "pods", "!object.spec.volumes.exists(v, v.name.startsWith('kube-api-access-'))", DecisionDeny},
		{"the token volume, others", "pods", "object.spec.volumes.exists(v, v.name in ['docker-sock', 'host'])", DecisionDeny},
		{"the token volume's suffix", "pods", "!object.spec.volumes.exists(v, v.name == 'kube-api-access-abcde') && false", DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", tc.resource, admissionregistrationv1.Create, nil, tc.expression)
			x := event{id: "x", verb: "create", version: "v1", resource: tc.resource, ns: "app", code: 201, received: at(t, 2), req: cm}.line(t)
			x = replaceOnce(t, x, `"level":"RequestResponse"`, `"level":"Request"`)
			if tc.resource == "pods" {
				denied := `pods "p" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: denied by guard`
				x = event{id: "x", verb: "create", version: "v1", resource: tc.resource, ns: "app", code: 422, message: denied, received: at(t, 2), req: pod}.line(t)
			}
			lines := []string{
				event{id: "sa", verb: "create", version: "v1", resource: "serviceaccounts", ns: "app", name: "default", code: 201, received: at(t, 1), req: sa, resp: sa}.line(t),
				x,
			}
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines...)
			if rec := recs["x"]; rec == nil || rec.Decision != tc.want || len(rec.Disagreements) > 0 {
				t.Errorf("%s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}
