package auditgen

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// nodeFlap starts a node flap: mostly a Kosmos leaf node, whose member cluster stops answering.
func (g *generator) nodeFlap() bool {
	c := g.cluster
	from, other := c.kosmos, c.regular
	if g.chance(0.2) {
		from, other = other, from
	}
	n := c.randomNode(g, from)
	if n == nil {
		n = c.randomNode(g, other)
	}
	if n == nil {
		return false
	}
	n.busy = true
	g.flap(n, 0)
	return true
}

// flap is one round of a node going away and coming back, as the node lifecycle controller
// and the taint-eviction controller write it:
//
//  1. node-controller: UPDATE nodes/status, Ready (and the kubelet's other conditions) Unknown;
//  2. node-controller: PATCH nodes, the unreachable NoSchedule taint;
//  3. node-controller: UPDATE pods/status, every pod on the node not Ready;
//  4. node-controller: PATCH nodes, the unreachable NoExecute taint;
//  5. for each pod whose tolerationSeconds run out before the node is back: PATCH pods/status
//     with the DisruptionTarget condition, then DELETE the pod (the replicaset controller
//     creates a replacement; Kosmos clustertree force-deletes the old one, a kubelet deletes it
//     when its node is back);
//  6. the node is back: its kubelet (clustertree for a Kosmos leaf) reports Ready, and
//     node-controller removes the taints.
//
// A flapping node goes through a few rounds.
func (g *generator) flap(n *node, round int) {
	act := ActivityNodeFlap
	nc := g.idents.nodeController
	oldRV := n.rv
	n.ready, n.readyTransition = "Unknown", g.now.Truncate(time.Second)
	req := g.nodeObject(n)
	n.rv = g.nextRV()
	g.do(&request{act: act, verb: "update", uri: apiURI("", "v1", "", "nodes", n.name, "status"), id: nc, code: 200,
		ref:    auditv1.ObjectReference{Resource: "nodes", Name: n.name, UID: types.UID(n.uid), APIVersion: "v1", ResourceVersion: oldRV, Subresource: "status"},
		reqObj: req, respObj: g.nodeObject(n)})
	g.after(g.between(20*time.Millisecond, 150*time.Millisecond), func() {
		n.unreachable, n.unreachableSince = true, g.now.Truncate(time.Second)
		g.taintPatch(n, act, false)
		pods := append([]*pod(nil), n.pods...)
		for i, p := range pods {
			g.after(time.Duration(i+1)*g.between(2*time.Millisecond, 9*time.Millisecond), func() { g.markNotReady(p) })
		}
	})
	down := g.between(20*time.Second, 4*time.Minute)
	if g.chance(0.45) {
		down = g.between(6*time.Minute, 20*time.Minute)
	}
	g.after(5*time.Second, func() {
		n.noExecute = true
		g.taintPatch(n, act, false)
		for _, p := range append([]*pod(nil), n.pods...) {
			tol := int64(300)
			if p.app.shortToleration > 0 {
				tol = p.app.shortToleration
			}
			at := time.Duration(tol)*time.Second + g.between(0, 2*time.Second)
			if at < down-5*time.Second {
				g.after(at, func() { g.taintEvict(p) })
			}
		}
	})
	g.after(down, func() {
		n.ready, n.readyTransition = "True", g.now.Truncate(time.Second)
		g.heartbeat(n, act, true)
		g.after(g.between(30*time.Millisecond, 500*time.Millisecond), func() {
			n.unreachable, n.noExecute = false, false
			g.taintPatch(n, act, true)
			waiting := n.terminating
			n.terminating = nil
			for i, p := range waiting {
				g.after(time.Duration(i+1)*g.between(50*time.Millisecond, time.Second), func() { g.finalDelete(p, act) })
			}
			for i, p := range append([]*pod(nil), n.pods...) {
				if p.running && !p.ready {
					g.after(time.Duration(i+1)*g.between(100*time.Millisecond, 2*time.Second), func() {
						if p.terminating || p.gone || p.ready || n.ready != "True" {
							return
						}
						p.ready, p.readyTransition = true, g.now.Truncate(time.Second)
						g.kubeletPodPatch(p, act)
					})
				}
			}
			if round < 3 && g.chance(0.45) {
				g.after(g.between(time.Minute, 10*time.Minute), func() { g.flap(n, round+1) })
				return
			}
			n.busy = false
		})
	})
}

// taintPatch is node-controller's PATCH of the node's taints.
func (g *generator) taintPatch(n *node, act Activity, removing bool) {
	oldRV := n.rv
	n.rv = g.nextRV()
	resp := g.nodeObject(n)
	taints := resp.Spec.Taints // null when the last taint goes
	if removing && len(taints) == 0 {
		taints = nil
	}
	patch := map[string]any{"metadata": map[string]any{"resourceVersion": oldRV}, "spec": map[string]any{"taints": taints}}
	g.do(&request{act: act, verb: "patch", uri: apiURI("", "v1", "", "nodes", n.name, ""), id: g.idents.nodeController, code: 200,
		ref:    auditv1.ObjectReference{Resource: "nodes", Name: n.name, APIVersion: "v1"},
		reqObj: patch, respObj: resp})
}

// markNotReady is node-controller's UPDATE pods/status of a pod on an unreachable node.
func (g *generator) markNotReady(p *pod) {
	if p.terminating || p.gone || !p.running || p.node.ready == "True" {
		return
	}
	oldRV := p.rv
	p.ready, p.readyTransition = false, g.now.Truncate(time.Second)
	req := g.podObject(p, podStored)
	p.rv = g.nextRV()
	g.do(&request{act: ActivityNodeFlap, verb: "update", uri: apiURI("", "v1", p.app.ns.name, "pods", p.name, "status"), id: g.idents.nodeController, code: 200,
		ref:    auditv1.ObjectReference{Resource: "pods", Namespace: p.app.ns.name, Name: p.name, UID: types.UID(p.uid), APIVersion: "v1", ResourceVersion: oldRV, Subresource: "status"},
		reqObj: req, respObj: g.podObject(p, podStored)})
}

// taintEvict is the taint-eviction controller's DisruptionTarget patch and DELETE of a pod whose
// toleration of the NoExecute taint ran out.
func (g *generator) taintEvict(p *pod) {
	if p.terminating || p.gone || p.node.ready == "True" {
		return
	}
	act := ActivityNodeFlap
	p.disruption, p.disruptionMessage, p.disruptionAt = "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint", g.now.Truncate(time.Second)
	p.rv = g.nextRV()
	resp := g.podObject(p, podStored)
	order := make([]map[string]string, len(resp.Status.Conditions))
	for i, c := range resp.Status.Conditions {
		order[i] = map[string]string{"type": string(c.Type)}
	}
	dt := resp.Status.Conditions[len(resp.Status.Conditions)-1]
	patch := map[string]any{"metadata": map[string]any{"uid": p.uid}, "status": map[string]any{
		"$setElementOrder/conditions": order,
		"conditions": []map[string]any{{"lastProbeTime": nil, "lastTransitionTime": dt.LastTransitionTime, "message": dt.Message,
			"reason": dt.Reason, "status": dt.Status, "type": dt.Type}},
	}}
	g.do(&request{act: act, verb: "patch", uri: apiURI("", "v1", p.app.ns.name, "pods", p.name, "status"), id: g.idents.nodeController, code: 200,
		ref:    auditv1.ObjectReference{Resource: "pods", Namespace: p.app.ns.name, Name: p.name, APIVersion: "v1", Subresource: "status"},
		reqObj: patch, respObj: resp})
	g.after(g.between(2*time.Millisecond, 8*time.Millisecond), func() {
		if p.terminating || p.gone {
			return
		}
		g.deletePod(p, act, g.idents.nodeController, nil, deleteOptions())
		g.replace(p, act)
	})
}

// replace has the pod's controller create a replacement.
func (g *generator) replace(p *pod, act Activity) {
	g.after(g.between(300*time.Millisecond, 3*time.Second), func() { g.createPod(p.app, act) })
}

// drain starts a drain: node-problem-detector reports KernelDeadlock and Draino cordons the
// node and evicts its pods:
//
//  1. node-problem-detector: PATCH nodes/status, KernelDeadlock True (in one drain in ten the
//     condition clears again before Draino acts: a cordon without a problem condition);
//  2. draino: UPDATE nodes, spec.unschedulable true; UPDATE nodes/status, DrainScheduled;
//  3. node-controller: PATCH nodes, the unschedulable taint;
//  4. draino: CREATE pods/eviction for each pod, retried after 429 (disruption budget);
//     the kubelet deletes each evicted pod, the replicaset controller replaces it;
//  5. draino: UPDATE nodes/status, DrainScheduled False (completed);
//  6. later: node-problem-detector clears KernelDeadlock, an admin uncordons (PATCH nodes),
//     node-controller removes the taint.
func (g *generator) drain() bool {
	c := g.cluster
	n := c.randomNode(g, c.regular)
	if n == nil {
		return false
	}
	act := ActivityDrain
	n.busy = true
	n.kernelDeadlock, n.kdTransition = true, g.now.Truncate(time.Second)
	g.problemPatch(n, act)
	if g.chance(0.1) {
		g.after(g.between(200*time.Millisecond, 900*time.Millisecond), func() {
			n.kernelDeadlock, n.kdTransition = false, g.now.Truncate(time.Second)
			g.problemPatch(n, act)
		})
	}
	g.after(g.between(time.Second, 2*time.Second), func() { g.cordon(n) })
	return true
}

func (g *generator) cordon(n *node) {
	act := ActivityDrain
	dr := g.idents.draino
	oldRV := n.rv
	n.unschedulable = true
	req := g.nodeObject(n)
	n.rv = g.nextRV()
	g.do(&request{act: act, verb: "update", uri: apiURI("", "v1", "", "nodes", n.name, ""), id: dr, code: 200,
		ref:    auditv1.ObjectReference{Resource: "nodes", Name: n.name, UID: types.UID(n.uid), APIVersion: "v1", ResourceVersion: oldRV},
		reqObj: req, respObj: g.nodeObject(n)})
	start := g.now.Add(11 * time.Second).Truncate(time.Second)
	g.after(g.between(10*time.Millisecond, 60*time.Millisecond), func() {
		n.drain, n.drainTransition = "True", g.now.Truncate(time.Second)
		n.drainMsg = "Drain activity scheduled " + start.Format(time.RFC3339)
		g.drainStatus(n)
	})
	g.after(g.between(60*time.Millisecond, 300*time.Millisecond), func() {
		n.unschedulableTaint, n.unschedulableSince = true, g.now.Truncate(time.Second)
		g.taintPatch(n, act, false)
	})
	pods := append([]*pod(nil), n.pods...)
	g.after(11*time.Second, func() {
		for i, p := range pods {
			g.after(time.Duration(i+1)*g.between(5*time.Millisecond, 40*time.Millisecond), func() { g.evict(p, 0) })
		}
	})
	g.after(g.between(35*time.Second, 60*time.Second), func() {
		n.drain, n.drainTransition = "False", g.now.Truncate(time.Second)
		n.drainMsg += " | Completed: " + g.now.Truncate(time.Second).Format(time.RFC3339)
		g.drainStatus(n)
	})
	g.after(g.between(10*time.Minute, 60*time.Minute), func() {
		if n.kernelDeadlock {
			n.kernelDeadlock, n.kdTransition = false, g.now.Truncate(time.Second)
			g.problemPatch(n, act)
		}
		g.after(g.between(time.Minute, 5*time.Minute), func() { g.uncordon(n) })
	})
}

// drainStatus is Draino's UPDATE nodes/status of its DrainScheduled condition.
func (g *generator) drainStatus(n *node) {
	oldRV := n.rv
	req := g.nodeObject(n)
	req.ResourceVersion = oldRV
	n.rv = g.nextRV()
	g.do(&request{act: ActivityDrain, verb: "update", uri: apiURI("", "v1", "", "nodes", n.name, "status"), id: g.idents.draino, code: 200,
		ref:    auditv1.ObjectReference{Resource: "nodes", Name: n.name, UID: types.UID(n.uid), APIVersion: "v1", ResourceVersion: oldRV, Subresource: "status"},
		reqObj: req, respObj: g.nodeObject(n)})
}

// evict is Draino's eviction of a pod; a disruption budget may refuse it (429) a few times.
func (g *generator) evict(p *pod, attempt int) {
	if p.terminating || p.gone {
		return
	}
	act := ActivityDrain
	ns := p.app.ns.name
	ev := &policyv1.Eviction{
		TypeMeta:      metav1.TypeMeta{Kind: "Eviction", APIVersion: "policy/v1"},
		ObjectMeta:    metav1.ObjectMeta{Name: p.name, Namespace: ns},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: int64p(30)},
	}
	r := &request{act: act, verb: "create", uri: apiURI("", "v1", ns, "pods", p.name, "eviction"), id: g.idents.draino,
		ref:    auditv1.ObjectReference{Resource: "pods", Namespace: ns, Name: p.name, APIVersion: "v1", Subresource: "eviction"},
		reqObj: ev}
	if p.app.pdb != "" && attempt < 3 && g.chance(0.35) {
		r.code = 429
		r.status = failure(429, metav1.StatusReasonTooManyRequests, "Cannot evict pod as it would violate the pod's disruption budget.",
			&metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget " + p.app.pdb + " needs 2 healthy pods and has 2 currently"}}})
		r.respObj = statusObject(r.status)
		g.do(r)
		g.after(g.between(5*time.Second, 6*time.Second), func() { g.evict(p, attempt+1) })
		return
	}
	ok := success(201)
	r.code, r.status, r.respObj = 201, ok, statusObject(ok)
	g.cluster.removeLive(p)
	p.disruption, p.disruptionMessage, p.disruptionAt = "EvictionByEvictionAPI", "Eviction API: evicting", g.now.Truncate(time.Second)
	p.terminating, p.deletionGrace = true, 30
	p.deletionTimestamp = g.now.Add(30 * time.Second).Truncate(time.Second)
	p.rv = g.nextRV()
	g.do(r)
	g.replace(p, act)
	g.after(g.between(time.Second, 30*time.Second), func() { g.finalDelete(p, act) })
}

// uncordon is an admin's `kubectl uncordon` and node-controller's removal of the taint.
func (g *generator) uncordon(n *node) {
	act := ActivityDrain
	n.unschedulable = false
	n.rv = g.nextRV()
	patch := map[string]any{"spec": map[string]any{"unschedulable": nil}}
	g.do(&request{act: act, verb: "patch", uri: apiURI("", "v1", "", "nodes", n.name, "") + "?fieldManager=kubectl-cordon", id: g.idents.admin, code: 200,
		ref:    auditv1.ObjectReference{Resource: "nodes", Name: n.name, APIVersion: "v1"},
		reqObj: patch, respObj: g.nodeObject(n)})
	g.after(g.between(50*time.Millisecond, 300*time.Millisecond), func() {
		n.unschedulableTaint = false
		g.taintPatch(n, act, true)
		n.busy = false
	})
}
