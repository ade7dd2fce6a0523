package e2e

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Webhook configuration writes for TestRandomParity, of a scratch ValidatingWebhookConfiguration
// and MutatingWebhookConfiguration (rnd-hooks) whose webhooks match only the scratch CRD's
// gadgets, which no step writes (so the server never calls them), as kubectl writes them and
// as a random user: apply, create, replace, merge patches of a webhook's timeout and failure
// policy, a JSON patch of its caBundle (what cert-manager's CA injector writes all day), label,
// delete. An admission policy sees them (only the admission policies and bindings are kept from
// it); kube-apiserver defaults each webhook (timeout, failure policy, match policy, selectors,
// the mutating one's reinvocation policy) and its strategy bumps the generation when the
// webhooks change, before validating admission.

// webhookConfigAtoms read what these writes and the server set.
var webhookConfigAtoms = []string{
	`object.?webhooks.orValue([]).all(w, w.?timeoutSeconds.orValue(0) == 10)`,
	`object.?webhooks.orValue([]).all(w, w.?failurePolicy.orValue('') == 'Fail')`,
	`object.?webhooks.orValue([]).all(w, w.?matchPolicy.orValue('') == 'Equivalent' && w.?namespaceSelector.hasValue())`,
	`!object.?webhooks.orValue([]).exists(w, w.?clientConfig.?caBundle.hasValue())`,
	`object.?webhooks.orValue([]).all(w, w.?reinvocationPolicy.orValue('Never') == 'Never')`,
}

// webhookConfigStrings are string expressions over the same.
var webhookConfigStrings = []string{
	`'hooks gen=' + string(object.metadata.?generation.orValue(-1)) + ' ' + object.?webhooks.orValue([]).map(w, w.name + ':' + string(w.?timeoutSeconds.orValue(-1)) + ':' + w.?failurePolicy.orValue('-') + ':' + w.?matchPolicy.orValue('-') + ':' + string(size(w.?clientConfig.?caBundle.orValue(b'')))).join(',')`,
}

// webhookConfigRules are rule templates of the kinds they write.
var webhookConfigRules = []ruleTemplate{
	{[]string{"admissionregistration.k8s.io"}, []string{"v1"}, []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}},
	{[]string{"admissionregistration.k8s.io"}, []string{"*"}, []string{"*"}},
}

func init() {
	boolAtoms = append(boolAtoms, webhookConfigAtoms...)
	stringAtoms = append(stringAtoms, webhookConfigStrings...)
	ruleTemplates = append(ruleTemplates, webhookConfigRules...)
}

const rndHooks = "rnd-hooks"

// webhookConfigYAML is a scratch webhook configuration of kind (Validating or Mutating), its
// webhooks' timeout and failure policy given or left to the server's defaults.
func webhookConfigYAML(kind, timeout, failurePolicy string) string {
	extra := ""
	if timeout != "" {
		extra += "\n  timeoutSeconds: " + timeout
	}
	if failurePolicy != "" {
		extra += "\n  failurePolicy: " + failurePolicy
	}
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: %sWebhookConfiguration
metadata:
  name: %s
webhooks:
- name: gadgets.rnd.vapc.dev
  sideEffects: None
  admissionReviewVersions: ["v1"]
  clientConfig:
    service:
      namespace: default
      name: rnd-hooks
      path: /check
  rules:
  - apiGroups: ["scratch.vapc.dev"]
    apiVersions: ["v1"]
    operations: ["CREATE"]
    resources: ["gadgets"]%s
`, kind, rndHooks, extra)
}

// webhookConfigWrite writes one of the scratch webhook configurations with kubectl, as a random
// user.
func (w *randomWorld) webhookConfigWrite() {
	u := w.user()
	kind := pick(w.r, "Validating", "Mutating")
	resource := strings.ToLower(kind) + "webhookconfiguration"
	file := func() string {
		return w.manifestFile("hooks.yaml", webhookConfigYAML(kind, pick(w.r, "", "5", "10"), pick(w.r, "", "Ignore", "Fail")))
	}
	var args []string
	switch w.r.IntN(9) {
	case 0, 1:
		args = kubectlApplyArgs(w, file())
	case 2:
		args = []string{pick(w.r, "create", "replace"), "-f", file()}
	case 3:
		args = []string{"patch", resource, rndHooks, "--type=json", "-p", fmt.Sprintf(`[{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":%d}]`, pick(w.r, 3, 10, 20))}
	case 4:
		// A strategic merge patch of a webhook by its name (the list's merge key).
		args = []string{"patch", resource, rndHooks, "-p", fmt.Sprintf(`{"webhooks":[{"name":"gadgets.rnd.vapc.dev","failurePolicy":%q}]}`, pick(w.r, "Ignore", "Fail"))}
	case 5:
		// The CA injector's write: the caBundle of the first webhook.
		ca := base64.StdEncoding.EncodeToString([]byte("rnd-ca-" + pick(w.r, "1", "2")))
		args = []string{"patch", resource, rndHooks, "--type=json", "-p", `[{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"` + ca + `"}]`}
	case 6:
		args = []string{pick(w.r, "label", "annotate"), resource + "/" + rndHooks, "--overwrite", "color=" + pick(w.r, "red", "blue")}
	default:
		args = []string{"delete", resource + "/" + rndHooks, "--wait=false"}
		if chance(w.r, 0.3) {
			args = append(args, "--dry-run=server")
		}
	}
	args = append(args, u.kubectlAs()...)
	w.got("kubectl "+strings.Join(args, " "), w.kubectl(args...))
}
