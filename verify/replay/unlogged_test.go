package replay

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestDeleteWithoutOptions decides a DELETE logged at level Metadata, whose delete options
// the log does not hold, over the object the State holds (a snapshot's), through the request
// pipeline: what the options can change is unknown, and what they decide before admission
// is not decided.
func TestDeleteWithoutOptions(t *testing.T) {
	t.Parallel()
	stored := func(name string, deleting bool) map[string]any {
		md := map[string]any{"name": name, "namespace": "ns", "uid": "uid-" + name, "resourceVersion": "10", "creationTimestamp": "2026-11-24T00:00:00Z"}
		if deleting {
			md["deletionTimestamp"] = "2026-11-24T00:00:30Z"
			md["deletionGracePeriodSeconds"] = int64(30)
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md,
			"spec": map[string]any{"nodeName": "leaf-1", "terminationGracePeriodSeconds": int64(30),
				"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
	}
	const denial = `pods "%s" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: denied by guard`
	type want struct {
		Decision string
		Reason   Reason
	}
	for _, tc := range []struct {
		name, expr string
		deleting   bool
		code       int32
		message    string
		level      string
		want       want
	}{
		{name: "the stored object's field, admitted", expr: "oldObject.spec.nodeName != 'leaf-2'", code: 200, want: want{DecisionAdmit, ""}},
		{name: "the stored object's field, denied", expr: "oldObject.spec.nodeName != 'leaf-1'", code: 422, message: denial, want: want{DecisionDeny, ""}},
		{name: "the user", expr: "request.userInfo.username == 'admin'", code: 200, want: want{DecisionAdmit, ""}},
		{name: "truncated by the audit backend", expr: "oldObject.spec.nodeName != 'leaf-2'", code: 200, level: auditlog.LevelRequestResponse, want: want{DecisionAdmit, ""}},
		{name: "the options", expr: "!has(request.options.gracePeriodSeconds)", code: 200, want: want{DecisionIndeterminate, ReasonNoObject}},
		{name: "the dry run", expr: "!request.dryRun", code: 200, want: want{DecisionIndeterminate, ReasonNoObject}},
		{name: "the deletion marks (a second validation)", expr: "!has(oldObject.metadata.deletionTimestamp)", code: 200, want: want{DecisionIndeterminate, ReasonNoObject}},
		{name: "a pending graceful deletion", expr: "false", deleting: true, code: 200, want: want{DecisionIndeterminate, ReasonNoObject}},
		// The log's message says the precondition failed before admission (classify).
		{name: "refused before admission: the preconditions", expr: "true", code: 409, message: `Operation cannot be fulfilled on Pod "p": the ResourceVersion in the precondition (9) does not match the ResourceVersion in record (10). The object might have been modified`, want: want{"", ""}},
		{name: "failed where no policy ran", expr: "true", code: 500, message: `Internal error occurred: etcdserver: request timed out`, want: want{DecisionIndeterminate, ReasonNoObject}},
		{name: "refused where no policy ran: the options' validation", expr: "true", code: 422, message: `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "x"`, want: want{DecisionIndeterminate, ReasonNoObject}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", "pods", admissionregistrationv1.Delete, nil, tc.expr)
			level := tc.level
			if level == "" {
				level = auditlog.LevelMetadata
			}
			message := tc.message
			if tc.code == 422 && message == denial {
				message = fmt.Sprintf(denial, "p")
			}
			line := levelEvent(t, "del", level, "delete", "pods", "ns", "p", tc.code, message, nil, nil)
			if level != auditlog.LevelMetadata {
				// The truncate backend drops the objects and says so; the reader takes it at
				// level Metadata.
				line = timedEvent(t, line, "01.000000", "01.100000", map[string]string{auditlog.AnnotationTruncated: "true"})
			}
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				[]any{map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns"}}, stored("p", tc.deleting)}, line)
			checkDecision(t, recs["del"], tc.want.Decision, tc.want.Reason)
		})
	}
}

// TestDeletedAtMetadataThenFound: a pod's DELETE logged at level Metadata removed it, or left
// it marked deleted (its options, which decide which, are not logged). A later request that
// succeeded on the pod shows it was there: it read the pod as the State knew it, with the
// deletion's marks unknown.
//   - A status patch is decided on it.
//   - A second DELETE is decided on it when its policy admits without a trace (had the
//     pod's graceful deletion been pending, the store would not have run admission at all,
//     which comes to the same); one its policy would refuse is not known, as the store may
//     not have run admission.
func TestDeletedAtMetadataThenFound(t *testing.T) {
	t.Parallel()
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "uid-p", "resourceVersion": "10", "labels": map[string]any{"app": "web"}},
		"spec":     map[string]any{"nodeName": "leaf-1", "terminationGracePeriodSeconds": int64(30), "containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
	snapshot := []any{map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns"}}, pod}
	first := timedEvent(t, levelEvent(t, "del1", auditlog.LevelMetadata, "delete", "pods", "ns", "p", 200, "", nil, nil), "01.000000", "01.010000", nil)
	second := timedEvent(t, levelEvent(t, "del2", auditlog.LevelMetadata, "delete", "pods", "ns", "p", 200, "", nil, nil), "05.000000", "05.010000", nil)
	status := func() string {
		resp := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "uid-p", "resourceVersion": "12", "labels": map[string]any{"app": "web"}, "deletionTimestamp": "2026-11-24T00:00:31Z", "deletionGracePeriodSeconds": int64(30)},
			"spec":     pod["spec"], "status": map[string]any{"phase": "Running", "message": "stopping"}}
		l := levelEvent(t, "status", auditlog.LevelRequestResponse, "patch", "pods", "ns", "p", 200, "", map[string]any{"status": map[string]any{"message": "stopping"}}, resp)
		l = replaceOnce(t, l, `/pods/p"`, `/pods/p/status"`)
		l = replaceOnce(t, l, `"resource":"pods"`, `"resource":"pods","subresource":"status"`)
		return timedEvent(t, l, "03.000000", "03.010000", nil)
	}()
	withOptions := timedEvent(t, levelEvent(t, "del2", auditlog.LevelRequestResponse, "delete", "pods", "ns", "p", 200, "", map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"}, nil), "05.000000", "05.010000", nil)
	soon := strings.Replace(status, `"requestReceivedTimestamp":"2026-11-24T00:00:03.000000Z"`, `"requestReceivedTimestamp":"2026-11-24T00:00:01.100000Z"`, 1)
	// A status patch received before the first DELETE completed ran concurrently with it.
	concurrent := strings.Replace(status, `"requestReceivedTimestamp":"2026-11-24T00:00:03.000000Z"`, `"requestReceivedTimestamp":"2026-11-24T00:00:01.005000Z"`, 1)
	if concurrent == status {
		t.Fatal("the status patch's received time was not replaced")
	}
	for _, tc := range []struct {
		name, resource, expr string
		op                   admissionregistrationv1.OperationType
		lines                []string
		id                   string
		decision             string
		reason               Reason
	}{
		{name: "a status patch", resource: "pods/status", op: admissionregistrationv1.Update, expr: "oldObject.metadata.labels.app == 'web'",
			lines: []string{first, status}, id: "status", decision: DecisionAdmit},
		// Whether the DELETE marked the pod at all is not known (a dry run in its options,
		// which the log does not hold, leaves it as it was).
		{name: "a status patch whose policy reads the deletion marks", resource: "pods/status", op: admissionregistrationv1.Update, expr: "!has(oldObject.metadata.deletionTimestamp)",
			lines: []string{first, status}, id: "status", decision: DecisionIndeterminate, reason: ReasonUnknownField},
		{name: "a status patch that ran concurrently with the DELETE", resource: "pods/status", op: admissionregistrationv1.Update, expr: "oldObject.metadata.labels.app == 'web'",
			lines: []string{first, concurrent}, id: "status", decision: DecisionIndeterminate, reason: ReasonOldObjectUnknown},
		{name: "a second DELETE its policy admits", resource: "pods", op: admissionregistrationv1.Delete, expr: "request.name != 'p' || oldObject.spec.nodeName != 'leaf-2'",
			lines: []string{first, second}, id: "del2", decision: DecisionAdmit},
		{name: "a second DELETE its policy would refuse", resource: "pods", op: admissionregistrationv1.Delete, expr: "request.name != 'p' || oldObject.spec.nodeName != 'leaf-1'",
			lines: []string{first, second}, id: "del2", decision: DecisionIndeterminate, reason: ReasonOldObjectUnknown},
		// A pod already being deleted keeps the options asked for (rest.BeforeDelete): the
		// grace period the pod strategy would give the DELETE is not known.
		{name: "a second DELETE, with its options, whose policy reads the grace period", resource: "pods", op: admissionregistrationv1.Delete, expr: "request.name != 'p' || has(request.options.gracePeriodSeconds)",
			lines: []string{first, withOptions}, id: "del2", decision: DecisionIndeterminate, reason: ReasonUnknownField},
		// Received less than the informers' lag after the first DELETE completed: its first
		// attempt may have read the watch cache's copy of a version from before it.
		{name: "a status patch soon after the DELETE", resource: "pods/status", op: admissionregistrationv1.Update, expr: "oldObject.metadata.labels.app == 'web'",
			lines: []string{first, soon}, id: "status", decision: DecisionAdmit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", tc.resource, tc.op, nil, tc.expr)
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, snapshot, tc.lines...)
			checkDecision(t, recs[tc.id], tc.decision, tc.reason)
		})
	}
}

// TestEvictionWithoutBody decides a pod's eviction logged at level Metadata, whose Eviction the
// log does not hold, through the request pipeline with the Eviction's name and namespace (the
// handler requires them of it), the rest of it unknown.
func TestEvictionWithoutBody(t *testing.T) {
	t.Parallel()
	stored := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "db-0", "namespace": "ns", "uid": "uid-db", "resourceVersion": "10", "creationTimestamp": "2026-11-24T00:00:00Z"},
		"spec":     map[string]any{"nodeName": "leaf-1", "containers": []any{map[string]any{"name": "c", "image": "db"}}}}
	const denial = `pods "db-0" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: denied by guard`
	type want struct {
		Decision string
		Reason   Reason
	}
	for _, tc := range []struct {
		name, expr string
		code       int32
		message    string
		want       want
	}{
		{name: "its name, denied", expr: "!object.metadata.name.startsWith('db-')", code: 422, message: denial, want: want{DecisionDeny, ""}},
		{name: "its name, admitted", expr: "object.metadata.name != 'web-0'", code: 201, want: want{DecisionAdmit, ""}},
		{name: "refused after admission by a disruption budget", expr: "object.metadata.name != 'web-0'", code: 429, message: "Cannot evict pod as it would violate the pod's disruption budget.", want: want{DecisionAdmit, ""}},
		{name: "its delete options", expr: "!has(object.deleteOptions)", code: 201, want: want{DecisionIndeterminate, ReasonNoObject}},
		{name: "its labels", expr: "!has(object.metadata.labels)", code: 201, want: want{DecisionIndeterminate, ReasonNoObject}},
		{name: "refused where no policy ran", expr: "true", code: 400, message: "name in URL does not match name in Eviction object", want: want{DecisionIndeterminate, ReasonNoObject}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", "pods/eviction", admissionregistrationv1.Create, nil, tc.expr)
			line := subresourceEvent(t, levelEvent(t, "evict", auditlog.LevelMetadata, "update", "pods", "ns", "db-0", tc.code, tc.message, nil, nil), "eviction")
			line = strings.Replace(line, `"verb":"update"`, `"verb":"create"`, 1)
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				[]any{map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns"}}, stored}, line)
			checkDecision(t, recs["evict"], tc.want.Decision, tc.want.Reason)
		})
	}
}

// checkDecision holds a record to the decision and reason wanted (none: skipped, not decided),
// and a decided one to the log.
func checkDecision(t *testing.T, rec *Record, decision string, reason Reason) {
	t.Helper()
	if rec == nil {
		rec = &Record{} // skipped: not decided
	}
	type want struct {
		Decision string
		Reason   Reason
	}
	if diff := gocmp.Diff(want{decision, reason}, want{rec.Decision, rec.Reason}); diff != "" {
		t.Errorf("decision mismatch (-want +got):\n%s\n%s", diff, rec.Indeterminate)
	}
	if rec.Decision != DecisionIndeterminate && len(rec.Disagreements) > 0 {
		t.Errorf("disagreements with the log: %v", rec.Disagreements)
	}
}

// TestWriteWithoutObject decides a create or update logged at level Metadata, whose object the
// log does not hold, for the policies that do not read it: rebuilt with a stand-in for its
// object (its kind, namespace and name), the oldObject of an update the State's.
func TestWriteWithoutObject(t *testing.T) {
	t.Parallel()
	stored := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cm", "namespace": "ns", "uid": "uid-cm", "resourceVersion": "10", "creationTimestamp": "2026-11-24T00:00:00Z", "labels": map[string]any{"team": "a"}},
		"data":     map[string]any{"k": "v"}}
	const denial = `configmaps "cm" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: denied by guard`
	for _, tc := range []struct {
		name, verb, expr string
		op               admissionregistrationv1.OperationType
		code             int32
		message          string
		objName          string
		patch            string // a mutating webhook's recorded JSON patch
		decision         string
		reason           Reason
	}{
		{name: "a create, by its user", verb: "create", op: admissionregistrationv1.Create, expr: "request.userInfo.username == 'admin'", code: 201, decision: DecisionAdmit},
		{name: "a create, refused by its namespace", verb: "create", op: admissionregistrationv1.Create, expr: "request.namespace != 'ns'", code: 422, message: denial, decision: DecisionDeny},
		{name: "a create, by its name", verb: "create", op: admissionregistrationv1.Create, expr: "object.metadata.name == 'cm'", code: 201, decision: DecisionAdmit},
		{name: "a create, by its data", verb: "create", op: admissionregistrationv1.Create, expr: "!has(object.data)", code: 201, decision: DecisionIndeterminate, reason: ReasonNoObject},
		{name: "a create whose name the server generated", verb: "create", op: admissionregistrationv1.Create, expr: "request.name.startsWith('cm')", code: 201, objName: "-", decision: DecisionIndeterminate, reason: ReasonNoObject},
		{name: "an update, by its old object", verb: "update", op: admissionregistrationv1.Update, expr: "oldObject.metadata.labels.team == 'a'", code: 200, decision: DecisionAdmit},
		// The snapshot's object holds no managedFields (kubectl get omits them).
		{name: "an update, by its old object's managedFields", verb: "update", op: admissionregistrationv1.Update, expr: "!has(oldObject.metadata.managedFields)", code: 200, decision: DecisionIndeterminate, reason: ReasonUnknownField},
		{name: "a patch, by its labels", verb: "patch", op: admissionregistrationv1.Update, expr: "object.metadata.labels.team == 'a'", code: 200, decision: DecisionIndeterminate, reason: ReasonNoObject},
		// A webhook's patch applied to the server's object, which the log does not hold: what
		// it changed is not known, the rest of the stand-in is.
		{name: "a create a webhook patched, by its name", verb: "create", op: admissionregistrationv1.Create, expr: "object.metadata.name == 'cm'", code: 201, patch: `[{"op":"add","path":"/data/injected","value":"yes"}]`, decision: DecisionAdmit},
		{name: "a create a webhook patched, by what it patched", verb: "create", op: admissionregistrationv1.Create, expr: "object.data.injected == 'yes'", code: 201, patch: `[{"op":"add","path":"/data/injected","value":"yes"}]`, decision: DecisionIndeterminate, reason: ReasonNoObject},
		{name: "a create a webhook renamed", verb: "create", op: admissionregistrationv1.Create, expr: "object.metadata.name == 'cm'", code: 201, patch: `[{"op":"test","path":"/metadata/labels/a","value":"b"},{"op":"replace","path":"/metadata/name","value":"x"}]`, decision: DecisionIndeterminate, reason: ReasonNoObject},
		{name: "a create a webhook patched at its root", verb: "create", op: admissionregistrationv1.Create, expr: "object.metadata.name == 'cm'", code: 201, patch: `[{"op":"remove","path":"/spec"}]`, decision: DecisionIndeterminate, reason: ReasonNoObject},
		// Refused by its validation, before validating admission, as the log's message says
		// (classify): skipped.
		{name: "invalid", verb: "create", op: admissionregistrationv1.Create, expr: "true", code: 422, message: `ConfigMap "cm" is invalid: data: Invalid value: "x": a valid config key must consist of alphanumeric characters`},
		{name: "failed where no policy ran", verb: "create", op: admissionregistrationv1.Create, expr: "true", code: 500, message: `Internal error occurred: etcdserver: request timed out`, decision: DecisionIndeterminate, reason: ReasonNoObject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", "configmaps", tc.op, nil, tc.expr)
			name := "cm"
			if tc.objName == "-" {
				name = ""
			}
			line := levelEvent(t, "w", auditlog.LevelMetadata, tc.verb, "configmaps", "ns", name, tc.code, tc.message, nil, nil)
			if tc.patch != "" {
				line = withWebhookPatch(t, line, tc.patch)
			}
			snapshot := []any{map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns"}}}
			if tc.verb != "create" {
				snapshot = append(snapshot, stored)
			}
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, snapshot, line)
			checkDecision(t, recs["w"], tc.decision, tc.reason)
		})
	}
}

// TestChanged holds Record.changed to what it says changed: a decision of the replayed policies
// other than the server's, but for a denial by someone else, or one a request that no replayed
// policy matched got (recorded only for its alternatives).
func TestChanged(t *testing.T) {
	t.Parallel()
	admitted := []RecordResult{} // matched, admitted: no result but those that did not admit
	rec := func(decision, recorded string, byVAP bool, results []RecordResult) Record {
		return Record{Decision: decision, Logged: Logged{Recorded: recorded, recordedByVAP: byVAP, unmatched: results == nil}, Results: results}
	}
	for _, tc := range []struct {
		name string
		rec  Record
		want bool
	}{
		{"admitted as the server did", rec(DecisionAdmit, RecordedAdmit, false, admitted), false},
		{"denied where the server admitted", rec(DecisionDeny, RecordedAdmit, false, []RecordResult{{Policy: "p", Binding: "b", Result: "deny"}}), true},
		{"admitted where a policy denied", rec(DecisionAdmit, RecordedDeny, true, admitted), true},
		{"admitted where a webhook denied", rec(DecisionAdmit, RecordedDeny, false, admitted), false},
		{"no replayed policy matched, a policy denied", rec(DecisionAdmit, RecordedDeny, true, nil), false},
		{"indeterminate", rec(DecisionIndeterminate, RecordedDeny, true, nil), false},
	} {
		r := tc.rec
		r.changed()
		if r.Changed != tc.want {
			t.Errorf("%s: Changed = %v, want %v", tc.name, r.Changed, tc.want)
		}
	}
}

// withWebhookPatch is the event line with the audit annotations of a mutating webhook that
// changed the object by the JSON patch given.
func withWebhookPatch(t *testing.T, line, patch string) string {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	ev["annotations"] = map[string]any{
		"mutation.webhook.admission.k8s.io/round_0_index_0": `{"configuration":"injector","webhook":"inject.example.com","mutated":true}`,
		"patch.webhook.admission.k8s.io/round_0_index_0":    `{"configuration":"injector","webhook":"inject.example.com","patch":` + patch + `,"patchType":"JSONPatch"}`,
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWriteWithoutObjectMutated: a MutatingAdmissionPolicy over a write whose object the log
// does not hold. One that reads what the level left out leaves the request undecided for the
// level (no-object), not for the mutation; one that reads what the stand-in holds runs.
func TestWriteWithoutObjectMutated(t *testing.T) {
	t.Parallel()
	rules := createRules("", "configmaps")
	for _, tc := range []struct {
		name, condition string
		decision        string
		reason          Reason
	}{
		{name: "reads the labels the level left out", condition: "has(object.metadata.labels) && object.metadata.labels['color'] == 'red'", decision: DecisionIndeterminate, reason: ReasonNoObject},
		{name: "reads the namespace", condition: "object.metadata.namespace == 'other'", decision: DecisionAdmit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mutating := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "paint"},
				Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: rules,
					MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "red", Expression: tc.condition}},
					Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
						ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "Object{metadata: Object.metadata{labels: {'painted': 'true'}}}"}}}}}
			binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "paint"},
				Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "paint"}}
			p, b := levelPolicy("guard", "configmaps", admissionregistrationv1.Create, nil, "object.metadata.name == 'cm'")
			r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				WithCheckRecorded(true), WithMutatingPolicies([]*admissionregistrationv1.MutatingAdmissionPolicy{mutating}, []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding}))
			if err != nil {
				t.Fatal(err)
			}
			line := levelEvent(t, "w", auditlog.LevelMetadata, "create", "configmaps", "ns", "cm", 201, "", nil, nil)
			checkDecision(t, replayLine(t, r, line, "w"), tc.decision, tc.reason)
		})
	}
}

// TestWarnOverUnknownObject: a request served over an object the replay does not know (here
// a node created at level Metadata) may not have reached admission at all (a DELETE the store
// answered 404 before it, a pending graceful deletion): an admission that shows it ran, by a
// warning or an audit annotation, does not stand; one that shows nothing does. A DELETE
// answered 404 on its own object found it gone: it ran admission only on a first attempt on
// an older copy, which the log's annotations of the policy show; without them it did not.
func TestWarnOverUnknownObject(t *testing.T) {
	t.Parallel()
	ran := map[string]string{"guard/seen": "yes"}
	for _, tc := range []struct {
		name        string
		actions     []admissionregistrationv1.ValidationAction
		expr        string
		code        int32
		message     string
		annotations map[string]string
		decision    string
		reason      Reason
	}{
		{name: "404, a Warn binding's error", actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit},
			expr: "int(object.data['n']) != 7", code: 404, message: `nodes "n1" not found`},
		{name: "404, the log shows admission ran, a Warn binding's error", actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit},
			expr: "int(object.data['n']) != 7", code: 404, message: `nodes "n1" not found`, annotations: ran, decision: DecisionIndeterminate, reason: ReasonOldObjectUnknown},
		{name: "200, a Warn binding's error", actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn},
			expr: "int(object.data['n']) != 7", code: 200, decision: DecisionIndeterminate, reason: ReasonOldObjectUnknown},
		{name: "404, an admission that shows nothing", actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn},
			expr: "request.userInfo.username == 'admin'", code: 404, message: `nodes "n1" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", "nodes", admissionregistrationv1.Delete, nil, tc.expr)
			b.Spec.ValidationActions = tc.actions
			lines := []string{
				levelEvent(t, "c", auditlog.LevelMetadata, "create", "nodes", "", "n1", 201, "", nil, nil),
				timedEvent(t, levelEvent(t, "d", auditlog.LevelRequestResponse, "delete", "nodes", "", "n1", tc.code, tc.message, nil, nil), "01.000000", "01.010000", tc.annotations),
			}
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines...)
			checkDecision(t, recs["d"], tc.decision, tc.reason)
		})
	}
}

// TestDeletedAtMetadataMayBeDryRun: client-go sends a DELETE's options, and with them its
// dryRun, in the body, which an event at level Metadata does not hold; a dry run answers with
// the Status of the object's removal as a DELETE that removed it does. A ConfigMap a
// binding's paramRef names, deleted so, is gone or as it was (random parity seed c:770: a
// Widget deleted with dryRun in its options, the State taking it for gone, and a patch that
// found it withdrawing what the State knew whole): a request that reads the param is not
// decided on its absence, and one after a write that shows it there is decided.
// A deletecollection's options are in its body too. At level Request, an event without a body
// had none: its DELETE removed the object.
func TestDeletedAtMetadataMayBeDryRun(t *testing.T) {
	t.Parallel()
	param := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "p", "namespace": "params", "uid": "u-p", "resourceVersion": "5"}, "data": map[string]any{"k": "v"}}
	snapshot := []any{
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "params"}},
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "a"}},
		param,
	}
	deleted := func(level string) string {
		l := levelEvent(t, "del", level, "delete", "configmaps", "params", "p", 200, "", nil, nil)
		l = replaceOnce(t, l, `"responseStatus":{"code":200,"message":"","metadata":{}}`,
			`"responseStatus":{"metadata":{},"status":"Success","details":{"name":"p","kind":"configmaps","uid":"u-p"},"code":200}`)
		return timedEvent(t, l, "01.000000", "01.010000", nil)
	}
	collection := replaceOnce(t, timedEvent(t, levelEvent(t, "dc", auditlog.LevelMetadata, "deletecollection", "configmaps", "params", "", 200, "", nil, nil), "01.000000", "01.010000", nil),
		`"requestURI":"/api/v1/namespaces/params/configmaps/"`, `"requestURI":"/api/v1/namespaces/params/configmaps"`)
	// labelled is a patch of the param's labels, whose response shows it there.
	labelledParam := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "p", "namespace": "params", "uid": "u-p", "resourceVersion": "7", "labels": map[string]any{"team": "a"}}, "data": map[string]any{"k": "v"}}
	labelled := timedEvent(t, levelEvent(t, "label", auditlog.LevelRequestResponse, "patch", "configmaps", "params", "p", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "a"}}}, labelledParam), "02.000000", "02.010000", nil)
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "a", "uid": "u-x", "resourceVersion": "9"}}
	denied := `configmaps "x" is forbidden: ValidatingAdmissionPolicy 'param' with binding 'param' denied request: failed to configure binding: no params found for policy binding with ` + "`Deny`" + ` parameterNotFoundAction`
	admitted := timedEvent(t, levelEvent(t, "x", auditlog.LevelRequestResponse, "create", "configmaps", "a", "x", 201, "", cm, cm), "03.000000", "03.010000", nil)
	refused := timedEvent(t, levelEvent(t, "x", auditlog.LevelRequestResponse, "create", "configmaps", "a", "x", 422, denied, cm, nil), "03.000000", "03.010000", nil)
	for _, tc := range []struct {
		name, expr string
		lines      []string
		decision   string
		reason     Reason
	}{
		{name: "at level Metadata: the param gone or there", expr: "params.data.k == 'v'", lines: []string{deleted(auditlog.LevelMetadata), admitted},
			decision: DecisionIndeterminate, reason: ReasonParamUnknown},
		{name: "at level Metadata, then found", expr: "params.data.k == 'v'", lines: []string{deleted(auditlog.LevelMetadata), labelled, admitted},
			decision: DecisionAdmit},
		{name: "a deletecollection at level Metadata", expr: "params.data.k == 'v'", lines: []string{collection, admitted},
			decision: DecisionIndeterminate, reason: ReasonParamUnknown},
		{name: "at level Request, without options: removed", expr: "params.data.k == 'v'", lines: []string{deleted(auditlog.LevelRequest), refused},
			decision: DecisionDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("param", "configmaps", admissionregistrationv1.Create, nil, tc.expr)
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "p", Namespace: "params", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, snapshot, tc.lines...)
			checkDecision(t, recs["x"], tc.decision, tc.reason)
		})
	}
}
