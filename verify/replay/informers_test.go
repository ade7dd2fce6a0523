package replay

import (
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestLikelyAdmission: the informers' likely state is the one of the middle of a request's
// span, where the store runs validating admission; of its receipt where the handler runs it
// first (a CONNECT, a pod's eviction or binding); of its completion where an export lost its
// receipt.
func TestLikelyAdmission(t *testing.T) {
	t.Parallel()
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	const received, done = "2026-11-24T00:00:00.000000Z", "2026-11-24T00:00:10.000000Z"
	at := func(s int) time.Time { return time.Date(2026, 11, 24, 0, 0, s, 0, time.UTC) }
	for _, tc := range []struct {
		name string
		t    target
		lost bool
		want time.Time
	}{
		{name: "an update", t: target{gvr: pods, op: admission.Update}, want: at(5)},
		{name: "a delete", t: target{gvr: pods, op: admission.Delete}, want: at(5)},
		{name: "a status patch", t: target{gvr: pods, sub: "status", op: admission.Update}, want: at(5)},
		{name: "an exec", t: target{gvr: pods, sub: "exec", op: admission.Connect}, want: at(0)},
		{name: "an eviction", t: target{gvr: pods, sub: "eviction", op: admission.Create}, want: at(0)},
		{name: "a binding", t: target{gvr: pods, sub: "binding", op: admission.Create}, want: at(0)},
		{name: "an export that lost the receipt", t: target{gvr: pods, op: admission.Update}, lost: true, want: at(10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &auditlog.Event{RequestReceivedTimestamp: received, StageTimestamp: done}
			if tc.lost {
				ev.RequestReceivedTimestamp = ""
				ev.Loss.Lost |= auditlog.LostReceived
			}
			if got := likelyAdmission(ev, tc.t); !got.Equal(tc.want) {
				t.Errorf("likelyAdmission = %v, want %v", got, tc.want)
			}
		})
	}
}

// execLabelWorld is the world of the exec tests: a policy that refuses execs in namespaces
// labelled env, a namespace a at resourceVersion rv with the labels, and an exec of pod a/p.
func execLabelWorld(t *testing.T) (ps []*admissionregistrationv1.ValidatingAdmissionPolicy, bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, ns func(rv string, labels map[string]any) map[string]any, exec string) {
	t.Helper()
	p, b := levelPolicy("env-execs", "pods/exec", admissionregistrationv1.Connect, nil, "false")
	p.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpExists}}}
	ps, bs = []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	ns = func(rv string, labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "a", "uid": "uid-a", "resourceVersion": rv, "labels": labels}}
	}
	exec = levelEvent(t, "exec", auditlog.LevelRequestResponse, "create", "pods", "a", "p", 101, "", nil, nil)
	exec = replaceOnce(t, exec, `"requestURI":"/api/v1/namespaces/a/pods"`, `"requestURI":"/api/v1/namespaces/a/pods/p/exec?command=ls\u0026stdout=true"`)
	exec = replaceOnce(t, exec, `"name":"p"`, `"name":"p","subresource":"exec"`)
	return ps, bs, ns, exec
}

// TestLagLongRunningWritesDropped: an exec received at 00:01 (admitted then, before the label)
// and logged at 02:00; a namespace label written at 00:03 by a conditional update (no dry run,
// even from GKE); a configmap create at 01:30, by which the State drops the label's write (it
// keeps only the writes the informers' lag may hide from a request received then). The server
// admitted the exec: the state the log's order gives at its end holds the label, which its
// admission did not read, and the replay no longer has the one before it. From GKE's entries
// (its receipt not known) and from the log backend alike, not decided (a helper's review:
// deny certain from GKE, likely from the log backend, before).
func TestLagLongRunningWritesDropped(t *testing.T) {
	t.Parallel()
	ps, bs, ns, exec := execLabelWorld(t)
	cms, cmsb := levelPolicy("cms", "configmaps", admissionregistrationv1.Create, nil, "true")
	ps, bs = append(ps, cms), append(bs, cmsb)
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "d", "namespace": "a", "uid": "uid-d", "resourceVersion": "7"}}
	lines := []string{
		timedEvent(t, levelEvent(t, "ns", auditlog.LevelRequestResponse, "create", "namespaces", "", "a", 201, "", ns("", nil), ns("5", map[string]any{"kubernetes.io/metadata.name": "a"})), "00:00.000000", "00:00.001000", nil),
		timedEvent(t, levelEvent(t, "label", auditlog.LevelRequestResponse, "update", "namespaces", "", "a", 200, "", ns("5", map[string]any{"kubernetes.io/metadata.name": "a", "env": "dev"}),
			ns("9", map[string]any{"kubernetes.io/metadata.name": "a", "env": "dev"})), "00:03.000000", "00:03.006000", nil),
		timedEvent(t, levelEvent(t, "cm", auditlog.LevelRequestResponse, "create", "configmaps", "a", "d", 201, "", cm, cm), "01:29.990000", "01:30.000000", nil),
		timedEvent(t, exec, "00:01.000000", "02:00.000000", nil),
	}
	for _, labelled := range []bool{false, true} {
		_, gke := replaySources(t, ps, bs, []Option{WithCheckRecorded(true), WithGKEDryRunsLabelled(labelled)}, Source{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(gkeLines(t, lines...), "\n") + "\n")})
		if rec := gke["exec"]; rec == nil || rec.Decision != DecisionIndeterminate {
			t.Errorf("GKE (labels %v): %s, want indeterminate (the server admitted it)", labelled, describeRecord(rec))
		}
	}
	_, plain := replayLinesWith(t, ps, bs, nil, lines...)
	if rec := plain["exec"]; rec == nil || rec.Decision != DecisionIndeterminate {
		t.Errorf("log backend: %s, want indeterminate (admitted at 00:01, before the label, which the replay no longer has)", describeRecord(rec))
	}
}

// TestLagLongRunningWithoutReceipt: an exec, admitted as its session began and logged as it
// ended; a label that selects it for a policy that refuses execs was written during the
// session. From the log backend, admitted before the label; from GKE's entries,
// which do not say when the exec was received (its session's length has no bound), the label
// may have come before its admission as well as after: no state is likely, however long
// before its end the label was written.
func TestLagLongRunningWithoutReceipt(t *testing.T) {
	t.Parallel()
	ps, bs, ns, exec := execLabelWorld(t)
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "d", "namespace": "a", "uid": "uid-d", "resourceVersion": "7"}}
	dryRun := levelEvent(t, "dry", auditlog.LevelRequestResponse, "create", "configmaps", "a", "d", 201, "", cm, cm)
	lines := []string{
		timedEvent(t, levelEvent(t, "ns", auditlog.LevelRequestResponse, "create", "namespaces", "", "a", 201, "", ns("", nil), ns("5", map[string]any{"kubernetes.io/metadata.name": "a"})), "00.000000", "00.001000", nil),
		// A dry run, which GKE labels: its entries without the label are none.
		timedEvent(t, replaceOnce(t, dryRun, `"requestURI":"/api/v1/namespaces/a/configmaps"`, `"requestURI":"/api/v1/namespaces/a/configmaps?dryRun=All"`), "00.200000", "00.201000", nil),
		timedEvent(t, levelEvent(t, "label", auditlog.LevelRequestResponse, "patch", "namespaces", "", "a", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": "dev"}}},
			ns("9", map[string]any{"kubernetes.io/metadata.name": "a", "env": "dev"})), "03.000000", "03.006000", nil),
		timedEvent(t, exec, "01.000000", "05.000000", nil),
	}
	_, plain := replayLinesWith(t, ps, bs, nil, lines...)
	if rec := plain["exec"]; rec == nil || rec.Decision != DecisionAdmit {
		t.Errorf("from the log backend: %s, want admit", describeRecord(rec))
	}
	_, gke := replayLinesWith(t, ps, bs, nil, gkeLines(t, lines...)...)
	if rec := gke["exec"]; rec == nil || rec.Decision != DecisionIndeterminate || !strings.Contains(rec.Indeterminate, "long-running") {
		t.Errorf("from GKE's entries: %s, want indeterminate: whether the label came before its admission", describeRecord(rec))
	}
}

// TestLagRaceWithoutReceipt: a namespace's label (a patch) completed 0.7 ms before a DELETE in
// it that a policy selecting the label would deny; the DELETE was received 5 ms before it
// completed, and its admission likely ran before the label (random parity r:1144, whose server
// admitted it). From the log backend, the replay gives that as likely; from GKE's entries,
// which do not say when the DELETE was received, the likely admission is its completion, and a
// write completed within admissionMayFollow before it may have completed after its admission
// as well: no state is likely. Another DELETE, completed 100 ms after the label (received 94
// ms after it) and refused, is decided on the label held: certain from the log backend (the
// refusal is that state's), likely from GKE's entries (where it was indeterminate within the
// informers' lag before).
func TestLagRaceWithoutReceipt(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("env-deletes", "configmaps", admissionregistrationv1.Delete, nil, "false")
	p.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpExists}}}
	// And one of every DELETE, which admits: the request is evaluated in every state.
	all, allb := levelPolicy("deletes", "configmaps", admissionregistrationv1.Delete, nil, "true")
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p, all}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b, allb}
	ns := func(rv string, labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "a", "uid": "uid-a", "resourceVersion": rv, "labels": labels}}
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "a", "uid": "uid-c", "resourceVersion": "7"}}
	const denied = `configmaps "c2" is forbidden: ValidatingAdmissionPolicy 'env-deletes' with binding 'env-deletes' denied request: denied by env-deletes`
	dryRun := levelEvent(t, "dry", auditlog.LevelRequestResponse, "create", "configmaps", "a", "d", 201, "", cm, cm)
	lines := []string{
		timedEvent(t, levelEvent(t, "ns", auditlog.LevelRequestResponse, "create", "namespaces", "", "a", 201, "", ns("", nil), ns("5", map[string]any{"kubernetes.io/metadata.name": "a"})), "00.000000", "00.001000", nil),
		timedEvent(t, levelEvent(t, "cm", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c", 201, "", cm, cm), "00.100000", "00.101000", nil),
		// A dry run, which GKE labels: its entries without the label are none.
		timedEvent(t, replaceOnce(t, dryRun, `"requestURI":"/api/v1/namespaces/a/configmaps"`, `"requestURI":"/api/v1/namespaces/a/configmaps?dryRun=All"`), "00.200000", "00.201000", nil),
		timedEvent(t, levelEvent(t, "label", auditlog.LevelRequestResponse, "patch", "namespaces", "", "a", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": "dev"}}},
			ns("9", map[string]any{"kubernetes.io/metadata.name": "a", "env": "dev"})), "01.000000", "01.006000", nil),
		timedEvent(t, levelEvent(t, "del", auditlog.LevelRequestResponse, "delete", "configmaps", "a", "c", 200, "", map[string]any{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}, cm), "01.001700", "01.006700", nil),
		timedEvent(t, levelEvent(t, "del-later", auditlog.LevelRequestResponse, "delete", "configmaps", "a", "c2", 422, denied, map[string]any{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"},
			map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure", "message": denied, "reason": "Invalid", "code": int64(422)}), "01.100000", "01.106000", nil),
	}
	cm2 := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c2", "namespace": "a", "uid": "uid-c2", "resourceVersion": "8"}}
	lines = slices.Insert(lines, 2, timedEvent(t, levelEvent(t, "cm2", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c2", 201, "", cm2, cm2), "00.150000", "00.151000", nil))
	_, plain := replayLinesWith(t, ps, bs, nil, lines...)
	if rec := plain["del"]; rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyLikely {
		t.Errorf("from the log backend: %s, want admit likely", describeRecord(rec))
	}
	if rec := plain["del-later"]; rec == nil || rec.Decision != DecisionDeny || rec.Certainty != CertaintyCertain {
		t.Errorf("from the log backend, the later DELETE: %s, want deny certain (the log's refusal is the label's)", describeRecord(rec))
	}
	_, gke := replayLinesWith(t, ps, bs, nil, gkeLines(t, lines...)...)
	if rec := gke["del"]; rec == nil || rec.Decision != DecisionIndeterminate || !strings.Contains(rec.Indeterminate, "does not give when this request was received") {
		t.Errorf("from GKE's entries: %s, want indeterminate: whether the label completed before its admission", describeRecord(rec))
	}
	// (Likely, not certain: what it read of its ConfigMap, created 955 ms before it completed,
	// is not known had it been received before that.)
	if rec := gke["del-later"]; rec == nil || rec.Decision != DecisionDeny || rec.Certainty != CertaintyLikely {
		t.Errorf("from GKE's entries, the later DELETE: %s, want deny likely", describeRecord(rec))
	}
}
