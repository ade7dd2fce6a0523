package replay

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestSystemNamespaces: kube-apiserver creates default, kube-system, kube-public and
// kube-node-lease as it starts, and its audit backend may miss those creates. A request the log
// shows getting past the NamespaceLifecycle plugin in one of them says it exists: as the
// namespace strategy created it when the log begins with the cluster's creation (nothing
// changed it unlogged), with what the cluster changed of it unknown otherwise.
func TestSystemNamespaces(t *testing.T) {
	t.Parallel()
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "kube-system"}}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "default", "labels": map[string]any{"kubernetes.io/metadata.name": "default"}}}
	birth := replaceOnce(t, levelEvent(t, "birth", auditlog.LevelRequestResponse, "create", "namespaces", "", "default", 201, "", ns, ns), `"username":"admin"`, `"username":"system:apiserver"`)
	for _, tc := range []struct {
		name      string
		birth     bool
		selector  map[string]string
		expr      string
		decision  string
		reason    Reason
		notMatchd bool
	}{
		// The policy selects namespaces by a label kube-system does not have as created.
		{name: "born in the log, selected by labels", birth: true, selector: map[string]string{"env": "prod"}, notMatchd: true},
		{name: "born in the log, its name label", birth: true, selector: map[string]string{"kubernetes.io/metadata.name": "kube-system"}, decision: DecisionDeny},
		{name: "its labels not known", selector: map[string]string{"env": "prod"}, decision: DecisionIndeterminate, reason: ReasonNamespaceUnknown},
		{name: "its name read", expr: "namespaceObject.metadata.name != 'kube-system'", decision: DecisionDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := levelPolicy("ns-guard", "configmaps", admissionregistrationv1.Create, tc.selector, tc.expr)
			var lines []string
			if tc.birth {
				lines = append(lines, birth)
			}
			lines = append(lines, levelEvent(t, "req", auditlog.LevelRequestResponse, "create", "configmaps", "kube-system", "c", 201, "", cm, cm))
			sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines...)
			rec := recs["req"]
			switch {
			case tc.notMatchd:
				if rec != nil || sum.NotMatched == 0 {
					t.Errorf("the request: %s, want not matched", describeRecord(rec))
				}
			case rec == nil || rec.Decision != tc.decision || rec.Reason != tc.reason:
				t.Errorf("the request: %s, want %s %s", describeRecord(rec), tc.decision, tc.reason)
			}
		})
	}
}
