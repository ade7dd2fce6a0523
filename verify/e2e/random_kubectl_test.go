package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// More of kubectl's everyday commands for TestRandomParity, each a shape of requests of its
// own: an in-place resize (a strategic merge patch of pods/resize, whose strategy keeps all
// but the containers' resources), set env, set resources and set serviceaccount (strategic
// merge patches of a Deployment's template), rollout restart and set image of a StatefulSet or
// a DaemonSet, rollout pause and resume, debug (a strategic merge patch of
// pods/ephemeralcontainers, a copy of a pod, or a privileged pod on a node; Pod Security
// Admission refuses the last in rnd-c), create role, clusterrole and rolebinding (the
// scenario's users are cluster admins: the RBAC storage's escalation check lets them through),
// create serviceaccount, quota, pdb, priorityclass, cronjob, ingress and service (clusterip, headless or not; nodeport: an allocated port, or one asked for), label and annotate of every
// pod of a namespace (a patch each), delete by label selector (a delete each), client-side
// and server-side apply of a Deployment (a three-way strategic merge patch; an apply patch
// with or without --force-conflicts, or a dry run, kubectl diff's among them), replace --force (a delete and a create)
// and scale with --current-replicas (a precondition kubectl checks itself).

// kubectlApplyArgs is kubectl apply of the file at path: client-side (a create, or a three-way
// strategic merge patch) or server-side (with or without --force-conflicts), a dry run at
// times, or kubectl diff of it (diffArgs).
func kubectlApplyArgs(w *randomWorld, path string) []string {
	args := []string{"apply", "-f", path}
	if w.r.IntN(2) == 0 {
		args = append(args, "--server-side", "--field-manager="+pick(w.r, "kubectl", "rnd-apply"))
		if chance(w.r, 0.5) {
			args = append(args, "--force-conflicts")
		}
	}
	if chance(w.r, 0.2) {
		args = append(args, "--dry-run=server")
	}
	if chance(w.r, 0.25) {
		// kubectl diff: the same patch or apply, with dryRun=All (a GitOps tool's
		// preview); it exits 1 where the object differs.
		return diffArgs(w, path)
	}
	return args
}

// manifestFile writes text to a file of the given name in a directory of the test's, for kubectl
// -f, and returns its path.
func (w *randomWorld) manifestFile(name, text string) string {
	path := filepath.Join(w.t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return path
}

// diffArgs is kubectl diff of the file at path: client-side (a dry-run strategic merge
// patch, or a dry-run create of an object not there) or server-side (a dry-run apply).
func diffArgs(w *randomWorld, path string) []string {
	args := []string{"diff", "-f", path}
	if chance(w.r, 0.5) {
		args = append(args, "--server-side", "--field-manager="+pick(w.r, "kubectl", "rnd-apply"))
		if chance(w.r, 0.5) {
			args = append(args, "--force-conflicts")
		}
	}
	return args
}

// kubectlShapeAtoms read what these commands change.
var kubectlShapeAtoms = []string{
	`object.?spec.?containers.orValue([]).all(c, c.?resources.?limits[?'cpu'].orValue('0') != '200m')`,
	`object.?spec.?template.?spec.?containers.orValue([]).all(c, c.?env.orValue([]).all(e, e.name != 'MODE' || e.?value.orValue('') != 'b'))`,
	`object.?spec.?template.?spec.?containers.orValue([]).all(c, !has(c.resources) || !has(c.resources.limits) || c.resources.limits.size() < 1)`,
	`!object.?spec.?paused.orValue(false)`,
	`!object.?spec.?hostPID.orValue(false)`,
	`object.?spec.?template.?spec.?serviceAccountName.orValue('default') == 'default'`,
	`object.?rules.orValue([]).all(r, !r.verbs.exists(v, v == 'delete'))`,
	`object.?spec.?hard.orValue({}).size() < 2`,
	`object.?spec.?ephemeralContainers.orValue([]).all(c, c.image != 'busybox')`,
	`object.?spec.?schedule.orValue('') != '*/5 * * * *'`,
	`object.?spec.?ports.orValue([]).all(p, p.?nodePort.orValue(0) == 0 || p.nodePort < 30500)`,
}

// kubectlShapeStrings are string expressions over the same.
var kubectlShapeStrings = []string{
	`'resources ' + object.?spec.?containers.orValue([]).map(c, c.name + '=' + c.?resources.?requests[?'cpu'].orValue('-') + '/' + c.?resources.?limits[?'cpu'].orValue('-')).join(',')`,
	`'template ' + object.?spec.?template.?spec.?containers.orValue([]).map(c, c.name + ' env=' + string(size(c.?env.orValue([]))) + ' image=' + c.image).join(',')`,
	`'host ' + string(object.?spec.?hostPID.orValue(false)) + ' ' + string(object.?spec.?hostNetwork.orValue(false)) + ' volumes=' + object.?spec.?volumes.orValue([]).map(v, v.name).join(',')`,
	`'service ' + object.?spec.?type.orValue('-') + ' headless=' + string(object.?spec.?clusterIP.orValue('') == 'None') + ' nodePorts=' + object.?spec.?ports.orValue([]).map(p, string(p.?nodePort.orValue(0))).join(',')`,
}

// kubectlShapeRules are rule templates of the kinds they write.
var kubectlShapeRules = []ruleTemplate{
	{[]string{""}, []string{"v1"}, []string{"pods/resize", "pods/ephemeralcontainers"}},
	{[]string{"rbac.authorization.k8s.io"}, []string{"v1"}, []string{"roles", "clusterroles", "rolebindings"}},
	{[]string{""}, []string{"v1"}, []string{"serviceaccounts", "resourcequotas", "services"}},
	{[]string{"batch", "policy", "scheduling.k8s.io", "networking.k8s.io"}, []string{"v1"}, []string{"*"}},
}

func init() {
	boolAtoms = append(boolAtoms, kubectlShapeAtoms...)
	stringAtoms = append(stringAtoms, kubectlShapeStrings...)
	ruleTemplates = append(ruleTemplates, kubectlShapeRules...)
}

// kubectlMore runs, as a random user, one of the commands above.
func (w *randomWorld) kubectlMore() {
	u := w.user()
	ns := pick(w.r, w.namespaces()...)
	dep := func() string { return w.existing(deploymentsGVR, ns, depNames) }
	pod := func() string { return w.existing(podsGVR, ns, podNames) }
	var args []string
	switch w.r.IntN(18) {
	case 0:
		// The server writes a quantity in its canonical form: 0.2 is 200m.
		cpu := pick(w.r, "100m", "150m", "0.2", "200m")
		args = []string{"patch", "pod", pod(), "--subresource=resize", "-n", ns, "-p",
			fmt.Sprintf(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":%q},"limits":{"cpu":%q}}}]}}`, cpu, cpu)}
	case 1:
		args = []string{"set", "env", "deployment/" + dep(), "MODE=" + pick(w.r, "a", "b"), "-n", ns}
	case 2:
		args = []string{"set", "resources", "deployment/" + dep(), "-c=c", "--limits=cpu=" + pick(w.r, "200m", "0.5"), "--requests=cpu=100m", "-n", ns}
	case 3:
		args = []string{"set", "serviceaccount", "deployment/" + dep(), pick(w.r, "robot", "default"), "-n", ns}
	case 4:
		args = []string{"rollout", pick(w.r, "pause", "resume"), "deployment/" + dep(), "-n", ns}
	case 5:
		args = []string{"debug", pod(), "--image=" + pick(w.r, "busybox", "nginx"), "--container=dbg-" + pick(w.r, "a", "b"), "--profile=general", "-n", ns, "--", "sleep", "1"}
	case 6:
		args = []string{"debug", pod(), "--image=busybox", "--copy-to=" + pick(w.r, "dbg-copy-a", "dbg-copy-b"), "--container=dbg", "--profile=general", "-n", ns, "--", "sleep", "1"}
	case 7:
		args = []string{"debug", "node/" + w.existing(nodesGVR, "", nodeNames), "--image=busybox", "--profile=" + pick(w.r, "general", "baseline"), "-n", ns, "--", "true"}
	case 8:
		switch w.r.IntN(3) {
		case 0:
			args = []string{"create", "role", pick(w.r, "r-k", "r-l"), "--verb=" + pick(w.r, "get,list", "get,delete"), "--resource=" + pick(w.r, "pods", "configmaps"), "-n", ns}
		case 1:
			args = []string{"create", "clusterrole", pick(w.r, "rnd-cr-k", "rnd-cr-l"), "--verb=" + pick(w.r, "get", "get,delete"), "--resource=" + pick(w.r, "nodes", "pods")}
		default:
			args = []string{"create", "rolebinding", pick(w.r, "rb-k", "rb-l"), "--clusterrole=" + pick(w.r, "view", "edit", "rnd-cr-k"), "--user=" + pick(w.r, "rnd-alice", "rnd-bob"), "-n", ns}
		}
	case 9:
		switch w.r.IntN(8) {
		case 0:
			args = []string{"create", "serviceaccount", pick(w.r, "sa-k", "robot"), "-n", ns}
		case 1:
			args = []string{"create", "quota", pick(w.r, "q-k", "q-l"), "--hard=" + pick(w.r, "pods=20", "pods=20,configmaps=40"), "-n", ns}
		case 2:
			args = []string{"create", "pdb", pick(w.r, "pdb-k", "pdb-l"), "--selector=app=" + pick(w.r, "web", "db"), "--min-available=" + pick(w.r, "1", "50%"), "-n", ns}
		case 3:
			args = []string{"create", "priorityclass", pick(w.r, "rnd-pc-k", "rnd-pc-l"), "--value=" + pick(w.r, "100", "1000"), "--description=kubectl"}
		case 4:
			args = []string{"create", "cronjob", pick(w.r, "cj-k", "cj-l"), "--image=busybox", "--schedule=" + pick(w.r, "*/5 * * * *", "0 * * * *"), "-n", ns, "--", "true"}
		case 5:
			args = []string{"create", "ingress", pick(w.r, "ing-k", "ing-l"), "--rule=" + pick(w.r, "a.example/=svc-k:80", "b.example/x*=svc-l:8080"), "-n", ns}
		case 6:
			args = []string{"create", "service", "nodeport", pick(w.r, "svc-np", "svc-k"), "--tcp=80:8080", "-n", ns}
			if chance(w.r, 0.5) {
				// A node port asked for: the server allocates it, or refuses the request
				// before admission when another Service has it.
				args = append(args, "--node-port="+pick(w.r, "30450", "30550"))
			}
		default:
			args = []string{"create", "service", "clusterip", pick(w.r, "svc-cl", "svc-l"), "--tcp=" + pick(w.r, "80:8080", "443"), "-n", ns}
			if chance(w.r, 0.3) {
				args = append(args, "--clusterip=None") // headless: no address allocated
			}
		}
	case 10:
		args = []string{pick(w.r, "label", "annotate"), "pods", "--all", "--overwrite", "-n", ns, pick(w.r, "tier=", "rnd.vapc.dev/block=") + pick(w.r, "a", "b")}
	case 11:
		args = []string{"delete", pick(w.r, "configmaps", "pods"), "-l", "color=" + pick(w.r, "red", "blue"), "-n", ns, "--wait=false"}
		if chance(w.r, 0.5) {
			args = append(args, "--dry-run=server")
		}
	case 12, 13:
		name := pick(w.r, "kd-a", "kd-ap")
		body := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  namespace: %s
  labels:
    color: %s
spec:
  replicas: %s
  selector:
    matchLabels: {app: %s}
  template:
    metadata:
      labels: {app: %s}
    spec:
      containers:
      - name: c
        image: %s
`, name, ns, pick(w.r, "red", "blue"), pick(w.r, "1", "2"), name, name, pick(w.r, "nginx", "busybox"))
		args = kubectlApplyArgs(w, w.manifestFile("deployment.yaml", body))
	case 14:
		body := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  n: %q\n", w.existing(configMapsGVR, ns, cmNames), ns, pick(w.r, "1", "x"))
		// A finalizer keeps the ConfigMap: kubectl would wait for its deletion without end.
		args = []string{"replace", "--force", "--timeout=15s", "-f", w.manifestFile("cm.yaml", body)}
	case 15:
		args = []string{"scale", "deployment", dep(), "--current-replicas=" + pick(w.r, "1", "2"), "--replicas=" + pick(w.r, "0", "3"), "-n", ns}
	case 16:
		// The other workloads' templates: a StatefulSet's or a DaemonSet's.
		workload := pick(w.r, "statefulset/"+w.existing(statefulSetsGVR, ns, []string{"ss-a", "ss-b"}), "daemonset/"+w.existing(daemonSetsGVR, ns, dsNames))
		if chance(w.r, 0.5) {
			args = []string{"rollout", "restart", workload, "-n", ns}
		} else {
			args = []string{"set", "image", workload, "c=" + pick(w.r, "busybox:1.36", "nginx:1.27"), "-n", ns}
		}
	default:
		args = []string{pick(w.r, "label", "annotate"), "node", w.existing(nodesGVR, "", nodeNames), "--overwrite", pick(w.r, "tier", "rnd.vapc.dev/block") + "=" + pick(w.r, "a", "b")}
	}
	args = append(args, u.kubectlAs()...)
	w.got("kubectl "+strings.Join(args, " "), w.kubectl(args...))
}
