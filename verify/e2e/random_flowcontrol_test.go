package e2e

import (
	"fmt"
	"strings"
)

// API Priority and Fairness writes for TestRandomParity, of a scratch FlowSchema (rnd-fs) and
// PriorityLevelConfiguration (rnd-plc), as kubectl writes them and as a random user: apply,
// create, replace, merge patches of the spec, a status patch, label, delete. kube-apiserver's
// registry strategy bumps the generation on a spec change and keeps the stored status; its
// defaulting gives the FlowSchema a matchingPrecedence of 1000 and the priority level its
// queuing; its APF configuration controller patches a FlowSchema's status with a Dangling
// condition while it names a priority level that does not exist, as system:apiserver
// (server-side apply, the controller's field manager).

// flowcontrolAtoms read what these writes and the server set.
var flowcontrolAtoms = []string{
	`object.?spec.?matchingPrecedence.orValue(0) == 1000`,
	`object.?spec.?distinguisherMethod.?type.orValue('') != 'ByUser'`,
	`object.?status.?conditions.orValue([]).all(c, c.type != 'Dangling' || c.status != 'True')`,
	`object.?spec.?limited.?nominalConcurrencyShares.orValue(0) < 20`,
	`object.?spec.?limited.?limitResponse.?queuing.?queues.orValue(0) == 64`,
}

// flowcontrolStrings are string expressions over the same.
var flowcontrolStrings = []string{
	`'apf ' + string(object.?spec.?matchingPrecedence.orValue(-1)) + ' ' + object.?spec.?priorityLevelConfiguration.?name.orValue('-') + ' gen=' + string(object.metadata.?generation.orValue(-1)) + ' ' + object.?status.?conditions.orValue([]).map(c, c.type + '=' + c.status).join(',')`,
	`'plc ' + object.?spec.?type.orValue('-') + ' ' + string(object.?spec.?limited.?nominalConcurrencyShares.orValue(-1)) + ' ' + object.?spec.?limited.?limitResponse.?type.orValue('-')`,
}

// flowcontrolRules are rule templates of the kinds they write.
var flowcontrolRules = []ruleTemplate{
	{[]string{"flowcontrol.apiserver.k8s.io"}, []string{"v1"}, []string{"flowschemas", "flowschemas/status"}},
	{[]string{"flowcontrol.apiserver.k8s.io"}, []string{"*"}, []string{"flowschemas", "prioritylevelconfigurations"}},
}

func init() {
	boolAtoms = append(boolAtoms, flowcontrolAtoms...)
	stringAtoms = append(stringAtoms, flowcontrolStrings...)
	ruleTemplates = append(ruleTemplates, flowcontrolRules...)
}

const (
	rndFlowSchema    = "rnd-fs"
	rndPriorityLevel = "rnd-plc"
)

// flowSchemaYAML is the scratch FlowSchema: the priority level it names, its precedence (none:
// the server's default) and distinguisher.
func flowSchemaYAML(level, precedence, distinguisher string) string {
	p := ""
	if precedence != "" {
		p = "\n  matchingPrecedence: " + precedence
	}
	return fmt.Sprintf(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: %s
spec:
  priorityLevelConfiguration:
    name: %s%s
  distinguisherMethod:
    type: %s
  rules:
  - subjects:
    - kind: Group
      group:
        name: rnd-apf
    resourceRules:
    - verbs: ["get", "list"]
      apiGroups: [""]
      resources: ["configmaps"]
      namespaces: ["*"]
`, rndFlowSchema, level, p, distinguisher)
}

// priorityLevelYAML is the scratch PriorityLevelConfiguration: its shares, and its queues
// (none: the server's defaults).
func priorityLevelYAML(shares int, queues string) string {
	q := ""
	if queues != "" {
		q = "\n        queues: " + queues + "\n        handSize: 4"
	}
	return fmt.Sprintf(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: %s
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: %d
    limitResponse:
      type: Queue
      queuing:
        queueLengthLimit: 50%s
`, rndPriorityLevel, shares, q)
}

// flowcontrolWrite writes the scratch FlowSchema or priority level with kubectl, as a random
// user.
func (w *randomWorld) flowcontrolWrite() {
	u := w.user()
	file := func(text string) string { return w.manifestFile("apf.yaml", text) }
	fs := func() string {
		return file(flowSchemaYAML(pick(w.r, rndPriorityLevel, "workload-low", "rnd-missing"), pick(w.r, "", "500", "1000", "9000"), pick(w.r, "ByUser", "ByNamespace")))
	}
	var args []string
	switch w.r.IntN(10) {
	case 0, 1:
		args = kubectlApplyArgs(w, fs())
	case 2:
		args = []string{pick(w.r, "create", "replace"), "-f", fs()}
	case 3:
		args = []string{"patch", "flowschema", rndFlowSchema, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"matchingPrecedence":%d}}`, pick(w.r, 700, 1000, 2000))}
	case 4:
		args = []string{"patch", "flowschema", rndFlowSchema, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"priorityLevelConfiguration":{"name":%q}}}`, pick(w.r, rndPriorityLevel, "rnd-missing", "workload-low"))}
	case 5:
		// A status written through its subresource (the main resource's update keeps it).
		sub := pick(w.r, []string{"--subresource=status"}, []string{})
		args = append([]string{"patch", "flowschema", rndFlowSchema, "--type=merge", "-p", `{"status":{"conditions":[{"type":"Dangling","status":"` + pick(w.r, "True", "False") + `","reason":"rnd","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`}, sub...)
	case 6:
		args = []string{pick(w.r, "label", "annotate"), pick(w.r, "flowschema/"+rndFlowSchema, "prioritylevelconfiguration/"+rndPriorityLevel), "--overwrite", "color=" + pick(w.r, "red", "blue")}
	case 7:
		args = kubectlApplyArgs(w, file(priorityLevelYAML(pick(w.r, 5, 10, 30), pick(w.r, "", "16"))))
	case 8:
		args = []string{"patch", "prioritylevelconfiguration", rndPriorityLevel, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"limited":{"nominalConcurrencyShares":%d}}}`, pick(w.r, 5, 15, 40))}
	default:
		args = []string{"delete", pick(w.r, "flowschema/"+rndFlowSchema, "prioritylevelconfiguration/"+rndPriorityLevel), "--wait=false"}
		if chance(w.r, 0.3) {
			args = append(args, "--dry-run=server")
		}
	}
	args = append(args, u.kubectlAs()...)
	w.got("kubectl "+strings.Join(args, " "), w.kubectl(args...))
}
