package replay

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// The world of the CRD tests: a ReplicaLimit param kind and a Widget kind, both namespaced
// custom resources of rules.example.com.
const crdT0 = "2026-03-02T10:00:00.000000Z"

// at is crdT0 plus the seconds.
func at(t *testing.T, seconds float64) string {
	t.Helper()
	t0, err := time.Parse(time.RFC3339Nano, crdT0)
	if err != nil {
		t.Fatal(err)
	}
	return t0.Add(time.Duration(seconds * float64(time.Second))).Format("2006-01-02T15:04:05.000000Z07:00")
}

// crdObject is a CRD of rules.example.com, with its status as the apiserver writes it:
// "created" (empty), "accepted" (NamesAccepted, not yet Established) or "established".
func crdObject(plural, kind, status string, deleting bool) map[string]any {
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".rules.example.com", "uid": "u-" + plural, "resourceVersion": "10"},
		"spec": map[string]any{
			"group": "rules.example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": plural, "singular": strings.TrimSuffix(plural, "s"), "kind": kind, "listKind": kind + "List"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec": map[string]any{"type": "object", "properties": map[string]any{"max": map[string]any{"type": "integer"}, "size": map[string]any{"type": "integer"}}},
				}}}}},
		},
		"status": map[string]any{"acceptedNames": map[string]any{"plural": "", "kind": ""}, "storedVersions": []any{"v1"}},
	}
	names := crd["spec"].(map[string]any)["names"]
	cond := func(typ, status string) any {
		return map[string]any{"type": typ, "status": status, "lastTransitionTime": "2026-03-02T10:00:00Z", "reason": "r", "message": "m"}
	}
	switch status {
	case "accepted":
		crd["status"] = map[string]any{"acceptedNames": names, "storedVersions": []any{"v1"}, "conditions": []any{cond("NamesAccepted", "True"), cond("Established", "False")}}
	case "established":
		crd["status"] = map[string]any{"acceptedNames": names, "storedVersions": []any{"v1"}, "conditions": []any{cond("NamesAccepted", "True"), cond("Established", "True")}}
	}
	if deleting {
		md := crd["metadata"].(map[string]any)
		md["deletionTimestamp"] = "2026-03-02T10:05:00Z"
		md["finalizers"] = []any{"customresourcecleanup.apiextensions.k8s.io"}
	}
	return crd
}

// event is one final audit event as JSON, for a resource of any group.
type event struct {
	id, verb, group, version, resource, sub, ns, name string
	code                                              int32
	message, received                                 string
	user                                              string
	groups                                            []any // nil: system:masters
	req, resp                                         map[string]any
}

func (e event) line(t *testing.T) string {
	t.Helper()
	uri := "/apis/" + e.group + "/" + e.version + "/"
	if e.group == "" {
		uri = "/api/" + e.version + "/"
	}
	if e.ns != "" {
		uri += "namespaces/" + e.ns + "/"
	}
	uri += e.resource
	if e.verb != "create" || e.sub != "" {
		uri += "/" + e.name
	}
	if e.sub != "" {
		uri += "/" + e.sub
	}
	user := e.user
	if user == "" {
		user = "admin"
	}
	groups := e.groups
	if groups == nil {
		groups = []any{"system:masters"}
	}
	ev := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": auditlog.LevelRequestResponse, "auditID": e.id, "stage": "ResponseComplete",
		"requestURI": uri, "verb": e.verb, "user": map[string]any{"username": user, "groups": groups},
		"objectRef":                map[string]any{"resource": e.resource, "subresource": e.sub, "namespace": e.ns, "name": e.name, "apiGroup": e.group, "apiVersion": e.version},
		"responseStatus":           map[string]any{"metadata": map[string]any{}, "code": e.code, "message": e.message},
		"requestReceivedTimestamp": e.received, "stageTimestamp": e.received,
	}
	if e.req != nil {
		ev["requestObject"] = e.req
	}
	if e.resp != nil {
		ev["responseObject"] = e.resp
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// crdPolicies are a policy that limits the replicas of deployments by a ReplicaLimit param
// and one that limits the size of widgets.
func crdPolicies() ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	rule := func(group, resource string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: []string{resource}},
		}}
	}
	limit := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "replica-limit"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			ParamKind:        &admissionregistrationv1.ParamKind{APIVersion: "rules.example.com/v1", Kind: "ReplicaLimit"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule("apps", "deployments")}},
			Validations:      []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= params.spec.max", Message: "too many replicas"}},
		},
	}
	limitBinding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "replica-limit"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "replica-limit",
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "limit", Namespace: "rules", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	widget := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-size"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule("rules.example.com", "widgets")}},
			Validations:      []admissionregistrationv1.Validation{{Expression: "object.spec.size < 10", Message: "too big"}},
		},
	}
	widgetBinding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-size"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "widget-size", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	soft := limit.DeepCopy()
	soft.Name, soft.Spec.FailurePolicy = "replica-limit-soft", ptr.To(admissionregistrationv1.Ignore)
	soft.Spec.MatchConstraints.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{rule("apps", "replicasets")}
	softBinding := limitBinding.DeepCopy()
	softBinding.Name, softBinding.Spec.PolicyName = "replica-limit-soft", "replica-limit-soft"
	return []*admissionregistrationv1.ValidatingAdmissionPolicy{limit, soft, widget}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{limitBinding, softBinding, widgetBinding}
}

func deploymentObject(name string, replicas int64) map[string]any {
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": name, "namespace": "app", "resourceVersion": "20"},
		"spec": map[string]any{"replicas": replicas, "selector": map[string]any{"matchLabels": map[string]any{"app": name}}, "template": podTemplate(name)}}
}

// podTemplate is a valid pod template of a workload whose selector is app=NAME: the server
// validates the objects of a replayed request as it validated them.
func podTemplate(app string) map[string]any {
	return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": app}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
}

func customObject(kind, name, ns string, spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": "rules.example.com/v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": "30"}, "spec": spec}
}

const (
	tooManyReplicas = `deployments.apps "%s" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit' denied request: too many replicas`
	widgetTooBig    = `widgets.rules.example.com "%s" is forbidden: ValidatingAdmissionPolicy 'widget-size' with binding 'widget-size' denied request: too big`
)

func msg(format, name string) string { return strings.Replace(format, "%s", name, 1) }

// crdEvent is a request of the admin's (a status update: the apiserver's) for a CRD at the
// given second.
func crdEvent(t *testing.T, id, verb, sub, name string, code int32, when float64, resp map[string]any) event {
	user := "admin"
	if sub == "status" {
		user = "system:apiserver"
	}
	return event{id: id, verb: verb, group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions", sub: sub, name: name, code: code, received: at(t, when), user: user, resp: resp}
}

// deploymentEvent is a create of a Deployment in namespace app at the given second, which
// crdPolicies' replica-limit policy matches.
func deploymentEvent(t *testing.T, id, name string, replicas int64, when float64, code int32, message string) event {
	d := deploymentObject(name, replicas)
	e := event{id: id, verb: "create", group: "apps", version: "v1", resource: "deployments", ns: "app", name: name, code: code, message: message, received: at(t, when), req: d}
	if code == 201 {
		e.resp = d
	}
	return e
}

// TestCRDsFromLog: the log creates the CRD of a param kind and of a matched kind; the replay
// learns them as the apiserver serves them (once their names are accepted), waits for the
// apiserver's discovery to find the param kind, and forgets them when the log deletes them.
func TestCRDsFromLog(t *testing.T) {
	t.Parallel()
	ps, bs := crdPolicies()
	crdE := func(id, verb, sub, name string, code int32, when float64, resp map[string]any) event {
		return crdEvent(t, id, verb, sub, name, code, when, resp)
	}
	depE := func(id, name string, replicas int64, when float64, code int32, message string) event {
		return deploymentEvent(t, id, name, replicas, when, code, message)
	}
	widgetE := func(id, verb, name string, size int64, when float64, code int32, message string) event {
		w := customObject("Widget", name, "app", map[string]any{"size": size})
		e := event{id: id, verb: verb, group: "rules.example.com", version: "v1", resource: "widgets", ns: "app", name: name, code: code, message: message, received: at(t, when), req: w}
		if code < 300 {
			e.resp = w
		}
		return e
	}
	limit := customObject("ReplicaLimit", "limit", "rules", map[string]any{"max": int64(3)})
	noParamKind := "failed to find resource referenced by paramKind: 'rules.example.com/v1, Kind=ReplicaLimit'"
	lines := []event{
		// Before its CRD, the paramKind is a configuration error (failurePolicy Fail denies), but
		// the replay cannot tell that no CRD served it then: the log does not begin with the
		// cluster.
		depE("before", "d0", 1, -100, 422, "deployments.apps \"d0\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' denied request: failed to configure policy: "+noParamKind),
		crdE("limits", "create", "", "", 201, 0, crdObject("replicalimits", "ReplicaLimit", "created", false)),
		crdE("limits-accepted", "update", "status", "replicalimits.rules.example.com", 200, 0.01, crdObject("replicalimits", "ReplicaLimit", "accepted", false)),
		crdE("limits-established", "update", "status", "replicalimits.rules.example.com", 200, 0.02, crdObject("replicalimits", "ReplicaLimit", "established", false)),
		crdE("widgets", "create", "", "", 201, 0.1, crdObject("widgets", "Widget", "created", false)),
		crdE("widgets-established", "update", "status", "widgets.rules.example.com", 200, 0.2, crdObject("widgets", "Widget", "established", false)),
		{id: "limit", verb: "create", group: "rules.example.com", version: "v1", resource: "replicalimits", ns: "rules", name: "limit", code: 201, received: at(t, 2), req: limit, resp: limit},
		// A matched custom resource is decided at once.
		widgetE("w-ok", "create", "w1", 3, 2.5, 201, ""),
		widgetE("w-big", "create", "w2", 30, 2.6, 422, msg(widgetTooBig, "w2")),
		// Within ParamResolveDelay of the Established condition, the apiserver may not know the
		// param kind yet.
		depE("pending", "d1", 5, 10, 201, ""),
		// There, the log's denial says which: found (the param's limit), or not yet.
		depE("pending-found", "d5", 5, 10.5, 422, msg(tooManyReplicas, "d5")),
		depE("pending-not-found", "d6", 5, 10.6, 422, "deployments.apps \"d6\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' denied request: failed to configure policy: "+noParamKind),
		// Decided alike whether the apiserver had found the param kind or not (failurePolicy
		// Ignore, and the param admits).
		{id: "rs-alike", verb: "create", group: "apps", version: "v1", resource: "replicasets", ns: "app", name: "rs1", code: 201, received: at(t, 11),
			req: map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": map[string]any{"name": "rs1", "namespace": "app"}, "spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": "rs1"}}, "template": podTemplate("rs1")}}},
		depE("after-ok", "d2", 2, 45, 201, ""),
		depE("after-deny", "d3", 5, 45, 422, msg(tooManyReplicas, "d3")),
		// Deleting the CRDs: the kinds are gone, and the param kind's objects are not known.
		crdE("limits-delete", "delete", "", "replicalimits.rules.example.com", 200, 50, crdObject("replicalimits", "ReplicaLimit", "established", true)),
		crdE("widgets-delete", "delete", "", "widgets.rules.example.com", 200, 50, crdObject("widgets", "Widget", "established", true)),
		depE("deleted", "d4", 1, 60, 201, ""),
		widgetE("w-gone", "update", "w1", 4, 61, 200, ""),
	}
	var text []string
	for _, e := range lines {
		text = append(text, e.line(t))
	}
	sum, recs := replayLines(t, ps, bs, text...)
	for _, tc := range []struct {
		id, decision, detail string
	}{
		{"before", DecisionIndeterminate, "param-kind-unknown: paramKind rules.example.com/v1 ReplicaLimit is served by no CustomResourceDefinition the replay knows"},
		{"w-ok", DecisionAdmit, ""},
		{"w-big", DecisionDeny, msg(widgetTooBig, "w2")},
		{"pending", DecisionIndeterminate, "param-kind-pending: policy replica-limit: the CustomResourceDefinition replicalimits.rules.example.com of paramKind rules.example.com/v1 ReplicaLimit began to be served at audit.jsonl:3"},
		{"pending-found", DecisionDeny, msg(tooManyReplicas, "d5")},
		{"pending-not-found", DecisionDeny, noParamKind},
		{"after-ok", DecisionAdmit, ""},
		{"after-deny", DecisionDeny, msg(tooManyReplicas, "d3")},
		{"rs-alike", DecisionAdmit, ""},
		{"deleted", DecisionIndeterminate, "param-unknown: replicalimits.rules.example.com rules/limit unknown: the CustomResourceDefinition replicalimits.rules.example.com of paramKind rules.example.com/v1 ReplicaLimit was deleted at audit.jsonl:16"},
		{"w-gone", DecisionIndeterminate, "unknown-resource: widgets.rules.example.com is not a resource"},
	} {
		rec := recs[tc.id]
		if rec == nil {
			t.Errorf("%s: no record", tc.id)
			continue
		}
		got := rec.Message + rec.Indeterminate
		if rec.Decision != tc.decision || !strings.Contains(got, tc.detail) {
			t.Errorf("%s: %s %q, want %s %q", tc.id, rec.Decision, got, tc.decision, tc.detail)
		}
	}
	if rec := recs["pending"]; rec != nil {
		var got []string
		for _, a := range rec.Alternatives {
			got = append(got, a.Decision+" if "+a.If)
		}
		want := []string{"deny if kube-apiserver had found the paramKind", "deny if kube-apiserver had not yet found the paramKind"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("pending: alternatives (-want +got):\n%s", diff)
		}
	}
	if rec := recs["pending-found"]; rec != nil && rec.Certainty != CertaintyCertain {
		t.Errorf("pending-found: %s, want certain: the log's denial is the found paramKind's", rec.Certainty)
	}
	if rec := recs["rs-alike"]; rec != nil && !strings.Contains(strings.Join(rec.Notes, "\n"), "decided alike whether or not kube-apiserver had found the paramKind yet") {
		t.Errorf("rs-alike: notes %q, want one that says the decision does not depend on the paramKind", rec.Notes)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
	var changes []string
	for _, c := range sum.CustomResourceDefinitions {
		changes = append(changes, c.String())
	}
	want := []string{
		"audit.jsonl:3: replicalimits.rules.example.com served: ReplicaLimit Namespaced in v1",
		"audit.jsonl:6: widgets.rules.example.com served: Widget Namespaced in v1",
		"audit.jsonl:16: replicalimits.rules.example.com removed: deleted",
		"audit.jsonl:17: widgets.rules.example.com removed: deleted",
	}
	if strings.Join(changes, "\n") != strings.Join(want, "\n") {
		t.Errorf("CRD changes:\n%s\nwant:\n%s", strings.Join(changes, "\n"), strings.Join(want, "\n"))
	}
}

// TestParamKindWithoutReceipt: GKE's entries do not say when a request was received, which
// the replay takes as the earliest it may have been, a minute before it completed. A request
// that completed seconds after kube-apiserver was sure to have found its policy's paramKind
// was likely received after that too (as a write that completed seconds before it is likely
// one its admission read: lagWorlds): decided on the kind found, likely, with the kind not yet
// found as the alternative, which an earlier receipt needs (undecided where that receipt may
// have read another state of the params), and the log's verdicts decide where they can.
// Within the window, or moments after it (admissionMayFollow), it stays undecided, as does an
// exec, whose completion is its session's end; a minute after, it is certain. From the log backend, all are certain.
func TestParamKindWithoutReceipt(t *testing.T) {
	t.Parallel()
	ps, bs := crdPolicies()
	limit := customObject("ReplicaLimit", "limit", "rules", map[string]any{"max": int64(3)})
	noParamKind := `deployments.apps "%s" is forbidden: ValidatingAdmissionPolicy 'replica-limit' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'rules.example.com/v1, Kind=ReplicaLimit'`
	// A refusal's response is its Status, which GKE's entry keeps (its status holds only the
	// reason).
	refused := func(e event) event {
		e.resp = map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure", "message": e.message, "reason": "Invalid", "code": int64(e.code)}
		return e
	}
	var lines []string
	for _, e := range []event{
		crdEvent(t, "limits", "create", "", "", 201, 0, crdObject("replicalimits", "ReplicaLimit", "created", false)),
		crdEvent(t, "limits-accepted", "update", "status", "replicalimits.rules.example.com", 200, 0.01, crdObject("replicalimits", "ReplicaLimit", "accepted", false)),
		crdEvent(t, "limits-established", "update", "status", "replicalimits.rules.example.com", 200, 0.02, crdObject("replicalimits", "ReplicaLimit", "established", false)),
		{id: "limit", verb: "create", group: "rules.example.com", version: "v1", resource: "replicalimits", ns: "rules", name: "limit", code: 201, received: at(t, 2), req: limit, resp: limit},
		deploymentEvent(t, "within", "d1", 2, 10, 201, ""),
		// 30ms after the window (until 40.02): its admission may have run before then
		// (admissionMayFollow).
		deploymentEvent(t, "edge", "d2", 2, 40.05, 201, ""),
		// 60ms after it: past.
		deploymentEvent(t, "past-edge", "d1b", 2, 40.08, 201, ""),
		deploymentEvent(t, "after-ok", "d3", 2, 45, 201, ""),
		refused(deploymentEvent(t, "after-deny", "d4", 5, 45.5, 422, msg(tooManyReplicas, "d4"))),
		deploymentEvent(t, "late", "d5", 2, 120, 201, ""),
	} {
		lines = append(lines, e.line(t))
	}
	_, plain := replayLines(t, ps, bs, lines...)
	for _, id := range []string{"edge", "after-ok", "after-deny", "late"} {
		if rec := plain[id]; rec == nil || rec.Certainty != CertaintyCertain {
			t.Errorf("from the log backend, %s: %s, want certain", id, describeRecord(rec))
		}
	}
	// And from GKE a request whose refusal is the paramKind's not found: what the replay
	// evaluates in another state must not take its place.
	// And one more than a minute after the param was written (which an earlier receipt
	// could not have missed), whose refusal is the paramKind's not found: that way, certain.
	notFound := refused(deploymentEvent(t, "after-not-found", "d6", 2, 46, 422, msg(noParamKind, "d6")))
	lateNotFound := refused(deploymentEvent(t, "late-not-found", "d7", 2, 70, 422, msg(noParamKind, "d7")))
	_, gke := replayLines(t, ps, bs, gkeLines(t, append(lines, notFound.line(t), lateNotFound.line(t))...)...)
	const early = "the request was received before 2026-03-02T10:00:40.020Z, %s or more before it completed (the GKE Cloud Logging export does not carry when the request was received), when kube-apiserver may not have found the paramKind yet"
	for _, tc := range []struct {
		id, decision string
		certainty    Certainty
		// reason is the indeterminate one's; early the alternative an earlier receipt gives.
		reason Reason
		early  string
	}{
		{id: "within", decision: DecisionIndeterminate, certainty: CertaintyIndeterminate, reason: ReasonParamKindPending},
		{id: "edge", decision: DecisionIndeterminate, certainty: CertaintyIndeterminate, reason: ReasonParamKindPending},
		// Received a minute before it completed, it may have read the state before the
		// param's write (at 2 s), where the kind not found is not evaluated: undecided.
		{id: "past-edge", decision: DecisionAdmit, certainty: CertaintyLikely, early: "indeterminate if " + strings.Replace(early, "%s", "60ms", 1)},
		{id: "after-ok", decision: DecisionAdmit, certainty: CertaintyLikely, early: "indeterminate if " + strings.Replace(early, "%s", "4.98s", 1)},
		// The log's refusal is the kind found's: certain.
		{id: "after-deny", decision: DecisionDeny, certainty: CertaintyCertain},
		// The log's verdict is no state the informers may have held (informerLag, before).
		{id: "after-not-found", decision: DecisionIndeterminate, certainty: CertaintyIndeterminate, reason: ReasonParamUnknown},
		{id: "late-not-found", decision: DecisionDeny, certainty: CertaintyCertain},
		{id: "late", decision: DecisionAdmit, certainty: CertaintyCertain},
	} {
		rec := gke[tc.id]
		if rec == nil {
			t.Errorf("from GKE, %s: no record", tc.id)
			continue
		}
		var alts []string
		for _, a := range rec.Alternatives {
			alts = append(alts, strings.TrimSpace(a.Decision+" "+a.Message)+" if "+a.If)
		}
		if rec.Decision != tc.decision || rec.Certainty != tc.certainty || rec.Reason != tc.reason {
			t.Errorf("from GKE, %s: %s %s %q, want %s %s %s", tc.id, rec.Decision, rec.Certainty, rec.Indeterminate, tc.decision, tc.certainty, tc.reason)
		}
		var gotEarly []string
		for _, a := range alts {
			if strings.Contains(a, "or more before it completed") {
				gotEarly = append(gotEarly, a)
			}
		}
		var want []string
		if tc.early != "" {
			want = []string{tc.early}
		}
		if diff := cmp.Diff(want, gotEarly); diff != "" {
			t.Errorf("from GKE, %s: the alternative an earlier receipt gives (-want +got):\n%s", tc.id, diff)
		}
	}
	if rec := gke["late-not-found"]; rec != nil && rec.Message != msg(noParamKind, "d7") {
		t.Errorf("from GKE, late-not-found: %q, want the log's refusal, the paramKind not found", rec.Message)
	}

	// An exec, whose entry GKE stamps as its session ends: when kube-apiserver admitted it
	// (as it began) is not known, nor so whether it had found the kind.
	guard, guardBinding := levelPolicy("exec-guard", "pods/exec", admissionregistrationv1.Connect, nil, "params.spec.max > 100")
	guard.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "rules.example.com/v1", Kind: "ReplicaLimit"}
	guardBinding.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limit", Namespace: "rules", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
	exec := event{id: "exec", verb: "create", version: "v1", resource: "pods", sub: "exec", ns: "app", name: "p", code: 101, received: at(t, 70)}
	_, execs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{guard}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{guardBinding}, gkeLines(t, append(lines[:4:4], exec.line(t))...)...)
	if rec := execs["exec"]; rec == nil || rec.Decision != DecisionIndeterminate {
		t.Errorf("from GKE, an exec: %s, want indeterminate", describeRecord(rec))
	}
}

// TestParamKindAlikeAcrossStates: a policy selects namespaces labelled enforce=true; the
// label is removed 2 s before a create completes whose receipt GKE's entry does not give, 30 s
// after kube-apiserver was sure to have found the policy's paramKind. Received before then,
// the request may have read the label and not yet found the kind, which fails the policy: the
// server refused it so. On the likely state (the label gone) neither way matches; that is no
// ground to call it not matched, silently, nor certain (a helper's repro).
func TestParamKindAlikeAcrossStates(t *testing.T) {
	t.Parallel()
	ps, bs := crdPolicies()
	ps[0].Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"enforce": "true"}}
	ns := func(rv string, labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "app", "uid": "uid-app", "resourceVersion": rv, "labels": labels}}
	}
	on := ns("3", map[string]any{"enforce": "true", "kubernetes.io/metadata.name": "app"})
	off := ns("40", map[string]any{"kubernetes.io/metadata.name": "app"})
	limit := customObject("ReplicaLimit", "limit", "rules", map[string]any{"max": int64(3)})
	denied := deploymentEvent(t, "req", "d3", 2, 70, 422, `deployments.apps "d3" is forbidden: ValidatingAdmissionPolicy 'replica-limit' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'rules.example.com/v1, Kind=ReplicaLimit'`)
	denied.resp = map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure", "message": denied.message, "reason": "Invalid", "code": int64(422)}
	var lines []string
	for _, e := range []event{
		{id: "ns", verb: "create", version: "v1", resource: "namespaces", name: "app", code: 201, received: at(t, -100), req: on, resp: on},
		crdEvent(t, "limits", "create", "", "", 201, 0, crdObject("replicalimits", "ReplicaLimit", "created", false)),
		crdEvent(t, "limits-accepted", "update", "status", "replicalimits.rules.example.com", 200, 0.01, crdObject("replicalimits", "ReplicaLimit", "accepted", false)),
		crdEvent(t, "limits-established", "update", "status", "replicalimits.rules.example.com", 200, 0.02, crdObject("replicalimits", "ReplicaLimit", "established", false)),
		{id: "limit", verb: "create", group: "rules.example.com", version: "v1", resource: "replicalimits", ns: "rules", name: "limit", code: 201, received: at(t, 2), req: limit, resp: limit},
		{id: "unlabel", verb: "update", version: "v1", resource: "namespaces", name: "app", code: 200, received: at(t, 68), req: ns("3", map[string]any{"kubernetes.io/metadata.name": "app"}), resp: off},
		denied,
	} {
		lines = append(lines, e.line(t))
	}
	for _, check := range []bool{false, true} {
		sum, gke := replaySources(t, ps, bs, []Option{WithCheckRecorded(check)}, Source{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(gkeLines(t, lines...), "\n") + "\n")})
		if rec := gke["req"]; rec == nil || rec.Certainty == CertaintyCertain {
			t.Errorf("from GKE, checking the log %v: %s (%d not matched), want likely or indeterminate", check, describeRecord(rec), sum.NotMatched)
		}
	}
}

// TestCRDsFromSnapshot: a snapshot's CRDs are served from the start, whatever the order of the
// files, and its custom resources are params at once.
func TestCRDsFromSnapshot(t *testing.T) {
	t.Parallel()
	ps, bs := crdPolicies()
	dir := t.TempDir()
	write := func(name string, objs ...map[string]any) {
		items := make([]any, len(objs))
		for i, o := range objs {
			items[i] = o
		}
		b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// a-params.json is read before z-crds.json.
	write("a-params.json", customObject("ReplicaLimit", "limit", "rules", map[string]any{"max": int64(3)}))
	write("z-crds.json", crdObject("replicalimits", "ReplicaLimit", "established", false), crdObject("widgets", "Widget", "established", false))
	r, err := New(ps, bs, WithCheckRecorded(true), WithSnapshot(dir))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	lines := []event{
		{id: "deny", verb: "create", group: "apps", version: "v1", resource: "deployments", ns: "app", name: "d1", code: 422, message: msg(tooManyReplicas, "d1"), received: at(t, 1), req: deploymentObject("d1", 5)},
		{id: "admit", verb: "create", group: "rules.example.com", version: "v1", resource: "widgets", ns: "app", name: "w1", code: 201, received: at(t, 1), req: customObject("Widget", "w1", "app", map[string]any{"size": int64(1)}), resp: customObject("Widget", "w1", "app", map[string]any{"size": int64(1)})},
	}
	var text []string
	for _, e := range lines {
		text = append(text, e.line(t))
	}
	recs := map[string]*Record{}
	sum, err := r.Run(context.Background(), []Source{{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(text, "\n") + "\n")}}, func(rec *Record) error {
		recs[rec.AuditID] = rec
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec := recs["deny"]; rec == nil || rec.Decision != DecisionDeny || rec.Message != msg(tooManyReplicas, "d1") {
		t.Errorf("deny = %+v, want a denial by the snapshot's param", rec)
	}
	if rec := recs["admit"]; rec == nil || rec.Decision != DecisionAdmit {
		t.Errorf("admit = %+v, want admit", rec)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
	if len(sum.CustomResourceDefinitions) != 2 {
		t.Errorf("CRD changes = %v, want the snapshot's two", sum.CustomResourceDefinitions)
	}
}

// TestCRDEstablishedBeforeTheLog: a log that begins after the CRD was established first shows
// it in a later write; the Established condition's lastTransitionTime says the apiserver found
// the param kind long before.
func TestCRDEstablishedBeforeTheLog(t *testing.T) {
	t.Parallel()
	ps, bs := crdPolicies()
	crd := crdObject("replicalimits", "ReplicaLimit", "established", false) // established at crdT0
	limit := customObject("ReplicaLimit", "limit", "rules", map[string]any{"max": int64(3)})
	lines := []string{
		event{id: "apply", verb: "patch", group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions", name: "replicalimits.rules.example.com",
			code: 200, received: at(t, 3600), req: map[string]any{}, resp: crd}.line(t),
		event{id: "limit", verb: "create", group: "rules.example.com", version: "v1", resource: "replicalimits", ns: "rules", name: "limit", code: 201, received: at(t, 3601), req: limit, resp: limit}.line(t),
		event{id: "deny", verb: "create", group: "apps", version: "v1", resource: "deployments", ns: "app", name: "d1", code: 422, message: msg(tooManyReplicas, "d1"), received: at(t, 3602), req: deploymentObject("d1", 5)}.line(t),
	}
	sum, recs := replayLines(t, ps, bs, lines...)
	if rec := recs["deny"]; rec == nil || rec.Decision != DecisionDeny || rec.Message != msg(tooManyReplicas, "d1") {
		t.Errorf("deny = %+v, want a denial by the param", rec)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestCRDDeletedBesideAnother: the log deletes one of two CRDs of a group-version, then uses
// both kinds. The catalog indexes the CRD that stays again (cel/schema's RemoveCRD): its kind
// is still served, resolved and type-checked, and a policy decides its requests; the deleted
// kind is no resource any more.
func TestCRDDeletedBesideAnother(t *testing.T) {
	t.Parallel()
	ps, bs := crdPolicies()
	gadget := ps[2].DeepCopy()
	gadget.Name = "gadget-size"
	gadget.Spec.MatchConstraints.ResourceRules[0].Rule.Resources = []string{"gadgets"}
	gadgetBinding := bs[2].DeepCopy()
	gadgetBinding.Name, gadgetBinding.Spec.PolicyName = "gadget-size", "gadget-size"
	ps, bs = append(ps, gadget), append(bs, gadgetBinding)
	gadgetTooBig := `gadgets.rules.example.com "g2" is forbidden: ValidatingAdmissionPolicy 'gadget-size' with binding 'gadget-size' denied request: too big`

	crdE := func(id, verb, sub, name string, code int32, when float64, resp map[string]any) string {
		user := "admin"
		if sub == "status" {
			user = "system:apiserver"
		}
		return event{id: id, verb: verb, group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions", sub: sub, name: name, code: code, received: at(t, when), user: user, resp: resp}.line(t)
	}
	customE := func(id, kind, resource, name string, size int64, when float64, code int32, message string) string {
		o := customObject(kind, name, "app", map[string]any{"size": size})
		e := event{id: id, verb: "create", group: "rules.example.com", version: "v1", resource: resource, ns: "app", name: name, code: code, message: message, received: at(t, when), req: o}
		if code < 300 {
			e.resp = o
		}
		return e.line(t)
	}
	lines := []string{
		crdE("widgets", "create", "", "", 201, 0, crdObject("widgets", "Widget", "created", false)),
		crdE("widgets-established", "update", "status", "widgets.rules.example.com", 200, 0.1, crdObject("widgets", "Widget", "established", false)),
		crdE("gadgets", "create", "", "", 201, 0.2, crdObject("gadgets", "Gadget", "created", false)),
		crdE("gadgets-established", "update", "status", "gadgets.rules.example.com", 200, 0.3, crdObject("gadgets", "Gadget", "established", false)),
		customE("w-before", "Widget", "widgets", "w1", 3, 1, 201, ""),
		crdE("widgets-delete", "delete", "", "widgets.rules.example.com", 200, 2, crdObject("widgets", "Widget", "established", true)),
		customE("g-ok", "Gadget", "gadgets", "g1", 3, 3, 201, ""),
		customE("g-big", "Gadget", "gadgets", "g2", 30, 3.1, 422, gadgetTooBig),
		customE("w-after", "Widget", "widgets", "w2", 3, 3.2, 201, ""),
	}
	sum, recs := replayLines(t, ps, bs, lines...)
	for _, tc := range []struct {
		id, decision string
		reason       Reason
	}{
		{"w-before", DecisionAdmit, ""},
		{"g-ok", DecisionAdmit, ""},
		{"g-big", DecisionDeny, ""},
	} {
		rec := recs[tc.id]
		if rec == nil || rec.Decision != tc.decision || rec.Reason != tc.reason {
			t.Errorf("%s = %+v, want %s %s", tc.id, rec, tc.decision, tc.reason)
		}
	}
	if rec := recs["g-big"]; rec != nil && rec.Message != gadgetTooBig {
		t.Errorf("g-big message %q, want %q", rec.Message, gadgetTooBig)
	}
	if rec := recs["w-after"]; rec == nil || rec.Reason != ReasonUnknownResource {
		t.Errorf("w-after = %+v, want indeterminate %s: its CRD was deleted", rec, ReasonUnknownResource)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestCustomResourceRebuilt: a custom resource's object rebuilt from its request (logged at
// level Request) lacks what the custom resource handler set before validating admission: the
// managedFields its field manager wrote, the uid, creationTimestamp and generation of a
// create, a status its strategy dropped, an update's generation when it changed more than
// metadata, and the defaults of a schema that declares them. A policy that reads them is not
// decided; one that does not, and an update's generation that stays, are.
func TestCustomResourceRebuilt(t *testing.T) {
	t.Parallel()
	ps, bs := crdPolicies()
	widget := func(size int64, labels map[string]any, status map[string]any) map[string]any {
		w := customObject("Widget", "w1", "app", map[string]any{"size": size})
		if labels != nil {
			w["metadata"].(map[string]any)["labels"] = labels
		}
		if status != nil {
			w["status"] = status
		}
		return w
	}
	stored := widget(1, nil, nil)
	md := stored["metadata"].(map[string]any)
	md["uid"], md["creationTimestamp"], md["generation"] = "u-w1", "2026-03-02T10:00:00Z", int64(1)
	created := event{id: "c", verb: "create", group: "rules.example.com", version: "v1", resource: "widgets", ns: "app", name: "w1", code: 201, received: at(t, 1), req: widget(1, nil, nil), resp: stored}.line(t)
	updated := func(body map[string]any) string {
		body = runtime.DeepCopyJSON(body)
		body["metadata"].(map[string]any)["uid"], body["metadata"].(map[string]any)["generation"] = "u-w1", int64(1)
		return event{id: "w1", verb: "update", group: "rules.example.com", version: "v1", resource: "widgets", ns: "app", name: "w1", code: 200, received: at(t, 2), req: body}.line(t)
	}
	withDefault := crdObject("widgets", "Widget", "established", false)
	withDefault["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)["properties"].(map[string]any)["max"] = map[string]any{"type": "integer", "default": int64(3)}
	withStatus := crdObject("widgets", "Widget", "established", false)
	withStatus["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["status"] = map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}
	withSubresource := runtime.DeepCopyJSON(withStatus)
	withSubresource["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["subresources"] = map[string]any{"status": map[string]any{}}
	deleting := runtime.DeepCopyJSON(stored)
	deleting["metadata"].(map[string]any)["deletionTimestamp"], deleting["metadata"].(map[string]any)["finalizers"] = "2026-03-02T10:00:05Z", []any{"x/y"}
	createdDeleting := event{id: "c", verb: "create", group: "rules.example.com", version: "v1", resource: "widgets", ns: "app", name: "w1", code: 201, received: at(t, 1), req: widget(1, nil, nil), resp: deleting}.line(t)
	patched := func(patch map[string]any) string {
		return event{id: "w1", verb: "patch", group: "rules.example.com", version: "v1", resource: "widgets", ns: "app", name: "w1", code: 200, received: at(t, 2), req: patch}.line(t)
	}
	statusBody := widget(2, nil, map[string]any{"ok": true})
	statusBody["metadata"].(map[string]any)["uid"], statusBody["metadata"].(map[string]any)["generation"] = "u-w1", int64(1)
	statusUpdate := event{id: "w1", verb: "update", group: "rules.example.com", version: "v1", resource: "widgets", sub: "status", ns: "app", name: "w1", code: 200, received: at(t, 2), req: statusBody}.line(t)
	for _, tc := range []struct {
		name, expr string
		crd        map[string]any // the Widget CRD (nil: without defaults)
		lines      []string       // before the request, which is w1
		request    string
		want       string
	}{
		{name: "managedFields", expr: "!has(object.metadata.managedFields)", want: DecisionIndeterminate},
		// rest.BeforeCreate: a uid (of the server's generator) and the generation.
		{name: "the uid", expr: "has(object.metadata.uid)", want: DecisionAdmit},
		{name: "the uid's value", expr: "object.metadata.uid == 'x'", want: DecisionIndeterminate},
		{name: "the generation", expr: "object.metadata.generation == 1", want: DecisionAdmit},
		{name: "the spec", expr: "object.spec.size < 10", want: DecisionAdmit},
		// The status stays as sent without a status subresource, and is dropped with one.
		{name: "a status sent", expr: "!has(object.status)", crd: withStatus, request: event{id: "w1", verb: "create", group: "rules.example.com", version: "v1", resource: "widgets", ns: "app", name: "w1", code: 201, received: at(t, 1),
			req: widget(1, nil, map[string]any{"ok": true})}.line(t), want: DecisionDeny},
		{name: "a status sent, dropped by the status subresource", expr: "!has(object.status)", crd: withSubresource, request: event{id: "w1", verb: "create", group: "rules.example.com", version: "v1", resource: "widgets", ns: "app", name: "w1", code: 201, received: at(t, 1),
			req: widget(1, nil, map[string]any{"ok": true})}.line(t), want: DecisionAdmit},
		// A patched object is decoded: pruned by the schema, and defaulted.
		{name: "a patch the schema prunes", expr: "!has(object.status) && !has(object.spec.extra)", lines: []string{created},
			request: patched(map[string]any{"spec": map[string]any{"extra": "x"}, "status": map[string]any{"ok": true}}), want: DecisionAdmit},
		{name: "a schema with defaults, patched", expr: "object.spec.max == 3 && object.spec.size == 5", crd: withDefault, lines: []string{created},
			request: patched(map[string]any{"spec": map[string]any{"size": int64(5), "max": nil}}), want: DecisionAdmit},
		// rest.BeforeUpdate: the generation moves when more than metadata changed.
		{name: "an update of labels: the generation stays", expr: "object.metadata.generation == 1", lines: []string{created}, request: updated(widget(1, map[string]any{"a": "b"}, nil)), want: DecisionAdmit},
		{name: "an update of the spec: the generation moves", expr: "object.metadata.generation == 2", lines: []string{created}, request: updated(widget(2, nil, nil)), want: DecisionAdmit},
		{name: "an update with a status", expr: "!has(object.status)", crd: withStatus, lines: []string{created}, request: updated(widget(1, nil, map[string]any{"ok": true})), want: DecisionDeny},
		{name: "an update with a status, kept by the status subresource", expr: "!has(object.status)", crd: withSubresource, lines: []string{created}, request: updated(widget(1, nil, map[string]any{"ok": true})), want: DecisionAdmit},
		// An update can never remove a deletion timestamp.
		{name: "an update of an object being deleted", expr: "has(object.metadata.deletionTimestamp)", lines: []string{createdDeleting}, request: updated(widget(1, nil, nil)), want: DecisionAdmit},
		// A /status update changes the status only.
		{name: "a status update", expr: "object.spec.size == 1 && object.status.ok", crd: withSubresource, lines: []string{created}, request: statusUpdate, want: DecisionAdmit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := tc.crd
			if crd == nil {
				crd = crdObject("widgets", "Widget", "established", false)
			}
			dir := t.TempDir()
			b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{crd}})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "crds.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			p := ps[2].DeepCopy()
			p.Spec.MatchConstraints.ResourceRules[0].Resources = []string{"widgets", "widgets/status"}
			p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: tc.expr}}
			r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, bs[2:], WithCheckRecorded(true), WithSnapshot(dir))
			if err != nil {
				t.Fatal(err)
			}
			request := tc.request
			if request == "" {
				request = event{id: "w1", verb: "create", group: "rules.example.com", version: "v1", resource: "widgets", ns: "app", name: "w1", code: 201, received: at(t, 1),
					req: widget(1, nil, nil)}.line(t)
			}
			request = strings.Replace(request, `"level":"RequestResponse"`, `"level":"Request"`, 1)
			var rec *Record
			if _, err := r.Run(context.Background(), []Source{{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(append(tc.lines, request), "\n") + "\n")}}, func(got *Record) error {
				if got.AuditID == "w1" {
					rec = got
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if rec == nil || rec.Decision != tc.want {
				t.Fatalf("record = %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestInformerLagUnknownField: on the state the informer may have held, a param that did not
// skip the policy leads it to read a field the replay does not know of the request (a custom
// resource's managedFields, rebuilt from its request): that state is not decided, an
// alternative to the likely one, where the policy was skipped.
func TestInformerLagUnknownField(t *testing.T) {
	t.Parallel()
	_, bs := crdPolicies()
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-size"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"rules.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
			}}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "enforced", Expression: "params.data.mode != 'skip'"}},
			Validations:     []admissionregistrationv1.Validation{{Expression: "!has(object.metadata.managedFields)"}},
		},
	}
	b := bs[2].DeepCopy()
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Namespace: "params", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"param": "yes"}}, ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}
	param := func(rv, mode string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "p", "namespace": "params", "resourceVersion": rv, "uid": "u-p", "labels": map[string]any{"param": "yes"}},
			"data": map[string]any{"mode": mode}}
	}
	dir := t.TempDir()
	snap, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{crdObject("widgets", "Widget", "established", false), param("10", "enforce")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshot.json"), snap, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, WithCheckRecorded(true), WithSnapshot(dir))
	if err != nil {
		t.Fatal(err)
	}
	relax := event{id: "relax", verb: "update", version: "v1", resource: "configmaps", ns: "params", name: "p", code: 200, received: at(t, 1), req: param("10", "skip"), resp: param("11", "skip")}.line(t)
	create := event{id: "w1", verb: "create", group: "rules.example.com", version: "v1", resource: "widgets", ns: "app", name: "w1", code: 201, received: at(t, 1.05),
		req: customObject("Widget", "w1", "app", map[string]any{"size": int64(1)})}.line(t)
	create = strings.Replace(create, `"level":"RequestResponse"`, `"level":"Request"`, 1)
	var rec *Record
	if _, err := r.Run(context.Background(), []Source{{Name: "audit.jsonl", Reader: strings.NewReader(relax + "\n" + create + "\n")}}, func(got *Record) error {
		if got.AuditID == "w1" {
			rec = got
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyLikely || !mentions(rec, "managedFields") {
		t.Errorf("record = %s, want likely admit, the version before the param's update undecided on the managedFields it reads", describeRecord(rec))
	}
}

// TestCRDNoneConversion: a custom resource stored as v1 and patched through v1alpha1, its CRD
// converting with the strategy None. kube-apiserver reads the stored object for the v1alpha1
// request by changing its apiVersion (and pruning what v1alpha1's schema does not allow): the
// oldObject is known, and every request is decided as the server decided it (recorded by
// kube-apiserver v1.37.0; the log creates the CRD).
func TestCRDNoneConversion(t *testing.T) {
	t.Parallel()
	sum, recs := replayScenario(t, filepath.Join("testdata", "crd-none-conversion"), "audit.log.gz")
	patches := 0
	for _, rec := range recs {
		if rec.Decision == DecisionIndeterminate {
			t.Errorf("line %d %s %s %s: indeterminate: %s", rec.Line, rec.Verb, rec.Resource, rec.Name, rec.Indeterminate)
		}
		if rec.Resource == "gadgets" && rec.Verb == "patch" {
			patches++
		}
	}
	if patches != 3 {
		t.Errorf("%d patches of gadgets replayed, want the log's 3", patches)
	}
	if len(sum.Disagreements) > 0 || sum.Changed > 0 {
		t.Errorf("disagreements %v, changed %d: want none", sum.Disagreements, sum.Changed)
	}
}

// TestDeleteCollectionOfNothing: the namespace controller's deletecollection of a custom
// resource in a namespace that holds none (recorded by kube-apiserver v1.37.0). The store runs
// validating admission on each object it deletes and on nothing else: the request never
// reached a policy, as its response (an empty list) shows, or, without it, as the State knows.
func TestDeleteCollectionOfNothing(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "deletecollection-nothing")
	for log, note := range map[string]string{
		"audit.log.gz":         "its response lists no deleted object",
		"request-level.log.gz": "the State holds no object of widgets.zz.example.com there",
	} {
		sum, recs := replayScenario(t, dir, log)
		for _, rec := range recs {
			if rec.Verb == "deletecollection" {
				t.Errorf("%s: the deletecollection is recorded (%s %s), want it skipped", log, rec.Decision, rec.Indeterminate)
			}
		}
		if got := sum.Skipped[string(SkipNothingDeleted)+" ("+note+")"]; got != 1 {
			t.Errorf("%s: skipped %v, want the deletecollection as %s (%s)", log, sum.Skipped, SkipNothingDeleted, note)
		}
	}
}

// TestCRDScale: kubectl scale of a custom resource (recorded by kube-apiserver v1.37.0). The
// oldObject of widgets/scale is the Scale the apiextensions apiserver derives from the stored
// Widget by its CRD's paths, the object the one the patch gives, and a successful scale sets the
// Widget's spec.replicas: the patches of the Widgets after it know their old object. Every
// request is decided as the server decided it.
func TestCRDScale(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "crd-scale")
	set, ps, bs := readPolicies(t, filepath.Join(dir, "policy.yaml"))
	r, err := New(ps, bs, WithMutatingPolicies(set.MutatingPolicyList(), set.MutatingBindingList()), WithCheckRecorded(true))
	if err != nil {
		t.Fatal(err)
	}
	sum, recs := replayFile(t, r, filepath.Join(dir, "audit.log.gz"))
	scales, after := 0, 0
	for _, rec := range recs {
		if rec.Decision == DecisionIndeterminate {
			t.Errorf("line %d %s %s/%s %s: indeterminate: %s", rec.Line, rec.Verb, rec.Resource, rec.Subresource, rec.Name, rec.Indeterminate)
		}
		switch {
		case rec.Subresource == "scale":
			scales++
		case scales > 0 && rec.Verb == "patch":
			after++
		}
	}
	if scales == 0 || after == 0 {
		t.Errorf("%d scale requests and %d patches after one replayed: want some of each", scales, after)
	}
	if len(sum.Disagreements) > 0 || sum.Changed > 0 {
		t.Errorf("disagreements %v, changed %d: want none", sum.Disagreements, sum.Changed)
	}
}

// TestCustomResourceCreatedAtRequest: a custom resource param created at level Request (a
// production audit policy): the body the log holds is the object as the handler decoded it,
// which the store keeps when no admission changed it, so the requests after it that read the
// param are decided; one a MutatingAdmissionPolicy of the cluster may have changed is not
// known (helpers exQ and exT).
func TestCustomResourceCreatedAtRequest(t *testing.T) {
	t.Parallel()
	ps, bs := crdPolicies()
	limit := customObject("ReplicaLimit", "limit", "rules", map[string]any{"max": int64(3)})
	mapPolicy := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy", "metadata": map[string]any{"name": "touch-limits"},
		"spec": map[string]any{"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
			"apiGroups": []any{"rules.example.com"}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"replicalimits"}}}}}}
	mapBinding := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding", "metadata": map[string]any{"name": "touch-limits"}, "spec": map[string]any{"policyName": "touch-limits"}}
	for _, tc := range []struct {
		name    string
		mutated bool
		want    string
	}{
		{"no admission changes it", false, DecisionDeny},
		{"a cluster's mutating policy may", true, DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			crd := func(id, verb, sub, name string, code int32, when float64, stage string) event {
				return event{id: id, verb: verb, group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions", sub: sub, name: name, code: code, received: at(t, when),
					resp: crdObject("replicalimits", "ReplicaLimit", stage, false)}
			}
			lines := []event{
				crd("limits", "create", "", "", 201, 0, "created"),
				crd("limits-established", "update", "status", "replicalimits.rules.example.com", 200, 0.02, "established"),
			}
			if tc.mutated {
				lines = append(lines,
					event{id: "map", verb: "create", group: "admissionregistration.k8s.io", version: "v1", resource: "mutatingadmissionpolicies", name: "touch-limits", code: 201, received: at(t, 0.5), req: mapPolicy, resp: mapPolicy},
					event{id: "mapb", verb: "create", group: "admissionregistration.k8s.io", version: "v1", resource: "mutatingadmissionpolicybindings", name: "touch-limits", code: 201, received: at(t, 0.6), req: mapBinding, resp: mapBinding})
			}
			lines = append(lines,
				event{id: "limit", verb: "create", group: "rules.example.com", version: "v1", resource: "replicalimits", ns: "rules", name: "limit", code: 201, received: at(t, 2), req: limit},
				event{id: "deploy", verb: "create", group: "apps", version: "v1", resource: "deployments", ns: "app", name: "d1", code: 422, message: msg(tooManyReplicas, "d1"), received: at(t, 45), req: deploymentObject("d1", 5)})
			var text []string
			for _, e := range lines {
				line := e.line(t)
				if e.id == "limit" {
					line = replaceOnce(t, line, `"level":"RequestResponse"`, `"level":"Request"`)
				}
				text = append(text, line)
			}
			_, recs := replayLines(t, ps, bs, text...)
			if rec := recs["deploy"]; rec == nil || rec.Decision != tc.want || len(rec.Disagreements) > 0 {
				t.Errorf("the deployment: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}
