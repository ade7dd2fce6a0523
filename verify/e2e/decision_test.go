package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/vapc-dev/vapc/verify/e2e/harness"
	"github.com/vapc-dev/vapc/verify/replay"
)

// Users of the scenarios.
const (
	draino       = "system:serviceaccount:kube-system:draino"
	kcm          = "system:kube-controller-manager"
	e2eAlice     = "e2e-alice"
	e2eBob       = "e2e-bob"
	podsNS       = "e2e-pods"
	guardedNS    = "e2e-guarded"
	laterNS      = "e2e-later"
	runtimeNS    = "e2e-runtime"
	identityNS   = "e2e-identity"
	policyDenied = "ValidatingAdmissionPolicy '"
)

var (
	podsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodesGVR      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// decisions drives a server through the scenarios and remembers what it answered.
type decisions struct {
	*cluster
	t      *testing.T
	ctx    context.Context
	denied []denial // every denial of a ValidatingAdmissionPolicy the server returned to the test
	sent   int
}

// denial is a refusal the server returned.
type denial struct {
	what    string
	auditID string // empty for kubectl requests
	code    int32
	message string
}

// want checks the outcome of one request: admitted when deny is empty, else refused with a
// message that contains deny.
func (d *decisions) want(what string, err error, deny string) {
	d.t.Helper()
	d.sent++
	switch {
	case deny == "" && err != nil:
		errorf(d.t, "%s: %v, want admitted", what, err)
	case deny == "":
	case err == nil:
		errorf(d.t, "%s: admitted, want denied with %q", what, deny)
	case !strings.Contains(err.Error(), deny):
		errorf(d.t, "%s: %v, want denied with %q", what, err, deny)
	default:
		if st, ok := statusOf(err); ok {
			d.denied = append(d.denied, denial{what: what, auditID: d.lastAuditID(), code: st.Code, message: st.Message})
		}
	}
}

// as returns a dynamic client that impersonates the user.
func (d *decisions) as(user string, groups []string, uid string, extra map[string][]string) dynamic.Interface {
	return d.dynamicFor(rest.ImpersonationConfig{UserName: user, Groups: groups, UID: uid, Extra: extra})
}

// kubectl runs kubectl and returns its error with stderr.
func (d *decisions) kubectl(args ...string) error {
	_, _, err := d.s.Kubectl(d.ctx, args...)
	return err
}

func pod(name, node string, tolerations ...any) *unstructured.Unstructured {
	spec := map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}
	if node != "" {
		spec["nodeName"] = node
	}
	if len(tolerations) > 0 {
		spec["tolerations"] = tolerations
	}
	return obj(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": podsNS}, "spec": spec})
}

func toleration(key string, seconds int64) any {
	return map[string]any{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
}

func node(name string, labels map[string]any, conditions ...any) *unstructured.Unstructured {
	meta := map[string]any{"name": name}
	if labels != nil {
		meta["labels"] = labels
	}
	return obj(map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": map[string]any{"conditions": conditions}})
}

func condition(typ, status string) any {
	now := time.Now().UTC().Format(time.RFC3339)
	return map[string]any{"type": typ, "status": status, "reason": typ + status, "lastHeartbeatTime": now, "lastTransitionTime": now}
}

func configMap(ns, name string, labels map[string]any, data map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": name, "namespace": ns}
	if labels != nil {
		meta["labels"] = labels
	}
	u := obj(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})
	if data != nil {
		u.Object["data"] = data
	}
	return u
}

func secret(name string) *unstructured.Unstructured {
	return obj(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name, "namespace": identityNS}, "stringData": map[string]any{"k": "v"}})
}

func eviction(name string, grace *int64) *unstructured.Unstructured {
	u := obj(map[string]any{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": map[string]any{"name": name, "namespace": podsNS}})
	if grace != nil {
		u.Object["deleteOptions"] = map[string]any{"gracePeriodSeconds": *grace}
	}
	return u
}

// TestDecisionParity drives a real kube-apiserver through scenarios of the in-tree guards
// (re-bound [Deny, Audit], plus a copy bound [Audit]) and the test policies of
// testdata/decision, then replays the server's own audit log with --check-recorded semantics:
// zero disagreements, zero indeterminate requests, and every denial the server returned
// predicted with the same code and message.
func TestDecisionParity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; skipped with -short")
	}
	start := time.Now()
	s := harness.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	d := &decisions{cluster: newCluster(t, s), t: t, ctx: ctx}
	set := inTreeGuards(t).add(readPolicies(t, "testdata/decision/policies.yaml"))
	if len(set.policies) < 5 {
		t.Fatalf("%d policies, want the in-tree guards and the test policies", len(set.policies))
	}
	d.setup(set)
	d.kosmosFlapping()
	d.drainer()
	d.tolerations()
	d.configMaps()
	d.runtimeErrors()
	d.identities()
	t.Logf("scenarios: %d requests checked, %d denials, %s", d.sent, len(d.denied), time.Since(start).Round(time.Millisecond))

	// The apiserver writes an event once it has answered: wait for the last one.
	last := d.lastAuditID()
	waitForAuditEvent(ctx, t, s.AuditLogPath(), func(e *auditEvent) bool {
		return string(e.AuditID) == last && e.Stage == "ResponseComplete"
	})
	if dir := os.Getenv("VAPC_E2E_RECORD"); dir != "" {
		record(t, dir, s.AuditLogPath(), set)
	}
	checkReplay(t, s.AuditLogPath(), set, d.denied)
}

// setup creates the namespaces, grants the impersonated users, installs the policies and
// waits until they are active.
func (d *decisions) setup(set policySet) {
	ctx := d.ctx
	d.namespace(ctx, podsNS, nil)
	d.namespace(ctx, guardedNS, map[string]string{"e2e.vapc.dev/guarded": "true", "team": "payments"})
	d.namespace(ctx, laterNS, nil)
	d.namespace(ctx, runtimeNS, map[string]string{"e2e.vapc.dev/runtime": "true"})
	d.namespace(ctx, identityNS, map[string]string{"e2e.vapc.dev/identity": "true"})
	for _, u := range []string{draino, kcm, e2eAlice, e2eBob} {
		d.grantAll(ctx, u)
	}
	d.install(ctx, set)
	d.sync(ctx)
}

// kosmosFlapping: a Kosmos leaf node goes Unknown, the node lifecycle controller tries to
// delete its pods, the node comes back Ready.
func (d *decisions) kosmosFlapping() {
	ctx := d.ctx
	ready := condition("Ready", "True")
	d.put(ctx, node("kosmos-leaf-1", map[string]any{"kosmos.io/node": "true"}, ready))
	d.put(ctx, node("kosmos-leaf-2", map[string]any{"kosmos.io/node": "true"}, ready))
	d.put(ctx, node("worker-1", nil, ready))
	var web3 *unstructured.Unstructured
	for _, p := range []*unstructured.Unstructured{pod("web-1", "kosmos-leaf-1"), pod("web-2", "kosmos-leaf-1"), pod("web-3", "kosmos-leaf-1"), pod("web-4", "worker-1"), pod("db-1", "kosmos-leaf-2")} {
		out := d.put(ctx, p)
		if p.GetName() == "web-3" {
			web3 = out
		}
	}
	d.sync(ctx)
	nc := d.as(nodeController, nil, "", nil)
	pods := func(c dynamic.Interface) dynamic.ResourceInterface { return c.Resource(podsGVR).Namespace(podsNS) }
	notReady := "may not delete pod e2e-pods/"

	d.want("node-controller deletes web-1 on a Ready Kosmos node", pods(nc).Delete(ctx, "web-1", metav1.DeleteOptions{}), "")

	// The node stops posting status: Ready Unknown (a merge patch of the status).
	d.want("node-lifecycle marks kosmos-leaf-1 Unknown", d.kubectl("patch", "node", "kosmos-leaf-1", "--subresource=status", "--type=merge",
		"-p", `{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown","message":"Kubelet stopped posting node status."}]}}`), "")
	d.sync(ctx)
	d.want("node-controller deletes web-2 on the Unknown Kosmos node", pods(nc).Delete(ctx, "web-2", metav1.DeleteOptions{}), notReady+"web-2: its Kosmos node kosmos-leaf-1 is not Ready")
	d.want("node-controller deletes web-2 in a dry run", pods(nc).Delete(ctx, "web-2", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}), notReady+"web-2")
	d.want("node-controller deletes the already terminating web-1", pods(nc).Delete(ctx, "web-1", metav1.DeleteOptions{}), "")
	d.want("node-controller deletes the already terminating web-1 with a longer grace period", pods(nc).Delete(ctx, "web-1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](60)}), "")
	d.want("node-controller force-deletes the terminating web-1", pods(nc).Delete(ctx, "web-1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}), notReady+"web-1")
	kc := d.as(kcm, nil, "", nil)
	d.want("kube-controller-manager deletes web-3", pods(kc).Delete(ctx, "web-3", metav1.DeleteOptions{}), notReady+"web-3")
	d.want("the garbage collector (a uid precondition) deletes web-3", pods(nc).Delete(ctx, "web-3", metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID(web3.GetUID()))}, PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}), "")
	d.want("node-controller deletes web-4 on an ordinary node", pods(nc).Delete(ctx, "web-4", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}), "")
	d.want("node-controller deletes db-1 on the other, Ready Kosmos node", pods(nc).Delete(ctx, "db-1", metav1.DeleteOptions{}), "")

	// The node comes back (a strategic merge patch of the status, as the kubelet sends).
	d.want("the kubelet reports kosmos-leaf-1 Ready", d.kubectl("patch", "node", "kosmos-leaf-1", "--subresource=status", "--type=strategic",
		"-p", `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status"}]}}`), "")
	d.sync(ctx)
	d.want("node-controller deletes web-2 on the Ready again Kosmos node", pods(nc).Delete(ctx, "web-2", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}), "")

	// It flaps again; a new pod lands on it; the node controller deletes the node.
	d.want("node-lifecycle marks kosmos-leaf-1 Unknown again", d.kubectl("patch", "node", "kosmos-leaf-1", "--subresource=status", "--type=json",
		"-p", `[{"op":"replace","path":"/status/conditions/0/status","value":"Unknown"}]`), "")
	d.put(ctx, pod("web-5", "kosmos-leaf-1"))
	d.sync(ctx)
	d.want("node-controller deletes web-5 on the flapping node", pods(nc).Delete(ctx, "web-5", metav1.DeleteOptions{}), notReady+"web-5")
	d.want("node-controller deletes the node kosmos-leaf-1", nc.Resource(nodesGVR).Delete(ctx, "kosmos-leaf-1", metav1.DeleteOptions{}), "")
	d.sync(ctx)
	d.want("node-controller deletes web-5 once its node is gone", pods(nc).Delete(ctx, "web-5", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}), "")
}

// drainer: a node-problem-detector condition on a node, Draino cordons it and evicts its pods;
// a cordon of a healthy node is refused in every patch type.
func (d *decisions) drainer() {
	ctx := d.ctx
	d.put(ctx, node("worker-2", nil, condition("Ready", "True"), condition("KernelDeadlock", "False")))
	d.put(ctx, node("worker-3", nil, condition("Ready", "True"), condition("KernelDeadlock", "False")))
	d.put(ctx, pod("api-1", "worker-2"))
	d.put(ctx, pod("api-2", "worker-2"))
	d.want("node-problem-detector reports KernelDeadlock on worker-2", d.kubectl("patch", "node", "worker-2", "--subresource=status", "--type=strategic",
		"-p", `{"status":{"conditions":[{"type":"KernelDeadlock","status":"True","reason":"DockerHung","message":"task docker:1234 blocked for more than 120 seconds"}]}}`), "")
	as := "--as=" + draino
	cordon := "may not cordon node worker-3"
	d.want("draino cordons the healthy worker-3 (strategic)", d.kubectl("patch", "node", "worker-3", as, "--type=strategic", "-p", `{"spec":{"unschedulable":true}}`), cordon)
	d.want("draino cordons the healthy worker-3 (merge)", d.kubectl("patch", "node", "worker-3", as, "--type=merge", "-p", `{"spec":{"unschedulable":true}}`), cordon)
	d.want("draino cordons the healthy worker-3 (json)", d.kubectl("patch", "node", "worker-3", as, "--type=json", "-p", `[{"op":"add","path":"/spec/unschedulable","value":true}]`), cordon)
	d.want("draino cordons the healthy worker-3 (dry run)", d.kubectl("patch", "node", "worker-3", as, "--dry-run=server", "-p", `{"spec":{"unschedulable":true}}`), cordon)
	d.want("draino cordons worker-2 with KernelDeadlock (merge)", d.kubectl("patch", "node", "worker-2", as, "--type=merge", "-p", `{"spec":{"unschedulable":true}}`), "")
	dr := d.as(draino, nil, "", nil)
	evict := func(name string, grace *int64) error {
		_, err := dr.Resource(podsGVR).Namespace(podsNS).Create(ctx, eviction(name, grace), metav1.CreateOptions{}, "eviction")
		return err
	}
	d.want("draino evicts api-1 without a grace period", evict("api-1", ptr.To[int64](0)), "may not evict e2e-pods/api-1 with a grace period of 0s")
	d.want("draino evicts api-1", evict("api-1", ptr.To[int64](30)), "")
	d.want("draino evicts api-2", evict("api-2", nil), "")
	d.want("draino uncordons worker-2 (json)", d.kubectl("patch", "node", "worker-2", as, "--type=json", "-p", `[{"op":"replace","path":"/spec/unschedulable","value":false}]`), "")
	d.want("draino labels worker-3 (update)", func() error {
		n, err := dr.Resource(nodesGVR).Get(ctx, "worker-3", metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.SetLabels(map[string]string{"draino": "seen"})
		_, err = dr.Resource(nodesGVR).Update(ctx, n, metav1.UpdateOptions{})
		return err
	}(), "")
	d.want("an administrator cordons worker-3", d.kubectl("cordon", "worker-3"), "")
	d.want("an administrator uncordons worker-3", d.kubectl("uncordon", "worker-3"), "")
	d.want("node-problem-detector reports ReadonlyFilesystem on worker-3", d.kubectl("patch", "node", "worker-3", "--subresource=status", "--type=strategic",
		"-p", `{"status":{"conditions":[{"type":"ReadonlyFilesystem","status":"True","reason":"FilesystemIsReadOnly"}]}}`), "")
	d.want("draino cordons worker-3 with ReadonlyFilesystem (update)", func() error {
		n, err := dr.Resource(nodesGVR).Get(ctx, "worker-3", metav1.GetOptions{})
		if err != nil {
			return err
		}
		_ = unstructured.SetNestedField(n.Object, true, "spec", "unschedulable")
		_, err = dr.Resource(nodesGVR).Update(ctx, n, metav1.UpdateOptions{})
		return err
	}(), "")
}

// tolerations: the ConfigMap param by name, changed and deleted between requests.
func (d *decisions) tolerations() {
	ctx := d.ctx
	floor := configMap("kube-system", "eviction-toleration-floor", nil, map[string]any{"minTolerationSeconds": "60"})
	d.put(ctx, floor)
	d.sync(ctx)
	rs := d.as("system:serviceaccount:kube-system:replicaset-controller", nil, "", nil)
	create := func(c dynamic.Interface, p *unstructured.Unstructured, dryRun bool) error {
		o := metav1.CreateOptions{}
		if dryRun {
			o.DryRun = []string{metav1.DryRunAll}
		}
		_, err := c.Resource(podsGVR).Namespace(podsNS).Create(ctx, p, o)
		return err
	}
	unreachable, notReady := "node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"
	short := "tolerates unreachable or not-ready nodes for less than"
	d.want("a pod tolerates unreachable nodes for 10s", create(rs, pod("tol-1", "", toleration(unreachable, 10)), false), "pod tol-1 "+short+" 60 seconds (node.kubernetes.io/unreachable: 10s)")
	d.want("a pod tolerates unreachable nodes for 10s (dry run)", create(rs, pod("tol-1", "", toleration(unreachable, 10)), true), short)
	d.want("a pod tolerates unreachable nodes for 300s", create(rs, pod("tol-2", "worker-1", toleration(unreachable, 300)), false), "")
	d.want("a patch adds a 5s not-ready toleration (json)", d.kubectl("patch", "pod", "-n", podsNS, "tol-2", "--type=json",
		"-p", `[{"op":"add","path":"/spec/tolerations/-","value":{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":5}}]`), short+" 60 seconds (node.kubernetes.io/not-ready: 5s)")
	d.want("a patch adds a 120s not-ready toleration (strategic)", d.kubectl("patch", "pod", "-n", podsNS, "tol-2", "--type=strategic",
		"-p", `{"spec":{"tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":120}]}}`), "")
	d.want("a patch labels tol-2 (merge)", d.kubectl("patch", "pod", "-n", podsNS, "tol-2", "--type=merge", "-p", `{"metadata":{"labels":{"app":"api"}}}`), "")

	floor.Object["data"] = map[string]any{"minTolerationSeconds": "5"}
	d.put(ctx, floor)
	d.sync(ctx)
	d.want("a pod tolerates unreachable nodes for 10s with a floor of 5", create(rs, pod("tol-1", "", toleration(unreachable, 10)), false), "")
	d.want("a pod tolerates not-ready nodes for 2s with a floor of 5", create(rs, pod("tol-3", "", toleration(notReady, 2)), false), "less than 5 seconds (node.kubernetes.io/not-ready: 2s)")

	floor.Object["data"] = map[string]any{"minTolerationSeconds": "soon"}
	d.put(ctx, floor)
	d.sync(ctx)
	d.want("a pod tolerates not-ready nodes for 30s with an invalid floor", create(rs, pod("tol-3", "", toleration(notReady, 30)), false), "less than 60 seconds")

	d.remove(ctx, floor)
	d.sync(ctx)
	d.want("a pod tolerates not-ready nodes for 30s without the ConfigMap", create(rs, pod("tol-4", "", toleration(notReady, 30)), false), "")
}

// configMaps: namespace and object selectors, a matchCondition, two bindings of one policy,
// namespaceObject, request.dryRun, oldObject, and a namespace relabelled between requests.
func (d *decisions) configMaps() {
	ctx := d.ctx
	alice := d.as(e2eAlice, []string{"e2e-writers"}, "uid-alice", map[string][]string{"team": {"platform", "sre"}})
	cms := func(c dynamic.Interface, ns string) dynamic.ResourceInterface {
		return c.Resource(configMapsGVR).Namespace(ns)
	}
	create := func(c dynamic.Interface, cm *unstructured.Unstructured, dryRun bool) error {
		o := metav1.CreateOptions{}
		if dryRun {
			o.DryRun = []string{metav1.DryRunAll}
		}
		_, err := cms(c, cm.GetNamespace()).Create(ctx, cm, o)
		return err
	}
	secretData := map[string]any{"password": "hunter2"}
	d.want("alice creates a configmap with a password", create(alice, configMap(guardedNS, "cm-1", nil, secretData), false), "configmap cm-1 of team payments holds a password (dryRun false, CREATE)")
	d.want("alice creates a configmap with a password (dry run)", create(alice, configMap(guardedNS, "cm-1", nil, secretData), true), "holds a password (dryRun true, CREATE)")
	d.want("an administrator creates a configmap with a password", create(d.dyn, configMap(guardedNS, "cm-2", nil, secretData), false), "")
	d.want("an administrator creates a checked configmap with a password", create(d.dyn, configMap(guardedNS, "cm-3", map[string]any{"e2e.vapc.dev/check-admins": ""}, secretData), false), "configmap cm-3 of team payments holds a password")
	d.want("alice creates a skipped configmap with a password", create(alice, configMap(guardedNS, "cm-4", map[string]any{"e2e.vapc.dev/skip": "yes"}, secretData), false), "")
	d.want("alice creates an audited configmap", create(alice, configMap(guardedNS, "cm-5", map[string]any{"e2e.vapc.dev/audit": "true"}, map[string]any{"owner": "alice"}), false), "")
	d.want("alice changes the owner (update)", func() error {
		cm, err := cms(alice, guardedNS).Get(ctx, "cm-5", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Object["data"] = map[string]any{"owner": "bob"}
		_, err = cms(alice, guardedNS).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}(), "the owner of a configmap cannot change")
	d.want("alice adds a password (merge patch)", func() error {
		_, err := cms(alice, guardedNS).Patch(ctx, "cm-5", types.MergePatchType, []byte(`{"data":{"password":"x"}}`), metav1.PatchOptions{})
		return err
	}(), "configmap cm-5 of team payments holds a password (dryRun false, UPDATE)")
	d.want("alice removes the owner (json patch)", func() error {
		_, err := cms(alice, guardedNS).Patch(ctx, "cm-5", types.JSONPatchType, []byte(`[{"op":"remove","path":"/data/owner"}]`), metav1.PatchOptions{})
		return err
	}(), "the owner of a configmap cannot change")
	d.want("alice adds a key (strategic patch)", func() error {
		_, err := cms(alice, guardedNS).Patch(ctx, "cm-5", types.StrategicMergePatchType, []byte(`{"data":{"color":"blue"}}`), metav1.PatchOptions{})
		return err
	}(), "")
	d.want("alice creates a configmap with a password in an unguarded namespace", create(alice, configMap(laterNS, "cm-6", nil, secretData), false), "")
	d.put(ctx, obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": laterNS, "labels": map[string]any{"e2e.vapc.dev/guarded": "true", "team": "search"}}}))
	d.sync(ctx)
	d.want("alice creates a configmap with a password once the namespace is guarded", create(alice, configMap(laterNS, "cm-7", nil, secretData), false), "configmap cm-7 of team search holds a password")
	d.want("alice updates the configmap created before (update)", func() error {
		cm, err := cms(alice, laterNS).Get(ctx, "cm-6", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.SetLabels(map[string]string{"touched": "yes"})
		_, err = cms(alice, laterNS).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}(), "configmap cm-6 of team search holds a password (dryRun false, UPDATE)")
}

// runtimeErrors: failurePolicy Ignore and Fail with runtime errors in validations and audit
// annotations.
func (d *decisions) runtimeErrors() {
	ctx := d.ctx
	create := func(name string, labels map[string]any, data map[string]any) error {
		_, err := d.dyn.Resource(configMapsGVR).Namespace(runtimeNS).Create(ctx, configMap(runtimeNS, name, labels, data), metav1.CreateOptions{})
		return err
	}
	strict := map[string]any{"e2e.vapc.dev/strict": "true"}
	d.want("a configmap without data (Ignore: errors admit)", create("r-1", nil, nil), "")
	d.want("a huge configmap (Ignore: a false validation denies)", create("r-2", nil, map[string]any{"size": "huge", "replicas": "1"}), "huge configmaps are not allowed")
	d.want("replicas that are not a number (Ignore)", create("r-3", nil, map[string]any{"size": "small", "replicas": "many"}), "")
	d.want("too many replicas (Ignore)", create("r-4", nil, map[string]any{"size": "small", "replicas": "12"}), "too many replicas: 12")
	d.want("a strict configmap without size (Fail: the error denies)", create("r-5", strict, map[string]any{"replicas": "1"}), "no such key: size")
	d.want("a strict small configmap", create("r-6", strict, map[string]any{"size": "small", "replicas": "1"}), "")
	d.want("a strict huge configmap", create("r-7", strict, map[string]any{"size": "huge", "replicas": "1"}), "huge configmaps are not allowed")
	d.want("a strict configmap gets its size removed (merge patch)", d.kubectl("patch", "configmap", "-n", runtimeNS, "r-6", "--type=merge", "-p", `{"data":{"size":null}}`), "no such key: size")
}

// identities: impersonated users with groups, uid and extra, through client-go and kubectl.
func (d *decisions) identities() {
	ctx := d.ctx
	alice := d.as(e2eAlice, []string{"e2e-writers"}, "uid-alice", map[string][]string{"team": {"platform", "sre"}})
	bob := d.as(e2eBob, []string{"e2e-readers"}, "uid-bob", map[string][]string{"team": {"dev"}})
	secrets := func(c dynamic.Interface) dynamic.ResourceInterface {
		return c.Resource(secretsGVR).Namespace(identityNS)
	}
	create := func(c dynamic.Interface, name string) error {
		_, err := secrets(c).Create(ctx, secret(name), metav1.CreateOptions{})
		return err
	}
	d.want("alice creates a secret", create(alice, "s-1"), "")
	d.want("bob creates a secret", create(bob, "s-2"), "e2e-bob (uid uid-bob, groups e2e-readers,system:authenticated, teams dev) may not CREATE secrets")
	d.want("an administrator creates a secret", create(d.dyn, "s-3"), "")
	d.want("bob deletes a secret", secrets(bob).Delete(ctx, "s-3", metav1.DeleteOptions{}), "may not DELETE secrets")
	d.want("bob labels a secret (kubectl, strategic)", d.kubectl("patch", "secret", "-n", identityNS, "s-3", "--as="+e2eBob, "--as-group=e2e-readers", "--as-uid=uid-bob",
		"-p", `{"metadata":{"labels":{"owner":"bob"}}}`), "failed expression: 'e2e-writers' in request.userInfo.groups")
	d.want("alice without her team deletes a secret", secrets(d.as(e2eAlice, []string{"e2e-writers"}, "", nil)).Delete(ctx, "s-3", metav1.DeleteOptions{}), "composited variable \"teams\" fails to evaluate: no such key: extra")
	d.want("alice deletes a secret", secrets(alice).Delete(ctx, "s-3", metav1.DeleteOptions{}), "")
}

// checkReplay replays the audit log and holds it to the server's decisions. It returns the
// replay's records by audit ID.
func checkReplay(t *testing.T, log string, set policySet, denied []denial) map[string]*replay.Record {
	t.Helper()
	return checkReplayFrom(t, log, set, denied, 0, nil)
}

// checkReplayFrom is checkReplay for a log whose policies were in effect from line from on:
// the whole log is replayed (the replay learns the cluster from all of it) and held to the
// server's decisions from that line on, and to the log's verdicts throughout. byDesign, when
// not nil, says which reasons of indeterminate requests are accepted: what the audit log
// cannot tell by its design.
func checkReplayFrom(t *testing.T, log string, set policySet, denied []denial, from int, byDesign func(*replay.Record) bool) map[string]*replay.Record {
	t.Helper()
	start := time.Now()
	r, err := replay.New(set.policies, set.bindings, replay.WithCheckRecorded(true), replay.WithMutatingPolicies(set.mutating, set.mutatingBindings), replay.WithMapOrder(set.mapOrder(t)))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*replay.Record{}
	sum, err := r.Run(context.Background(), []replay.Source{{Name: log}}, func(rec *replay.Record) error {
		byID[rec.AuditID] = rec
		return nil
	})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	t.Logf("replay of %d lines: %d requests, %d evaluated (%d admit, %d deny), %d checked, %s",
		sum.Lines, sum.Requests, sum.Evaluated, sum.Admit, sum.Deny, sum.Checked, time.Since(start).Round(time.Millisecond))
	var text strings.Builder
	if err := replay.WriteText(&text, sum); err != nil {
		t.Fatal(err)
	}
	t.Logf("vapc replay --check-recorded:\n%s", text.String())
	// A disagreement is a wrong claim wherever it is: before from too, as the policies are
	// installed (seed r:1518: a binding's audit annotations claimed 1.26 s after its create,
	// which the server's policy source had not compiled yet).
	for _, dis := range sum.Disagreements {
		rec := byID[dis.AuditID]
		errorf(t, "disagreement at line %d (%s): %s", dis.Line, describeRecord(rec), dis.Detail)
	}
	for _, rec := range byID {
		if rec.Line < from {
			continue
		}
		if rec.Decision == replay.DecisionIndeterminate && (byDesign == nil || !byDesign(rec)) {
			errorf(t, "indeterminate at line %d (%s): %s", rec.Line, describeRecord(rec), rec.Indeterminate)
		}
		if rec.Changed {
			errorf(t, "line %d (%s): recorded %s, predicted %s", rec.Line, describeRecord(rec), rec.Recorded, rec.Decision)
		}
	}
	if sum.MalformedCount > 0 {
		errorf(t, "%d malformed lines: %v", sum.MalformedCount, sum.Malformed)
	}
	// A real server's log jitters by milliseconds: its clock never goes back as rotated logs
	// concatenated out of order do.
	if len(sum.ClockJumps) > 0 {
		errorf(t, "the server's log taken for one whose clock goes back: %+v", sum.ClockJumps)
	}
	// Every denial the server returned to the test, predicted with the same code and message.
	nested := 0
	for _, dn := range denied {
		rec := byID[dn.auditID]
		if rec != nil && nestedDenial(dn.message, rec.Resource) || rec == nil && nestedDenial(dn.message, "") {
			nested++
			continue
		}
		if dn.auditID == "" {
			continue
		}
		switch {
		case rec == nil:
			errorf(t, "%s: the server denied (%d %q) but the replay has no record of audit ID %s", dn.what, dn.code, dn.message, dn.auditID)
		case rec.Decision == replay.DecisionIndeterminate && byDesign != nil && byDesign(rec):
		case rec.Decision != replay.DecisionDeny || rec.Code != dn.code || rec.Message != dn.message:
			errorf(t, "%s: the server denied %d %q, the replay predicts %s %d %q", dn.what, dn.code, dn.message, rec.Decision, rec.Code, rec.Message)
		}
	}
	// Every denial of a loaded policy in the log, kubectl's included, predicted.
	loaded := map[string]bool{}
	for _, p := range set.policies {
		loaded[p.Name] = true
	}
	n := 0
	forEachFinalEventLine(t, log, func(line int, e *auditEvent) {
		if line < from || e.ResponseStatus == nil || e.ResponseStatus.Code < 400 || !strings.Contains(e.ResponseStatus.Message, policyDenied) || nestedDenial(e.ResponseStatus.Message, resourceOf(e)) {
			return
		}
		name, _, _ := strings.Cut(e.ResponseStatus.Message[strings.Index(e.ResponseStatus.Message, policyDenied)+len(policyDenied):], "'")
		if !loaded[name] {
			return
		}
		n++
		rec := byID[string(e.AuditID)]
		switch {
		case rec == nil:
			errorf(t, "%s %s: denied by %s but not evaluated by the replay", e.Verb, e.RequestURI, name)
		case rec.Decision == replay.DecisionIndeterminate && byDesign != nil && byDesign(rec):
		case rec.Decision != replay.DecisionDeny || rec.Message != e.ResponseStatus.Message || rec.Code != e.ResponseStatus.Code:
			errorf(t, "%s %s: the server denied %d %q, the replay predicts %s %d %q", e.Verb, e.RequestURI, e.ResponseStatus.Code, e.ResponseStatus.Message, rec.Decision, rec.Code, rec.Message)
		}
	})
	if n < len(denied)-nested {
		errorf(t, "the log holds %d denials of the policies, the test saw %d", n, len(denied))
	}
	if sum.Evaluated < 50 {
		errorf(t, "the replay evaluated %d requests, want the scenarios' (at least 50)", sum.Evaluated)
	}
	return byID
}

func describeRecord(r *replay.Record) string {
	if r == nil {
		return "no record"
	}
	b, _ := json.Marshal(struct {
		Verb, Resource, Sub, NS, Name, User, Decision, Recorded, Message string
	}{r.Verb, r.Resource, r.Subresource, r.Namespace, r.Name, r.User, r.Decision, r.Recorded, r.Message})
	return fmt.Sprint(string(b))
}

// record writes the audit log (gzip-compressed) and the policies into dir, for the replay's
// golden tests: VAPC_E2E_RECORD=$PWD/testdata/audit/recorded-e2e go test ./verify/e2e -run
// TestDecisionParity, then go test ./verify/replay -update.
func record(t *testing.T, dir, log string, set policySet) {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(data)
	zw.Close()
	docs := set.yamlDocs(t)
	policy := "# The policies of TestDecisionParity (verify/e2e/decision_test.go) as it installed them: the\n" +
		"# in-tree guards re-bound [Deny, Audit] with a copy bound [Audit], and verify/e2e/testdata/decision.\n" +
		strings.Join(docs, "---\n")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"audit.log.gz": gz.Bytes(), "policy.yaml": []byte(policy)} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("recorded %s and its policies in %s", log, dir)
}

func yamlOf(t *testing.T, o runtime.Object) string {
	t.Helper()
	u := toUnstructured(t, o)
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	out, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// nestedDenial says whether a policy's denial in a response is of another request the server
// made while it served this one (of resource): a Service's IP allocation creates an IPAddress,
// before the Service's own admission; the ResourceQuota plugin, after validating admission,
// updates a quota's status, and the denial names that resource (`resourcequotas "q" is
// forbidden: `). That request has its own audit event, checked as any other.
func nestedDenial(message, resource string) bool {
	if strings.Contains(message, "failed to allocate") {
		return true
	}
	i := strings.Index(message, " is forbidden: "+policyDenied)
	if i < 0 || resource == "" {
		return false
	}
	named, _, _ := strings.Cut(message[:i], " ")
	named, _, _ = strings.Cut(named, ".")
	return named != resource
}

// resourceOf is the resource an event's request is of; "" when it names none.
func resourceOf(e *auditEvent) string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.Resource
}
