package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify/e2e/harness"
)

// The controllers' own traffic in TestRandomParity: on the seeds that run them (every even seed,
// or VAPC_RANDOM_CONTROLLERS=1), kube-controller-manager and kube-scheduler run beside the
// server, each controller as its own service account. The scenario's nodes have no kubelet but
// kubeletNode's, which the test plays (its node's status, and the pods bound to it started and,
// once marked for deletion, deleted): the node lifecycle controller marks the others Unknown and
// taints them, the taint eviction controller deletes the pods that tolerate that for a few
// seconds, the ReplicaSet controller makes new ones, the scheduler binds them to kubeletNode or
// reports them unschedulable, the job controller tracks its pods with a finalizer, the garbage
// collector deletes what an owner's deletion leaves and the pod garbage collector the pods of
// nodes that do not exist. Every one of those requests is replayed and checked against the log.

// kubeletNode is the node whose kubelet the test plays while the random requests are sent.
const kubeletNode = "w-k"

// withControllers says whether a TestRandomParity run starts the controllers.
func withControllers(seed uint64) bool {
	switch os.Getenv("VAPC_RANDOM_CONTROLLERS") {
	case "1":
		return true
	case "0":
		return false
	}
	return seed%2 == 0
}

// kubelet keeps the node Ready as its kubelet would: its status (capacity, allocatable and
// the Ready condition's heartbeat) patched every 4 seconds as system:node:NAME, and the pods
// bound to it run and end (kubeletPods), until ctx ends. Its client records nothing: the
// scenario's requests are the test's own.
func kubelet(ctx context.Context, s *harness.Server, name string) {
	cfg := s.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + name, Groups: []string{"system:nodes"}}
	cfg.WarningHandler = rest.NoWarnings{}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return
	}
	since := time.Now().UTC().Format(time.RFC3339)
	tick := time.NewTicker(4 * time.Second)
	defer tick.Stop()
	for {
		now := time.Now().UTC().Format(time.RFC3339)
		resources := `{"cpu":"4","memory":"8Gi","pods":"110"}`
		// As the kubelet's node status manager writes it: a strategic merge patch with the
		// conditions' order (strategicpatch.CreateTwoWayMergePatch).
		body := fmt.Sprintf(`{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"capacity":%s,"allocatable":%s,"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`,
			resources, resources, now, since)
		_, _ = c.Resource(nodesGVR).Patch(ctx, name, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{}, "status")
		renewLease(ctx, c, name)
		kubeletPods(ctx, c, name)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// renewLease plays the kubelet's node lease: kube-node-lease/NAME, created or renewed with the
// time.
func renewLease(ctx context.Context, c dynamic.Interface, name string) {
	leases := c.Resource(leasesGVR).Namespace("kube-node-lease")
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		l = obj(map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": map[string]any{"name": name, "namespace": "kube-node-lease"},
			"spec": map[string]any{"holderIdentity": name, "leaseDurationSeconds": int64(40), "renewTime": now}})
		_, _ = leases.Create(ctx, l, metav1.CreateOptions{})
		return
	}
	_ = unstructured.SetNestedField(l.Object, now, "spec", "renewTime")
	_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
}

// kubeletPods plays the kubelet's pod workers and status manager on the pods bound to the
// node, with the requests the kubelet sends: a pod it has not started is reported running (a
// strategic merge patch of pods/status with the pod's uid and the conditions'
// $setElementOrder, as the status manager writes it), and a pod marked for deletion is
// reported with its containers terminated, then deleted with a grace period of 0 and its uid as
// precondition, which is how a graceful pod deletion ends.
func kubeletPods(ctx context.Context, c dynamic.Interface, node string) {
	l, err := c.Resource(podsGVR).Namespace("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return
	}
	now := time.Now().UTC().Format(time.RFC3339)
	condition := func(kind string, ok bool) map[string]any {
		status := "False"
		if ok {
			status = "True"
		}
		return map[string]any{"type": kind, "status": status, "lastProbeTime": nil, "lastTransitionTime": now}
	}
	for _, p := range l.Items {
		pods := c.Resource(podsGVR).Namespace(p.GetNamespace())
		phase, _, _ := unstructured.NestedString(p.Object, "status", "phase")
		containers, _, _ := unstructured.NestedSlice(p.Object, "spec", "containers")
		deleting := p.GetDeletionTimestamp() != nil
		if !deleting && phase != "Pending" {
			continue
		}
		var statuses []any
		for i, ct := range containers {
			ct, _ := ct.(map[string]any)
			state := map[string]any{"running": map[string]any{"startedAt": now}}
			if deleting {
				state = map[string]any{"terminated": map[string]any{"exitCode": int64(0), "reason": "Completed", "startedAt": now, "finishedAt": now,
					"containerID": fmt.Sprintf("containerd://%s-%d", p.GetUID(), i)}}
			}
			statuses = append(statuses, map[string]any{"name": ct["name"], "image": ct["image"], "imageID": fmt.Sprintf("docker.io/library/%v@sha256:%064d", ct["image"], i),
				"containerID": fmt.Sprintf("containerd://%s-%d", p.GetUID(), i), "ready": !deleting, "started": !deleting, "restartCount": int64(0), "state": state})
		}
		order := []any{map[string]any{"type": "PodReadyToStartContainers"}, map[string]any{"type": "Initialized"},
			map[string]any{"type": "Ready"}, map[string]any{"type": "ContainersReady"}}
		conditions, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
		for _, c := range conditions {
			if c, _ := c.(map[string]any); c["type"] == "PodScheduled" {
				order = append(order, map[string]any{"type": "PodScheduled"})
			}
		}
		status := map[string]any{
			"$setElementOrder/conditions": order,
			"conditions": []any{condition("PodReadyToStartContainers", !deleting), condition("Initialized", true),
				condition("Ready", !deleting), condition("ContainersReady", !deleting)},
			"containerStatuses": statuses,
		}
		if !deleting {
			status["phase"], status["startTime"] = "Running", now
			status["hostIP"], status["hostIPs"] = "10.0.0.9", []any{map[string]any{"ip": "10.0.0.9"}}
			status["podIP"], status["podIPs"] = "10.244.9.9", []any{map[string]any{"ip": "10.244.9.9"}}
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": p.GetUID()}, "status": status})
		if err != nil {
			return
		}
		if _, err := pods.Patch(ctx, p.GetName(), types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status"); err != nil || !deleting {
			continue
		}
		_ = pods.Delete(ctx, p.GetName(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0)), Preconditions: &metav1.Preconditions{UID: ptr.To(p.GetUID())}})
	}
}

// ctlWeb is the Deployment ctl-web, whose pods tolerate an unreachable or not ready node for
// the seconds given.
func ctlWeb(ns string, replicas, seconds int64) *unstructured.Unstructured {
	d := deploymentIn(ns, "ctl-web", replicas)
	_ = unstructured.SetNestedSlice(d.Object, []any{
		map[string]any{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds},
		map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds},
	}, "spec", "template", "spec", "tolerations")
	return d
}

// controllerStep gives the controllers work: a Deployment whose pods tolerate an unreachable
// node for seconds (created, scaled, a pod of it deleted), a Job (created, deleted with its
// pods left to the garbage collector), kubeletNode cordoned or uncordoned.
func (w *randomWorld) controllerStep() {
	u, ns := w.user(), pick(w.r, rndA, rndB, rndC)
	deps := w.client(u).Resource(deploymentsGVR).Namespace(ns)
	switch w.r.IntN(6) {
	case 0, 1:
		replicas := int64(w.r.IntN(4))
		if cur, err := deps.Get(w.ctx, "ctl-web", metav1.GetOptions{}); err == nil {
			_ = unstructured.SetNestedField(cur.Object, replicas, "spec", "replicas")
			_, err = deps.Update(w.ctx, cur, metav1.UpdateOptions{})
			w.got(fmt.Sprintf("%s scales deployment %s/ctl-web to %d", u.name, ns, replicas), err)
			return
		}
		d := ctlWeb(ns, replicas, int64(pick(w.r, 2, 5)))
		w.got(fmt.Sprintf("%s creates deployment %s/ctl-web (%d replicas)", u.name, ns, replicas), w.tryCreate(w.client(u), deploymentsGVR, d, metav1.CreateOptions{}))
	case 2:
		pods := w.client(u).Resource(podsGVR).Namespace(ns)
		l, err := pods.List(w.ctx, metav1.ListOptions{LabelSelector: "app=ctl-web"})
		if err != nil || len(l.Items) == 0 {
			return
		}
		name := l.Items[w.r.IntN(len(l.Items))].GetName()
		o := w.deleteOptions(pods, name)
		w.got(fmt.Sprintf("%s deletes pod %s/%s of ctl-web %s", u.name, ns, name, optionsString(o)), pods.Delete(w.ctx, name, o))
	case 3:
		jobs := w.client(u).Resource(jobsGVR).Namespace(ns)
		if _, err := jobs.Get(w.ctx, "ctl-job", metav1.GetOptions{}); err == nil {
			o := metav1.DeleteOptions{PropagationPolicy: ptr.To(pick(w.r, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan))}
			w.got(fmt.Sprintf("%s deletes job %s/ctl-job %s", u.name, ns, optionsString(o)), jobs.Delete(w.ctx, "ctl-job", o))
			return
		}
		j := obj(map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "ctl-job", "namespace": ns},
			"spec": map[string]any{"parallelism": int64(pick(w.r, 1, 2)), "template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "ctl-job"}},
				"spec": map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}}})
		w.got(fmt.Sprintf("%s creates job %s/ctl-job", u.name, ns), w.tryCreate(w.client(u), jobsGVR, j, metav1.CreateOptions{}))
	case 4:
		body := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, chance(w.r, 0.2))
		_, err := w.client(u).Resource(nodesGVR).Patch(w.ctx, kubeletNode, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{})
		w.got(fmt.Sprintf("%s patches node %s (%s)", u.name, kubeletNode, body), err)
	default:
		// A pod on a node that does not exist: the pod garbage collector deletes it.
		name := pick(w.r, "orphan-a", "orphan-b")
		p := podIn(ns, name, "w-gone", "nginx", map[string]any{"app": "orphan"})
		w.got(fmt.Sprintf("%s creates pod %s/%s on node w-gone", u.name, ns, name), w.tryCreate(w.client(u), podsGVR, p, metav1.CreateOptions{}))
	}
}

// waitForControllers waits until the audit log shows the controllers at work: a request of
// kube-scheduler, and the node lifecycle controller writing kubeletNode after its kubelet
// stopped, or after the last heartbeat of its kubelet a random policy did not refuse (the
// write admitted or refused by a policy). It fails the test, naming what is missing, when
// they have not within 90 seconds.
func waitForControllers(ctx context.Context, t *testing.T, log string, stopped time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	scheduler := func(e *auditEvent) bool { return e.User.Username == "system:kube-scheduler" }
	// A random policy may have refused the kubelet's heartbeats before it stopped: the node
	// lifecycle controller then marks the node after the last one it took.
	lastBeat := stopped
	beats := 0
	if _, err := findAuditEvent(log, func(e *auditEvent) bool {
		if e.ImpersonatedUser != nil && e.ImpersonatedUser.Username == "system:node:"+kubeletNode && e.ObjectRef != nil && e.ObjectRef.Subresource == "status" &&
			e.ResponseStatus != nil && e.ResponseStatus.Code < 300 && e.Stage == "ResponseComplete" {
			lastBeat, beats = e.RequestReceivedTimestamp.Time, beats+1
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	switch {
	case beats == 0:
		lastBeat = time.Time{} // refused from the first: the node was never Ready
	case lastBeat.After(stopped):
		lastBeat = stopped
	}
	nodeController := func(e *auditEvent) bool {
		return e.User.Username == "system:serviceaccount:kube-system:node-controller" && e.ObjectRef != nil &&
			e.ObjectRef.Resource == "nodes" && e.ObjectRef.Name == kubeletNode && e.Verb != "get" && e.RequestReceivedTimestamp.After(lastBeat)
	}
	for {
		var missing []string
		for what, match := range map[string]func(*auditEvent) bool{"a request of kube-scheduler": scheduler, "a write of node " + kubeletNode + " by the node lifecycle controller": nodeController} {
			e, err := findAuditEvent(log, match)
			if err != nil {
				t.Fatal(err)
			}
			if e == nil {
				missing = append(missing, what)
			}
		}
		if len(missing) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the controllers did not act within 90s: no %s in %s (their logs are in the harness's directory)", strings.Join(missing, ", no "), log)
		case <-time.After(time.Second):
		}
	}
}
