package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// replaySnapshotLog replays the lines from the snapshot (one List document), as a file the
// replay reads again for when the snapshot was read (findSnapshotRead), or from standard
// input, and returns the summary and the records by audit ID.
func replaySnapshotLog(t *testing.T, ps []*admissionregistrationv1.ValidatingAdmissionPolicy, bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, snapshot map[string]any, lines []string, file bool, opts ...Option) (*Summary, map[string]*Record) {
	t.Helper()
	dir := t.TempDir()
	data, err := json.Marshal(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshot.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	log := strings.Join(lines, "\n") + "\n"
	src := Source{Name: "audit.jsonl", Reader: strings.NewReader(log)}
	if file {
		src = Source{Name: filepath.Join(t.TempDir(), "audit.log")}
		if err := os.WriteFile(src.Name, []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return replaySources(t, ps, bs, append([]Option{WithSnapshot(dir), WithCheckRecorded(true)}, opts...), src)
}

// listOf is a snapshot's List of the items.
func listOf(items ...any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
}

// oldReplicas is a policy that limits the replicas of the old object of a Deployment's
// update (and reads the old object's resourceVersion on a delete), and a Deployment web at
// resourceVersion 499 with 3 replicas.
func oldReplicas() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, map[string]any) {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "old-replicas"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update, admissionregistrationv1.Delete},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
			}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "request.operation == 'DELETE' ? oldObject.metadata.resourceVersion != '1' : oldObject.spec.replicas < 10"}},
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "old-replicas"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "old-replicas", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "app", "uid": "u-1", "resourceVersion": "499", "generation": int64(2)},
		"spec": map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}, "template": podTemplate("web")}}
	return p, b, dep
}

// TestSnapshotReadAfterAWrite: a log that begins before its snapshot was read holds a patch
// logged at level Request, whose result the log does not show; the snapshot holds what the
// patch left (random parity seed r:1001: the server read resourceVersion 265, the replay
// decided on the snapshot's 499). A request received after the patch completed that ran at a
// revision at or below the snapshot's greatest of the resource says the snapshot was read
// after the patch: the version it read is not known, and the patch leaves the snapshot's
// version. One that ran later, or whose revision may be stale, or that was received before the
// patch completed, says nothing; nor does a log the replay cannot read again.
func TestSnapshotReadAfterAWrite(t *testing.T) {
	t.Parallel()
	p, b, dep := oldReplicas()
	patch := event{id: "patch", verb: "patch", group: "apps", version: "v1", resource: "deployments", ns: "app", name: "web", code: 200, received: at(t, 1),
		req: map[string]any{"spec": map[string]any{"replicas": int64(3)}}}
	patchLine := replaceOnce(t, patch.line(t), `"level":"RequestResponse"`, `"level":"Request"`)
	list := func(received float64, rv, query string) string {
		e := event{id: "list", verb: "list", version: "v1", resource: "namespaces", code: 200, received: at(t, received),
			resp: map[string]any{"apiVersion": "v1", "kind": "NamespaceList", "metadata": map[string]any{"resourceVersion": rv}, "items": []any{}}}
		return replaceOnce(t, e.line(t), `"requestURI":"/api/v1/namespaces/"`, `"requestURI":"/api/v1/namespaces`+query+`"`)
	}
	createOf := func(resource, kind string, received float64, rv string) string {
		e := event{id: "create", verb: "create", version: "v1", resource: resource, ns: "app", code: 201, received: at(t, received),
			req:  map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": "c", "namespace": "app"}},
			resp: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": "c", "namespace": "app", "uid": "u-2", "resourceVersion": rv}}}
		return e.line(t)
	}
	create := func(received float64, rv string) string { return createOf("configmaps", "ConfigMap", received, rv) }
	// The State holds the snapshot's version after the patch once the log shows it was read
	// after it: a delete after that reads its resourceVersion (the replay's patch of the
	// snapshot's copy, without managedFields, leaves it unknown).
	del := event{id: "delete", verb: "delete", group: "apps", version: "v1", resource: "deployments", ns: "app", name: "web", code: 200, received: at(t, 3),
		req: map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"}}
	delLine := replaceOnce(t, del.line(t), `"level":"RequestResponse"`, `"level":"Request"`)
	// vapc snapshot writes the revision each List was read at (explorer: the patch's result is
	// the snapshot's newest Deployment, and the snapshot's own lists ran at 539).
	t.Run("the List's revision", func(t *testing.T) {
		t.Parallel()
		snapshot := map[string]any{"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": map[string]any{"resourceVersion": "539"}, "items": []any{dep}, CompleteListKey: true}
		for _, tc := range []struct {
			rv      string
			unknown bool
		}{{"530", true}, {"539", true}, {"540", false}} {
			_, recs := replaySnapshotLog(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, snapshot, []string{patchLine, list(1.01, tc.rv, "")}, true)
			if rec := recs["patch"]; rec == nil || (rec.Decision == DecisionIndeterminate) != tc.unknown {
				t.Errorf("a list at %s: %+v, want indeterminate %v", tc.rv, rec, tc.unknown)
			}
		}
	})
	t.Run("standard input", func(t *testing.T) {
		t.Parallel()
		// Copied to a file first, and read again as a file is.
		sum, recs := replaySnapshotLog(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, listOf(dep), []string{patchLine, list(1.01, "480", "")}, false)
		if slices.ContainsFunc(sum.Notes, func(n string) bool { return strings.Contains(n, "it is taken as read before the log's first line") }) {
			t.Errorf("notes %q, want the log read again", sum.Notes)
		}
		if rec := recs["patch"]; rec == nil || rec.Decision != DecisionIndeterminate {
			t.Errorf("patch: %s, want indeterminate, as from the file", describeRecord(rec))
		}
		// Streamed (--policies-throughout), it is not read again.
		sum, recs = replaySnapshotLog(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, listOf(dep), []string{patchLine, list(1.01, "480", "")}, false, WithPoliciesThroughout())
		if !slices.ContainsFunc(sum.Notes, func(n string) bool { return strings.Contains(n, "it is taken as read before the log's first line") }) {
			t.Errorf("notes %q, want: the log was not read again for when the snapshot was read", sum.Notes)
		}
		if rec := recs["patch"]; rec == nil || rec.Decision == DecisionIndeterminate {
			t.Errorf("patch: %s, want decided, as if the log began after the snapshot", describeRecord(rec))
		}
	})
	for _, tc := range []struct {
		name    string
		after   string
		unknown bool // the patch's old object is not known
		// deleteUnknown says the delete's old object's resourceVersion is not known: the
		// State holds the patch replayed on the snapshot's copy (its managedFields not known).
		deleteUnknown bool
	}{
		{"nothing after", "", false, true},
		{"a list at the snapshot's revision", list(1.01, "499", ""), true, false},
		{"a list at an earlier revision", list(1.01, "480", ""), true, false},
		{"a list after the snapshot", list(1.01, "500", ""), false, true},
		{"a list from the watch cache", list(1.01, "480", "?resourceVersion=0"), false, true},
		{"a list's next page", list(1.01, "480", "?continue=abc&limit=10"), false, true},
		// Received before the patch, it shows the snapshot read after it began, maybe after
		// the patch: the snapshot's version holds what the patch sets, and may be its result.
		{"a list received as the patch ran", list(0.99, "480", ""), true, true},
		{"a list a second later", list(2.5, "480", ""), true, false},
		{"a create below the snapshot's revision", create(1.02, "498"), true, false},
		{"a create after the snapshot", create(1.02, "501"), false, true},
		// Events may be stored in an etcd of their own (--etcd-servers-overrides): a lower
		// revision there would date the snapshot after writes it does not hold (review).
		{"an Event's create", createOf("events", "Event", 1.02, "498"), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lines := []string{patchLine}
			if tc.after != "" {
				lines = append(lines, tc.after)
			}
			lines = append(lines, delLine)
			_, recs := replaySnapshotLog(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, listOf(dep), lines, true)
			rec := recs["patch"]
			if rec == nil {
				t.Fatal("no record of the patch")
			}
			switch unknown := rec.Decision == DecisionIndeterminate; {
			case unknown != tc.unknown:
				t.Errorf("patch: %s %q, want indeterminate %v", rec.Decision, rec.Indeterminate, tc.unknown)
			case unknown && !strings.Contains(rec.Indeterminate, "the snapshot was read after this request completed") && !strings.Contains(rec.Indeterminate, "may be this request's result"):
				t.Errorf("patch: indeterminate %q, want: the snapshot was read after it, or may hold its result", rec.Indeterminate)
			}
			if d := recs["delete"]; d == nil || (d.Decision == DecisionIndeterminate) != tc.deleteUnknown {
				t.Errorf("delete: %+v, want indeterminate %v (the State holds the snapshot's version when the log shows it was read after the patch)", d, tc.deleteUnknown)
			}
		})
	}
}

// TestAdmittedOnTheVersionAsked: an update that reached admission asked for the version it
// read, which the store checks first. A log that begins some moments after its snapshot was
// read (explorer, a deployment controller's status update asking for 402 of an object the
// snapshot holds at 388) does not hold the writes between: the version the update read is not
// known. One that asks for the snapshot's version, or for none, reads it.
func TestAdmittedOnTheVersionAsked(t *testing.T) {
	t.Parallel()
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "old-replicas"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments", "deployments/status"}},
			}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "oldObject.spec.replicas < 10"}},
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "old-replicas"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "old-replicas", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	dep := func(rv string) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "app", "uid": "u-1", "resourceVersion": rv, "generation": int64(2)},
			"spec":   map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}, "template": podTemplate("web")},
			"status": map[string]any{"observedGeneration": int64(2), "replicas": int64(3)}}
	}
	for _, tc := range []struct {
		name, asked string
		unknown     bool
	}{
		{"the snapshot's version", "388", false},
		{"no version", "", false},
		{"a version the log does not hold", "402", true},
		{"an older version", "350", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sent := dep(tc.asked)
			if tc.asked == "" {
				delete(sent["metadata"].(map[string]any), "resourceVersion")
			}
			update := event{id: "update", verb: "update", group: "apps", version: "v1", resource: "deployments", sub: "status", ns: "app", name: "web", code: 200, received: at(t, 1),
				user: "system:serviceaccount:kube-system:deployment-controller", groups: []any{"system:serviceaccounts"}, req: sent, resp: dep("403")}
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []any{dep("388")}, update.line(t))
			rec := recs["update"]
			switch {
			case rec == nil:
				t.Fatal("no record of the update")
			case (rec.Decision == DecisionIndeterminate) != tc.unknown:
				t.Errorf("update: %s %q, want indeterminate %v", rec.Decision, rec.Indeterminate, tc.unknown)
			case tc.unknown && (rec.Reason != ReasonOldObjectUnknown || !strings.Contains(rec.Indeterminate, "the request asked for resourceVersion "+tc.asked)):
				t.Errorf("update: %s %q, want old-object-unknown: it asked for %s", rec.Reason, rec.Indeterminate, tc.asked)
			}
		})
	}
}

// TestLogBeforeItsSnapshot: the log begins before its snapshot was read (explorer: a tail
// 0.4 s before the snapshot, at RequestResponse). A pod create completed before the
// namespace's tier changed from gold to silver; the snapshot holds silver. A GET received
// after the create, which saw the namespace at a version older than the snapshot's, shows the
// snapshot listed namespaces after it: the create read a namespace the snapshot does not hold.
// Without that GET the log does not show it, and the create is decided on the snapshot's.
func TestLogBeforeItsSnapshot(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("tier", "pods", admissionregistrationv1.Create, nil, "namespaceObject.metadata.labels.tier == 'silver'")
	ns := func(rv, tier string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "uid": "u-ns1", "resourceVersion": rv, "labels": map[string]any{"tier": tier}}}
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "ns1"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
	denied := `pods "p" is forbidden: ValidatingAdmissionPolicy 'tier' with binding 'tier' denied request: failed expression: namespaceObject.metadata.labels.tier == 'silver'`
	create := timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "pods", "ns1", "p", 403, denied, pod, nil), "01.000000", "01.005000", nil)
	get := timedEvent(t, levelEvent(t, "get", auditlog.LevelRequestResponse, "get", "namespaces", "", "ns1", 200, "", nil, ns("253", "gold")), "01.100000", "01.101000", nil)
	patch := timedEvent(t, levelEvent(t, "patch", auditlog.LevelRequestResponse, "patch", "namespaces", "", "ns1", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "silver"}}}, ns("394", "silver")), "01.200000", "01.203000", nil)
	for _, tc := range []struct {
		name    string
		lines   []string
		unknown bool
	}{
		{"a GET shows an older version", []string{create, get, patch}, true},
		{"nothing shows it", []string{create, patch}, false},
		// A GET that asks for resourceVersion 0 may be served from a watch cache behind.
		{"a GET from the watch cache", []string{create, replaceOnce(t, get, `"requestURI":"/api/v1/namespaces/ns1"`, `"requestURI":"/api/v1/namespaces/ns1?resourceVersion=0"`), patch}, false},
	} {
		_, recs := replaySnapshotLog(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, listOf(ns("394", "silver")), tc.lines, true)
		rec := recs["create"]
		switch {
		case rec == nil:
			t.Fatalf("%s: no record of the create", tc.name)
		case (rec.Decision == DecisionIndeterminate) != tc.unknown:
			t.Errorf("%s: %s %q, want indeterminate %v", tc.name, rec.Decision, rec.Indeterminate, tc.unknown)
		case tc.unknown && !strings.Contains(rec.Indeterminate, "the snapshot was read after this request completed"):
			t.Errorf("%s: indeterminate %q, want: the snapshot was read after it", tc.name, rec.Indeterminate)
		}
	}
}

// TestPendingDeletionButAdmitted: the snapshot holds a pod marked deleted by the DELETE the
// log holds at level Request (explorer: a kubectl get read 0.4 s after the replica set
// controller's graceful delete). On that version the store completes a DELETE without
// admission; the log's annotations show admission ran: the server read another version. It is
// old-object-unknown, not skipped; without the annotations, skipped as before.
func TestPendingDeletionButAdmitted(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("seen", "pods", admissionregistrationv1.Delete, nil, "true")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "seen", ValueExpression: "'yes'"}}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "ns1", "uid": "u-p", "resourceVersion": "500",
		"creationTimestamp": "2026-03-02T09:00:00Z", "deletionTimestamp": "2026-03-02T09:00:31Z", "deletionGracePeriodSeconds": int64(30)},
		"spec": map[string]any{"nodeName": "n1", "containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		skipped     bool
	}{
		{"the annotations show admission ran", map[string]string{"seen/seen": "yes"}, false},
		{"no annotations", nil, true},
	} {
		del := levelEvent(t, "delete", auditlog.LevelRequest, "delete", "pods", "ns1", "p", 200, "", map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"}, nil)
		del = timedEvent(t, del, "01.000000", "01.004000", tc.annotations)
		sum, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []any{pod}, del)
		rec := recs["delete"]
		switch {
		case tc.skipped && (rec != nil || sum.Skipped[string(SkipPendingDeletion)] != 1):
			t.Errorf("%s: %s, skipped %v, want skipped (graceful-deletion-pending)", tc.name, describeRecord(rec), sum.Skipped)
		case !tc.skipped && (rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonOldObjectUnknown):
			t.Errorf("%s: %s, skipped %v, want indeterminate (old-object-unknown)", tc.name, describeRecord(rec), sum.Skipped)
		}
	}
}

// TestSnapshotDatingReview: what a review found. Events may live in an etcd of their own: an
// Event's create at a lower revision does not date a snapshot read before the log, whose
// writes then stay (a DELETE the server refused on the patched replicas). And where two writes
// to one object came before the snapshot's lists, the second read the first's result, which
// the snapshot holds: both are evaluated again without their old objects.
func TestSnapshotDatingReview(t *testing.T) {
	t.Parallel()
	dep := func(labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "app", "uid": "u-1", "resourceVersion": "499", "generation": int64(2), "labels": labels},
			"spec": map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}, "template": podTemplate("web")}}
	}
	policy := func(ops []admissionregistrationv1.OperationType, expr string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}}}},
				Validations: []admissionregistrationv1.Validation{{Expression: expr}}}},
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	}
	patch := func(id string, when float64, body map[string]any) string {
		e := event{id: id, verb: "patch", group: "apps", version: "v1", resource: "deployments", ns: "app", name: "web", code: 200, received: at(t, when), req: body}
		return replaceOnce(t, e.line(t), `"level":"RequestResponse"`, `"level":"Request"`)
	}
	t.Run("an Event in an etcd of its own", func(t *testing.T) {
		t.Parallel()
		p, b := policy([]admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, "oldObject.spec.replicas < 10")
		ev := func(when float64) string {
			e := event{id: "ev", verb: "create", version: "v1", resource: "events", ns: "app", code: 201, received: at(t, when),
				req:  map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": "c", "namespace": "app"}},
				resp: map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": "c", "namespace": "app", "uid": "u-2", "resourceVersion": "120"}}}
			return e.line(t)
		}
		denied := `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'p' denied request: failed expression: oldObject.spec.replicas < 10`
		del := event{id: "delete", verb: "delete", group: "apps", version: "v1", resource: "deployments", ns: "app", name: "web", code: 422, message: denied, received: at(t, 5),
			req: map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"}}
		delLine := replaceOnce(t, del.line(t), `"level":"RequestResponse"`, `"level":"Request"`)
		for _, tc := range []struct {
			name  string
			lines []string
			file  bool
		}{
			{"standard input", []string{patch("patch", 1, map[string]any{"spec": map[string]any{"replicas": int64(20)}}), ev(1.02), delLine}, false},
			{"read again", []string{patch("patch", 1, map[string]any{"spec": map[string]any{"replicas": int64(20)}}), ev(3), delLine}, true},
		} {
			_, recs := replaySnapshotLog(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, listOf(dep(nil)), tc.lines, tc.file)
			if rec := recs["delete"]; rec == nil || rec.Decision == DecisionAdmit {
				t.Errorf("%s: delete %s, want not admit: the server refused it on the patched replicas", tc.name, describeRecord(rec))
			}
		}
	})
	t.Run("two writes before the snapshot's lists", func(t *testing.T) {
		t.Parallel()
		p, b := policy([]admissionregistrationv1.OperationType{admissionregistrationv1.Update}, "oldObject.metadata.labels.x != 'b'")
		e := event{id: "list", verb: "list", version: "v1", resource: "namespaces", code: 200, received: at(t, 1.3),
			resp: map[string]any{"apiVersion": "v1", "kind": "NamespaceList", "metadata": map[string]any{"resourceVersion": "480"}, "items": []any{}}}
		list := replaceOnce(t, e.line(t), `"requestURI":"/api/v1/namespaces/"`, `"requestURI":"/api/v1/namespaces"`)
		lines := []string{patch("w1", 1, map[string]any{"metadata": map[string]any{"labels": map[string]any{"y": "1"}}}), patch("w2", 1.2, map[string]any{"metadata": map[string]any{"labels": map[string]any{"x": "b"}}}), list}
		_, recs := replaySnapshotLog(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, listOf(dep(map[string]any{"x": "b", "y": "1"})), lines, true)
		if rec := recs["w2"]; rec == nil || rec.Decision != DecisionIndeterminate {
			t.Errorf("w2 %s, want indeterminate: it read w1's result, which the snapshot holds", describeRecord(rec))
		}
	})
}

// TestSnapshotMayHoldWrites: a snapshot read after the log began (a consistent list before the
// writes ran at a revision below the snapshot's version of web) may hold the result of a write
// the log records without it, when no response before the write was received showed a revision
// at or past that version (random parity seed c:661: the kubelet's status patch, which the
// snapshot held, decided on the snapshot's version, certain). The write whose effect the
// snapshot's version holds may have written it; one before it read an older version; one that
// changes it ran after the snapshot was read.
func TestSnapshotMayHoldWrites(t *testing.T) {
	t.Parallel()
	p, b, dep := oldReplicas()
	patch := func(id string, received float64, replicas int64) string {
		e := event{id: id, verb: "patch", group: "apps", version: "v1", resource: "deployments", ns: "app", name: "web", code: 200, received: at(t, received),
			req: map[string]any{"spec": map[string]any{"replicas": replicas}}}
		return replaceOnce(t, e.line(t), `"level":"RequestResponse"`, `"level":"Request"`)
	}
	list := event{id: "list", verb: "list", version: "v1", resource: "namespaces", code: 200, received: at(t, 0.99),
		resp: map[string]any{"apiVersion": "v1", "kind": "NamespaceList", "metadata": map[string]any{"resourceVersion": "480"}, "items": []any{}}}
	listLine := replaceOnce(t, list.line(t), `"requestURI":"/api/v1/namespaces/"`, `"requestURI":"/api/v1/namespaces"`)
	create := event{id: "create", verb: "create", version: "v1", resource: "configmaps", ns: "app", code: 201, received: at(t, 0.995),
		req:  map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "app"}},
		resp: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "app", "uid": "u-2", "resourceVersion": "500"}}}
	const (
		itsResult = "may be this request's result"
		another   = "may have been written by the write at"
		// What the first patch changed is not known after it: it ran after the snapshot was
		// read, or before it, which holds the second's result.
		changed = "changed it, or the snapshot holds what it wrote"
	)
	for _, tc := range []struct {
		name  string
		lines []string
		want  map[string]string // by audit ID: a part of why it is indeterminate, "" decided
	}{
		{"it holds the patch's effect", []string{listLine, patch("p", 1, 3)}, map[string]string{"p": itsResult}},
		{"the patch changes it", []string{listLine, patch("p", 1, 4)}, map[string]string{"p": ""}},
		{"a later patch may have written it", []string{listLine, patch("p1", 1, 4), patch("p2", 1.5, 3)}, map[string]string{"p1": another, "p2": changed}},
		{"a revision past it shown first", []string{listLine, create.line(t), patch("p", 1, 3)}, map[string]string{"p": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, recs := replaySnapshotLog(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, listOf(dep), tc.lines, true)
			for id, want := range tc.want {
				rec := recs[id]
				switch {
				case rec == nil:
					t.Errorf("%s: no record", id)
				case want == "" && (rec.Decision != DecisionAdmit || rec.Certainty != CertaintyCertain):
					t.Errorf("%s: %s %s %q, want admit, certain, on the snapshot's version", id, rec.Decision, rec.Certainty, rec.Indeterminate)
				case want != "" && (rec.Decision != DecisionIndeterminate || !strings.Contains(rec.Indeterminate, want)):
					t.Errorf("%s: %s %q, want indeterminate: %s", id, rec.Decision, rec.Indeterminate, want)
				}
			}
		})
	}
}
