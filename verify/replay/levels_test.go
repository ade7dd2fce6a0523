package replay

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// levelPolicy is a policy that denies every request of the operations on the resource, with
// an optional namespaceSelector and expression.
func levelPolicy(name, resource string, op admissionregistrationv1.OperationType, nsLabels map[string]string, expr string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	if expr == "" {
		expr = "false"
	}
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{op},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: expr, Message: "denied by " + name}},
		},
	}
	if nsLabels != nil {
		p.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: nsLabels}
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return p, b
}

// levelEvent is one final audit event as JSON.
func levelEvent(t *testing.T, id, level, verb, resource, ns, name string, code int32, message string, req, resp map[string]any) string {
	t.Helper()
	uri := "/api/v1/"
	if ns != "" && resource != "namespaces" {
		uri += "namespaces/" + ns + "/"
	}
	uri += resource
	if verb != "create" {
		uri += "/" + name
	}
	ev := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level, "auditID": id, "stage": "ResponseComplete",
		"requestURI": uri, "verb": verb, "user": map[string]any{"username": "admin", "groups": []any{"system:masters"}},
		"objectRef":      map[string]any{"resource": resource, "namespace": ns, "name": name, "apiVersion": "v1"},
		"responseStatus": map[string]any{"metadata": map[string]any{}, "code": code, "message": message},
	}
	if req != nil {
		ev["requestObject"] = req
	}
	if resp != nil {
		ev["responseObject"] = resp
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// timedEvent is an event line of levelEvent received and completed at the seconds given
// ("02.010000") of a minute, with the annotations given.
func timedEvent(t *testing.T, line, received, done string, annotations map[string]string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	at := func(s string) string { // SS.ffffff of the first minute, or MM:SS.ffffff
		if strings.Contains(s, ":") {
			return "2026-11-24T00:" + s + "Z"
		}
		return "2026-11-24T00:00:" + s + "Z"
	}
	m["requestReceivedTimestamp"], m["stageTimestamp"] = at(received), at(done)
	if len(annotations) > 0 {
		m["annotations"] = annotations
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func replayLines(t *testing.T, ps []*admissionregistrationv1.ValidatingAdmissionPolicy, bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, lines ...string) (*Summary, map[string]*Record) {
	t.Helper()
	return replayLinesWith(t, ps, bs, nil, lines...)
}

// createRules match the creates of a resource of the group given, in version v1.
func createRules(group, resource string) *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: []string{resource}},
	}}}}
}

// replayLine replays one event line with r and returns the record of the request whose audit
// ID is id (nil when it has none).
func replayLine(t *testing.T, r *Replayer, line, id string) *Record {
	t.Helper()
	var rec *Record
	if _, err := r.Run(context.Background(), []Source{{Name: "audit.jsonl", Reader: strings.NewReader(line + "\n")}}, func(got *Record) error {
		if got.AuditID == id {
			rec = got
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rec
}

// replayLinesWith is replayLines over a snapshot of the objects given (none: no snapshot).
func replayLinesWith(t *testing.T, ps []*admissionregistrationv1.ValidatingAdmissionPolicy, bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, snapshot []any, lines ...string) (*Summary, map[string]*Record) {
	t.Helper()
	opts := []Option{WithCheckRecorded(true)}
	if snapshot != nil {
		opts = append(opts, snapshotOf(t, snapshot))
	}
	return replaySources(t, ps, bs, opts, Source{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")})
}

// snapshotOf is the option of a snapshot of the objects given, a List written to a folder.
func snapshotOf(t *testing.T, items []any) Option {
	t.Helper()
	dir := t.TempDir()
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshot.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return WithSnapshot(dir)
}

// replaySources replays the sources with the policies and options given, and returns the
// summary and the records by audit ID.
func replaySources(t testing.TB, ps []*admissionregistrationv1.ValidatingAdmissionPolicy, bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, opts []Option, srcs ...Source) (*Summary, map[string]*Record) {
	t.Helper()
	r, err := New(ps, bs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]*Record{}
	sum, err := r.Run(context.Background(), srcs, func(rec *Record) error {
		recs[rec.AuditID] = rec
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum, recs
}

// replaceOnce is s with the first old replaced by new; a test whose event lacks old fails.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("no %s in %s", old, s)
	}
	return strings.Replace(s, old, new, 1)
}

// describeRecord is a record's decision and why, for a failing test's message.
func describeRecord(rec *Record) string {
	if rec == nil {
		return "no record"
	}
	return fmt.Sprintf("%s: %s (%s) %s %s %v alternatives %v", rec, rec.Decision, rec.Certainty, rec.Reason, rec.Indeterminate, rec.Disagreements, rec.Alternatives)
}

// TestUnknownNamespaceSelector: a namespace written at Metadata level has unknown labels, so
// whether a policy with a namespaceSelector matches a request in it is unknown. The apiserver's
// matcher reads the namespace's labels (matching.Matcher.MatchNamespaceSelector): the replay
// must report the request indeterminate, not "not matched" (which hid a denial).
func TestUnknownNamespaceSelector(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("guarded", "configmaps", admissionregistrationv1.Create, map[string]string{"guarded": "true"}, "")
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1"}}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1"}}
	denied := `configmaps "cm" is forbidden: ValidatingAdmissionPolicy 'guarded' with binding 'guarded' denied request: denied by guarded`
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelMetadata, "create", "namespaces", "", "ns1", 201, "", nil, nil),
		levelEvent(t, "2", auditlog.LevelRequest, "create", "configmaps", "ns1", "cm", 422, denied, cm, nil),
		// Known labels: decided.
		levelEvent(t, "3", auditlog.LevelRequestResponse, "update", "namespaces", "", "ns1", 200, "", ns, ns),
		levelEvent(t, "4", auditlog.LevelRequest, "create", "configmaps", "ns1", "cm", 201, "", cm, nil),
	)
	if rec := recs["2"]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonNamespaceUnknown || !strings.Contains(rec.Indeterminate, "namespaces ns1") {
		t.Errorf("request 2 = %s, want indeterminate namespace-unknown", describeRecord(rec))
	}
	if recs["4"] != nil || sum.NotMatched != 3 { // the namespace writes and request 4
		t.Errorf("request 4 = %+v, not matched %d; want not matched (ns1 has no label guarded)", recs["4"], sum.NotMatched)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestNamespaceReadOnlyBySelectingPolicies: a namespace of unknown labels makes a decision
// indeterminate only when a matched policy selects (namespaceSelector) or reads
// (namespaceObject) it; the apiserver hands every policy the namespace, but a policy that does
// neither decides the same whatever it holds.
func TestNamespaceReadOnlyBySelectingPolicies(t *testing.T) {
	t.Parallel()
	reader, rb := levelPolicy("reader", "configmaps", admissionregistrationv1.Create, nil, "namespaceObject.metadata.?labels.team.orValue('') != 'x'")
	pods, pb := levelPolicy("pods", "pods", admissionregistrationv1.Delete, nil, "oldObject.metadata.name != 'web'")
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "ns1"}, "spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1"}}
	denied := `pods "web" is forbidden: ValidatingAdmissionPolicy 'pods' with binding 'pods' denied request: denied by pods`
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{reader, pods}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{rb, pb},
		levelEvent(t, "1", auditlog.LevelMetadata, "create", "namespaces", "", "ns1", 201, "", nil, nil),
		levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod),
		levelEvent(t, "3", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "web", 422, denied, nil, nil),
		levelEvent(t, "4", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm, cm),
	)
	if rec := recs["3"]; rec == nil || rec.Decision != DecisionDeny || rec.Message != denied {
		t.Errorf("request 3 = %+v, want deny %q", rec, denied)
	}
	if rec := recs["4"]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonNamespaceUnknown {
		t.Errorf("request 4 = %+v, want indeterminate namespace-unknown", rec)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestRequestObjectNamespace: a create logged at Request level whose body has no namespace is
// admitted with the request's namespace, which rest.BeforeCreate sets before validating
// admission runs.
func TestRequestObjectNamespace(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("ns", "configmaps", admissionregistrationv1.Create, nil, "object.metadata.namespace == 'ns1'")
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm"}}
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelRequest, "create", "configmaps", "ns1", "cm", 201, "", cm, nil),
	)
	if rec := recs["1"]; rec == nil || rec.Decision != DecisionAdmit || rec.Changed || !strings.HasPrefix(rec.ObjectSource, SourcePipeline) {
		t.Errorf("request 1 = %+v, want admit from the request object", rec)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestNamespaceOldObject: the audit objectRef of a request for /api/v1/namespaces/NAME gives
// NAME as its namespace too (the request info does); the stored namespace is still the
// oldObject of its updates and deletes.
func TestNamespaceOldObject(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("tier", "namespaces", admissionregistrationv1.Update, nil, "object.metadata.labels['tier'] == oldObject.metadata.labels['tier']")
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "labels": map[string]any{"tier": "gold"}}}
	denied := `namespaces "ns1" is forbidden: ValidatingAdmissionPolicy 'tier' with binding 'tier' denied request: denied by tier`
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", ns, ns),
		levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "namespaces", "ns1", "ns1", 422, denied, map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "silver"}}}, nil),
	)
	if rec := recs["2"]; rec == nil || rec.Decision != DecisionDeny || rec.Message != denied {
		t.Errorf("request 2 = %+v, want deny %q", rec, denied)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestUnknownFieldsDropped: the apiserver drops the fields of a built-in kind its type does
// not have when it decodes a request body or a patched object (unless fieldValidation is
// Strict, which fails before admission): a denied patch that adds one is decided.
func TestUnknownFieldsDropped(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("no-data", "pods", admissionregistrationv1.Update, nil, "!has(object.data)")
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "ns1"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
	denied := `pods "web" is forbidden: ValidatingAdmissionPolicy 'other' with binding 'other' denied request: no`
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod),
		levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "pods", "ns1", "web", 422, denied, map[string]any{"data": map[string]any{"n": "1"}}, nil),
	)
	if rec := recs["2"]; rec == nil || rec.Decision != DecisionAdmit || rec.Indeterminate != "" {
		t.Errorf("request 2 = %+v, want admit by no-data: the server dropped data", rec)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestDryRunDeleteInBody: client-go sends a DELETE's dryRun in the body; a dry-run delete
// leaves the object stored, so the next request still has it as its oldObject.
func TestDryRunDeleteInBody(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("keep", "configmaps", admissionregistrationv1.Update, nil, "oldObject.metadata.name != 'cm'")
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1"}}
	denied := `configmaps "cm" is forbidden: ValidatingAdmissionPolicy 'keep' with binding 'keep' denied request: denied by keep`
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm, cm),
		levelEvent(t, "2", auditlog.LevelRequestResponse, "delete", "configmaps", "ns1", "cm", 200, "", map[string]any{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/__internal", "dryRun": []any{"All"}}, cm),
		levelEvent(t, "3", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 422, denied, cm, nil),
	)
	if rec := recs["3"]; rec == nil || rec.Decision != DecisionDeny || rec.Message != denied {
		t.Errorf("request 3 = %+v, want deny %q", rec, denied)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestUnconditionalUpdate: an update without resourceVersion gets the stored one before
// admission.
func TestUnconditionalUpdate(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("rv", "configmaps", admissionregistrationv1.Update, nil, "object.metadata.resourceVersion != '7'")
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "resourceVersion": "7"}}
	body := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1"}, "data": map[string]any{"a": "b"}}
	denied := `configmaps "cm" is forbidden: ValidatingAdmissionPolicy 'rv' with binding 'rv' denied request: denied by rv`
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm, cm),
		levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 422, denied, body, nil),
	)
	if rec := recs["2"]; rec == nil || rec.Decision != DecisionDeny || rec.Message != denied {
		t.Errorf("request 2 = %+v, want deny %q", rec, denied)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestNamespaceDelete: the namespace REST gives a DELETE a uid precondition before admission,
// and returns a namespace being deleted that still has finalizers without admission.
func TestNamespaceDelete(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("uid", "namespaces", admissionregistrationv1.Delete, nil, "request.options.preconditions.uid != 'u-1'")
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "uid": "u-1"}, "spec": map[string]any{"finalizers": []any{"kubernetes"}}}
	terminating := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "uid": "u-1", "deletionTimestamp": "2026-01-05T10:01:00Z"},
		"spec": map[string]any{"finalizers": []any{"kubernetes"}}, "status": map[string]any{"phase": "Terminating"}}
	opts := map[string]any{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/__internal"}
	denied := `namespaces "ns1" is forbidden: ValidatingAdmissionPolicy 'uid' with binding 'uid' denied request: denied by uid`
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", ns, ns),
		levelEvent(t, "2", auditlog.LevelRequestResponse, "delete", "namespaces", "ns1", "ns1", 422, denied, opts, nil),
		// Admitted by another binding: now terminating.
		levelEvent(t, "3", auditlog.LevelRequestResponse, "update", "namespaces", "ns1", "ns1", 200, "", terminating, terminating),
		levelEvent(t, "4", auditlog.LevelRequestResponse, "delete", "namespaces", "ns1", "ns1", 200, "", opts, terminating),
	)
	if rec := recs["2"]; rec == nil || rec.Decision != DecisionDeny || rec.Message != denied {
		t.Errorf("request 2 = %+v, want deny %q", rec, denied)
	}
	if recs["4"] != nil || sum.Skipped[string(SkipPendingDeletion)] != 1 {
		t.Errorf("request 4 = %+v, skipped %v: want it skipped, the namespace is finalizing", recs["4"], sum.Skipped)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestGeneratedName: a create with generateName that the server refused gets a name the log
// does not hold (but for its base: a policy that reads its random suffix is undecided, see
// TestGeneratedPrefix); one it admitted is decided from the stored object.
func TestGeneratedName(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("names", "configmaps", admissionregistrationv1.Create, nil, "!object.metadata.name.startsWith('gen-x')")
	body := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"generateName": "gen-", "namespace": "ns1"}}
	stored := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"generateName": "gen-", "name": "gen-x7k2p", "namespace": "ns1"}}
	denied := `configmaps "gen-x7k2p" is forbidden: ValidatingAdmissionPolicy 'names' with binding 'names' denied request: denied by names`
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "", 422, denied, body, nil),
		levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "", 201, "", body, stored),
	)
	if rec := recs["1"]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonUnknownField || rec.Name != "" {
		t.Errorf("request 1 = %+v, want indeterminate unknown-field, without a name", rec)
	}
	if rec := recs["2"]; rec == nil || rec.Decision != DecisionDeny || !rec.Changed {
		t.Errorf("request 2 = %+v, want deny (the policy was not in effect)", rec)
	}
}

// TestTokenRequest: a TokenRequest leaves its ServiceAccount as stored.
func TestTokenRequest(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("sa", "serviceaccounts", admissionregistrationv1.Update, nil, "oldObject.metadata.name != 'robot'")
	sa := map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "robot", "namespace": "ns1"}}
	tr := map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": map[string]any{"name": "robot", "namespace": "ns1"}, "spec": map[string]any{"audiences": []any{"api"}}}
	denied := `serviceaccounts "robot" is forbidden: ValidatingAdmissionPolicy 'sa' with binding 'sa' denied request: denied by sa`
	token := levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "serviceaccounts", "ns1", "robot", 201, "", tr, tr)
	token = replaceOnce(t, token, `"resource":"serviceaccounts"`, `"resource":"serviceaccounts","subresource":"token"`)
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "serviceaccounts", "ns1", "robot", 201, "", sa, sa),
		token,
		levelEvent(t, "3", auditlog.LevelRequestResponse, "update", "serviceaccounts", "ns1", "robot", 422, denied, sa, nil),
	)
	if rec := recs["3"]; rec == nil || rec.Decision != DecisionDeny || rec.Message != denied {
		t.Errorf("request 3 = %+v, want deny %q", rec, denied)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestEvictionDryRun: EvictionREST.Create gives the request's dryRun to the Eviction's
// deleteOptions that have none, before admission.
func TestEvictionDryRun(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("dry", "pods/eviction", admissionregistrationv1.Create, nil, "!has(object.deleteOptions.dryRun)")
	ev := map[string]any{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": map[string]any{"name": "web", "namespace": "ns1"}, "deleteOptions": map[string]any{"gracePeriodSeconds": 0}}
	denied := `pods "web" is forbidden: ValidatingAdmissionPolicy 'dry' with binding 'dry' denied request: denied by dry`
	line := levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 422, denied, ev, nil)
	line = replaceOnce(t, line, `"resource":"pods"`, `"resource":"pods","subresource":"eviction"`)
	line = replaceOnce(t, line, `"requestURI":"/api/v1/namespaces/ns1/pods"`, `"requestURI":"/api/v1/namespaces/ns1/pods/web/eviction?dryRun=All"`)
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, line)
	if rec := recs["1"]; rec == nil || rec.Decision != DecisionDeny || rec.Message != denied {
		t.Errorf("request 1 = %+v, want deny %q", rec, denied)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestBindingReplayed: a pod bound through pods/binding is stored with its node, the node's
// topology labels (PodTopologyLabels) and the PodScheduled condition, none of which the log
// shows; a later policy on the pod's deletion reads them. Without the node, its labels are not
// known and the decision is indeterminate.
func TestBindingReplayed(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("bound", "pods", admissionregistrationv1.Delete, nil,
		`oldObject.spec.nodeName != 'n1' || !('topology.kubernetes.io/zone' in oldObject.metadata.labels) || !oldObject.status.conditions.exists(c, c.type == 'PodScheduled' && c.status == 'True')`)
	node := map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "n1", "uid": "u-n1", "resourceVersion": "5",
		"labels": map[string]any{"topology.kubernetes.io/zone": "z1"}}}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "ns1", "uid": "u-web", "resourceVersion": "6"},
		"spec":   map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
		"status": map[string]any{"phase": "Pending"}}
	binding := map[string]any{"apiVersion": "v1", "kind": "Binding", "metadata": map[string]any{"name": "web", "namespace": "ns1"},
		"target": map[string]any{"kind": "Node", "name": "n1"}}
	bind := levelEvent(t, "3", auditlog.LevelRequest, "create", "pods", "ns1", "web", 201, "", binding, nil)
	bind = replaceOnce(t, bind, `"resource":"pods"`, `"resource":"pods","subresource":"binding"`)
	bind = replaceOnce(t, bind, `"requestURI":"/api/v1/namespaces/ns1/pods"`, `"requestURI":"/api/v1/namespaces/ns1/pods/web/binding"`)
	denied := `pods "web" is forbidden: ValidatingAdmissionPolicy 'bound' with binding 'bound' denied request: denied by bound`
	del := levelEvent(t, "4", auditlog.LevelRequest, "delete", "pods", "ns1", "web", 422, denied, nil, nil)
	for _, tc := range []struct {
		name     string
		withNode bool
		want     string
	}{
		{"node known", true, DecisionDeny},
		{"node unknown", false, DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := []string{levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), bind, del}
			if tc.withNode {
				lines = append([]string{levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "nodes", "", "n1", 201, "", node, node)}, lines...)
			}
			sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines...)
			rec := recs["4"]
			if rec == nil || rec.Decision != tc.want {
				t.Fatalf("request 4 = %+v, want %s", rec, tc.want)
			}
			t.Logf("request 4: %s %s", rec.Decision, rec.Indeterminate)
			if tc.want == DecisionIndeterminate && !strings.Contains(rec.Indeterminate, "n1") {
				t.Errorf("request 4 indeterminate %q, want it to name the node n1", rec.Indeterminate)
			}
			if len(sum.Disagreements) != 0 {
				t.Errorf("disagreements: %v", sum.Disagreements)
			}
		})
	}
}

// TestOldObjectConverted: an object stored from a response in one version is the oldObject of a
// request in another, converted through the internal version as the server does
// (autoscaling/v2's metrics are autoscaling/v1's targetCPUUtilizationPercentage).
func TestOldObjectConverted(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("cpu", "horizontalpodautoscalers", admissionregistrationv1.Update, nil, `oldObject.spec.targetCPUUtilizationPercentage != 50 || object.spec.maxReplicas != 4`)
	p.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{"autoscaling"}
	p.Spec.MatchConstraints.ResourceRules[0].APIVersions = []string{"v1"}
	p.Spec.MatchConstraints.MatchPolicy = ptr.To(admissionregistrationv1.Exact)
	v2 := map[string]any{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"name": "h", "namespace": "ns1", "uid": "u-h", "resourceVersion": "7"},
		"spec": map[string]any{"maxReplicas": 3, "scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
			"metrics": []any{map[string]any{"type": "Resource", "resource": map[string]any{"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": 50}}}}}}
	v1 := map[string]any{"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"name": "h", "namespace": "ns1", "uid": "u-h", "resourceVersion": "7"},
		"spec":     map[string]any{"maxReplicas": 4, "targetCPUUtilizationPercentage": 60, "scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}}
	v1five := map[string]any{"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"name": "h", "namespace": "ns1", "uid": "u-h", "resourceVersion": "8"},
		"spec":     map[string]any{"maxReplicas": 5, "targetCPUUtilizationPercentage": 60, "scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}}
	// Request 3 asks for the version request 1 stored (7), and stores 8.
	v1fiveSent := map[string]any{"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"name": "h", "namespace": "ns1", "uid": "u-h", "resourceVersion": "7"},
		"spec":     map[string]any{"maxReplicas": 5, "targetCPUUtilizationPercentage": 60, "scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}}
	hpa := func(id, verb, version string, code int32, msg string, req, resp map[string]any) string {
		line := levelEvent(t, id, auditlog.LevelRequestResponse, verb, "horizontalpodautoscalers", "ns1", "h", code, msg, req, resp)
		line = replaceOnce(t, line, `"requestURI":"/api/v1/`, `"requestURI":"/apis/autoscaling/`+version+`/`)
		return replaceOnce(t, line, `"apiVersion":"v1","name":"h"`, `"apiGroup":"autoscaling","apiVersion":"`+version+`","name":"h"`)
	}
	denied := `horizontalpodautoscalers.autoscaling "h" is forbidden: ValidatingAdmissionPolicy 'cpu' with binding 'cpu' denied request: denied by cpu`
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		hpa("1", "create", "v2", 201, "", v2, v2),
		hpa("2", "update", "v1", 422, denied, v1, nil),
		hpa("3", "update", "v1", 200, "", v1fiveSent, v1five))
	// Request 2 is refused, and sent through the pipeline; request 3 is admitted, and rebuilt
	// from the log with the stored object converted.
	if rec := recs["2"]; rec == nil || rec.Decision != DecisionDeny || rec.Message != denied {
		t.Fatalf("request 2 = %+v, want deny %q", rec, denied)
	}
	if rec := recs["3"]; rec == nil || rec.Decision != DecisionAdmit {
		t.Fatalf("request 3 = %+v, want admit", rec)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestDeleteCollectionUnknowns: the objects a deletecollection deletes carry what the State does
// not know of them (here the resourceVersion a binding's write gave the pod) into their
// deletions' oldObject.
func TestDeleteCollectionUnknowns(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("rv", "pods", admissionregistrationv1.Delete, nil, `oldObject.metadata.resourceVersion != '6'`)
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "uid": "u-ns1", "resourceVersion": "2"}}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "ns1", "uid": "u-web", "resourceVersion": "6"},
		"spec":   map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
		"status": map[string]any{"phase": "Pending"}}
	binding := map[string]any{"apiVersion": "v1", "kind": "Binding", "metadata": map[string]any{"name": "web", "namespace": "ns1"},
		"target": map[string]any{"kind": "Node", "name": "n1"}}
	bind := levelEvent(t, "3", auditlog.LevelRequest, "create", "pods", "ns1", "web", 201, "", binding, nil)
	bind = replaceOnce(t, bind, `"resource":"pods"`, `"resource":"pods","subresource":"binding"`)
	bind = replaceOnce(t, bind, `"requestURI":"/api/v1/namespaces/ns1/pods"`, `"requestURI":"/api/v1/namespaces/ns1/pods/web/binding"`)
	// At level Request: the response would list the pods it deleted (an empty list: none).
	del := levelEvent(t, "4", auditlog.LevelRequest, "deletecollection", "pods", "ns1", "", 200, "", nil, nil)
	del = replaceOnce(t, del, `"requestURI":"/api/v1/namespaces/ns1/pods/"`, `"requestURI":"/api/v1/namespaces/ns1/pods"`)
	def := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "default", "uid": "u-default", "resourceVersion": "1"}}
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		// The log begins with the cluster: the State knows every pod.
		replaceOnce(t, levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "namespaces", "", "default", 201, "", def, def), `"username":"admin"`, `"username":"system:apiserver"`),
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", ns, ns),
		levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), bind, del)
	rec := recs["4"]
	if rec == nil || rec.Decision != DecisionIndeterminate || !strings.Contains(rec.Indeterminate, "resourceVersion") {
		t.Fatalf("request 4 = %s, want indeterminate on the pod's resourceVersion", describeRecord(rec))
	}
}

// TestMutatingAdmissionPolicies: a bound MutatingAdmissionPolicy may change the object of a
// request it matches, and leaves no trace in the log: a decision that reads the object of a
// request rebuilt from its body is indeterminate. The policy is learned from the snapshot or
// from the log, and unbinding it or deleting it ends that.
func TestMutatingAdmissionPolicies(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("owner", "configmaps", admissionregistrationv1.Create, nil, `has(object.data) && 'owner' in object.data`)
	mapPolicy := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy", "metadata": map[string]any{"name": "add-owner"},
		"spec": map[string]any{"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
			"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"configmaps"}}},
			// As the server defaults them: an empty object selector selects every object.
			"objectSelector": map[string]any{}, "namespaceSelector": map[string]any{"matchLabels": map[string]any{"mutate": "on"}}}}}
	ns := func(name string, labels map[string]any) string {
		obj := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name, "labels": labels}}
		return levelEvent(t, "ns-"+name, auditlog.LevelRequestResponse, "create", "namespaces", "", name, 201, "", obj, obj)
	}
	mapBinding := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding", "metadata": map[string]any{"name": "add-owner"},
		"spec": map[string]any{"policyName": "add-owner"}}
	mapEvent := func(id, verb, resource, name string, obj map[string]any) string {
		line := levelEvent(t, id, auditlog.LevelRequestResponse, verb, resource, "", name, 201, "", obj, obj)
		line = replaceOnce(t, line, `"requestURI":"/api/v1/`, `"requestURI":"/apis/admissionregistration.k8s.io/v1/`)
		return replaceOnce(t, line, `"apiVersion":"v1","name"`, `"apiGroup":"admissionregistration.k8s.io","apiVersion":"v1","name"`)
	}
	cm := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns1"}, "data": map[string]any{"a": "b"}}
	}
	create := func(id, namespace, name string, admitted bool) string {
		// At level Request: the object the policies saw is not in the log.
		c := cm(name)
		c["metadata"].(map[string]any)["namespace"] = namespace
		if admitted {
			return levelEvent(t, id, auditlog.LevelRequest, "create", "configmaps", namespace, name, 201, "", c, nil)
		}
		denied := `configmaps "` + name + `" is forbidden: ValidatingAdmissionPolicy 'owner' with binding 'owner' denied request: denied by owner`
		return levelEvent(t, id, auditlog.LevelRequest, "create", "configmaps", namespace, name, 422, denied, c, nil)
	}
	unbind := replaceOnce(t, mapEvent("5", "delete", "mutatingadmissionpolicybindings", "add-owner", nil), `"code":201`, `"code":200`)
	// patch patches the policy at level Request (its result not in the log): to select the
	// namespaces labelled mutate=never, as a merge patch.
	patch := func(id string, body map[string]any) string {
		line := levelEvent(t, id, auditlog.LevelRequest, "patch", "mutatingadmissionpolicies", "", "add-owner", 200, "", body, nil)
		line = replaceOnce(t, line, `"requestURI":"/api/v1/`, `"requestURI":"/apis/admissionregistration.k8s.io/v1/`)
		return replaceOnce(t, line, `"apiVersion":"v1","name"`, `"apiGroup":"admissionregistration.k8s.io","apiVersion":"v1","name"`)
	}
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		ns("ns1", map[string]any{"mutate": "on"}), ns("ns2", nil),
		create("1", "ns1", "before", false),
		mapEvent("2", "create", "mutatingadmissionpolicies", "add-owner", mapPolicy),
		mapEvent("3", "create", "mutatingadmissionpolicybindings", "add-owner", mapBinding),
		// The policy added the owner: admitted.
		create("4", "ns1", "bound", true),
		// Not in a namespace the policy selects.
		create("4b", "ns2", "other", false),
		// Patched to select other namespaces (the patch applied to the policy the log
		// showed): ns1's configmaps are not its any more.
		patch("4c", map[string]any{"spec": map[string]any{"matchConstraints": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"mutate": "never"}}}}}),
		create("4d", "ns1", "patched", false),
		// A patch the replay cannot apply (a strategic merge patch's directive): the policy is
		// not known.
		patch("4e", map[string]any{"$patch": "replace", "spec": map[string]any{}}),
		create("4f", "ns1", "unknown", false),
		unbind,
		create("6", "ns1", "after", false))
	for id, want := range map[string]string{"1": DecisionDeny, "4": DecisionIndeterminate, "4b": DecisionDeny, "4d": DecisionDeny, "4f": DecisionIndeterminate, "6": DecisionDeny} {
		rec := recs[id]
		if rec == nil || rec.Decision != want {
			t.Errorf("request %s = %+v, want %s", id, rec, want)
			continue
		}
		if want == DecisionIndeterminate && !strings.Contains(rec.Indeterminate, "MutatingAdmissionPolicy add-owner") {
			t.Errorf("request %s: indeterminate %q, want it to name the MutatingAdmissionPolicy", id, rec.Indeterminate)
		}
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestMutatingBindingSelects: a MutatingAdmissionPolicyBinding's matchResources narrow its
// policy's: a request in a namespace its namespaceSelector does not select is not its, and
// its object, at level Request, is the one the log holds.
func TestMutatingBindingSelects(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("owner", "configmaps", admissionregistrationv1.Create, nil, `has(object.data) && 'owner' in object.data`)
	mapPolicy := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy", "metadata": map[string]any{"name": "add-owner"},
		"spec": map[string]any{"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
			"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"configmaps"}}}}}}
	mapBinding := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding", "metadata": map[string]any{"name": "add-owner"},
		"spec": map[string]any{"policyName": "add-owner", "matchResources": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"mutate": "on"}}}}}
	ns := func(name string, labels map[string]any) string {
		obj := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name, "labels": labels}}
		return levelEvent(t, "ns-"+name, auditlog.LevelRequestResponse, "create", "namespaces", "", name, 201, "", obj, obj)
	}
	mapEvent := func(id, resource string, obj map[string]any) string {
		line := levelEvent(t, id, auditlog.LevelRequestResponse, "create", resource, "", "add-owner", 201, "", obj, obj)
		line = replaceOnce(t, line, `"requestURI":"/api/v1/`, `"requestURI":"/apis/admissionregistration.k8s.io/v1/`)
		return replaceOnce(t, line, `"apiVersion":"v1","name"`, `"apiGroup":"admissionregistration.k8s.io","apiVersion":"v1","name"`)
	}
	create := func(id, namespace string) string {
		c := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": id, "namespace": namespace}, "data": map[string]any{"a": "b"}}
		denied := `configmaps "` + id + `" is forbidden: ValidatingAdmissionPolicy 'owner' with binding 'owner' denied request: denied by owner`
		return levelEvent(t, id, auditlog.LevelRequest, "create", "configmaps", namespace, id, 422, denied, c, nil)
	}
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		ns("ns1", map[string]any{"mutate": "on"}), ns("ns2", nil),
		mapEvent("map", "mutatingadmissionpolicies", mapPolicy), mapEvent("mapb", "mutatingadmissionpolicybindings", mapBinding),
		create("selected", "ns1"), create("other", "ns2"))
	for id, want := range map[string]string{"selected": DecisionIndeterminate, "other": DecisionDeny} {
		if rec := recs[id]; rec == nil || rec.Decision != want {
			t.Errorf("%s: %s, want %s", id, describeRecord(rec), want)
		}
	}
}

// TestEquivalentEvents: kube-apiserver files core and events.k8s.io Events under one etcd
// prefix, so they are equivalent resources: a policy on the core group's resources with
// matchPolicy Equivalent sees an events.k8s.io/v1 Event, converted to v1.
func TestEquivalentEvents(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("core-events", "*", admissionregistrationv1.Create, nil, `!(object.kind == 'Event' && object.apiVersion == 'v1' && object.reportingComponent == 'example.com/c')`)
	p.Spec.MatchConstraints.ResourceRules[0].APIVersions = []string{"*"}
	ev := map[string]any{"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": map[string]any{"name": "ev-1", "namespace": "ns1"},
		"eventTime": "2026-11-23T18:19:57.820136Z", "reportingController": "example.com/c", "reportingInstance": "i", "action": "Test", "reason": "Test",
		"regarding": map[string]any{"kind": "ConfigMap", "namespace": "ns1", "name": "cm"}, "note": "x", "type": "Normal"}
	denied := `events.events.k8s.io "ev-1" is forbidden: ValidatingAdmissionPolicy 'core-events' with binding 'core-events' denied request: denied by core-events`
	line := levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "events", "ns1", "ev-1", 422, denied, ev, nil)
	line = replaceOnce(t, line, `"requestURI":"/api/v1/`, `"requestURI":"/apis/events.k8s.io/v1/`)
	line = replaceOnce(t, line, `"apiVersion":"v1","name":"ev-1"`, `"apiGroup":"events.k8s.io","apiVersion":"v1","name":"ev-1"`)
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, line)
	if rec := recs["1"]; rec == nil || rec.Decision != DecisionDeny || rec.Message != denied {
		t.Errorf("request 1 = %+v, want denied by the policy of the core group", rec)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestWritesLoggedOutOfOrder: the log records a request when its response completes, so of two
// concurrent writes to an object the one stored first may come last. Its old object is the
// version the other write replaced, not the State's latest, and the State keeps the latest.
func TestWritesLoggedOutOfOrder(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Update, nil, "oldObject.data.v != 'bad' || object.data.?w.orValue('') == '1'")
	cm := func(rv string, data map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "resourceVersion": rv, "uid": "u1"}, "data": data}
	}
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", map[string]any{"v": "good"}), cm("10", map[string]any{"v": "good"})),
		// Stored second (resourceVersion 12), logged first.
		levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", map[string]any{"data": map[string]any{"w": "1"}}, cm("12", map[string]any{"v": "bad", "w": "1"})),
		// Stored first (11): it changed version 10, whose v was good.
		levelEvent(t, "3", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("10", map[string]any{"v": "bad"}), cm("11", map[string]any{"v": "bad"})),
		// After both: the State holds version 12 (v bad, w 1), not 11.
		levelEvent(t, "4", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 422,
			`configmaps "cm" is forbidden: ValidatingAdmissionPolicy 'old-v' with binding 'old-v' denied request: denied by old-v`, cm("12", map[string]any{"v": "x"}), nil),
	)
	for _, id := range []string{"3", "4"} {
		rec := recs[id]
		if rec == nil || rec.Decision == DecisionIndeterminate || rec.Changed {
			t.Errorf("request %s: %+v, want decided as recorded", id, rec)
		}
	}
	if rec := recs["3"]; rec != nil && rec.Decision != DecisionAdmit {
		t.Errorf("request 3 decided %s, want admit (its old object is version 10)", rec.Decision)
	}

	// A write the State did not keep (at Metadata level) between the version a late write
	// changed and the next one it knows: the version it changed is not known.
	_, recs = replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", map[string]any{"v": "bad"}), cm("5", map[string]any{"v": "bad"})),
		levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("5", map[string]any{"v": "good"}), cm("10", map[string]any{"v": "good"})),
		levelEvent(t, "3", auditlog.LevelMetadata, "update", "configmaps", "ns1", "cm", 200, "", nil, nil),
		levelEvent(t, "4", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("20", map[string]any{"v": "x"}), cm("30", map[string]any{"v": "x"})),
		// Stored at 20, logged last: it changed version 15, which the log does not hold.
		levelEvent(t, "5", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("15", map[string]any{"v": "y"}), cm("20", map[string]any{"v": "y"})),
	)
	if rec := recs["5"]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonOldObjectUnknown {
		t.Errorf("request 5: %+v, want indeterminate: the version it changed (15) is not known", rec)
	}
}

// TestConcurrentRequest: a request received before the write logged ahead of it completed
// ran concurrently with it, and may have read the object before or after that write: the log's
// order (after) is likely, the version before the alternative, and the log's own denial says
// which. One received after is decided, and one concurrent with a write that changed nothing
// (the same resourceVersion) too, and one whose result's resourceVersion is after the write's.
func TestConcurrentRequest(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Update, nil, "oldObject.data.v != 'bad'")
	cm := func(rv string, v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "resourceVersion": rv, "uid": "u1"}, "data": map[string]any{"v": v}}
	}
	at := func(line, received, done string) string { return timedEvent(t, line, received, done, nil) }
	denied := `configmaps "cm" is forbidden: ValidatingAdmissionPolicy 'old-v' with binding 'old-v' denied request: denied by old-v`
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		at(levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "good"), cm("10", "good")), "01.000000", "01.001000"),
		at(levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("10", "bad"), cm("11", "bad")), "02.000000", "02.010000"),
		// Received before request 2 completed: it may have read version 10 or 11.
		at(levelEvent(t, "3", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 422, denied, cm("", "x"), nil), "02.005000", "02.011000"),
		// Received after: it read version 11.
		at(levelEvent(t, "4", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 422, denied, cm("", "x"), nil), "03.000000", "03.001000"),
		// A no-op update: the store returns version 11 as it is, and request 6, received
		// before it completed, read version 11 either way.
		at(levelEvent(t, "5", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("11", "bad"), cm("11", "bad")), "04.000000", "04.010000"),
		at(levelEvent(t, "6", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 422, denied, cm("", "x"), nil), "04.005000", "04.011000"),
		// Request 8, received before request 7 completed, stored version 13: it committed
		// after 7 (version 12), and its last attempt read what 7 stored.
		at(levelEvent(t, "7", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("11", "good"), cm("12", "good")), "05.000000", "05.010000"),
		at(levelEvent(t, "8", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("", "y"), cm("13", "y")), "05.005000", "05.011000"),
	)
	t.Logf("8: %s %v", describeRecord(recs["8"]), recs["8"].Alternatives)
	if rec := recs["8"]; rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyCertain {
		t.Errorf("request 8: %s, want certain admit: its result (13) is after what request 7 stored (12)", describeRecord(rec))
	}
	if rec := recs["3"]; rec == nil || rec.Decision != DecisionDeny || rec.Certainty != CertaintyCertain || len(rec.Disagreements) > 0 {
		t.Errorf("request 3: %s, want deny: it ran concurrently with request 2, and the log's denial is that of the version 2 stored", describeRecord(rec))
	}
	for _, id := range []string{"4", "6"} {
		if rec := recs[id]; rec == nil || rec.Decision != DecisionDeny || rec.Changed {
			t.Errorf("request %s: %+v, want deny as recorded", id, rec)
		}
	}
}

// TestConcurrentLoggedLater: a write received before a request to its object completed, and
// logged after it, ran concurrently with it: the request may have read what the write stored,
// which the State does not hold when the request comes up (the garbage collector's DELETE
// logged just before the job controller's patch it raced with). The replay waits a moment of
// log time before it accounts for a request, and evaluates it again on what the write stored
// when such a write shows up: the log's order stays likely, unless the log's own verdicts say
// the request read the written version.
func TestConcurrentLoggedLater(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Delete, nil, "oldObject.data.v != 'b'")
	cm := func(rv, v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "resourceVersion": rv, "uid": "u1"}, "data": map[string]any{"v": v}}
	}
	patch := map[string]any{"data": map[string]any{"v": "b"}}
	denied := `configmaps "cm" is forbidden: ValidatingAdmissionPolicy 'old-v' with binding 'old-v' denied request: denied by old-v`
	for _, tc := range []struct {
		name          string
		patchReceived string // the patch completes at patchDone (02.010000), logged after the DELETE
		patchDone     string
		noOp          bool // the patch changed nothing: it returned version 10
		// readWritten: the log's denial says the DELETE read what the patch stored.
		readWritten bool
	}{
		{name: "received before the DELETE completed", patchReceived: "02.000000", readWritten: true},
		{name: "a patch that changed nothing", patchReceived: "02.000000", noOp: true},
		{name: "received after the DELETE completed", patchReceived: "02.007000"},
		// Completed more than the lookahead after the DELETE: not looked for (a documented
		// limit), whatever the evaluation's timing.
		{name: "logged more than a second after it", patchReceived: "02.000000", patchDone: "03.500000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			written := cm("11", "b")
			if tc.noOp {
				written = cm("10", "a")
			}
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), cm("10", "a")), "01.000000", "01.001000", nil),
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "delete", "configmaps", "ns1", "cm", 422, denied, nil, nil), "02.003000", "02.006000", nil),
				timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", patch, written), tc.patchReceived, cmp.Or(tc.patchDone, "02.010000"), nil),
			)
			rec := recs["2"]
			switch {
			case rec == nil:
				t.Fatal("request 2 has no record")
			case tc.readWritten && (rec.Decision != DecisionDeny || rec.Certainty != CertaintyCertain || len(rec.Disagreements) > 0):
				t.Errorf("request 2: %s, want deny: the patch logged after it ran concurrently, and the log's denial says it read what the patch stored", describeRecord(rec))
			case !tc.readWritten && (rec.Decision != DecisionAdmit || len(rec.Disagreements) == 0):
				// The patch was received after the DELETE completed: the replay rightly
				// decides on version 10, which the log contradicts (the test's log is made up).
				t.Errorf("request 2: %s %v, want admit on version 10, in disagreement with the log", rec.Decision, rec.Disagreements)
			}
		})
	}
}

// TestConcurrentDeleteCollection: a deletecollection lists the objects it deletes; a write to
// one of them that completed after the deletecollection was received, whether the log records
// it before or after, ran concurrently with it, and which objects it listed is not known. When
// the log records the write after it, the log's order is likely, the other an alternative.
func TestConcurrentDeleteCollection(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("old-v", "configmaps", admissionregistrationv1.Delete, nil, "oldObject.data.v != 'b'")
	cm := func(name, rv, v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns1", "resourceVersion": rv, "uid": "u-" + name}, "data": map[string]any{"v": v}}
	}
	collection := func(id string) string {
		line := levelEvent(t, id, auditlog.LevelRequestResponse, "deletecollection", "configmaps", "ns1", "", 200, "", nil, nil)
		return replaceOnce(t, line, `/namespaces/ns1/configmaps/"`, `/namespaces/ns1/configmaps"`)
	}
	for _, tc := range []struct {
		name  string
		lines func() []string
	}{{
		name: "the write logged before it",
		lines: func() []string {
			return []string{
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "b", 201, "", cm("b", "", "b"), cm("b", "11", "b")), "02.000000", "02.005000", nil),
				timedEvent(t, collection("3"), "02.003000", "02.008000", nil),
			}
		},
	}, {
		name: "the write logged after it",
		lines: func() []string {
			return []string{
				timedEvent(t, collection("3"), "02.003000", "02.008000", nil),
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "b", 201, "", cm("b", "", "b"), cm("b", "11", "b")), "02.000000", "02.009000", nil),
			}
		},
	}, {
		name: "a create whose name the server generated, logged after it",
		lines: func() []string {
			return []string{
				timedEvent(t, collection("3"), "02.003000", "02.008000", nil),
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "", 201, "", cm("", "", "b"), cm("b-x1", "11", "b")), "02.000000", "02.009000", nil),
			}
		},
	}, {
		name: "a create whose name the server generated, logged before it",
		lines: func() []string {
			return []string{
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "", 201, "", cm("", "", "b"), cm("b-x1", "11", "b")), "02.000000", "02.005000", nil),
				timedEvent(t, collection("3"), "02.003000", "02.008000", nil),
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1"}}
			lines := append([]string{
				// The log begins with the cluster's creation: it holds every configmap.
				replaceOnce(t, timedEvent(t, levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "namespaces", "", "kube-system", 201, "", ns, ns), "00.000000", "00.001000", nil), `"username":"admin"`, `"username":"system:apiserver"`),
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "a", 201, "", cm("a", "", "a"), cm("a", "10", "a")), "01.000000", "01.001000", nil),
			}, tc.lines()...)
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines...)
			rec := recs["3"]
			switch {
			case rec == nil:
				t.Fatal("the deletecollection has no record")
			case strings.Contains(tc.name, "logged after it") && (rec.Decision != DecisionAdmit || rec.Certainty != CertaintyLikely || !mentions(rec, "which objects")):
				t.Errorf("the deletecollection: %s, want likely admit: which objects it listed is not known", describeRecord(rec))
			case strings.Contains(tc.name, "logged before it") && (rec.Decision != DecisionIndeterminate || !strings.Contains(rec.Indeterminate, "which objects")):
				t.Errorf("the deletecollection: %s, want indeterminate: which objects it listed is not known", describeRecord(rec))
			}
		})
	}
}

// TestConcurrentWithDeleteCollection: a deletecollection that left an object marked deleted
// (finalizers) completed after a request to that object was received: the request ran
// concurrently with it, and may have read the object marked or not. The log's order (marked)
// is likely; the version not marked, which the server admitted here (the request committed
// before the deletecollection's marking, and completed after it), is the alternative.
func TestConcurrentWithDeleteCollection(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("not-deleting", "configmaps", admissionregistrationv1.Update, nil, "!has(oldObject.metadata.deletionTimestamp)")
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "resourceVersion": "10", "uid": "u1", "finalizers": []any{"example.com/keep"}}}
	list := map[string]any{"apiVersion": "v1", "kind": "ConfigMapList", "metadata": map[string]any{"resourceVersion": "12"}, "items": []any{cm}}
	collection := levelEvent(t, "2", auditlog.LevelRequestResponse, "deletecollection", "configmaps", "ns1", "", 200, "", nil, list)
	collection = replaceOnce(t, collection, `/namespaces/ns1/configmaps/"`, `/namespaces/ns1/configmaps"`)
	label := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}
	lines := []string{
		timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm, cm), "01.000000", "01.001000", nil),
		timedEvent(t, collection, "02.000000", "02.010000", nil),
		// Received before the deletecollection completed.
		timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 200, "", label, nil), "02.005000", "02.012000", nil),
	}
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	_, recs := replayLines(t, ps, bs, lines...)
	if rec := recs["3"]; rec == nil || rec.Decision != DecisionDeny || rec.Certainty != CertaintyLikely || !mentions(rec, "admit if the write at audit.jsonl:2 (deletion pending), which completed after this request was received") {
		t.Errorf("request 3: %s, want likely deny, admit if it read the object before the deletecollection marked it", describeRecord(rec))
	}
	// GKE's entries do not say when a request was received: the write is placed against the
	// request's response (the alternative said it completed after the request was received,
	// against the earliest it can have been, a minute before).
	_, recs = replayLinesWith(t, ps, bs, nil, gkeLines(t, lines...)...)
	if rec := recs["3"]; rec == nil || rec.Decision != DecisionDeny || rec.Certainty != CertaintyLikely ||
		!mentions(rec, "admit if the write at audit.jsonl:2 (deletion pending), which completed 2ms before this request completed (the GKE Cloud Logging export does not carry when the request was received), and may have after it was received") {
		t.Errorf("GKE's request 3: %s, want likely deny, admit if it read the object before the deletecollection marked it", describeRecord(rec))
	}
}

// TestTokenRequestDefaults: TokenREST.Create gives a TokenRequest the service account's name
// and namespace, and the server's audiences when it asks for none, before validating admission;
// the log holds the request as sent.
func TestTokenRequestDefaults(t *testing.T) {
	t.Parallel()
	tr := map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": map[string]any{}, "spec": map[string]any{"expirationSeconds": 3600}}
	issued := map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": map[string]any{"name": "sa0", "namespace": "ns1"},
		"spec": map[string]any{"expirationSeconds": 3600, "audiences": []any{"https://kubernetes.default.svc"}}, "status": map[string]any{"token": "x"}}
	denied := `serviceaccounts "sa1" is forbidden: ValidatingAdmissionPolicy 'token' with binding 'token' denied request: denied by token`
	tokenLine := func(id string, level, sa string, code int32, message string, req, resp map[string]any) string {
		line := levelEvent(t, id, level, "create", "serviceaccounts", "ns1", sa, code, message, req, resp)
		line = replaceOnce(t, line, `"requestURI":"/api/v1/namespaces/ns1/serviceaccounts"`, `"requestURI":"/api/v1/namespaces/ns1/serviceaccounts/`+sa+`/token"`)
		return replaceOnce(t, line, `"resource":"serviceaccounts"`, `"resource":"serviceaccounts","subresource":"token"`)
	}
	for _, tc := range []struct {
		name, expr string
		code       int32
		message    string
		// issuedFirst is a completed TokenRequest that asked for no audiences, logged before,
		// at this level ("" for none).
		issuedFirst string
		want        string
		// saFirst logs the service account's create first; status sends the TokenRequest
		// with a status.
		saFirst, status bool
	}{
		{"the name", "object.metadata.name == 'sa1' && object.metadata.namespace == 'ns1'", 201, "", "", DecisionAdmit, false, false},
		{"the audiences", "size(object.spec.audiences) == 0", 403, denied, "", DecisionIndeterminate, false, false},
		{"the audiences a completed TokenRequest showed", "size(object.spec.audiences) == 0", 403, denied, auditlog.LevelRequestResponse, DecisionDeny, false, false},
		{"the audiences a completed TokenRequest showed, read", "object.spec.audiences == ['https://kubernetes.default.svc']", 201, "", auditlog.LevelRequestResponse, DecisionAdmit, false, false},
		{"no response, no audiences", "size(object.spec.audiences) == 0", 403, denied, auditlog.LevelRequest, DecisionIndeterminate, false, false},
		{"the service account's uid", "object.metadata.uid == 'u-sa1'", 201, "", "", DecisionAdmit, true, false},
		{"the uid of a service account not known", "object.metadata.uid == 'u-sa1'", 201, "", "", DecisionIndeterminate, false, false},
		{"the server's clock", "has(object.metadata.creationTimestamp)", 201, "", "", DecisionAdmit, false, false},
		{"the server's clock, read", "object.metadata.creationTimestamp < timestamp('2000-01-01T00:00:00Z')", 403, denied, "", DecisionIndeterminate, false, false},
		{"the status cleared", "object.status.token == ''", 201, "", "", DecisionAdmit, false, true},
		// The handler's field manager wrote them, outside the replay's pipeline.
		{"the managers", "has(object.metadata.managedFields)", 201, "", "", DecisionIndeterminate, false, false},
		// Another service account's uid: refused before admission (the log says otherwise).
		{"a uid not the service account's", "true", 201, "", "", DecisionIndeterminate, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := levelPolicy("token", "serviceaccounts", admissionregistrationv1.Create, nil, tc.expr)
			p.Spec.MatchConstraints.ResourceRules[0].Rule.Resources = []string{"serviceaccounts/token"}
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "sa1", Expression: "request.name == 'sa1'"}}
			var lines []string
			if tc.issuedFirst != "" {
				resp := issued
				if tc.issuedFirst != auditlog.LevelRequestResponse {
					resp = nil
				}
				lines = append(lines, tokenLine("0", tc.issuedFirst, "sa0", 201, "", tr, resp))
			}
			if tc.saFirst {
				sa := map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "sa1", "namespace": "ns1", "uid": "u-sa1", "resourceVersion": "5"}}
				lines = append(lines, levelEvent(t, "sa", auditlog.LevelRequestResponse, "create", "serviceaccounts", "ns1", "sa1", 201, "", sa, sa))
			}
			req := tr
			if tc.name == "a uid not the service account's" {
				req = map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": map[string]any{"uid": "u-other"}, "spec": tr["spec"]}
			}
			if tc.status {
				req = map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": map[string]any{}, "spec": tr["spec"], "status": map[string]any{"token": "sent"}}
			}
			lines = append(lines, tokenLine("1", auditlog.LevelRequest, "sa1", tc.code, tc.message, req, nil))
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines...)
			if rec := recs["1"]; rec == nil || rec.Decision != tc.want || rec.Changed {
				t.Errorf("the TokenRequest: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestRefusedPodDelete: a refused DELETE of a pod with no grace period may have left it marked
// deleted (the store validates before and after marking it): a policy that reads the mark is
// not decided on it afterwards; one of a scheduled pod's graceful DELETE changed nothing.
func TestRefusedPodDelete(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("not-deleting", "pods", admissionregistrationv1.Update, nil, "!has(oldObject.metadata.deletionTimestamp)")
	pod := func(name, node string) map[string]any {
		spec := map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}
		if node != "" {
			spec["nodeName"] = node
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": "ns1", "resourceVersion": "10", "uid": "u-" + name}, "spec": spec}
	}
	refused := `pods "x" is forbidden: ValidatingAdmissionPolicy 'other' with binding 'other' denied request: no`
	label := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}
	quick := pod("quick", "n1")
	quick["spec"].(map[string]any)["terminationGracePeriodSeconds"] = 0
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "pods", "ns1", "pending", 201, "", pod("pending", ""), pod("pending", "")),
		levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "pods", "ns1", "running", 201, "", pod("running", "n1"), pod("running", "n1")),
		levelEvent(t, "3", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "pending", 422, refused, nil, nil),
		levelEvent(t, "4", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "running", 422, refused, nil, nil),
		levelEvent(t, "5", auditlog.LevelRequestResponse, "patch", "pods", "ns1", "pending", 200, "", label, nil),
		levelEvent(t, "6", auditlog.LevelRequestResponse, "patch", "pods", "ns1", "running", 200, "", label, nil),
		// A scheduled pod whose own grace period is 0: the DELETE without one takes it.
		levelEvent(t, "7", auditlog.LevelRequestResponse, "create", "pods", "ns1", "quick", 201, "", quick, quick),
		levelEvent(t, "8", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "quick", 422, refused, nil, nil),
		levelEvent(t, "9", auditlog.LevelRequestResponse, "patch", "pods", "ns1", "quick", 200, "", label, nil),
	)
	if rec := recs["9"]; rec == nil || rec.Decision != DecisionIndeterminate || !strings.Contains(rec.Indeterminate, "marked the pod deleted") {
		t.Errorf("request 9: %+v, want indeterminate: the pod with terminationGracePeriodSeconds 0 may be marked deleted", rec)
	}
	if rec := recs["5"]; rec == nil || rec.Decision != DecisionIndeterminate || !strings.Contains(rec.Indeterminate, "marked the pod deleted") {
		t.Errorf("request 5: %+v, want indeterminate: the pending pod may be marked deleted", rec)
	}
	if rec := recs["6"]; rec == nil || rec.Decision != DecisionAdmit {
		t.Errorf("request 6: %+v, want admit: the running pod's graceful DELETE changed nothing", rec)
	}
}

// TestRefusedPodDeleteDecided: a refused DELETE of a pod with no grace period, refused by a
// replayed policy as the log shows: the replay's pipeline says which step admission refused.
// "first" refuses the DELETE of a before the store marks it (nothing written); "second" refuses
// that of b once the store has marked it (left marked). A later patch of each is decided on
// it by "not-deleting".
func TestRefusedPodDeleteDecided(t *testing.T) {
	t.Parallel()
	notDeleting, ndb := levelPolicy("not-deleting", "pods", admissionregistrationv1.Update, nil, "!has(oldObject.metadata.deletionTimestamp)")
	first, fb := levelPolicy("first", "pods", admissionregistrationv1.Delete, nil, "oldObject.metadata.name != 'a'")
	second, sb := levelPolicy("second", "pods", admissionregistrationv1.Delete, nil, "oldObject.metadata.name != 'b' || !has(oldObject.metadata.deletionTimestamp)")
	pod := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": "ns1", "resourceVersion": "10", "uid": "u-" + name},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}} // not scheduled: no grace period
	}
	denied := func(name, policy string) string {
		return fmt.Sprintf(`pods %q is forbidden: ValidatingAdmissionPolicy '%s' with binding '%s' denied request: denied by %s`, name, policy, policy, policy)
	}
	label := map[string]any{"metadata": map[string]any{"labels": map[string]any{"x": "y"}}}
	patched := func(name string) map[string]any {
		u := pod(name)
		u["metadata"].(map[string]any)["labels"], u["metadata"].(map[string]any)["resourceVersion"] = map[string]any{"x": "y"}, "20"
		return u
	}
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{notDeleting, first, second}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{ndb, fb, sb},
		levelEvent(t, "ca", auditlog.LevelRequestResponse, "create", "pods", "ns1", "a", 201, "", pod("a"), pod("a")),
		levelEvent(t, "cb", auditlog.LevelRequestResponse, "create", "pods", "ns1", "b", 201, "", pod("b"), pod("b")),
		levelEvent(t, "da", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "a", 422, denied("a", "first"), nil, nil),
		levelEvent(t, "db", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "b", 422, denied("b", "second"), nil, nil),
		levelEvent(t, "pa", auditlog.LevelRequestResponse, "patch", "pods", "ns1", "a", 200, "", label, patched("a")),
		levelEvent(t, "pb", auditlog.LevelRequestResponse, "patch", "pods", "ns1", "b", 422, denied("b", "not-deleting"), label, nil),
	)
	want := map[string]certainOutcome{
		"da": {DecisionDeny, CertaintyCertain}, "db": {DecisionDeny, CertaintyCertain},
		"pa": {DecisionAdmit, CertaintyCertain}, "pb": {DecisionDeny, CertaintyCertain},
	}
	if diff := gocmp.Diff(want, outcomesOf(t, recs, "da", "db", "pa", "pb")); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// TestPatchTypeByAnnotations: a refused patch that reads differently as a merge and as a
// strategic merge patch (a list with a merge key) is indeterminate when the outcomes differ,
// unless, checking against the log, the audit annotations it records are those of one of them.
func TestPatchTypeByAnnotations(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("conds", "pods/status", admissionregistrationv1.Update, nil, "false")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "n", ValueExpression: "string(size(object.status.conditions))"}}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "ns1", "resourceVersion": "10", "uid": "u1"},
		"spec":   map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}},
		"status": map[string]any{"phase": "Pending", "conditions": []any{map[string]any{"type": "PodScheduled", "status": "True"}}}}
	patch := map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}}
	denied := `pods "web" is forbidden: ValidatingAdmissionPolicy 'conds' with binding 'conds' denied request: denied by conds`
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		check       bool
		want        string
		wantReason  Reason
	}{
		{name: "a merge patch, by the annotations", annotations: map[string]string{"conds/n": "1"}, check: true, want: DecisionDeny},
		{name: "a strategic merge patch, by the annotations", annotations: map[string]string{"conds/n": "2"}, check: true, want: DecisionDeny},
		{name: "neither, by the annotations", annotations: map[string]string{"conds/n": "3"}, check: true, want: DecisionIndeterminate, wantReason: ReasonPatchType},
		{name: "not checked", annotations: map[string]string{"conds/n": "1"}, want: DecisionIndeterminate, wantReason: ReasonPatchType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ann := maps.Clone(tc.annotations)
			ann[ValidationFailureAnnotation] = `[{"message":"denied by conds","policy":"conds","binding":"conds","expressionIndex":0,"validationActions":["Deny","Audit"]}]`
			refused := timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "pods", "ns1", "web", 422, denied, patch, nil), "02.000000", "02.001000", ann)
			refused = replaceOnce(t, refused, `/pods/web"`, `/pods/web/status"`)
			refused = replaceOnce(t, refused, `"resource":"pods"`, `"resource":"pods","subresource":"status"`)
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}
			recs := replayChecked(t, p, b, tc.check,
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), "01.000000", "01.001000", nil),
				refused)
			rec := recs["2"]
			if rec == nil || rec.Decision != tc.want || rec.Reason != tc.wantReason || len(rec.Disagreements) > 0 {
				t.Fatalf("request 2: %s, want %s %s", describeRecord(rec), tc.want, tc.wantReason)
			}
		})
	}
}

// TestRefusedDeleteThenEviction: a pod DELETE without a grace period that a policy refused may
// have left the pod marked deleted (the store validates it before and after marking it); an
// eviction the log shows succeeding fails on a pod so marked (its DisruptionTarget update
// deletes it first), so the DELETE left the pod as it was, and what follows is decided on it.
func TestRefusedDeleteThenEviction(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("no-delete", "pods", admissionregistrationv1.Delete, nil, "false")
	p2, b2 := levelPolicy("marked", "pods", admissionregistrationv1.Update, nil, "!has(oldObject.metadata.deletionTimestamp) || oldObject.metadata.deletionGracePeriodSeconds > 0")
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "pod-a", "namespace": "ns1", "resourceVersion": "10", "uid": "u1", "labels": map[string]any{"app": "db"}},
		"spec": map[string]any{"nodeName": "w-0", "containers": []any{map[string]any{"name": "c", "image": "i"}}}, "status": map[string]any{"phase": "Running"}}
	denied := `pods "pod-a" is forbidden: ValidatingAdmissionPolicy 'no-delete' with binding 'no-delete' denied request: denied by no-delete`
	now := map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
	eviction := map[string]any{"kind": "Eviction", "apiVersion": "policy/v1", "metadata": map[string]any{"name": "pod-a", "namespace": "ns1"}}
	evict := replaceOnce(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "create", "pods", "ns1", "pod-a", 201, "", eviction,
		map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}), `/pods"`, `/pods/pod-a/eviction"`)
	evict = replaceOnce(t, evict, `"resource":"pods"`, `"resource":"pods","subresource":"eviction"`)
	label := map[string]any{"metadata": map[string]any{"labels": map[string]any{"x": "y"}}}
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p, p2}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b, b2},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "pods", "ns1", "pod-a", 201, "", pod, pod),
		levelEvent(t, "2", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "pod-a", 422, denied, now, nil),
		evict,
		// The eviction marked the pod deleted with its own grace period (30 s, the default).
		levelEvent(t, "4", auditlog.LevelRequestResponse, "patch", "pods", "ns1", "pod-a", 200, "", label, nil),
	)
	if rec := recs["4"]; rec == nil || rec.Decision != DecisionAdmit {
		t.Errorf("the patch after the eviction: %s, want admit: the pod the eviction marked has a grace period of 30 s", describeRecord(rec))
	}
}

// TestSelectorExcludesUnloggedObject: a write logged at level Metadata, in a namespace the
// State knows, that the policy's namespaceSelector does not select: the policy reads the
// object the log does not hold, but the server never evaluated it there.
func TestSelectorExcludesUnloggedObject(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("team-a-data", "configmaps", admissionregistrationv1.Create, map[string]string{"team": "a"}, "has(object.data)")
	ns := func(labels map[string]any) map[string]any {
		labels["kubernetes.io/metadata.name"] = "ns1"
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "uid": "u1", "resourceVersion": "5", "labels": labels}}
	}
	for _, tc := range []struct {
		name   string
		labels map[string]any
		want   string // "" for not matched
	}{
		{name: "another team's namespace", labels: map[string]any{"team": "b"}},
		{name: "the team's namespace", labels: map[string]any{"team": "a"}, want: DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", ns(tc.labels), ns(tc.labels)),
				levelEvent(t, "2", auditlog.LevelMetadata, "create", "configmaps", "ns1", "cm", 201, "", nil, nil))
			rec := recs["2"]
			switch {
			case tc.want == "" && (rec != nil || sum.NotMatched != 2): // the namespace's create and the ConfigMap's
				t.Errorf("the create: %s (not matched %d), want it not matched: the namespace selector excludes it", describeRecord(rec), sum.NotMatched)
			case tc.want != "" && (rec == nil || rec.Decision != tc.want):
				t.Errorf("the create: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestJobCreateFollowed: a Job create logged at Request level with its pod template's labels
// may have been sent without labels (SetDefaults_Job gives it the template's labels map, which
// the job strategy then labels with the job's name and uid) or with them: the State follows
// both, and the labels they write differently are not known.
func TestJobCreateFollowed(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("old-labels", "jobs/status", admissionregistrationv1.Update, nil, "size(oldObject.metadata.labels) == 1")
	p.Spec.MatchConstraints.ResourceRules[0].Rule.APIGroups = []string{"batch"}
	job := func(labels map[string]any, status map[string]any) map[string]any {
		meta := map[string]any{"name": "j", "namespace": "ns1"}
		if labels != nil {
			meta["labels"] = labels
		}
		j := map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
			"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
				"spec": map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "i"}}}}}}
		if status != nil {
			j["status"] = status
		}
		return j
	}
	batch := func(line string) string {
		line = replaceOnce(t, line, `"requestURI":"/api/v1/`, `"requestURI":"/apis/batch/v1/`)
		return replaceOnce(t, line, `"apiVersion":"v1","name"`, `"apiGroup":"batch","apiVersion":"v1","name"`)
	}
	for _, tc := range []struct {
		name   string
		labels map[string]any // of the logged create, after defaults
		want   string
	}{
		{name: "the template's labels: sent or defaulted", labels: map[string]any{"app": "x"}, want: DecisionIndeterminate},
		{name: "labels of its own", labels: map[string]any{"app": "y"}, want: DecisionAdmit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := map[string]any{"active": 1}
			updated := job(tc.labels, status)
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				batch(levelEvent(t, "1", auditlog.LevelRequest, "create", "jobs", "ns1", "j", 201, "", job(tc.labels, nil), nil)),
				batch(replaceOnce(t, replaceOnce(t, levelEvent(t, "2", auditlog.LevelRequest, "update", "jobs", "ns1", "j", 200, "", updated, nil), `/jobs/j"`, `/jobs/j/status"`),
					`"resource":"jobs"`, `"resource":"jobs","subresource":"status"`)),
			)
			if rec := recs["2"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("the status update: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestClaimCreateDefaultedOnRead: a PersistentVolumeClaim's create answers with the phase
// Pending its v1 defaults give it on read, where admission saw none (the claim strategy's
// PrepareForCreate cleared its status): the response is not the object admission saw.
func TestClaimCreateDefaultedOnRead(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("phase", "persistentvolumeclaims", admissionregistrationv1.Create, nil, "true")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "phase", ValueExpression: "has(object.status.phase) ? string(object.status.phase) : '-'"}}
	claim := func(status map[string]any) map[string]any {
		c := map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": "c", "namespace": "ns1"},
			"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}, "volumeMode": "Filesystem"}}
		if status != nil {
			c["status"] = status
			c["metadata"].(map[string]any)["uid"], c["metadata"].(map[string]any)["resourceVersion"] = "u1", "10"
			c["metadata"].(map[string]any)["creationTimestamp"] = "2026-11-30T10:00:01Z"
		}
		return c
	}
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "persistentvolumeclaims", "ns1", "c", 201, "", claim(nil), claim(map[string]any{"phase": "Pending"})))
	if rec := recs["1"]; rec == nil || rec.Decision != DecisionAdmit || rec.AuditAnnotations["phase/phase"] != "-" {
		t.Errorf("the create: %s (%s %s), annotations %v, want admit with phase/phase -", describeRecord(rec), rec.Message, rec.Indeterminate, rec.AuditAnnotations)
	}
}

// TestPatchTypeByResponse: a patch whose content type the log does not record, refused before
// validating admission as one type (a strategic merge patch adding a port without a name) and
// admitted as the other (a merge patch replacing the ports): the log's response says which.
func TestPatchTypeByResponse(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("ports", "services", admissionregistrationv1.Update, nil, "size(object.spec.ports) < 2")
	svc := map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s", "namespace": "ns1", "resourceVersion": "10", "uid": "u1"},
		"spec": map[string]any{"clusterIP": "10.0.0.5", "clusterIPs": []any{"10.0.0.5"}, "type": "ClusterIP", "ports": []any{
			map[string]any{"name": "a", "port": 80, "protocol": "TCP", "targetPort": 80}, map[string]any{"name": "b", "port": 81, "protocol": "TCP", "targetPort": 81}}}}
	patch := map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": 82}}}}
	const invalid = `Service "s" is invalid: spec.ports[0].name: Required value`
	for _, tc := range []struct {
		name        string
		code        int32
		message     string
		want        string // "" for skipped before admission
		wantSkipped bool
	}{
		{name: "refused as the strategic merge patch", code: 422, message: invalid, wantSkipped: true},
		{name: "completed: the merge patch", code: 200, want: DecisionAdmit},
		{name: "refused otherwise", code: 422, message: `Service "s" is invalid: spec.ports[1].name: Required value`, want: DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "services", "ns1", "s", 201, "", svc, svc),
				levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "services", "ns1", "s", tc.code, tc.message, patch, nil),
			)
			rec := recs["2"]
			skipped := sum.Skipped[string(SkipBeforeAdmission)+" (Invalid)"] + sum.Skipped[string(SkipBeforeAdmission)]
			switch {
			case tc.wantSkipped && (rec != nil || skipped != 1):
				t.Errorf("the patch: %s, skipped %v, want it skipped: refused before admission", describeRecord(rec), sum.Skipped)
			case !tc.wantSkipped && (rec == nil || rec.Decision != tc.want):
				t.Errorf("the patch: %s, want %s", describeRecord(rec), tc.want)
			case tc.want == DecisionIndeterminate && rec.Reason != ReasonPatchType:
				t.Errorf("the patch: %s, want indeterminate for the patch type", describeRecord(rec))
			}
		})
	}
}

// TestDeleteCollectionFollowed: a deletecollection the log records without its result (level
// Request) deleted what the State holds of the namespace by its label selector: a scheduled pod
// stays, marked deleted by the server's clock, and the kubelet's final DELETE of it is decided
// on the rest of it; a field selector leaves what it deleted unknown.
func TestDeleteCollectionFollowed(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("on-n1", "pods", admissionregistrationv1.Delete, nil, "oldObject.spec.nodeName == 'n1'")
	pod := func(name, node, app string) map[string]any {
		spec := map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}
		if node != "" {
			spec["nodeName"] = node
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": "ns1", "resourceVersion": "10", "uid": "u-" + name, "labels": map[string]any{"app": app}},
			"spec": spec, "status": map[string]any{"phase": "Running"}}
	}
	for _, tc := range []struct {
		name, query, level string
		want               string
	}{
		{name: "by its label selector", query: "labelSelector=app%3Dweb", level: auditlog.LevelRequest, want: DecisionAdmit},
		{name: "by a field selector", query: "fieldSelector=spec.nodeName%3Dn1", level: auditlog.LevelRequest, want: DecisionIndeterminate},
		// Its delete options are not logged: with a grace period, the pods would remain.
		{name: "at level Metadata", query: "labelSelector=app%3Dweb", level: auditlog.LevelMetadata, want: DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts map[string]any
			if tc.level != auditlog.LevelMetadata {
				opts = map[string]any{"kind": "DeleteOptions", "apiVersion": "v1"}
			}
			dc := levelEvent(t, "3", tc.level, "deletecollection", "pods", "ns1", "", 200, "", opts, nil)
			dc = replaceOnce(t, dc, `"requestURI":"/api/v1/namespaces/ns1/pods/"`, `"requestURI":"/api/v1/namespaces/ns1/pods?`+tc.query+`"`)
			dc = timedEvent(t, dc, "03.000000", "03.001000", nil)
			final := map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "pods", "ns1", "run", 201, "", pod("run", "n1", "web"), pod("run", "n1", "web")),
				levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "pods", "ns1", "new", 201, "", pod("new", "", "web"), pod("new", "", "web")),
				dc,
				levelEvent(t, "4", auditlog.LevelRequest, "delete", "pods", "ns1", "run", 200, "", final, nil),
			)
			if rec := recs["4"]; rec == nil || rec.Decision != tc.want || len(rec.Disagreements) > 0 {
				t.Errorf("the kubelet's DELETE: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestInformerLag: kube-apiserver's admission reads namespaces and params from informers,
// which may not yet hold a write that completed moments before a request was received (or
// after it): the request is decided on both versions. A write that completed after the request
// was received is likely not held; the log's denial, with --check-recorded, says so for sure.
func TestInformerLag(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("prod-only", "configmaps", admissionregistrationv1.Create, map[string]string{"env": "prod"}, "")
	ns := func(env string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "resourceVersion": "5", "uid": "u-ns1",
			"labels": map[string]any{"env": env, "kubernetes.io/metadata.name": "ns1"}}, "spec": map[string]any{"finalizers": []any{"kubernetes"}}, "status": map[string]any{"phase": "Active"}}
	}
	cm := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns1"}}
	}
	denied := `configmaps "early" is forbidden: ValidatingAdmissionPolicy 'prod-only' with binding 'prod-only' denied request: denied by prod-only`
	relabel := map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": "dev"}}}
	dev := ns("dev")
	dev["metadata"].(map[string]any)["resourceVersion"] = "6"
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", ns("prod"), ns("prod")), "01.000000", "01.001000", nil),
		timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "patch", "namespaces", "", "ns1", 200, "", relabel, dev), "02.000000", "02.010000", nil),
		// Received before the relabel completed: the informer may have held env=prod.
		timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "early", 422, denied, cm("early"), nil), "02.005000", "02.011000", nil),
		// Received long after: env=dev, the policy does not apply.
		timedEvent(t, levelEvent(t, "4", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "late", 201, "", cm("late"), cm("late")), "03.000000", "03.001000", nil),
	)
	if rec := recs["3"]; rec == nil || rec.Decision != DecisionDeny || rec.Certainty != CertaintyCertain || len(rec.Disagreements) > 0 {
		t.Errorf("request 3: %s, want deny: the informer had not held the relabel, which completed after the request was received", describeRecord(rec))
	}
	if rec := recs["4"]; rec != nil {
		t.Errorf("request 4: %s, want no record: env=dev, the policy does not match", describeRecord(rec))
	}
}

// TestInformerLagParams: a param written moments before a request was received, read through
// the binding's selector, is read as it was before too: the write held is likely, the version
// before an alternative; a matchCondition on the request alone that skips the policy makes the
// param's version irrelevant.
func TestInformerLagParams(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("limit", "configmaps", admissionregistrationv1.Create, nil, "params.data.allow == 'yes'")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-skipped", Expression: "request.name != 'skipped'"}}
	allow := admissionregistrationv1.AllowAction
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Namespace: "params", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"param": "yes"}}, ParameterNotFoundAction: &allow}
	param := func(rv, allow string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "p", "namespace": "params", "resourceVersion": rv, "uid": "u-p", "labels": map[string]any{"param": "yes"}},
			"data": map[string]any{"allow": allow}}
	}
	cm := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns1"}}
	}
	_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []any{param("10", "no")},
		timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "params", "p", 200, "", param("10", "yes"), param("11", "yes")), "02.000000", "02.010000", nil),
		// 100 ms after the update completed: the informer may have held allow=no.
		timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "soon", 201, "", cm("soon"), cm("soon")), "02.110000", "02.111000", nil),
		// Skipped on the request alone: decided.
		timedEvent(t, levelEvent(t, "4", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "skipped", 201, "", cm("skipped"), cm("skipped")), "02.120000", "02.121000", nil),
		// Long after: allow=yes.
		timedEvent(t, levelEvent(t, "5", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "later", 201, "", cm("later"), cm("later")), "03.000000", "03.001000", nil),
		// The param deleted, then a request 50 ms after: no param (parameterNotFoundAction
		// Allow admits), or the informer's allow=yes.
		timedEvent(t, levelEvent(t, "6", auditlog.LevelRequestResponse, "update", "configmaps", "params", "p", 200, "", param("11", "no"), param("12", "no")), "04.000000", "04.010000", nil),
		timedEvent(t, levelEvent(t, "7", auditlog.LevelRequestResponse, "delete", "configmaps", "params", "p", 200, "", nil, nil), "05.000000", "05.010000", nil),
		timedEvent(t, levelEvent(t, "8", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "gone", 201, "", cm("gone"), cm("gone")), "05.060000", "05.061000", nil),
	)
	for _, id := range []string{"3", "8"} {
		if rec := recs[id]; rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyLikely || !mentions(rec, "deny 422") || !mentions(rec, "informer had not yet held the write at") {
			t.Errorf("request %s: %s, want likely admit: the informer may not have held the write before it, which denies", id, describeRecord(rec))
		}
	}
	for _, id := range []string{"4", "5"} {
		if rec := recs[id]; rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyCertain || len(rec.Disagreements) > 0 {
			t.Errorf("request %s: %s, want admit", id, describeRecord(rec))
		}
	}
}

// mentions says whether the record's reason, when it is indeterminate, or the String of one of
// its alternatives holds what.
func mentions(rec *Record, what string) bool {
	if rec.Decision == DecisionIndeterminate && strings.Contains(rec.Indeterminate, what) {
		return true
	}
	return slices.ContainsFunc(rec.Alternatives, func(a Alternative) bool { return strings.Contains(a.String(), what) })
}

// lagParamPolicy is a policy on configmaps creates whose params are the configmaps labeled
// param=yes of namespace params, each of which must say allow=yes.
func lagParamPolicy(notFound admissionregistrationv1.ParameterNotFoundActionType) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	p, b := levelPolicy("limit", "configmaps", admissionregistrationv1.Create, nil, "params.data.allow == 'yes'")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Namespace: "params", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"param": "yes"}}, ParameterNotFoundAction: &notFound}
	return p, b
}

// envNamespace is namespace ns1 labelled env, at the resourceVersion.
func envNamespace(rv, env string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "resourceVersion": rv, "uid": "u-ns1",
		"labels": map[string]any{"env": env, "kubernetes.io/metadata.name": "ns1"}}, "spec": map[string]any{"finalizers": []any{"kubernetes"}}, "status": map[string]any{"phase": "Active"}}
}

// unselectedParam is a configmap of the params' namespace that lagParamPolicy's selector does
// not select.
func unselectedParam() map[string]any {
	other := lagParam("other", "3", "no")
	other["metadata"].(map[string]any)["labels"] = map[string]any{"param": "no"}
	return other
}

func lagParam(name, rv, allow string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "params", "resourceVersion": rv, "uid": "u-" + name, "labels": map[string]any{"param": "yes"}},
		"data": map[string]any{"allow": allow}}
}

// TestInformerLagStates: the informer may have held any of the states the writes moments
// before a request passed through, several writes undone at once: two params created in
// turn (the informer may have held neither, and parameterNotFoundAction Deny denies), the
// params a deletecollection deleted (logged with the items, or at Metadata level without),
// and a param the State first sees in an update (the version before it is not known). The
// likely state holds every write: each other is an alternative.
func TestInformerLagStates(t *testing.T) {
	t.Parallel()
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "ns1"}}
	request := timedEvent(t, levelEvent(t, "req", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 201, "", cm, cm), "02.100000", "02.101000", nil)
	// The snapshot holds every configmap (this one, of another namespace, says it holds some).
	other := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "other", "namespace": "kube-system", "resourceVersion": "5", "uid": "u-other"}}
	deleteAll := func(level string, deleted ...any) string {
		var resp map[string]any
		if level == auditlog.LevelRequestResponse {
			resp = map[string]any{"apiVersion": "v1", "kind": "ConfigMapList", "metadata": map[string]any{}, "items": deleted}
		}
		line := replaceOnce(t, levelEvent(t, "dc", level, "deletecollection", "configmaps", "params", "", 200, "", nil, resp), `/configmaps/"`, `/configmaps"`)
		return timedEvent(t, line, "02.000000", "02.010000", nil)
	}
	// updated is p1's update (allow=no to yes), or its create when the snapshot lacks it.
	updated := func(received string) string {
		return timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "update", "configmaps", "params", "p1", 200, "", lagParam("p1", "10", "yes"), lagParam("p1", "11", "yes")), received, received[:2]+".001000", nil)
	}
	for _, tc := range []struct {
		name     string
		notFound admissionregistrationv1.ParameterNotFoundActionType
		snapshot []any
		lines    []string
		// decision and certainty are the request's; want is in the String of one of its
		// alternatives, or in its reason when it is indeterminate.
		decision  string
		certainty Certainty
		want      string
		// skip is a matchCondition on the request alone that skips it; request replaces the
		// request (received at 02.100).
		skip, request string
	}{{
		name:     "two creates undone together",
		notFound: admissionregistrationv1.DenyAction,
		snapshot: []any{other},
		lines: []string{
			timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "params", "p1", 201, "", lagParam("p1", "", "yes"), lagParam("p1", "10", "yes")), "02.000000", "02.001000", nil),
			timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "configmaps", "params", "p2", 201, "", lagParam("p2", "", "yes"), lagParam("p2", "11", "yes")), "02.050000", "02.051000", nil),
		},
		decision: DecisionAdmit, certainty: CertaintyLikely, want: "deny 422",
	}, {
		name:     "deletecollection with its items",
		notFound: admissionregistrationv1.AllowAction,
		snapshot: []any{other, lagParam("p1", "10", "no"), lagParam("p2", "11", "no")},
		lines:    []string{deleteAll(auditlog.LevelRequestResponse, lagParam("p1", "10", "no"), lagParam("p2", "11", "no"))},
		decision: DecisionAdmit, certainty: CertaintyLikely, want: "deny 422",
	}, {
		name:     "deletecollection at Metadata level",
		notFound: admissionregistrationv1.AllowAction,
		snapshot: []any{other, lagParam("p1", "10", "no")},
		lines:    []string{deleteAll(auditlog.LevelMetadata)},
		decision: DecisionIndeterminate, certainty: CertaintyIndeterminate, want: "unknown",
	}, {
		name:     "first seen in an update",
		notFound: admissionregistrationv1.AllowAction,
		lines: []string{
			timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "update", "configmaps", "params", "p1", 200, "", lagParam("p1", "10", "yes"), lagParam("p1", "11", "yes")), "02.000000", "02.001000", nil),
		},
		// The configmaps before the log are not known: no state can be decided.
		decision: DecisionIndeterminate, certainty: CertaintyIndeterminate, want: "objects that existed before the log are not known",
	}, {
		// CollectParams refuses a binding without params under Deny before any matchCondition;
		// but the update of a param the snapshot does not hold shows it was there before it
		// (the snapshot lacks a write: TestLogLacksWrites), in a version not known.
		name:     "skipped by a matchCondition, under Deny",
		notFound: admissionregistrationv1.DenyAction,
		snapshot: []any{other},
		lines:    []string{updated("02.000000")},
		skip:     "request.name != 'c'",
		decision: DecisionAdmit, certainty: CertaintyLikely, want: "the version before it is not known",
	}, {
		// Logged after a request received 8 s later, which the replay read first.
		name:     "a slow request after the writes around it were dropped",
		notFound: admissionregistrationv1.AllowAction,
		snapshot: []any{other, lagParam("p1", "10", "no")},
		lines: []string{updated("02.000000"),
			timedEvent(t, levelEvent(t, "fast", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "fast", 201, "", cm, cm), "10.000000", "10.001000", nil)},
		request:  timedEvent(t, levelEvent(t, "req", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 201, "", cm, cm), "02.100000", "10.500000", nil),
		decision: DecisionAdmit, certainty: CertaintyLikely, want: "than the replay remembers",
	}, {
		name:     "received at a time the log does not say",
		notFound: admissionregistrationv1.AllowAction,
		snapshot: []any{other, lagParam("p1", "10", "no")},
		lines:    []string{updated("02.000000")},
		request:  levelEvent(t, "req", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 201, "", cm, cm),
		decision: DecisionAdmit, certainty: CertaintyLikely, want: "than the replay remembers",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := lagParamPolicy(tc.notFound)
			if tc.skip != "" {
				p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "skip", Expression: tc.skip}}
			}
			request := request
			if tc.request != "" {
				request = tc.request
			}
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, tc.snapshot, append(tc.lines, request)...)
			rec := recs["req"]
			if rec == nil || rec.Decision != tc.decision || rec.Certainty != tc.certainty || !mentions(rec, tc.want) {
				t.Errorf("request: %s, want %s (%s) mentioning %q", describeRecord(rec), tc.decision, tc.certainty, tc.want)
			}
		})
	}
}

// TestInformerLagCreatedByName: a param read by its name that kube-apiserver's informer does not
// hold yet is read from storage (CollectParams' fallback): a param created moments before the
// request was received is read as created, whether the informer held it or not. Created while
// the request ran, storage may not have held it either.
func TestInformerLagCreatedByName(t *testing.T) {
	t.Parallel()
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "ns1"}}
	other := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "other", "namespace": "kube-system", "resourceVersion": "5", "uid": "u-other"}}
	for _, tc := range []struct {
		name                string
		created, completed  string // the param's create
		received, requested string // the request's
		want                string
		certainty           Certainty
	}{
		{name: "created before the request was received", created: "02.000000", completed: "02.001000", received: "02.050000", requested: "02.060000", want: DecisionAdmit, certainty: CertaintyCertain},
		// Completed in the second half of the request's span: likely not held yet when
		// validating admission ran (no param: Deny denies); the alternative admits.
		{name: "created late while the request ran", created: "02.000000", completed: "02.058000", received: "02.050000", requested: "02.060000", want: DecisionDeny, certainty: CertaintyLikely},
		// In its first half: likely held (kube-apiserver's store runs validating admission
		// after reading the object and mutating admission); the alternative denies.
		{name: "created early while the request ran", created: "02.000000", completed: "02.052000", received: "02.050000", requested: "02.060000", want: DecisionAdmit, certainty: CertaintyLikely},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := lagParamPolicy(admissionregistrationv1.DenyAction)
			b.Spec.ParamRef.Selector, b.Spec.ParamRef.Name = nil, "p1"
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []any{other},
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "params", "p1", 201, "", lagParam("p1", "", "yes"), lagParam("p1", "10", "yes")), tc.created, tc.completed, nil),
				timedEvent(t, levelEvent(t, "req", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 201, "", cm, cm), tc.received, tc.requested, nil),
			)
			if rec := recs["req"]; rec == nil || rec.Decision != tc.want || rec.Certainty != tc.certainty || len(rec.Disagreements) > 0 {
				t.Errorf("request: %s, want %s (%s)", describeRecord(rec), tc.want, tc.certainty)
			}
		})
	}
}

// TestEventsCohabit: kube-apiserver serves events.k8s.io's Events from core's storage: what
// one writes, the other reads (converted through the internal version), and what a
// deletecollection of one deletes is gone from the other.
func TestEventsCohabit(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("note", "events", admissionregistrationv1.Update, nil, "oldObject.message == 'hello'")
	p.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update, admissionregistrationv1.Delete}
	newEvent := func(name string) map[string]any {
		return map[string]any{"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": map[string]any{"name": name, "namespace": "ns1", "resourceVersion": "10", "uid": "u-" + name},
			"eventTime": "2026-11-24T00:00:01.000000Z", "reportingController": "c", "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal", "note": "hello",
			"regarding": map[string]any{"kind": "Pod", "namespace": "ns1", "name": "p"}}
	}
	coreEvent := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": name, "namespace": "ns1", "resourceVersion": "11", "uid": "u-" + name},
			"message": "hello", "reason": "R", "type": "Normal", "involvedObject": map[string]any{"kind": "Pod", "namespace": "ns1", "name": "p"}}
	}
	group := func(line, uri string) string {
		line = replaceOnce(t, line, `"requestURI":"/api/v1/namespaces/ns1/events`, `"requestURI":"/apis/events.k8s.io/v1/namespaces/ns1/events`+uri)
		return replaceOnce(t, line, `"apiVersion":"v1","name"`, `"apiGroup":"events.k8s.io","apiVersion":"v1","name"`)
	}
	list := map[string]any{"apiVersion": "events.k8s.io/v1", "kind": "EventList", "metadata": map[string]any{}, "items": []any{newEvent("e2")}}
	dc := group(levelEvent(t, "3", auditlog.LevelRequestResponse, "deletecollection", "events", "ns1", "", 200, "", nil, list), "")
	dc = replaceOnce(t, dc, `/events/"`, `"`)
	notFound := `events "e2" not found`
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		group(levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "events", "ns1", "e1", 201, "", newEvent("e1"), newEvent("e1")), ""),
		levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "events", "ns1", "e2", 201, "", coreEvent("e2"), coreEvent("e2")),
		dc,
		// Updated through events.k8s.io at level Request: the pipeline reads e1 from core's
		// storage, and the policy sees it as core/v1 (note is message).
		group(levelEvent(t, "3b", auditlog.LevelRequest, "update", "events", "ns1", "e1", 200, "", newEvent("e1"), nil), ""),
		// Through core: e1 as core/v1 reads it (note is message); e2, created through core, gone.
		levelEvent(t, "4", auditlog.LevelRequestResponse, "delete", "events", "ns1", "e1", 200, "", nil, nil),
		levelEvent(t, "5", auditlog.LevelRequestResponse, "delete", "events", "ns1", "e2", 404, notFound, nil, nil),
	)
	if rec := recs["3b"]; rec == nil || rec.Decision != DecisionAdmit || len(rec.Disagreements) > 0 {
		t.Errorf("the events.k8s.io UPDATE of e1: %s, want admit on its message", describeRecord(rec))
	}
	if rec := recs["4"]; rec == nil || rec.Decision != DecisionAdmit || len(rec.Disagreements) > 0 {
		t.Errorf("the core DELETE of e1: %s, want admit on its message", describeRecord(rec))
	}
	if rec := recs["5"]; rec != nil {
		t.Errorf("the core DELETE of e2: %s, want none: the deletecollection deleted it, and the 404 shows it was gone before admission", describeRecord(rec))
	}
}

// TestInformerLagNewNamespace: a namespace created moments before a request in it is read
// from storage when the informer does not hold it yet (the policy matcher's GetNamespace):
// the request is decided on it.
func TestInformerLagNewNamespace(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("prod-only", "configmaps", admissionregistrationv1.Create, map[string]string{"env": "prod"}, "")
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "resourceVersion": "5", "uid": "u-ns1",
		"labels": map[string]any{"env": "prod", "kubernetes.io/metadata.name": "ns1"}}, "spec": map[string]any{"finalizers": []any{"kubernetes"}}, "status": map[string]any{"phase": "Active"}}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "ns1"}}
	denied := `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'prod-only' with binding 'prod-only' denied request: denied by prod-only`
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", ns, ns), "01.000000", "01.001000", nil),
		timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 422, denied, cm, nil), "01.001500", "01.002000", nil),
	)
	if rec := recs["2"]; rec == nil || rec.Decision != DecisionDeny || len(rec.Disagreements) > 0 {
		t.Errorf("request 2: %+v, want deny: the new namespace is read from storage", rec)
	}
}

// TestInformerLagAhead: a write to a param or namespace the log records after a request, but
// which was received before the request completed, ran concurrently with it: it may have been
// committed, and held by kube-apiserver's informers, before the request's admission read them.
// The log's order (the write not held) is likely; what the write stored is an alternative, and
// the log's verdicts choose between them where they can.
func TestInformerLagAhead(t *testing.T) {
	t.Parallel()
	cm := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns1"}}
	}
	deniedBy := func(policy string) string {
		return `configmaps "c" is forbidden: ValidatingAdmissionPolicy '` + policy + `' with binding '` + policy + `' denied request: denied by ` + policy
	}
	other := unselectedParam()
	for _, tc := range []struct {
		name string
		// The params policy (params.data.allow == 'yes', param p allow=no before) or the
		// namespace policy (env=prod only, ns1 env=dev before).
		namespace bool
		// noParam: the cluster has no param p, and the policy denies for want of one.
		noParam bool
		// The write logged after the request (received at writeReceived, completed at
		// 02.020000), and its level.
		write         func() (verb, resource, ns, name string, body map[string]any)
		writeReceived string
		level         string
		want          string
		certainty     Certainty
	}{
		{name: "param changed, received before the request completed", write: func() (string, string, string, string, map[string]any) {
			return "update", "configmaps", "params", "p", lagParam("p", "11", "yes")
		}, writeReceived: "02.005000", want: DecisionDeny, certainty: CertaintyCertain}, // the log's denial says which
		{name: "param changed, received after the request completed", write: func() (string, string, string, string, map[string]any) {
			return "update", "configmaps", "params", "p", lagParam("p", "11", "yes")
		}, writeReceived: "02.015000", want: DecisionDeny, certainty: CertaintyCertain},
		{name: "param written alike", write: func() (string, string, string, string, map[string]any) {
			return "update", "configmaps", "params", "p", lagParam("p", "11", "no")
		}, writeReceived: "02.005000", want: DecisionDeny, certainty: CertaintyCertain},
		{name: "param written at Metadata level", write: func() (string, string, string, string, map[string]any) {
			return "update", "configmaps", "params", "p", lagParam("p", "11", "no")
		}, writeReceived: "02.005000", level: auditlog.LevelMetadata, want: DecisionDeny, certainty: CertaintyLikely},
		{name: "param deleted", write: func() (string, string, string, string, map[string]any) {
			return "delete", "configmaps", "params", "p", nil
		}, writeReceived: "02.005000", want: DecisionDeny, certainty: CertaintyCertain},
		{name: "params created without a recorded result", noParam: true, write: func() (string, string, string, string, map[string]any) {
			return "create", "configmaps", "params", "", nil
		}, writeReceived: "02.005000", level: auditlog.LevelMetadata, want: DecisionDeny, certainty: CertaintyLikely},
		{name: "a configmap the selector does not select", write: func() (string, string, string, string, map[string]any) {
			return "update", "configmaps", "params", "other", other
		}, writeReceived: "02.005000", want: DecisionDeny, certainty: CertaintyCertain},
		{name: "namespace relabelled, the policy matches", namespace: true, write: func() (string, string, string, string, map[string]any) {
			return "update", "namespaces", "", "ns1", envNamespace("6", "prod")
		}, writeReceived: "02.005000", want: DecisionAdmit, certainty: CertaintyLikely},
		{name: "namespace relabelled alike", namespace: true, write: func() (string, string, string, string, map[string]any) {
			return "update", "namespaces", "", "ns1", envNamespace("6", "test")
		}, writeReceived: "02.005000", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := lagParamPolicy(admissionregistrationv1.DenyAction)
			snapshot := []any{lagParam("p", "10", "no"), other, envNamespace("5", "dev")}
			status, message := int32(422), deniedBy("limit")
			if tc.noParam {
				snapshot = snapshot[1:]
				message = `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'limit' with binding 'limit' denied request: failed to configure binding: no params found for policy binding with ` + "`Deny`" + ` parameterNotFoundAction`
			}
			if tc.namespace {
				p, b = levelPolicy("prod-only", "configmaps", admissionregistrationv1.Create, map[string]string{"env": "prod"}, "")
				status, message = 201, ""
			}
			verb, resource, ns, name, body := tc.write()
			resp := body
			if tc.level == auditlog.LevelMetadata {
				body, resp = nil, nil
			}
			var created map[string]any
			if status == 201 {
				created = cm("c")
			}
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, snapshot,
				timedEvent(t, levelEvent(t, "req", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", status, message, cm("c"), created), "02.000000", "02.010000", nil),
				timedEvent(t, levelEvent(t, "write", cmp.Or(tc.level, auditlog.LevelRequestResponse), verb, resource, ns, name, cmp.Or(map[string]int32{"create": 201}[verb], 200), "", body, resp), tc.writeReceived, "02.020000", nil),
			)
			rec := recs["req"]
			switch {
			case tc.want == "":
				if rec != nil {
					t.Errorf("the request: %s, want no record: the policy matches in neither state", describeRecord(rec))
				}
			case rec == nil:
				t.Fatalf("the request has no record, want %s", tc.want)
			case rec.Decision != tc.want || rec.Certainty != tc.certainty:
				t.Errorf("the request: %s, want %s (%s)", describeRecord(rec), tc.want, tc.certainty)
			case tc.certainty == CertaintyLikely && !mentions(rec, ", which the log records after this request but which was received before this request completed"):
				t.Errorf("the request: %s, want an alternative for the write logged after it", describeRecord(rec))
			case len(rec.Disagreements) > 0:
				t.Errorf("the request: %s, disagrees with the log: %v", describeRecord(rec), rec.Disagreements)
			}
		})
	}
}

// TestDeleteCollectionShortens: a deletecollection with a shorter grace period than a pod's
// pending deletion moves its deletionTimestamp (back, or to the server's clock with one
// second): the pod it leaves has both fields unknown.
func TestDeleteCollectionShortens(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("grace", "pods", admissionregistrationv1.Delete, nil, "!has(oldObject.metadata.deletionGracePeriodSeconds) || oldObject.metadata.deletionGracePeriodSeconds in [0, 30]")
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "run", "namespace": "ns1", "resourceVersion": "10", "uid": "u-run"},
		"spec": map[string]any{"nodeName": "n1", "containers": []any{map[string]any{"name": "c", "image": "i"}}}, "status": map[string]any{"phase": "Running"}}
	deleting := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "run", "namespace": "ns1", "resourceVersion": "11", "uid": "u-run",
		"deletionTimestamp": "2026-11-24T00:00:32Z", "deletionGracePeriodSeconds": 30},
		"spec": map[string]any{"nodeName": "n1", "containers": []any{map[string]any{"name": "c", "image": "i"}}}, "status": map[string]any{"phase": "Running"}}
	list := map[string]any{"apiVersion": "v1", "kind": "PodList", "metadata": map[string]any{}, "items": []any{deleting}}
	final := map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
	for _, tc := range []struct {
		name  string
		grace int64
		want  string
	}{
		{name: "shorter", grace: 10, want: DecisionIndeterminate},
		{name: "not shorter", grace: 60, want: DecisionAdmit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": tc.grace}
			dc := replaceOnce(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "deletecollection", "pods", "ns1", "", 200, "", opts, list), `/pods/"`, `/pods"`)
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "pods", "ns1", "run", 201, "", pod, pod), "01.000000", "01.001000", nil),
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "run", 200, "", nil, deleting), "02.000000", "02.001000", nil),
				timedEvent(t, dc, "03.000000", "03.001000", nil),
				// The kubelet's final DELETE (grace period 0), validated on the pod as it was
				// and again as it marked it (grace period 0).
				timedEvent(t, levelEvent(t, "4", auditlog.LevelRequest, "delete", "pods", "ns1", "run", 200, "", final, nil), "10.000000", "10.001000", nil),
			)
			if rec := recs["4"]; rec == nil || rec.Decision != tc.want || len(rec.Disagreements) > 0 {
				t.Errorf("the DELETE after: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestUndoneStates: a resource's informer holds a prefix of its writes in commit order: the
// newest request undone first, and of the oldest undone request any of its writes (a
// deletecollection's deletions commit in no order the log says); resources combine.
func TestUndoneStates(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	w := func(gr schema.GroupResource, name string, done int) state.TypedWrite {
		return state.TypedWrite{GR: gr, Obj: state.ObjectKey{Namespace: "ns", Name: name}, Done: at(done)}
	}
	ahead := func(tw state.TypedWrite) state.TypedWrite {
		tw.Ahead = true
		return tw
	}
	cms := schema.GroupResource{Resource: "configmaps"}
	name := func(states [][]state.TypedWrite) []string {
		var out []string
		for _, st := range states {
			var names []string
			for _, tw := range st {
				names = append(names, tw.Obj.Name)
			}
			out = append(out, strings.Join(names, "+"))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		writes []state.TypedWrite
		want   []string // nil: too many
	}{
		{"one request", []state.TypedWrite{w(cms, "a", 1)}, []string{"a"}},
		{"two requests, newest first", []state.TypedWrite{w(cms, "a", 1), w(cms, "b", 2)}, []string{"b", "b+a"}},
		{"a deletecollection's deletions in any subset", []state.TypedWrite{w(cms, "c", 1), w(cms, "a", 2), w(cms, "b", 1)}, []string{"a", "a+b", "a+c", "a+b+c"}},
		{"two resources combined", []state.TypedWrite{w(cms, "a", 1), w(state.NamespacesGR, "n", 1)}, []string{"n", "a", "a+n"}},
		{"too many", []state.TypedWrite{w(cms, "a", 1), w(cms, "b", 1), w(cms, "c", 1), w(cms, "d", 1), w(cms, "e", 1)}, nil},
		// Writes the log records after the request are done oldest first, never with the
		// resource's undone ones; another resource's combine.
		{"ahead, oldest first", []state.TypedWrite{ahead(w(cms, "y", 4)), ahead(w(cms, "x", 3))}, []string{"x", "x+y"}},
		{"ahead and undone", []state.TypedWrite{w(cms, "a", 1), ahead(w(cms, "x", 3)), ahead(w(state.NamespacesGR, "n", 3))}, []string{"n", "a", "a+n", "x", "x+n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			states, ok := undoneStates(tc.writes)
			if tc.want == nil {
				if ok {
					t.Errorf("undoneStates = %v, want too many", name(states))
				}
				return
			}
			if diff := gocmp.Diff(tc.want, name(states)); !ok || diff != "" {
				t.Errorf("undoneStates (ok %v) (-want +got):\n%s", ok, diff)
			}
		})
	}
}

// TestInformerLagPluginInput: kube-apiserver's LimitRanger reads LimitRanges from its
// informer too: a pod created moments after a LimitRange's update may have had the defaults
// of the version before it (an alternative to the likely update held).
func TestInformerLagPluginInput(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("limited", "pods", admissionregistrationv1.Create, nil, "string(object.spec.containers[0].resources.limits['cpu']) == '200m'")
	lr := func(rv, cpu string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "LimitRange", "metadata": map[string]any{"name": "lr", "namespace": "ns1", "resourceVersion": rv, "uid": "u-lr"},
			"spec": map[string]any{"limits": []any{map[string]any{"type": "Container", "default": map[string]any{"cpu": cpu}}}}}
	}
	snapshot := []any{
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "resourceVersion": "1", "uid": "u-ns1", "labels": map[string]any{"kubernetes.io/metadata.name": "ns1"}}, "spec": map[string]any{"finalizers": []any{"kubernetes"}}, "status": map[string]any{"phase": "Active"}},
		map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": "ns1", "resourceVersion": "2", "uid": "u-sa"}},
		lr("10", "100m"),
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "ns1"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}
	for _, tc := range []struct {
		name, received string
		want           Certainty
	}{
		{"moments after the update", "02.050000", CertaintyLikely},
		{"long after", "09.000000", CertaintyCertain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, snapshot,
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "update", "limitranges", "ns1", "lr", 200, "", lr("10", "200m"), lr("11", "200m")), "02.000000", "02.001000", nil),
				timedEvent(t, levelEvent(t, "2", auditlog.LevelRequest, "create", "pods", "ns1", "p", 201, "", pod, nil), tc.received, tc.received[:3]+"060000", nil),
			)
			if rec := recs["2"]; rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != tc.want || len(rec.Disagreements) > 0 ||
				(tc.want == CertaintyLikely && !mentions(rec, "limitranges informer had not yet held")) {
				t.Errorf("the pod's create: %s, want admit (%s)", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestTruncatedEvents: kube-apiserver's truncating audit backend (--audit-log-truncate-enabled)
// drops the request and response objects of an event larger than its limit and marks it
// audit.k8s.io/truncated, whatever its level: the event reads as one at Metadata level. An
// update so logged leaves the object unknown, and a later delete of it is not decided on the
// version before it.
func TestTruncatedEvents(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("keep-a", "configmaps", admissionregistrationv1.Delete, nil, "!has(oldObject.data) || !('a' in oldObject.data)")
	up, ub := levelPolicy("small", "configmaps", admissionregistrationv1.Update, nil, "size(object.data) < 100")
	cm := func(data map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": "5"}, "data": data}
	}
	truncated := map[string]string{"audit.k8s.io/truncated": "true"}
	withAnnotations := func(line string, a map[string]string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		m["annotations"] = a
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	denied := `configmaps "cm" is forbidden: ValidatingAdmissionPolicy 'keep-a' with binding 'keep-a' denied request: denied by keep-a`
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p, up}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b, ub},
		levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm(nil), cm(nil)),
		// The update that wrote data.a, its objects dropped.
		withAnnotations(levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", nil, nil), truncated),
		levelEvent(t, "3", auditlog.LevelRequestResponse, "delete", "configmaps", "ns1", "cm", 403, denied, nil, nil),
	)
	if rec := recs["3"]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonOldObjectUnknown {
		t.Errorf("request 3 = %s, want indeterminate old-object-unknown", describeRecord(rec))
	}
	if rec := recs["2"]; rec == nil || rec.Reason != ReasonNoObject || !strings.Contains(rec.Indeterminate, "truncat") {
		t.Errorf("request 2 = %s, want indeterminate no-object naming the truncation", describeRecord(rec))
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestLogsOfSeveralAPIServers: the logs of a cluster's kube-apiservers, each writing its own,
// are replayed as one log in the time order of their events. Server A creates a ConfigMap and,
// seconds later, writes data.a into it; server B, between the two, deletes it, which the
// policy admits then (no data.a yet). Replayed one log after the other, the delete would meet
// the version A wrote last.
func TestLogsOfSeveralAPIServers(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("keep-a", "configmaps", admissionregistrationv1.Delete, nil, "!has(oldObject.data) || !('a' in oldObject.data)")
	cm := func(rv string, data map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": rv}, "data": data}
	}
	a := strings.Join([]string{
		timedEvent(t, levelEvent(t, "a1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", nil), cm("5", nil)), "01.000000", "01.010000", nil),
		timedEvent(t, levelEvent(t, "a2", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", map[string]any{"a": "1"}), cm("9", map[string]any{"a": "1"})), "05.000000", "05.010000", nil),
	}, "\n") + "\n"
	bLog := timedEvent(t, levelEvent(t, "b1", auditlog.LevelRequestResponse, "delete", "configmaps", "ns1", "cm", 200, "", nil, cm("5", nil)), "03.000000", "03.010000", nil) + "\n"
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "apiserver-a.log"), filepath.Join(dir, "apiserver-b.log")
	for path, data := range map[string]string{pa: a, pb: bLog} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, WithCheckRecorded(true))
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]*Record{}
	sum, err := r.Run(context.Background(), []Source{{Name: pa}, {Name: pb}}, func(rec *Record) error {
		recs[rec.AuditID] = rec
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec := recs["b1"]; rec == nil || rec.Decision != DecisionAdmit || rec.Changed {
		t.Errorf("b1 = %s, want admit: the delete came before A wrote data.a", describeRecord(rec))
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestPluginInputFields: an object a built-in admission plugin reads, known but for some
// fields, leaves unknown what the plugin sets only when the plugin reads one of them: the
// ServiceAccount plugin mounts the account's token whatever its resourceVersion and uid (a
// ServiceAccount created at level Request), not whatever its automountServiceAccountToken.
func TestPluginInputFields(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("volumes", "pods", admissionregistrationv1.Create, nil, "object.spec.volumes.exists(v, has(v.projected))")
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "resourceVersion": "1", "uid": "u-ns1", "labels": map[string]any{"kubernetes.io/metadata.name": "ns1"}}, "spec": map[string]any{"finalizers": []any{"kubernetes"}}, "status": map[string]any{"phase": "Active"}}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "ns1"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}
	for _, tc := range []struct {
		name string
		sa   map[string]any // created at level Request: its resourceVersion and uid are not known
		// update: then patched at level Metadata: every field is not known
		update   bool
		decision string
	}{
		{name: "created at Request level", sa: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": "ns1"}}, decision: DecisionAdmit},
		{name: "changed at Metadata level", sa: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": "ns1"}}, update: true, decision: DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := []string{levelEvent(t, "sa", auditlog.LevelRequest, "create", "serviceaccounts", "ns1", "default", 201, "", tc.sa, nil)}
			if tc.update {
				lines = append(lines, levelEvent(t, "sa2", auditlog.LevelMetadata, "patch", "serviceaccounts", "ns1", "default", 200, "", nil, nil))
			}
			lines = append(lines, levelEvent(t, "pod", auditlog.LevelRequest, "create", "pods", "ns1", "p", 201, "", pod, nil))
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []any{ns}, lines...)
			if rec := recs["pod"]; rec == nil || rec.Decision != tc.decision {
				t.Errorf("the pod: %s, want %s", describeRecord(rec), tc.decision)
			}
		})
	}
}

// TestOmittedManagedFields: kube-apiserver's field manager gives every object of a resource's
// own kind it stores managedFields before admission; a log that omits them (an audit policy's
// omitManagedFields) does not say what a policy that reads them saw.
func TestOmittedManagedFields(t *testing.T) {
	t.Parallel()
	managed := []any{map[string]any{"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": "2026-11-24T00:00:01Z", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{}}}
	pod := func(withManaged bool) map[string]any {
		meta := map[string]any{"name": "web", "namespace": "ns1", "uid": "u1", "resourceVersion": "5", "creationTimestamp": "2026-11-24T00:00:01Z"}
		if withManaged {
			meta["managedFields"] = managed
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta,
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
	}
	for _, tc := range []struct {
		name    string
		op      admissionregistrationv1.OperationType
		expr    string
		managed bool
		// want is the decision of the request "2", and the reason when indeterminate.
		want       string
		wantReason Reason
	}{
		{"a create's response without managedFields", admissionregistrationv1.Create, "size(object.metadata.?managedFields.orValue([])) > 0", false, DecisionIndeterminate, ReasonUnknownField},
		{"a create's response with them", admissionregistrationv1.Create, "size(object.metadata.?managedFields.orValue([])) > 0", true, DecisionAdmit, ""},
		{"a policy that does not read them", admissionregistrationv1.Create, "object.metadata.name == 'web'", false, DecisionAdmit, ""},
		{"an update's old object the State holds without them", admissionregistrationv1.Update, "size(oldObject.metadata.?managedFields.orValue([])) > 0", false, DecisionIndeterminate, ReasonUnknownField},
		{"an update's old object with them", admissionregistrationv1.Update, "size(oldObject.metadata.?managedFields.orValue([])) > 0", true, DecisionAdmit, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := levelPolicy("mf", "pods", tc.op, nil, tc.expr)
			lines := []string{levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod(tc.managed), pod(tc.managed))}
			if tc.op == admissionregistrationv1.Update {
				// The request asks for the version it read (5); the response is the one it
				// stored (6).
				sent := pod(tc.managed)
				sent["metadata"].(map[string]any)["labels"] = map[string]any{"a": "b"}
				updated := pod(tc.managed)
				updated["metadata"].(map[string]any)["labels"] = map[string]any{"a": "b"}
				updated["metadata"].(map[string]any)["resourceVersion"] = "6"
				lines = append(lines, levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "pods", "ns1", "web", 200, "", sent, updated))
			} else {
				lines[0] = strings.Replace(lines[0], `"auditID":"1"`, `"auditID":"2"`, 1)
			}
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines...)
			rec := recs["2"]
			if rec == nil {
				t.Fatal("no record of request 2")
			}
			if rec.Decision != tc.want || rec.Reason != tc.wantReason {
				t.Errorf("request 2: %s (%s) %s, want %s (%s)", rec.Decision, rec.Reason, rec.Indeterminate, tc.want, tc.wantReason)
			}
		})
	}
}

// TestScaleRestatesOmittedManagedFields: a scale patch that leaves a Deployment's replicas as
// they were changes nothing in the replay's pipeline when the log omits managedFields (the
// field manager does not start tracking an object without them), but the server wrote the
// manager's entry: the Scale it returned has a new resourceVersion, which the next request's
// oldObject carries (found by random parity, controllers seed 186).
func TestScaleRestatesOmittedManagedFields(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("rv", "deployments", admissionregistrationv1.Update, nil, "oldObject.metadata.resourceVersion == '7'")
	p.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{"apps"}
	dep := func(rv string, labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "d", "namespace": "ns1", "uid": "u1", "resourceVersion": rv, "generation": 1, "creationTimestamp": "2026-11-24T00:00:01Z", "labels": labels},
			"spec": map[string]any{"replicas": 1, "selector": map[string]any{"matchLabels": map[string]any{"app": "d"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "d"}}, "spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}}}
	}
	event := func(id, verb, uri, sub string, code int, req, resp map[string]any, at string) string {
		ev := map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "auditID": id, "stage": "ResponseComplete",
			"requestURI": uri, "verb": verb, "user": map[string]any{"username": "admin", "groups": []any{"system:masters"}},
			"objectRef":                map[string]any{"resource": "deployments", "namespace": "ns1", "name": "d", "apiGroup": "apps", "apiVersion": "v1", "subresource": sub},
			"responseStatus":           map[string]any{"metadata": map[string]any{}, "code": code},
			"requestObject":            req,
			"responseObject":           resp,
			"requestReceivedTimestamp": "2026-11-24T00:00:" + at + "0Z", "stageTimestamp": "2026-11-24T00:00:" + at + "5Z",
		}
		out, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	scale := map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": map[string]any{"name": "d", "namespace": "ns1", "uid": "u1", "resourceVersion": "7", "creationTimestamp": "2026-11-24T00:00:01Z"},
		"spec": map[string]any{"replicas": 1}, "status": map[string]any{"replicas": 0, "selector": "app=d"}}
	sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		event("1", "create", "/apis/apps/v1/namespaces/ns1/deployments", "", 201, dep("", nil), dep("5", nil), "01.0"),
		event("2", "patch", "/apis/apps/v1/namespaces/ns1/deployments/d/scale", "scale", 200, map[string]any{"spec": map[string]any{"replicas": 1}}, scale, "02.0"),
		event("3", "update", "/apis/apps/v1/namespaces/ns1/deployments/d", "", 200, dep("7", map[string]any{"a": "b"}), dep("8", map[string]any{"a": "b"}), "03.0"),
	)
	if rec := recs["3"]; rec == nil || rec.Decision != DecisionAdmit || rec.Changed {
		t.Errorf("request 3 = %+v, want admit on the oldObject of resourceVersion 7", rec)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}

// TestPatchTypeByDecision: a patch that a loaded policy refuses as a merge patch (the list of
// conditions replaced) and admits as a strategic merge patch (merged into by its key) is
// decided, checking against the log, by what the server decided of it: the variant the log
// contradicts (a denial where the server admitted, an admission where that policy refused)
// is not what the server ran.
func TestPatchTypeByDecision(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("conds", "pods/status", admissionregistrationv1.Update, nil, "size(object.status.conditions) != 1")
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "ns1", "resourceVersion": "10", "uid": "u1"},
		"spec":   map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}},
		"status": map[string]any{"phase": "Pending", "conditions": []any{map[string]any{"type": "PodScheduled", "status": "True"}}}}
	patch := map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}}
	denied := `pods "web" is forbidden: ValidatingAdmissionPolicy 'conds' with binding 'conds' denied request: denied by conds`
	for _, tc := range []struct {
		name    string
		code    int32
		message string
		check   bool
		want    string
		reason  Reason
	}{
		{name: "refused: a merge patch", code: 422, message: denied, check: true, want: DecisionDeny},
		{name: "admitted: a strategic merge patch", code: 200, check: true, want: DecisionAdmit},
		{name: "not checked", code: 422, message: denied, want: DecisionIndeterminate, reason: ReasonPatchType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			line := timedEvent(t, levelEvent(t, "2", auditlog.LevelRequest, "patch", "pods", "ns1", "web", tc.code, tc.message, patch, nil), "02.000000", "02.001000", nil)
			line = replaceOnce(t, line, `/pods/web"`, `/pods/web/status"`)
			line = replaceOnce(t, line, `"resource":"pods"`, `"resource":"pods","subresource":"status"`)
			// The log shows the policy and its binding created: the server ran it.
			admissionreg := func(id, resource string) string {
				l := levelEvent(t, id, auditlog.LevelMetadata, "create", resource, "", "conds", 201, "", nil, nil)
				l = replaceOnce(t, l, `"requestURI":"/api/v1/`, `"requestURI":"/apis/admissionregistration.k8s.io/v1/`)
				return timedEvent(t, replaceOnce(t, l, `"apiVersion":"v1","name"`, `"apiGroup":"admissionregistration.k8s.io","apiVersion":"v1","name"`), "00.000000", "00.001000", nil)
			}
			recs := replayChecked(t, p, b, tc.check, admissionreg("p", "validatingadmissionpolicies"), admissionreg("b", "validatingadmissionpolicybindings"),
				timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), "01.000000", "01.001000", nil), line)
			rec := recs["2"]
			if rec == nil || rec.Decision != tc.want || rec.Reason != tc.reason || len(rec.Disagreements) > 0 {
				t.Fatalf("request 2: %s, want %s %s", describeRecord(rec), tc.want, tc.reason)
			}
		})
	}
}

// replayChecked replays the lines through one policy, checking against the log or not, and
// returns the records by audit ID.
func replayChecked(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, check bool, lines ...string) map[string]*Record {
	t.Helper()
	r, err := New([]*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, WithCheckRecorded(check))
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]*Record{}
	in := strings.Join(lines, "\n") + "\n"
	if _, err := r.Run(context.Background(), []Source{{Name: "audit.jsonl", Reader: strings.NewReader(in)}}, func(rec *Record) error {
		recs[rec.AuditID] = rec
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestPatchCreated: a patch answered 201 created its object, which the store found absent:
// the request pipeline applies the patch to nothing, whether or not the State keeps the
// resource (a policy that sees only creates does not make it keep configmaps).
func TestPatchCreated(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("guard", "configmaps", admissionregistrationv1.Create, nil, "object.data.mode != 'off'")
	// A policy on updates makes the State keep configmaps.
	up, ub := levelPolicy("updates", "configmaps", admissionregistrationv1.Update, nil, "true")
	patch := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "a"}, "data": map[string]any{"mode": "off"}}
	refused := levelEvent(t, "refused", auditlog.LevelRequest, "patch", "configmaps", "a", "c", 422, `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: denied by guard`, patch, nil)
	refused = replaceOnce(t, refused, `configmaps/c"`, `configmaps/c?fieldManager=kubectl"`)
	created := levelEvent(t, "created", auditlog.LevelRequest, "patch", "configmaps", "a", "d", 201, "", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "d", "namespace": "a"}, "data": map[string]any{"mode": "on"}}, nil)
	created = replaceOnce(t, created, `configmaps/d"`, `configmaps/d?fieldManager=kubectl"`)
	other := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "other", "namespace": "a", "resourceVersion": "5"}}
	for _, tc := range []struct {
		name     string
		policies []*admissionregistrationv1.ValidatingAdmissionPolicy
		bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
		snapshot []any
		refused  string // its decision: whether c was there decides whether the guard saw it
	}{
		{"configmaps not kept", []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil, DecisionIndeterminate},
		{"c known absent", []*admissionregistrationv1.ValidatingAdmissionPolicy{p, up}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b, ub}, []any{other}, DecisionDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sum, recs := replayLinesWith(t, tc.policies, tc.bindings, tc.snapshot, refused, created)
			if rec := recs["created"]; rec == nil || rec.Decision != DecisionAdmit {
				t.Errorf("the patch that created d: %s, want admit", describeRecord(rec))
			}
			if rec := recs["refused"]; rec == nil || rec.Decision != tc.refused {
				t.Errorf("the refused patch of c: %s, want %s", describeRecord(rec), tc.refused)
			}
			if len(sum.Disagreements) != 0 {
				t.Errorf("disagreements: %v", sum.Disagreements)
			}
		})
	}
}

// TestNamespaceParamsUnknown: a policy whose paramKind is Namespace lists namespaces as its
// params; one created at level Metadata, whose labels are not known, may be one the binding's
// selector selects: the decision is not made (random parity seed r:906: "no params found",
// certain, where the server found a namespace labelled tier=gold and admitted).
func TestNamespaceParamsUnknown(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("ns-params", "configmaps", admissionregistrationv1.Create, nil, "params.metadata.name != ''")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Namespace"}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}, ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "ns1"}}
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		timedEvent(t, levelEvent(t, "ns", auditlog.LevelMetadata, "create", "namespaces", "", "ns1", 201, "", nil, nil), "00.000000", "00.001000", nil),
		timedEvent(t, levelEvent(t, "cm", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 201, "", cm, cm), "01.000000", "01.001000", nil))
	if rec := recs["cm"]; rec == nil || rec.Decision != DecisionIndeterminate {
		t.Errorf("the create: %s, want indeterminate: namespace ns1 may be a param", describeRecord(rec))
	}
}

// TestDeleteCollectionOfOneName: a deletecollection whose field selector names one object
// lists that object alone (the store reads its key: ListPredicate's MatchesSingle), and
// deletes it alone: another object of the namespace the State does not know (written at
// level Metadata) neither makes its decision unknown nor is forgotten with it, nor is a
// third object it did not list.
func TestDeleteCollectionOfOneName(t *testing.T) {
	t.Parallel()
	del, delB := levelPolicy("old-v", "configmaps", admissionregistrationv1.Delete, nil, "oldObject.data.v != 'b'")
	upd, updB := levelPolicy("upd-v", "configmaps", admissionregistrationv1.Update, nil, "oldObject.data.v != 'b'")
	cm := func(name, rv, v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns1", "resourceVersion": rv, "uid": "u-" + name}, "data": map[string]any{"v": v}}
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1"}}
	collection := replaceOnce(t, levelEvent(t, "4", auditlog.LevelRequest, "deletecollection", "configmaps", "ns1", "", 200, "", nil, nil),
		`/namespaces/ns1/configmaps/"`, `/namespaces/ns1/configmaps?fieldSelector=metadata.name%3Dx"`)
	lines := []string{
		// The log begins with the cluster's creation: it holds every configmap.
		replaceOnce(t, timedEvent(t, levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "namespaces", "", "kube-system", 201, "", ns, ns), "00.000000", "00.001000", nil), `"username":"admin"`, `"username":"system:apiserver"`),
		timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "x", 201, "", cm("x", "", "a"), cm("x", "10", "a")), "01.000000", "01.001000", nil),
		timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "y", 201, "", cm("y", "", "a"), cm("y", "11", "a")), "01.100000", "01.101000", nil),
		timedEvent(t, levelEvent(t, "3", auditlog.LevelMetadata, "update", "configmaps", "ns1", "u", 200, "", nil, nil), "01.200000", "01.201000", nil),
		timedEvent(t, collection, "02.000000", "02.005000", nil),
		timedEvent(t, levelEvent(t, "5", auditlog.LevelRequest, "update", "configmaps", "ns1", "y", 200, "", cm("y", "11", "c"), nil), "03.000000", "03.001000", nil),
		timedEvent(t, replaceOnce(t, collection, `metadata.name%3Dx`, `metadata.name%3Du`), "04.000000", "04.005000", nil),
	}
	lines[6] = strings.Replace(lines[6], `"auditID":"4"`, `"auditID":"6"`, 1)
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{del, upd}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{delB, updB}, lines...)
	for id, what := range map[string]string{"4": "the deletecollection", "5": "the update of the object it did not list"} {
		if rec := recs[id]; rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyCertain {
			t.Errorf("%s: %s, want admit, certain", what, describeRecord(rec))
		}
	}
	// The one object it names is not known: why is the State's.
	if rec := recs["6"]; rec == nil || rec.Decision != DecisionIndeterminate || !strings.Contains(rec.Indeterminate, "level Metadata") {
		t.Errorf("the deletecollection of the object not known: %s, want indeterminate for what the State does not know of it", describeRecord(rec))
	}
}

// TestNamedByFieldSelector: a field selector names one object for the store (which reads its
// key alone) only when the name is all it requires.
func TestNamedByFieldSelector(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		selector string
		name     string
		named    bool
	}{
		{"metadata.name=x", "x", true},
		{"metadata.name==x", "x", true},
		{"metadata.name=x,metadata.namespace=a", "", false},
		{"metadata.name=x,status.phase=Running", "", false},
		{"metadata.name!=x", "", false},
		{"status.phase=Running", "", false},
		{"", "", false},
		{"metadata.name=x=y,", "", false},
	} {
		ev := &Event{}
		ev.RequestURI = "/api/v1/namespaces/a/configmaps"
		if tt.selector != "" {
			ev.RequestURI += "?fieldSelector=" + url.QueryEscape(tt.selector)
		}
		if name, named := namedByFieldSelector(ev); name != tt.name || named != tt.named {
			t.Errorf("namedByFieldSelector(%q) = %q, %v; want %q, %v", tt.selector, name, named, tt.name, tt.named)
		}
	}
}

// TestAtLevel: what an event without its objects says of why: its level, or the audit
// backend's truncation (which the reader takes as level Metadata: an audit policy's level
// does not change it, --audit-log-truncate-max-event-size does).
func TestAtLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line, want string
	}{
		{levelEvent(t, "1", auditlog.LevelMetadata, "create", "configmaps", "ns1", "c", 201, "", nil, nil), "at level Metadata"},
		{timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 201, "", nil, nil), "01.000000", "01.001000", map[string]string{auditlog.AnnotationTruncated: "true"}),
			"truncated by the audit backend (audit.k8s.io/truncated: the objects of an event larger than --audit-log-truncate-max-event-size dropped)"},
	} {
		ev, err := auditlog.Decode([]byte(tc.line))
		if err != nil {
			t.Fatal(err)
		}
		if got := atLevel(ev); got != tc.want {
			t.Errorf("atLevel(%s) = %q, want %q", ev.Level, got, tc.want)
		}
	}
}

// TestRotationGap: rotated logs given without the file between two of them (lumberjack names a
// rotated file after when it rotated it, and the next begins then): what the server wrote in the
// missing file is not known, so the State holds nothing from before the gap. A ConfigMap's
// update the missing file held leaves the next update's old object unknown, not the version
// before it (helper exP: decided certain on a param the missing file changed).
func TestRotationGap(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("old", "configmaps", admissionregistrationv1.Update, nil, "oldObject.data.v != 'a'")
	cm := func(rv, v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": rv}, "data": map[string]any{"v": v}}
	}
	files := map[string][]string{
		"audit-2026-11-24T00-00-02.000.log": {timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), cm("10", "a")), "01.000000", "01.001000", nil)},
		"audit-2026-11-24T00-00-05.000.log": {timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("10", "b"), cm("11", "b")), "02.000000", "02.001000", nil)},
		"audit.log":                         {timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("11", "c"), cm("12", "c")), "05.000000", "05.001000", nil)},
	}
	dir := t.TempDir()
	for name, lines := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		files   []string
		want    string
		gapNote bool
	}{
		{"every file", []string{"audit.log", "audit-2026-11-24T00-00-05.000.log", "audit-2026-11-24T00-00-02.000.log"}, DecisionAdmit, false},
		{"the middle one left out", []string{"audit.log", "audit-2026-11-24T00-00-02.000.log"}, DecisionIndeterminate, true},
	} {
		var srcs []Source
		for _, f := range tc.files {
			srcs = append(srcs, Source{Name: filepath.Join(dir, f)})
		}
		sum, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil, srcs...)
		if rec := recs["3"]; rec == nil || rec.Decision != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, describeRecord(rec), tc.want)
		}
		noted := slices.ContainsFunc(sum.Notes, func(n string) bool {
			return strings.Contains(n, "the rotated file between them is not among the logs given")
		})
		if noted != tc.gapNote {
			t.Errorf("%s: notes %q: a gap noted %v, want %v", tc.name, sum.Notes, noted, tc.gapNote)
		}
	}
}

// TestFailedInUnreplayedMutation: a MutatingAdmissionPolicy the replay does not run (the log
// shows it created, --policies does not give it) matches a ConfigMap's create that the server
// answered 500 (what the policy wrote did not convert) before validating admission ran. The
// replay's pipeline, without it, reaches validating admission: where the log shows the observer
// installed (its annotation on another request) and none of its annotations on this one, the
// request did not reach validating admission; without that evidence, whether it did is not
// known (random parity m:1247: decided admitted after validating admission, with the
// observer's annotations the server never wrote).
func TestFailedInUnreplayedMutation(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("observer", "configmaps", admissionregistrationv1.Create, nil, "true")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "seen", ValueExpression: "request.namespace"}}
	b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	mapPolicy := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy", "metadata": map[string]any{"name": "bad-annotation"},
		"spec": map[string]any{"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
			"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"configmaps"}}}}}}
	mapBinding := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding", "metadata": map[string]any{"name": "bad-annotation"},
		"spec": map[string]any{"policyName": "bad-annotation"}}
	mapEvent := func(id, resource string, obj map[string]any) string {
		line := levelEvent(t, id, auditlog.LevelRequestResponse, "create", resource, "", "bad-annotation", 201, "", obj, obj)
		line = replaceOnce(t, line, `"requestURI":"/api/v1/`, `"requestURI":"/apis/admissionregistration.k8s.io/v1/`)
		return replaceOnce(t, line, `"apiVersion":"v1","name"`, `"apiGroup":"admissionregistration.k8s.io","apiVersion":"v1","name"`)
	}
	cm := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns1"}, "data": map[string]any{"a": "b"}}
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1"}}
	const failed = "Internal error occurred: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string"
	for _, tc := range []struct {
		name     string
		evidence bool
		wantRec  bool // a record (undecided whether admission ran); none: refused before it
	}{
		{"the log shows the observer", true, false},
		{"nothing shows it", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ann map[string]string
			if tc.evidence {
				ann = map[string]string{"observer/seen": "before"}
			}
			_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []Option{WithCheckRecorded(true)},
				Source{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join([]string{
					timedEvent(t, levelEvent(t, "ns", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", ns, ns), "00.100000", "00.101000", nil),
					timedEvent(t, levelEvent(t, "before", auditlog.LevelRequest, "create", "configmaps", "ns1", "before", 201, "", cm("before"), nil), "00.500000", "00.501000", ann),
					timedEvent(t, mapEvent("map", "mutatingadmissionpolicies", mapPolicy), "01.000000", "01.001000", nil),
					timedEvent(t, mapEvent("mapb", "mutatingadmissionpolicybindings", mapBinding), "01.002000", "01.003000", nil),
					timedEvent(t, levelEvent(t, "failed", auditlog.LevelRequest, "create", "configmaps", "ns1", "failed", 500, failed, cm("failed"), nil), "05.000000", "05.001000", nil),
				}, "\n") + "\n")})
			rec := recs["failed"]
			switch {
			case !tc.wantRec && rec != nil:
				t.Errorf("%s, want no record: refused before validating admission", describeRecord(rec))
			case tc.wantRec && (rec == nil || rec.Recorded != RecordedUnknown || len(rec.Disagreements) > 0):
				t.Errorf("%s, want the log's verdict unknown", describeRecord(rec))
			}
		})
	}
}

// TestNamespaceSelectorOwnLabels: a namespace's own update is matched by a namespace selector
// on its object's labels (the apiserver's namespace.Matcher), not the stored namespace's. A
// patch logged at level Metadata, whose object the log does not hold, may have removed the
// label the selector names: whether the policy applied is not known (random parity c:652: the
// replay said it applied, certain). Logged with its object, it is decided on it.
func TestNamespaceSelectorOwnLabels(t *testing.T) {
	t.Parallel()
	nsObj := func(labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "uid": "u1", "resourceVersion": "12", "labels": labels}}
	}
	for _, tc := range []struct {
		name, level string
		req, resp   map[string]any
		want        string
	}{
		{"at level Metadata", auditlog.LevelMetadata, nil, nil, "indeterminate"},
		{"the label removed, logged", auditlog.LevelRequestResponse, map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": nil}}},
			nsObj(map[string]any{"kubernetes.io/metadata.name": "ns1"}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := levelPolicy("tiered", "namespaces", admissionregistrationv1.Update, map[string]string{"tier": "silver"}, "true")
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "k", ValueExpression: "'applied'"}}
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", nsObj(map[string]any{"tier": "silver"}),
					nsObj(map[string]any{"tier": "silver", "kubernetes.io/metadata.name": "ns1"})),
				levelEvent(t, "1", tc.level, "patch", "namespaces", "", "ns1", 200, "", tc.req, tc.resp),
			)
			got := ""
			if rec := recs["1"]; rec != nil {
				got = rec.Decision
			}
			if got != tc.want {
				t.Errorf("the patch: %s, want %q", describeRecord(recs["1"]), tc.want)
			}
		})
	}
}

// TestParamNotFoundReadsNothing: a binding that found no params, its parameterNotFoundAction
// Allow, admits without evaluating the policy (the dispatcher collects params before the
// matchConditions run): what the replay does not know of the request does not decide it.
// Cluster traffic's replicaset-controller DELETE of a pod the log did not know was
// indeterminate, the Kosmos guard's matchCondition reading request.options, although the
// snapshot's nodes held no Kosmos node. Without the snapshot the nodes are not all known: a
// Kosmos node may have been a param.
func TestParamNotFoundReadsNothing(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("kosmos", "pods", admissionregistrationv1.Delete, nil, "params.metadata.name != 'x'")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Node"}
	p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "no-uid", Expression: "!has(request.options) || !has(request.options.preconditions)"}}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{
		Selector:                &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kosmos.io/node", Operator: metav1.LabelSelectorOpExists}}},
		ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction),
	}
	node := map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "n1", "uid": "n1-uid", "resourceVersion": "5"}}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "uid": "ns-uid", "resourceVersion": "3"}}
	status := map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success", "details": map[string]any{"name": "web-1", "kind": "pods", "uid": "pod-uid"}}
	for _, tc := range []struct {
		name     string
		snapshot []any
		want     string
	}{
		{"every node known", []any{node, ns}, DecisionAdmit},
		{"the nodes not known", nil, DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, tc.snapshot,
				levelEvent(t, "0", auditlog.LevelRequestResponse, "delete", "pods", "ns1", "web-1", 200, "", nil, status))
			if rec := recs["0"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("the DELETE: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestUnknownNamespaceName: a namespace the replay does not know (never in the log, or
// written at level Metadata) is known by its name, and by its kubernetes.io/metadata.name
// label, which is its name in every namespace kube-apiserver stores: a namespace selector on
// that label (NotIn kube-system, the commonest) and a read of namespaceObject's name decide.
// Another label, or any other field of it, does not.
func TestUnknownNamespaceName(t *testing.T) {
	t.Parallel()
	nameNotIn := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"}}}}
	team := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	nsObj := func(labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1", "uid": "u1", "resourceVersion": "12", "labels": labels}}
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c1", "namespace": "ns1"}}
	const denied = `configmaps "c1" is forbidden: ValidatingAdmissionPolicy 'pol' with binding 'pol' denied request: denied by pol`
	for _, tc := range []struct {
		name     string
		selector *metav1.LabelSelector
		expr     string
		metadata bool // the namespace was created and then patched at level Metadata; else never in the log
		want     string
	}{
		{"NotIn kube-system, never in the log", nameNotIn, "false", false, DecisionDeny},
		{"NotIn kube-system, patched at level Metadata", nameNotIn, "false", true, DecisionDeny},
		{"namespaceObject's name", nil, "namespaceObject.metadata.name != 'ns1'", false, DecisionDeny},
		{"namespaceObject's name label", nil, "namespaceObject.metadata.labels['kubernetes.io/metadata.name'] != 'ns1'", true, DecisionDeny},
		{"another label's selector", team, "false", false, DecisionIndeterminate},
		{"another label's selector, patched at level Metadata", team, "false", true, DecisionIndeterminate},
		{"namespaceObject's labels", nil, "size(namespaceObject.metadata.labels) == 0", false, DecisionIndeterminate},
		{"namespaceObject's phase", nil, "namespaceObject.status.phase != 'Active'", true, DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := levelPolicy("pol", "configmaps", admissionregistrationv1.Create, nil, tc.expr)
			p.Spec.MatchConstraints.NamespaceSelector = tc.selector
			var lines []string
			if tc.metadata {
				lines = append(lines,
					levelEvent(t, "0", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", nsObj(map[string]any{"team": "a"}), nsObj(map[string]any{"team": "a", "kubernetes.io/metadata.name": "ns1"})),
					levelEvent(t, "1", auditlog.LevelMetadata, "patch", "namespaces", "", "ns1", 200, "", nil, nil))
			}
			lines = append(lines, levelEvent(t, "2", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c1", 422, denied, cm, nil))
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines...)
			rec := recs["2"]
			if rec == nil || rec.Decision != tc.want {
				t.Fatalf("the create: %s, want %s", describeRecord(rec), tc.want)
			}
			if tc.want == DecisionIndeterminate && rec.Reason != ReasonNamespaceUnknown {
				t.Errorf("the create: %s, want the reason %s", describeRecord(rec), ReasonNamespaceUnknown)
			}
		})
	}
}

// TestUnknownNamespaceMutatingSelector: a MutatingAdmissionPolicy that selects by a label of a
// namespace the replay does not know may have changed the object validation reads: the
// decision is not known (the namespace's name alone does not say whether it selected it).
// Under failurePolicy Ignore, where what the policy reads does not count for its failures, the
// replay admitted, certain, where the server's policy marked the object and the validation
// denied it.
func TestUnknownNamespaceMutatingSelector(t *testing.T) {
	t.Parallel()
	rules := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}}}
	for _, tc := range []struct {
		name     string
		selector *metav1.LabelSelector
		want     string
	}{
		{"by another label", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, DecisionIndeterminate},
		{"by the name label", &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "app"}}, DecisionDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "marker"},
				Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: rules.DeepCopy(), FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
					Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
						ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "Object{metadata: Object.metadata{labels: {'marked': 'true'}}}"}}}}}
			m.Spec.MatchConstraints.NamespaceSelector = tc.selector
			mb := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "marker"}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "marker"}}
			p, b := levelPolicy("pol", "configmaps", admissionregistrationv1.Create, nil, "!has(object.metadata.labels) || !('marked' in object.metadata.labels)")
			cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c1", "namespace": "app"}}
			const denied = `configmaps "c1" is forbidden: ValidatingAdmissionPolicy 'pol' with binding 'pol' denied request: denied by pol`
			_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				[]Option{WithMutatingPolicies([]*admissionregistrationv1.MutatingAdmissionPolicy{m}, []*admissionregistrationv1.MutatingAdmissionPolicyBinding{mb})},
				Source{Name: "audit.jsonl", Reader: strings.NewReader(levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "app", "c1", 422, denied, cm, nil) + "\n")})
			if rec := recs["1"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("the create: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestKlogLinesSkipped: kube-apiserver's audit log on standard output (--audit-log-path=-) is
// read as kubectl logs prints it, or its container's log file holds it, among the klog lines
// of its own log on standard error (klog's lines, the later lines of a trace, the etcd
// client's and klog's JSON lines): those are counted and skipped, not malformed, and the
// events between them are replayed. A line that is neither stays malformed.
func TestKlogLinesSkipped(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("no-deny", "configmaps", admissionregistrationv1.Create, nil, "object.data.k != 'deny'")
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "a"}, "data": map[string]any{"k": "deny"}}
	sum, got := replayLines(t, ps, bs,
		"I1204 10:00:01.123456       1 controller.go:615] quota admission added evaluator for: leases.coordination.k8s.io",
		levelEvent(t, "c", auditlog.LevelRequest, "create", "configmaps", "a", "c", 422, "", cm, nil),
		"W1204 10:00:02.000001      17 dispatcher.go:217] Failed calling webhook, failing open",
		// A slow request's trace: klog's header on its first line only.
		`I1204 10:00:03.211000       1 trace.go:236] Trace[7816759]: "Update" accept:application/json (04-Dec-2026 10:00:02.600) (total time: 611ms):`,
		`Trace[7816759]: ---"limitedReadBody succeeded" len:629048 11ms (10:00:03.211)`,
		`Trace[7816759]: [611.2ms] [611.2ms] END`,
		// The etcd client's logger, and klog's JSON format (--logging-format=json).
		`{"level":"warn","ts":"2026-12-04T10:00:04.000Z","logger":"etcd-client","caller":"v3@v3.6.5/retry_interceptor.go:63","msg":"retrying of unary invoker failed","attempt":0}`,
		`{"ts":1764842404000.123,"caller":"app/server.go:170","msg":"Version info","v":0}`,
		"E1204 10:00:02 not klog's header",
		`Trace[x]: not a trace's line`,
		`{"ts":1764842404000.123,"msg":"an event's ID","auditID":"x"}`,
	)
	if n := sum.ExportSkipped[KlogSkip]; n != 7 {
		t.Errorf("lines of kube-apiserver's own log skipped = %d, want 7 (%v)", n, sum.ExportSkipped)
	}
	if sum.MalformedCount != 3 {
		t.Errorf("malformed lines = %d, want 3, the lines that are none of its own log's: %v", sum.MalformedCount, sum.Malformed)
	}
	if got["c"] == nil || sum.Evaluated != 1 {
		t.Errorf("the event between the klog lines: record %v, %d evaluated; want it evaluated", got["c"], sum.Evaluated)
	}
}

// TestGivenMutatingCreatedAtMetadata: a MutatingAdmissionPolicy and its binding whose creates
// the log holds at level Metadata, given among --policies: taken as the given ones, as the
// lifecycle takes a create without its body (random parity seed r:1450, the admission
// policies logged at Metadata), so that a request they match is decided with them. A binding
// the replay is not given binds a policy the log does not show: what it may change is not
// known; nor is it after a DELETE of the binding at level Metadata, which may have been a dry
// run.
func TestGivenMutatingCreatedAtMetadata(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("owner", "configmaps", admissionregistrationv1.Create, nil, `has(object.data) && 'owner' in object.data`)
	mp := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "add-owner"}, Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
		MatchConstraints:   createRules("", "configmaps"),
		ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{data: {"owner": "team-a"}}`}}},
	}}
	mb := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "add-owner"}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "add-owner"}}
	atMetadata := func(id, resource, name string) string {
		line := levelEvent(t, id, auditlog.LevelMetadata, "create", resource, "", name, 201, "", nil, nil)
		line = replaceOnce(t, line, `"requestURI":"/api/v1/`, `"requestURI":"/apis/admissionregistration.k8s.io/v1/`)
		return replaceOnce(t, line, `"apiVersion":"v1","name"`, `"apiGroup":"admissionregistration.k8s.io","apiVersion":"v1","name"`)
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "ns1"}, "data": map[string]any{"a": "b"}}
	// deleted is the binding's DELETE at level Metadata, which may have been a dry run (its
	// options are in the body client-go sends).
	deleted := atMetadata("d", "mutatingadmissionpolicybindings", "add-owner")
	deleted = replaceOnce(t, deleted, `"verb":"create"`, `"verb":"delete"`)
	deleted = replaceOnce(t, deleted, `"code":201`, `"code":200`)
	deleted = replaceOnce(t, deleted, `/mutatingadmissionpolicybindings"`, `/mutatingadmissionpolicybindings/add-owner"`)
	for _, tc := range []struct {
		binding, want, mentions string
		deleted                 bool
	}{
		{binding: "add-owner", want: DecisionAdmit},
		{binding: "another", want: DecisionIndeterminate, mentions: "MutatingAdmissionPolicyBinding another binds a policy the log does not show"},
		{binding: "add-owner", deleted: true, want: DecisionIndeterminate, mentions: "may have been a dry run"},
	} {
		lines := []string{
			timedEvent(t, atMetadata("1", "mutatingadmissionpolicies", "add-owner"), "01.000", "01.010", nil),
			timedEvent(t, atMetadata("2", "mutatingadmissionpolicybindings", tc.binding), "01.100", "01.110", nil),
		}
		if tc.deleted {
			lines = append(lines, timedEvent(t, deleted, "02.000", "02.010", nil))
		}
		// At level Request: the object before the mutation, seconds after.
		lines = append(lines, timedEvent(t, levelEvent(t, "3", auditlog.LevelRequest, "create", "configmaps", "ns1", "c", 201, "", cm, nil), "09.000", "09.010", nil))
		_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
			[]Option{WithMutatingPolicies([]*admissionregistrationv1.MutatingAdmissionPolicy{mp}, []*admissionregistrationv1.MutatingAdmissionPolicyBinding{mb})},
			Source{Name: "audit.log", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")})
		rec := recs["3"]
		if rec == nil || rec.Decision != tc.want || !strings.Contains(rec.Indeterminate, tc.mentions) {
			t.Errorf("binding %s: %v %s (%s), want %s (%q)", tc.binding, rec, rec.Decision, rec.Indeterminate, tc.want, tc.mentions)
		}
	}
}
