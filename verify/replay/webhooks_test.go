package replay

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestWebhookChangeReinvokesPlugins: a mutating webhook that changes the object makes
// kube-apiserver run its whole mutating chain once more (admission.reinvoker), the built-in
// plugins included: LimitRanger gives the container the webhook added its default limits
// before validation, which would otherwise refuse a container without a limit under the
// LimitRange's max. The log records the webhook's patch; the policy, which refuses a sidecar
// with the default limit, denied.
func TestWebhookChangeReinvokesPlugins(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("sidecar", "pods", admissionregistrationv1.Create, nil,
		"!object.spec.containers.exists(c, c.name == 'sidecar' && c.resources.limits['cpu'] == '200m')")
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1"}}
	sa := map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": "ns1", "uid": "u-sa"}}
	lr := map[string]any{"apiVersion": "v1", "kind": "LimitRange", "metadata": map[string]any{"name": "limits", "namespace": "ns1", "uid": "u-lr"},
		"spec": map[string]any{"limits": []any{map[string]any{"type": "Container", "max": map[string]any{"cpu": "250m"},
			"default": map[string]any{"cpu": "200m"}, "defaultRequest": map[string]any{"cpu": "200m"}}}}}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "ns1"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
	denied := `pods "web" is forbidden: ValidatingAdmissionPolicy 'sidecar' with binding 'sidecar' denied request: denied by sidecar`
	webhook := map[string]string{
		"mutation.webhook.admission.k8s.io/round_0_index_0": `{"configuration":"injector","webhook":"inject.example.com","mutated":true}`,
		"patch.webhook.admission.k8s.io/round_0_index_0":    `{"configuration":"injector","webhook":"inject.example.com","patch":[{"op":"add","path":"/spec/containers/-","value":{"image":"busybox","name":"sidecar"}}],"patchType":"JSONPatch"}`,
	}
	// The cluster as a snapshot taken before the log: the LimitRanger plugin's input known.
	sum, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		[]any{ns, sa, lr},
		timedEvent(t, levelEvent(t, "4", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 422, denied, pod, nil), "03.000000", "03.001000", webhook),
	)
	if rec := recs["4"]; rec == nil || rec.Decision != DecisionDeny || rec.Message != denied {
		t.Errorf("request 4 = %s, want deny %q: the second pass of the chain gives the sidecar its default limit", describeRecord(rec), denied)
	}
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
}
