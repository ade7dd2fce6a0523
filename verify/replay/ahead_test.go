package replay

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestInformerLagAheadPastUntimed: a request the log records without its stageTimestamp, between
// a request and a write logged after it that ran concurrently with it, does not hide the
// request from the write: the state with the write held, which the log's own verdict (the
// request admitted) picks, is evaluated.
func TestInformerLagAheadPastUntimed(t *testing.T) {
	t.Parallel()
	cm := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns1"}}
	}
	other := unselectedParam()
	p, b := lagParamPolicy(admissionregistrationv1.DenyAction)
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "allow", ValueExpression: "string(params.data.allow)"}}
	for _, untimed := range []bool{false, true} {
		lines := []string{
			timedEvent(t, levelEvent(t, "req", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 201, "", cm("c"), cm("c")), "02.000000", "02.010000", map[string]string{"limit/allow": "yes"}),
		}
		if untimed {
			// Any matched request the log records without timestamps.
			lines = append(lines, levelEvent(t, "k", auditlog.LevelRequestResponse, "create", "configmaps", "ns2", "k", 422, "", cm("k"), nil))
		}
		lines = append(lines, timedEvent(t, levelEvent(t, "write", auditlog.LevelRequestResponse, "update", "configmaps", "params", "p", 200, "", lagParam("p", "11", "yes"), lagParam("p", "11", "yes")), "02.005000", "02.020000", nil))
		_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []any{lagParam("p", "10", "no"), other}, lines...)
		if rec := recs["req"]; rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyCertain || len(rec.Disagreements) > 0 {
			t.Errorf("untimed request between: %v: the request: %s, want admit: the write logged after it ran concurrently, and the log's annotation says it was held", untimed, describeRecord(rec))
		}
	}
}

// TestInformerLagAheadReadLater: two writes logged after the request, both received before it
// completed: the param p (allow=no), and the namespace's labels, which make the binding match.
// Whichever the log records first, the state where the informers held both (the binding
// matches, p says no: deny) is evaluated, though the request read p in none when p's write came:
// the log's denial picks it.
func TestInformerLagAheadReadLater(t *testing.T) {
	t.Parallel()
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "ns1"}}
	other := unselectedParam()
	for _, order := range []string{"namespace first", "param first"} {
		t.Run(order, func(t *testing.T) {
			p, b := lagParamPolicy(admissionregistrationv1.DenyAction)
			b.Spec.ParamRef.Selector, b.Spec.ParamRef.Name = nil, "p"
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
			paramWrite := timedEvent(t, levelEvent(t, "pw", auditlog.LevelRequestResponse, "update", "configmaps", "params", "p", 200, "", lagParam("p", "11", "no"), lagParam("p", "11", "no")), "02.003000", "02.012000", nil)
			nsWrite := timedEvent(t, levelEvent(t, "nw", auditlog.LevelRequestResponse, "update", "namespaces", "", "ns1", 200, "", envNamespace("6", "prod"), envNamespace("6", "prod")), "02.004000", "02.015000", nil)
			writes := []string{nsWrite, paramWrite}
			if order == "param first" {
				writes = []string{paramWrite, nsWrite}
			}
			// The log: the server denied it (it had held both writes).
			denied := `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'limit' with binding 'limit' denied request: denied by limit`
			lines := append([]string{timedEvent(t, levelEvent(t, "req", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 422, denied, cm, nil), "02.000000", "02.010000", nil)}, writes...)
			sum, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				[]any{lagParam("p", "10", "yes"), other, envNamespace("5", "dev")}, lines...)
			if rec := recs["req"]; rec == nil || rec.Decision != DecisionDeny || rec.Certainty != CertaintyCertain || len(rec.Disagreements) > 0 {
				t.Errorf("the request: %s (not matched: %d), want deny: the informers held both writes", describeRecord(rec), sum.NotMatched)
			}
		})
	}
}

// TestInformerLagAheadUnknownReadLater: a namespace relabelled (logged after the request,
// concurrent with it) makes the binding match and list its params; configmaps created in the
// params' namespace without a recorded result, also concurrently, may be among them: what a
// state the informers may have held reads counts, not only the request's own View.
func TestInformerLagAheadUnknownReadLater(t *testing.T) {
	t.Parallel()
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "ns1"}}
	other := unselectedParam()
	p, b := lagParamPolicy(admissionregistrationv1.AllowAction)
	b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
	created := levelEvent(t, "pc", auditlog.LevelMetadata, "create", "configmaps", "params", "", 201, "", nil, nil)
	_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		[]any{other, envNamespace("5", "dev")}, // no param yet: Allow admits,
		timedEvent(t, levelEvent(t, "req", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 201, "", cm, cm), "02.000000", "02.010000", nil),
		timedEvent(t, levelEvent(t, "nw", auditlog.LevelRequestResponse, "update", "namespaces", "", "ns1", 200, "", envNamespace("6", "prod"), envNamespace("6", "prod")), "02.004000", "02.012000", nil),
		timedEvent(t, created, "02.003000", "02.015000", nil),
	)
	if rec := recs["req"]; rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyLikely || !mentions(rec, "that the log does not show") {
		t.Errorf("the request: %s, want likely admit: a param it lists in the relabelled state may have been created, unknown", describeRecord(rec))
	}
}

// TestInformerLagCreatedByNameRecreated: a param deleted then created again moments before a
// request that reads it by name: an informer that held neither write still holds the old
// version (CollectParams finds it, and does not read storage), an alternative.
func TestInformerLagCreatedByNameRecreated(t *testing.T) {
	t.Parallel()
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "ns1"}}
	other := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "other", "namespace": "kube-system", "resourceVersion": "5", "uid": "u-other"}}
	p, b := lagParamPolicy(admissionregistrationv1.DenyAction)
	b.Spec.ParamRef.Selector, b.Spec.ParamRef.Name = nil, "p1"
	_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []any{other, lagParam("p1", "9", "no")},
		timedEvent(t, levelEvent(t, "d", auditlog.LevelRequestResponse, "delete", "configmaps", "params", "p1", 200, "", nil, nil), "02.000000", "02.001000", nil),
		timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "configmaps", "params", "p1", 201, "", lagParam("p1", "", "yes"), lagParam("p1", "10", "yes")), "02.010000", "02.011000", nil),
		timedEvent(t, levelEvent(t, "req", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 201, "", cm, cm), "02.050000", "02.060000", nil),
	)
	if rec := recs["req"]; rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyLikely || !mentions(rec, "deny 422") {
		t.Errorf("request: %s, want likely admit, deny if the informer held the old version", describeRecord(rec))
	}
}

// TestInformerLagAheadFirstObject: the log begins with the cluster's creation (every resource
// complete), and no configmap exists yet: the request lists its params from a resource of no
// object, a read all the same, and the first param, created concurrently and logged after it,
// may have been listed (an alternative).
func TestInformerLagAheadFirstObject(t *testing.T) {
	t.Parallel()
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "ns1"}}
	ns := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name, "resourceVersion": "1", "uid": "u-" + name,
			"labels": map[string]any{"kubernetes.io/metadata.name": name}}, "spec": map[string]any{"finalizers": []any{"kubernetes"}}, "status": map[string]any{"phase": "Active"}}
	}
	birth := replaceOnce(t, levelEvent(t, "birth", auditlog.LevelRequestResponse, "create", "namespaces", "", "kube-system", 201, "", ns("kube-system"), ns("kube-system")), `"username":"admin"`, `"username":"system:apiserver"`)
	p, b := lagParamPolicy(admissionregistrationv1.AllowAction)
	_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		timedEvent(t, birth, "01.000000", "01.001000", nil),
		timedEvent(t, levelEvent(t, "ns1", auditlog.LevelRequestResponse, "create", "namespaces", "", "ns1", 201, "", ns("ns1"), ns("ns1")), "01.100000", "01.101000", nil),
		timedEvent(t, levelEvent(t, "ns2", auditlog.LevelRequestResponse, "create", "namespaces", "", "params", 201, "", ns("params"), ns("params")), "01.200000", "01.201000", nil),
		timedEvent(t, levelEvent(t, "req", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 201, "", cm, cm), "02.000000", "02.010000", nil),
		// The first configmap: a param that says no, created while the request ran.
		timedEvent(t, levelEvent(t, "pc", auditlog.LevelRequestResponse, "create", "configmaps", "params", "p", 201, "", lagParam("p", "", "no"), lagParam("p", "11", "no")), "02.003000", "02.015000", nil),
	)
	if rec := recs["req"]; rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyLikely || !mentions(rec, "deny 422") {
		t.Errorf("the request: %s, want likely admit: the informer may have held the param created concurrently (deny)", describeRecord(rec))
	}
}
