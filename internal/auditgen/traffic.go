package auditgen

import (
	"fmt"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// startActivity starts one background request (or scenario). An activity that finds nothing to
// act on (no Ready node, no pod) falls back to a read, so every pick writes a request.
func (g *generator) startActivity(a Activity) {
	ok := true
	switch a {
	case ActivityRead:
		g.read()
	case ActivityLease:
		ok = g.lease()
	case ActivityNodeStatus:
		ok = g.nodeStatus()
	case ActivityPodStatus:
		ok = g.podStatus()
	case ActivityControllerWrite:
		ok = g.controllerWrite()
	case ActivityPodChurn:
		ok = g.podChurn()
	case ActivityAuthFailure:
		g.authFailure()
	case ActivityNodeFlap:
		ok = g.nodeFlap()
	case ActivityDrain:
		ok = g.drain()
	}
	if !ok {
		g.read()
	}
}

// apiURI is the path of a core or group resource.
func apiURI(group, version, namespace, resource, name, subresource string) string {
	p := "/api/v1"
	if group != "" {
		p = "/apis/" + group + "/" + version
	}
	if namespace != "" {
		p += "/namespaces/" + namespace
	}
	p += "/" + resource
	if name != "" {
		p += "/" + name
	}
	if subresource != "" {
		p += "/" + subresource
	}
	return p
}

func (g *generator) randomNamespace() *namespace {
	c := g.cluster
	return c.namespaces[g.rng.IntN(len(c.namespaces))]
}

func (g *generator) randomApp() *app {
	c := g.cluster
	if len(c.apps) == 0 {
		return nil
	}
	return c.apps[g.rng.IntN(len(c.apps))]
}

// read is a get, list or watch at Metadata level.
func (g *generator) read() {
	c := g.cluster
	r := &request{act: ActivityRead, verb: "get", code: 200}
	x := g.rng.IntN(100)
	n := c.nodes[g.rng.IntN(len(c.nodes))]
	a := g.randomApp()
	switch {
	case x < 16: // a kubelet reads its node or a pod's config
		r.id = n.kubelet()
		if g.chance(0.5) || a == nil {
			r.uri = apiURI("", "v1", "", "nodes", n.name, "") + "?resourceVersion=0&timeout=10s"
			r.ref = auditv1.ObjectReference{Resource: "nodes", Name: n.name, APIVersion: "v1"}
		} else {
			name := "kube-root-ca.crt"
			if a.configMap && g.chance(0.5) {
				name = a.name + "-config"
			}
			r.uri = apiURI("", "v1", a.ns.name, "configmaps", name, "")
			r.ref = auditv1.ObjectReference{Resource: "configmaps", Namespace: a.ns.name, Name: name, APIVersion: "v1"}
		}
	case x < 40: // leader election
		id, ns, name := g.idents.kcm, "kube-system", "kube-controller-manager"
		switch g.rng.IntN(3) {
		case 1:
			id, name = g.idents.scheduler, "kube-scheduler"
		case 2:
			id, ns, name = g.idents.clustertree, "kosmos-system", "clustertree-cluster-manager"
		}
		r.id = id
		r.uri = apiURI("coordination.k8s.io", "v1", ns, "leases", name, "") + "?timeout=5s"
		r.ref = auditv1.ObjectReference{Resource: "leases", Namespace: ns, Name: name, APIGroup: "coordination.k8s.io", APIVersion: "v1"}
	case x < 55 && a != nil: // people and CI look at workloads
		r.id = g.idents.jane
		if g.chance(0.3) {
			r.id = g.idents.deployer
		}
		switch g.rng.IntN(4) {
		case 0:
			p := c.randomLive(g)
			name := a.name + "-" + a.hash + "-" + g.suffix(5)
			if p != nil && g.chance(0.9) {
				name, a = p.name, p.app
			} else {
				r.code = 404
				r.status = failure(404, metav1.StatusReasonNotFound, fmt.Sprintf("pods %q not found", name), &metav1.StatusDetails{Name: name, Kind: "pods"})
			}
			r.uri = apiURI("", "v1", a.ns.name, "pods", name, "")
			r.ref = auditv1.ObjectReference{Resource: "pods", Namespace: a.ns.name, Name: name, APIVersion: "v1"}
		case 1:
			r.verb, r.latency = "list", g.between(3*time.Millisecond, 40*time.Millisecond)
			r.uri = apiURI("", "v1", a.ns.name, "pods", "", "") + "?limit=500"
			r.ref = auditv1.ObjectReference{Resource: "pods", Namespace: a.ns.name, APIVersion: "v1"}
		case 2:
			r.uri = apiURI("apps", "v1", a.ns.name, "deployments", a.name, "")
			r.ref = auditv1.ObjectReference{Resource: "deployments", Namespace: a.ns.name, Name: a.name, APIGroup: "apps", APIVersion: "v1"}
		default:
			r.verb, r.latency = "list", g.between(2*time.Millisecond, 20*time.Millisecond)
			r.uri = apiURI("apps", "v1", a.ns.name, "deployments", "", "") + "?limit=500"
			r.ref = auditv1.ObjectReference{Resource: "deployments", Namespace: a.ns.name, APIGroup: "apps", APIVersion: "v1"}
		}
	case x < 65: // monitoring and operators list cluster-wide
		r.id = g.idents.prometheus
		r.verb, r.latency = "list", g.between(20*time.Millisecond, 300*time.Millisecond)
		res := []struct{ group, resource string }{{"", "pods"}, {"", "nodes"}, {"", "services"}, {"discovery.k8s.io", "endpointslices"}, {"apps", "deployments"}}[g.rng.IntN(5)]
		version := "v1"
		r.uri = apiURI(res.group, version, "", res.resource, "", "") + "?limit=500&resourceVersion=0"
		r.ref = auditv1.ObjectReference{Resource: res.resource, APIGroup: res.group, APIVersion: version}
	default: // informers (re)start their watches
		r.verb = "watch"
		secs := 300 + g.rng.IntN(300)
		r.watchFor = time.Duration(secs)*time.Second + g.between(0, time.Second)
		q := url.Values{}
		q.Set("allowWatchBookmarks", "true")
		q.Set("resourceVersion", fmt.Sprint(g.rv-int64(g.rng.IntN(5000))))
		q.Set("timeout", fmt.Sprintf("%dm%ds", secs/60, secs%60))
		q.Set("timeoutSeconds", fmt.Sprint(secs))
		q.Set("watch", "true")
		if g.chance(0.4) {
			r.id = n.kubelet()
			if g.chance(0.6) {
				q.Set("fieldSelector", "spec.nodeName="+n.name)
				r.ref = auditv1.ObjectReference{Resource: "pods", APIVersion: "v1"}
				r.uri = "/api/v1/pods?" + q.Encode()
			} else {
				q.Set("fieldSelector", "metadata.name="+n.name)
				r.ref = auditv1.ObjectReference{Resource: "nodes", APIVersion: "v1"}
				r.uri = "/api/v1/nodes?" + q.Encode()
			}
		} else {
			ids := []*identity{g.idents.replicaSet, g.idents.deployment, g.idents.endpointSlice, g.idents.nodeController, g.idents.scheduler, g.idents.draino, g.idents.clustertree}
			r.id = ids[g.rng.IntN(len(ids))]
			res := []struct{ group, resource string }{{"", "pods"}, {"", "nodes"}, {"apps", "replicasets"}, {"apps", "deployments"}, {"discovery.k8s.io", "endpointslices"}, {"", "configmaps"}, {"policy", "poddisruptionbudgets"}}[g.rng.IntN(7)]
			r.ref = auditv1.ObjectReference{Resource: res.resource, APIGroup: res.group, APIVersion: "v1"}
			r.uri = apiURI(res.group, "v1", "", res.resource, "", "") + "?" + q.Encode()
		}
	}
	if r.id == nil {
		r.id = g.idents.jane
		r.uri = apiURI("", "v1", "", "namespaces", "", "") + "?limit=500"
		r.verb = "list"
		r.ref = auditv1.ObjectReference{Resource: "namespaces", APIVersion: "v1"}
	}
	g.do(r)
}

// lease renews a node lease (by the kubelet, or Kosmos clustertree for leaf nodes) or a
// leader-election lease.
func (g *generator) lease() bool {
	c := g.cluster
	if g.chance(0.12) {
		id, ns, name := g.idents.kcm, "kube-system", "kube-controller-manager"
		switch g.rng.IntN(3) {
		case 1:
			id, name = g.idents.scheduler, "kube-scheduler"
		case 2:
			id, ns, name = g.idents.clustertree, "kosmos-system", "clustertree-cluster-manager"
		}
		g.do(&request{act: ActivityLease, verb: "update", id: id, code: 200,
			uri: apiURI("coordination.k8s.io", "v1", ns, "leases", name, "") + "?timeout=5s",
			ref: auditv1.ObjectReference{Resource: "leases", Namespace: ns, Name: name, UID: types.UID(g.leaseUID(name)), APIGroup: "coordination.k8s.io", APIVersion: "v1", ResourceVersion: g.nextRV()}})
		return true
	}
	for try := 0; try < 4; try++ {
		n := c.nodes[g.rng.IntN(len(c.nodes))]
		if n.ready != "True" {
			continue // its kubelet is down: the lease expires
		}
		id := n.kubelet()
		if n.kosmos {
			id = g.idents.clustertree
		}
		g.do(&request{act: ActivityLease, verb: "update", id: id, code: 200,
			uri: apiURI("coordination.k8s.io", "v1", "kube-node-lease", "leases", n.name, "") + "?timeout=10s",
			ref: auditv1.ObjectReference{Resource: "leases", Namespace: "kube-node-lease", Name: n.name, UID: types.UID(n.leaseUID), APIGroup: "coordination.k8s.io", APIVersion: "v1", ResourceVersion: g.nextRV()}})
		return true
	}
	return false
}

// leaseUID is a stable uid for a leader-election lease.
func (g *generator) leaseUID(name string) string {
	if g.leaderLeases == nil {
		g.leaderLeases = map[string]string{}
	}
	if u, ok := g.leaderLeases[name]; ok {
		return u
	}
	u := g.uuid()
	g.leaderLeases[name] = u
	return u
}

// conditionsOrder is the strategic merge patch directive the kubelet sends with conditions.
func conditionsOrder(conds []corev1.NodeCondition) []map[string]string {
	out := make([]map[string]string, len(conds))
	for i, c := range conds {
		out[i] = map[string]string{"type": string(c.Type)}
	}
	return out
}

// nodeStatus is a kubelet heartbeat patch (node-problem-detector's, sometimes), or Kosmos
// clustertree's status update for a leaf node.
func (g *generator) nodeStatus() bool {
	c := g.cluster
	n := c.randomNode(g, c.nodes)
	if n == nil {
		return false
	}
	g.heartbeat(n, ActivityNodeStatus, false)
	return true
}

// heartbeat writes a node's status as its kubelet does; recovered says the Ready condition
// changes (the patch then carries every kubelet condition in full).
func (g *generator) heartbeat(n *node, act Activity, recovered bool) {
	n.heartbeat = g.now.Truncate(time.Second)
	uri := apiURI("", "v1", "", "nodes", n.name, "status")
	if n.kosmos {
		req := g.nodeObject(n)
		oldRV := n.rv
		n.rv = g.nextRV()
		g.do(&request{act: act, verb: "update", uri: uri, id: g.idents.clustertree, code: 200,
			ref:    auditv1.ObjectReference{Resource: "nodes", Name: n.name, UID: types.UID(n.uid), APIVersion: "v1", ResourceVersion: oldRV, Subresource: "status"},
			reqObj: req, respObj: g.nodeObject(n)})
		return
	}
	if !recovered && g.chance(0.2) {
		g.problemPatch(n, act)
		return
	}
	full := g.nodeObject(n)
	conds := full.Status.Conditions
	var patched []any
	for _, cd := range conds[3:] { // the kubelet's conditions (node-problem-detector's come first)
		if cd.Type == "DrainScheduled" {
			continue
		}
		if recovered {
			patched = append(patched, map[string]any{"lastHeartbeatTime": cd.LastHeartbeatTime, "lastTransitionTime": cd.LastTransitionTime,
				"message": cd.Message, "reason": cd.Reason, "status": cd.Status, "type": cd.Type})
		} else {
			patched = append(patched, map[string]any{"lastHeartbeatTime": cd.LastHeartbeatTime, "type": cd.Type})
		}
	}
	patch := map[string]any{"status": map[string]any{"$setElementOrder/conditions": conditionsOrder(conds), "conditions": patched}}
	n.rv = g.nextRV()
	g.do(&request{act: act, verb: "patch", uri: uri + "?timeout=10s", id: n.kubelet(), code: 200,
		ref:    auditv1.ObjectReference{Resource: "nodes", Name: n.name, APIVersion: "v1", Subresource: "status"},
		reqObj: patch, respObj: g.nodeObject(n)})
}

// problemPatch is node-problem-detector's status patch of its three conditions.
func (g *generator) problemPatch(n *node, act Activity) {
	patch := map[string]any{"status": map[string]any{"conditions": n.problemConditions()}}
	n.rv = g.nextRV()
	g.do(&request{act: act, verb: "patch", uri: apiURI("", "v1", "", "nodes", n.name, "status"), id: g.problemDetector(n), code: 200,
		ref:    auditv1.ObjectReference{Resource: "nodes", Name: n.name, APIVersion: "v1", Subresource: "status"},
		reqObj: patch, respObj: g.nodeObject(n)})
}

// podStatus is a kubelet pod status patch: a readiness change or a container restart.
func (g *generator) podStatus() bool {
	p := g.cluster.randomLive(g)
	if p == nil || !p.running {
		return false
	}
	if g.chance(0.3) {
		p.restarts++
	}
	if g.chance(0.5) || !p.ready {
		p.ready = !p.ready
		p.readyTransition = g.now.Truncate(time.Second)
	}
	g.kubeletPodPatch(p, ActivityPodStatus)
	return true
}

// kubeletPodPatch writes the pod's current status as the kubelet's strategic merge patch.
func (g *generator) kubeletPodPatch(p *pod, act Activity) {
	p.rv = g.nextRV()
	resp := g.podObject(p, podStored)
	st := resp.Status
	var conds []map[string]any
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady || (act == ActivityPodChurn && c.Type != corev1.DisruptionTarget) {
			conds = append(conds, map[string]any{"lastProbeTime": nil, "lastTransitionTime": c.LastTransitionTime, "status": c.Status, "type": c.Type})
		}
	}
	order := make([]map[string]string, len(st.Conditions))
	for i, c := range st.Conditions {
		order[i] = map[string]string{"type": string(c.Type)}
	}
	status := map[string]any{"$setElementOrder/conditions": order, "conditions": conds, "containerStatuses": st.ContainerStatuses}
	if act == ActivityPodChurn {
		status["phase"], status["hostIP"], status["hostIPs"], status["podIP"], status["podIPs"], status["startTime"] =
			st.Phase, st.HostIP, st.HostIPs, st.PodIP, st.PodIPs, st.StartTime
	}
	patch := map[string]any{"metadata": map[string]any{"uid": p.uid}, "status": status}
	g.do(&request{act: act, verb: "patch", uri: apiURI("", "v1", p.app.ns.name, "pods", p.name, "status"), id: p.node.kubelet(), code: 200,
		ref:    auditv1.ObjectReference{Resource: "pods", Namespace: p.app.ns.name, Name: p.name, APIVersion: "v1", Subresource: "status"},
		reqObj: patch, respObj: resp})
}

// controllerWrite is a Metadata-level write by a controller: events, endpointslices,
// replicaset and deployment status, HPA status, a CI apply.
func (g *generator) controllerWrite() bool {
	a := g.randomApp()
	if a == nil {
		return false
	}
	ns := a.ns.name
	r := &request{act: ActivityControllerWrite, verb: "update", code: 200}
	x := g.rng.IntN(100)
	switch {
	case x < 38: // kubelet and controller events
		p := g.cluster.randomLive(g)
		r.verb, r.code, r.id = "create", 201, g.idents.replicaSet
		name := a.name + "-" + a.hash
		if p != nil {
			name, ns, r.id = p.name, p.app.ns.name, p.node.kubelet()
		}
		name = fmt.Sprintf("%s.%016x", name, g.rng.Uint64()>>4)
		r.uri = apiURI("", "v1", ns, "events", "", "")
		r.ref = auditv1.ObjectReference{Resource: "events", Namespace: ns, Name: name, APIVersion: "v1"}
	case x < 46: // an event seen again
		r.verb, r.id = "patch", g.idents.replicaSet
		name := fmt.Sprintf("%s-%s.%016x", a.name, a.hash, g.rng.Uint64()>>4)
		r.uri = apiURI("", "v1", ns, "events", name, "")
		r.ref = auditv1.ObjectReference{Resource: "events", Namespace: ns, Name: name, APIVersion: "v1"}
	case x < 50: // the scheduler's events
		r.verb, r.code, r.id = "create", 201, g.idents.scheduler
		name := fmt.Sprintf("%s-%s-%s.%016x", a.name, a.hash, g.suffix(5), g.rng.Uint64()>>4)
		r.uri = apiURI("events.k8s.io", "v1", ns, "events", "", "")
		r.ref = auditv1.ObjectReference{Resource: "events", Namespace: ns, Name: name, APIGroup: "events.k8s.io", APIVersion: "v1"}
	case x < 72:
		r.id = g.idents.endpointSlice
		name := a.name + "-" + a.hash[:5]
		r.uri = apiURI("discovery.k8s.io", "v1", ns, "endpointslices", name, "")
		r.ref = auditv1.ObjectReference{Resource: "endpointslices", Namespace: ns, Name: name, UID: types.UID(a.rsUID), APIGroup: "discovery.k8s.io", APIVersion: "v1", ResourceVersion: g.nextRV()}
	case x < 86:
		r.id = g.idents.replicaSet
		name := a.name + "-" + a.hash
		r.uri = apiURI("apps", "v1", ns, "replicasets", name, "status")
		r.ref = auditv1.ObjectReference{Resource: "replicasets", Namespace: ns, Name: name, UID: types.UID(a.rsUID), APIGroup: "apps", APIVersion: "v1", ResourceVersion: g.nextRV(), Subresource: "status"}
	case x < 94:
		r.id = g.idents.deployment
		r.uri = apiURI("apps", "v1", ns, "deployments", a.name, "status")
		r.ref = auditv1.ObjectReference{Resource: "deployments", Namespace: ns, Name: a.name, APIGroup: "apps", APIVersion: "v1", ResourceVersion: g.nextRV(), Subresource: "status"}
	case x < 98:
		r.id = g.idents.hpa
		r.uri = apiURI("autoscaling", "v2", ns, "horizontalpodautoscalers", a.name, "status")
		r.ref = auditv1.ObjectReference{Resource: "horizontalpodautoscalers", Namespace: ns, Name: a.name, APIGroup: "autoscaling", APIVersion: "v2", ResourceVersion: g.nextRV(), Subresource: "status"}
	default:
		r.verb, r.id = "patch", g.idents.deployer
		r.uri = apiURI("apps", "v1", ns, "deployments", a.name, "") + "?fieldManager=argocd-controller&force=true"
		r.ref = auditv1.ObjectReference{Resource: "deployments", Namespace: ns, Name: a.name, APIGroup: "apps", APIVersion: "v1"}
	}
	g.do(r)
	return true
}

// podChurn creates a pod (then binds and starts it) or deletes one (then the kubelet's final
// delete), keeping the cluster near its size.
func (g *generator) podChurn() bool {
	c := g.cluster
	live := len(c.live)
	if live < c.target*97/100 || (live <= c.target*103/100 && g.chance(0.5)) {
		a := g.randomApp()
		return a != nil && g.createPod(a, ActivityPodChurn)
	}
	p := c.randomLive(g)
	if p == nil {
		return false
	}
	id, opts, imp := g.idents.replicaSet, deleteOptions(), (*identity)(nil)
	switch x := g.rng.IntN(1000); {
	case x < 60:
		id, opts = g.idents.jane, deleteOptions()
		opts.PropagationPolicy = ptrPropagation(metav1.DeletePropagationBackground)
	case x < 63: // an admin acting as the node controller, as the recorded log does
		imp, opts = g.idents.admin, deleteOptions()
		opts.PropagationPolicy = ptrPropagation(metav1.DeletePropagationBackground)
	}
	if p.app.statefulSet && id == g.idents.replicaSet {
		id = g.idents.statefulSet
	}
	g.deletePod(p, ActivityPodChurn, id, imp, opts)
	return true
}

func deleteOptions() *metav1.DeleteOptions {
	return &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "meta.k8s.io/__internal"}}
}

func ptrPropagation(p metav1.DeletionPropagation) *metav1.DeletionPropagation { return &p }

// createPod creates a pod of the app as its controller does, then has the scheduler bind it
// and the kubelet start it. It returns false when no node can take the pod.
func (g *generator) createPod(a *app, act Activity) bool {
	c := g.cluster
	n := c.placement(g, a)
	if n == nil {
		return false
	}
	p := c.newPod(g, a, n, g.now.Truncate(time.Second))
	req := g.podObject(p, podCreateRequest)
	p.rv = g.nextRV()
	id := g.idents.replicaSet
	if a.statefulSet {
		id = g.idents.statefulSet
	}
	c.addLive(p)
	g.stats.PodsCreated++
	g.do(&request{act: act, verb: "create", uri: apiURI("", "v1", a.ns.name, "pods", "", ""), id: id, code: 201,
		ref:    auditv1.ObjectReference{Resource: "pods", Namespace: a.ns.name, Name: p.name, APIVersion: "v1"},
		reqObj: req, respObj: g.podObject(p, podStored),
		annotations: map[string]string{"pod-security.kubernetes.io/enforce-policy": "baseline:latest"}})
	g.after(g.between(15*time.Millisecond, 400*time.Millisecond), func() {
		if p.terminating || p.gone {
			return
		}
		p.isBound = true
		p.rv = g.nextRV()
		binding := &corev1.Binding{
			TypeMeta:   metav1.TypeMeta{Kind: "Binding", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: a.ns.name, UID: types.UID(p.uid)},
			Target:     corev1.ObjectReference{Kind: "Node", Name: p.node.name},
		}
		ok := success(201)
		g.do(&request{act: act, verb: "create", uri: apiURI("", "v1", a.ns.name, "pods", p.name, "binding"), id: g.idents.scheduler, code: 201,
			ref:    auditv1.ObjectReference{Resource: "pods", Namespace: a.ns.name, Name: p.name, APIVersion: "v1", Subresource: "binding"},
			status: ok, reqObj: binding, respObj: statusObject(ok)})
		g.after(g.between(1500*time.Millisecond, 6*time.Second), func() {
			if p.terminating || p.gone || p.node.ready != "True" {
				return
			}
			p.running, p.ready = true, true
			p.started = g.now.Truncate(time.Second)
			p.readyTransition = p.started
			g.kubeletPodPatch(p, act)
		})
	})
	return true
}

// deletePod deletes a pod gracefully; the kubelet deletes it for good when it has stopped.
func (g *generator) deletePod(p *pod, act Activity, id, impersonator *identity, opts *metav1.DeleteOptions) {
	g.cluster.removeLive(p)
	p.terminating = true
	p.deletionGrace = 30
	p.deletionTimestamp = g.now.Add(30 * time.Second).Truncate(time.Second)
	p.rv = g.nextRV()
	r := &request{act: act, verb: "delete", uri: apiURI("", "v1", p.app.ns.name, "pods", p.name, ""), id: id, code: 200,
		ref:    auditv1.ObjectReference{Resource: "pods", Namespace: p.app.ns.name, Name: p.name, APIVersion: "v1"},
		reqObj: opts, respObj: g.podObject(p, podStored)}
	if impersonator != nil {
		r.id, r.impersonated = impersonator, g.idents.nodeControllerImpersonated
		r.annotations = map[string]string{"authorization.k8s.io/reason": g.idents.nodeController.reason}
	}
	g.do(r)
	g.after(g.between(time.Second, 30*time.Second), func() { g.finalDelete(p, act) })
}

// finalDelete is the kubelet's delete of a stopped pod (or, for a Kosmos leaf node, clustertree's
// force delete). A pod on an unreachable node waits for the node to come back.
func (g *generator) finalDelete(p *pod, act Activity) {
	if p.gone {
		return
	}
	n := p.node
	if n.ready != "True" && !n.kosmos {
		n.terminating = append(n.terminating, p)
		return
	}
	p.gone = true
	p.rv = g.nextRV()
	// The store returns the pod as it deleted it: a grace period of 0 (rest.BeforeDelete moves
	// a pending deletionTimestamp back by the grace period it shortens; a pod not being deleted
	// yet is marked now, its generation bumped), then deleted at once.
	if p.terminating {
		p.deletionTimestamp = p.deletionTimestamp.Add(-time.Duration(p.deletionGrace) * time.Second)
	} else {
		p.terminating, p.deletionTimestamp = true, g.now.Truncate(time.Second)
	}
	p.deletionGrace = 0
	opts := deleteOptions()
	zero := int64(0)
	opts.GracePeriodSeconds = &zero
	id := n.kubelet()
	if n.kosmos {
		id = g.idents.clustertree
	} else {
		uid := types.UID(p.uid)
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	g.stats.PodsDeleted++
	g.do(&request{act: act, verb: "delete", uri: apiURI("", "v1", p.app.ns.name, "pods", p.name, ""), id: id, code: 200,
		ref:    auditv1.ObjectReference{Resource: "pods", Namespace: p.app.ns.name, Name: p.name, APIVersion: "v1"},
		reqObj: opts, respObj: g.podObject(p, podStored)})
}

// authFailure is a request refused by authentication (401) or authorization (403).
func (g *generator) authFailure() {
	if g.chance(0.4) {
		id := &identity{ua: []string{"curl/8.5.0", "python-requests/2.32.3", "Go-http-client/1.1"}[g.rng.IntN(3)], ips: []string{fmt.Sprintf("198.51.100.%d", 1+g.rng.IntN(250))}}
		g.do(&request{act: ActivityAuthFailure, verb: "list", uri: "/api/v1/namespaces/kube-system/secrets", id: id, code: 401, noAuthz: true,
			ref:    auditv1.ObjectReference{Resource: "secrets", Namespace: "kube-system", APIVersion: "v1"},
			status: &metav1.Status{Message: "Authentication failed, attempted: bearer", Code: 401}})
		return
	}
	ns := g.randomNamespace().name
	res := []string{"secrets", "pods", "configmaps"}[g.rng.IntN(3)]
	msg := fmt.Sprintf("%s is forbidden: User %q cannot list resource %q in API group \"\" in the namespace %q", res, g.idents.ciReader.user.Username, res, ns)
	g.do(&request{act: ActivityAuthFailure, verb: "list", uri: apiURI("", "v1", ns, res, "", "") + "?limit=500", id: g.idents.ciReader, code: 403,
		ref:         auditv1.ObjectReference{Resource: res, Namespace: ns, APIVersion: "v1"},
		status:      failure(403, metav1.StatusReasonForbidden, msg, &metav1.StatusDetails{Kind: res}),
		annotations: map[string]string{"authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": ""}})
}
