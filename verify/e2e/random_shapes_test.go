package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The request shapes of TestRandomParity whose admission object the server builds from more
// than the request: defaulting and conversion (Secrets with stringData, HorizontalPodAutoscalers
// sent as autoscaling/v1 and v2, Services, Jobs), registry strategies (a pod's status written
// through the pod, its spec through its status), the built-in admission plugins (pods), field
// management (server-side apply), patches whose content type changes the result, finalizers,
// deletecollection with selectors, and connect requests that fail after admission.

var (
	servicesGVR = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	jobsGVR     = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	hpaV1GVR    = schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}
	hpaV2GVR    = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}

	hpaNames = []string{"hpa-a", "hpa-b"}
	svcNames = []string{"svc-a", "svc-b"}
	jobNames = []string{"job-a", "job-b"}
)

// shapeAtoms are conditions on what the server sets before validating admission: defaults, the
// pod strategy's status, the admission plugins' mutations, conversion between versions.
var shapeAtoms = []string{
	`object.?spec.?tolerations.orValue([]).all(t, t.key != 'node.kubernetes.io/unreachable' || t.?tolerationSeconds.orValue(0) > 60)`,
	`object.?spec.?priority.orValue(0) == 0`,
	`object.?spec.?serviceAccountName.orValue('default') == 'default'`,
	`request.operation != 'CREATE' || object.?status.?phase.orValue('Pending') == 'Pending'`,
	`object.?spec.?containers.orValue([]).all(c, c.?imagePullPolicy.orValue('') != 'IfNotPresent')`,
	`size(object.?spec.?volumes.orValue([])) < 2`,
	`object.?status.?qosClass.orValue('') != 'Guaranteed'`,
	`object.?spec.?minReplicas.orValue(1) <= 2`,
	`object.?spec.?metrics.orValue([]).all(m, m.type != 'Resource' || m.resource.target.?averageUtilization.orValue(0) < 70)`,
	`size(object.?spec.?metrics.orValue([])) < 2`,
	`object.?spec.?sessionAffinity.orValue('None') == 'None'`,
	`object.?spec.?ports.orValue([]).all(p, p.?protocol.orValue('TCP') == 'TCP')`,
	`object.?spec.?type.orValue('') != 'NodePort'`,
	`object.?spec.?ports.orValue([]).all(p, p.?nodePort.orValue(0) % 2 == 0)`,
	`!object.?spec.?clusterIP.orValue('').endsWith('7')`,
	`object.?spec.?backoffLimit.orValue(6) == 6`,
	`object.?spec.?strategy.?type.orValue('RollingUpdate') == 'RollingUpdate'`,
	`object.?spec.?revisionHistoryLimit.orValue(10) >= 10`,
	`!has(object.stringData)`,
	`size(object.?data.orValue({})) <= 2`,
	`object.?spec.?template.?spec.?containers.orValue([]).all(c, c.?terminationMessagePolicy.orValue('File') == 'File')`,
	`object.metadata.?finalizers.orValue([]).size() == 0 || request.operation != 'DELETE'`,
	`oldObject == null || !has(oldObject.metadata.deletionTimestamp)`,
	`object.?command.orValue([]).all(c, c != 'rm')`,
	`object.?container.orValue('') != 'sidecar'`,
	`object.?ports.orValue([]).all(p, p != 22)`,
	`object.metadata.?managedFields.orValue([]).all(m, m.manager != 'rnd-apply')`,
	// A name the server generates: its base is known where the log does not hold the rest
	// (the ServiceAccount plugin's token volume, a refused create's generateName).
	`object.?spec.?volumes.orValue([]).exists(v, v.name.startsWith('kube-api-access-'))`,
	`object.?spec.?volumes.orValue([]).all(v, !(v.name in ['kube-api-access', 'docker-sock']) && v.name != 'kube-api-access-7xkq2')`,
	`!object.metadata.name.startsWith('gen-') || request.name.startsWith('gen-b')`,
	`object.metadata.name != 'gen-' && !(request.name in ['gen', 'cm-a'])`,
}

// shapeStrings are string expressions over the same.
var shapeStrings = []string{
	`'tolerations ' + object.?spec.?tolerations.orValue([]).map(t, t.key + ':' + string(t.?tolerationSeconds.orValue(-1))).join(',')`,
	`'sa ' + object.?spec.?serviceAccountName.orValue('-') + ' volumes ' + string(size(object.?spec.?volumes.orValue([])))`,
	`'hpa ' + string(object.?spec.?minReplicas.orValue(-1)) + ' metrics ' + string(size(object.?spec.?metrics.orValue([])))`,
	// A map's keys in the order of the map's iteration, which is random in the server: the
	// keys the scenario writes, in a fixed order.
	`'keys ' + ['a', 'b', 'big', 'block', 'color', 'injected', 'max', 'mode', 'n', 'password', 'prefix'].filter(k, k in object.?data.orValue({})).join(',')`,
	`'exec ' + object.?command.orValue([]).join(' ') + ' in ' + object.?container.orValue('-')`,
	`'proxy ' + object.?kind.orValue('-') + ' ' + object.?path.orValue('-')`,
	`'managers ' + object.metadata.?managedFields.orValue([]).map(m, m.manager + '/' + m.operation).join(',')`,
}

// shapeRules are rule templates of the kinds the shapes write.
var shapeRules = []ruleTemplate{
	{[]string{"autoscaling"}, []string{"v2"}, []string{"horizontalpodautoscalers"}},
	{[]string{"autoscaling"}, []string{"v1"}, []string{"horizontalpodautoscalers"}},
	{[]string{"autoscaling"}, []string{"*"}, []string{"horizontalpodautoscalers", "horizontalpodautoscalers/status"}},
	{[]string{""}, []string{"v1"}, []string{"services"}},
	{[]string{"batch"}, []string{"v1"}, []string{"jobs"}},
	{[]string{""}, []string{"v1"}, []string{"pods/exec", "pods/attach", "pods/portforward"}},
	{[]string{""}, []string{"v1"}, []string{"pods/proxy", "services/proxy", "nodes/proxy"}},
	{[]string{""}, []string{"v1"}, []string{"secrets", "configmaps"}},
}

func init() {
	boolAtoms = append(boolAtoms, shapeAtoms...)
	stringAtoms = append(stringAtoms, shapeStrings...)
	ruleTemplates = append(ruleTemplates, shapeRules...)
}

// secretStringData writes a Secret with stringData: the server merges it into data while it
// decodes the request, before admission.
func (w *randomWorld) secretStringData() {
	u, ns, name := w.user(), pick(w.r, w.namespaces()...), pick(w.r, "s1", "s2", "sec-a")
	sd := map[string]any{}
	for _, k := range some(w.r, 1, 3, "password", "n", "mode", "token") {
		sd[k] = pick(w.r, "x", "3", "deny-all", "hunter2")
	}
	switch w.r.IntN(3) {
	case 0:
		s := obj(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name, "namespace": ns}, "stringData": sd})
		if chance(w.r, 0.5) {
			s.Object["data"] = map[string]any{"n": "Nw=="}
		}
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates secret %s/%s with stringData%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), secretsGVR, s, o))
	case 1:
		ri := w.client(u).Resource(secretsGVR).Namespace(ns)
		cur, err := ri.Get(w.ctx, w.existing(secretsGVR, ns, []string{"s1", "s2", "sec-a"}), metav1.GetOptions{})
		if err != nil {
			return
		}
		cur.Object["stringData"] = sd
		o := w.updateOptions()
		_, err = ri.Update(w.ctx, cur, o)
		w.got(fmt.Sprintf("%s updates secret %s/%s with stringData%s", u.name, ns, cur.GetName(), dry(o.DryRun)), err)
	default:
		name = w.existing(secretsGVR, ns, []string{"s1", "s2", "sec-a"})
		body := fmt.Sprintf(`{"stringData":{"%s":"%s"}}`, pick(w.r, "password", "n", "extra"), pick(w.r, "1", "x"))
		pt := pick(w.r, types.MergePatchType, types.StrategicMergePatchType)
		o := w.patchOptions()
		_, err := w.client(u).Resource(secretsGVR).Namespace(ns).Patch(w.ctx, name, pt, []byte(body), o)
		w.got(fmt.Sprintf("%s patches secret %s/%s (%s %s)%s", u.name, ns, name, pt, body, dry(o.DryRun)), err)
	}
}

// hpaWrite writes a HorizontalPodAutoscaler as autoscaling/v1 or v2: a policy of the other
// version (matchPolicy Equivalent) sees it converted by the server.
func (w *randomWorld) hpaWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	v1 := chance(w.r, 0.5)
	gvr, apiVersion := hpaV2GVR, "autoscaling/v2"
	if v1 {
		gvr, apiVersion = hpaV1GVR, "autoscaling/v1"
	}
	ri := w.client(u).Resource(gvr).Namespace(ns)
	switch w.r.IntN(4) {
	case 0, 1:
		name := pick(w.r, hpaNames...)
		spec := map[string]any{
			"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": pick(w.r, depNames...)},
			"maxReplicas":    int64(2 + w.r.IntN(8)),
		}
		if chance(w.r, 0.5) {
			spec["minReplicas"] = int64(1 + w.r.IntN(3))
		}
		if v1 {
			if chance(w.r, 0.7) {
				spec["targetCPUUtilizationPercentage"] = int64(pick(w.r, 50, 80))
			}
		} else if chance(w.r, 0.8) {
			var metrics []any
			for range 1 + w.r.IntN(2) {
				metrics = append(metrics, map[string]any{"type": "Resource", "resource": map[string]any{"name": pick(w.r, "cpu", "memory"),
					"target": map[string]any{"type": "Utilization", "averageUtilization": int64(pick(w.r, 50, 80))}}})
			}
			spec["metrics"] = metrics
		}
		h := obj(map[string]any{"apiVersion": apiVersion, "kind": "HorizontalPodAutoscaler", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec})
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates %s hpa %s/%s%s", u.name, apiVersion, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), gvr, h, o))
	case 2:
		name := w.existing(gvr, ns, hpaNames)
		body := pick(w.r, `{"spec":{"maxReplicas":9}}`, `{"spec":{"minReplicas":3}}`, `{"metadata":{"labels":{"color":"red"}}}`)
		if v1 && chance(w.r, 0.5) {
			body = `{"spec":{"targetCPUUtilizationPercentage":75}}`
		}
		o := w.patchOptions()
		_, err := ri.Patch(w.ctx, name, pick(w.r, types.MergePatchType, types.StrategicMergePatchType), []byte(body), o)
		w.got(fmt.Sprintf("%s patches %s hpa %s/%s (%s)%s", u.name, apiVersion, ns, name, body, dry(o.DryRun)), err)
	default:
		w.deleteExisting(u, gvr, ns, apiVersion+" hpa", hpaNames)
	}
}

// serviceWrite creates, applies server-side, patches or deletes a Service: its defaults, and the
// addresses and ports the server allocates before admission (which a log does not hold for a
// refused create, nor for a refused server-side apply that would have created it, nor for a
// refused patch to NodePort).
func (w *randomWorld) serviceWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	switch w.r.IntN(4) {
	case 0:
		name := pick(w.r, svcNames...)
		s := obj(w.serviceBody(ns, name))
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates service %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), servicesGVR, s, o))
	case 3:
		// kubectl apply --server-side: admission's CREATE where the Service is absent.
		name := pick(w.r, svcNames...)
		o := metav1.PatchOptions{FieldManager: pick(w.r, "kubectl", "rnd-apply")}
		if chance(w.r, 0.15) {
			o.DryRun = []string{metav1.DryRunAll}
		}
		_, err := w.client(u).Resource(servicesGVR).Namespace(ns).Patch(w.ctx, name, types.ApplyPatchType, mustJSON(w.serviceBody(ns, name)), o)
		w.got(fmt.Sprintf("%s applies service %s/%s as %s%s", u.name, ns, name, o.FieldManager, dry(o.DryRun)), err)
	case 1:
		w.patchExisting(u, servicesGVR, ns, "service", svcNames, func() (types.PatchType, string) {
			// A type that allocates a node port where the Service had none, before admission.
			return types.MergePatchType, pick(w.r, `{"metadata":{"labels":{"color":"green"}}}`, `{"spec":{"sessionAffinity":"ClientIP"}}`,
				`{"spec":{"type":"NodePort"}}`, `{"spec":{"type":"ClusterIP"}}`)
		})
	default:
		w.deleteExisting(u, servicesGVR, ns, "service", svcNames)
	}
}

// serviceBody is a Service of a port, sometimes of type NodePort.
func (w *randomWorld) serviceBody(ns, name string) map[string]any {
	port := map[string]any{"port": int64(pick(w.r, 80, 8080))}
	if chance(w.r, 0.3) {
		port["protocol"] = pick(w.r, "TCP", "UDP")
	}
	spec := map[string]any{"selector": map[string]any{"app": pick(w.r, "web", "db")}, "ports": []any{port}}
	if chance(w.r, 0.3) {
		spec["type"] = "NodePort"
	}
	return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}
}

// jobWrite creates or deletes a Job: the job strategy labels its pod template with the uid it
// generates.
func (w *randomWorld) jobWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	ri := w.client(u).Resource(jobsGVR).Namespace(ns)
	if chance(w.r, 0.6) {
		name := pick(w.r, jobNames...)
		spec := map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "c", "image": pick(w.r, "busybox", "nginx")}}}}}
		if chance(w.r, 0.4) {
			spec["backoffLimit"] = int64(w.r.IntN(8))
		}
		if chance(w.r, 0.3) {
			spec["suspend"] = true
		}
		j := obj(map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec})
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates job %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), jobsGVR, j, o))
		return
	}
	name := w.existing(jobsGVR, ns, jobNames)
	o := w.deleteOptions(ri, name)
	if o.PropagationPolicy == nil {
		o.PropagationPolicy = ptr.To(metav1.DeletePropagationBackground)
	}
	w.got(fmt.Sprintf("%s deletes job %s/%s %s", u.name, ns, name, optionsString(o)), ri.Delete(w.ctx, name, o))
}

// applyStep applies a ConfigMap or a Deployment server-side, as kubectl apply --server-side
// does, sometimes forcing conflicts with another manager's fields.
func (w *randomWorld) applyStep() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	manager := pick(w.r, "rnd-apply", "kubectl", "rnd-other")
	force := chance(w.r, 0.3)
	var gvr schema.GroupVersionResource
	var body map[string]any
	if chance(w.r, 0.6) {
		gvr = configMapsGVR
		name := pick(w.r, cmNames...)
		body = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": ns}}
		if l := w.labels(); l != nil {
			body["metadata"].(map[string]any)["labels"] = l
		}
		if d := w.data(); d != nil {
			body["data"] = d
		}
	} else {
		gvr = deploymentsGVR
		name := pick(w.r, depNames...)
		d := deploymentIn(ns, name, int64(w.r.IntN(6)))
		body = d.Object
	}
	raw := mustJSON(body)
	o := metav1.PatchOptions{FieldManager: manager}
	if force {
		o.Force = ptr.To(true)
	}
	if chance(w.r, 0.15) {
		o.DryRun = []string{metav1.DryRunAll}
	}
	name := body["metadata"].(map[string]any)["name"].(string)
	_, err := w.client(u).Resource(gvr).Namespace(ns).Patch(w.ctx, name, types.ApplyPatchType, raw, o)
	w.got(fmt.Sprintf("%s applies %s %s/%s as %s (force %v)%s", u.name, gvr.Resource, ns, name, manager, force, dry(o.DryRun)), err)
}

// listPatch patches a pod or a deployment with a body that a merge patch and a strategic merge
// patch apply differently (lists): the log does not say which one the client sent.
func (w *randomWorld) listPatch() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	pt := pick(w.r, types.MergePatchType, types.StrategicMergePatchType)
	o := w.patchOptions()
	if chance(w.r, 0.5) {
		name := w.existing(podsGVR, ns, podNames)
		body := pick(w.r,
			`{"spec":{"tolerations":[{"key":"rnd","operator":"Exists","effect":"NoSchedule"}]}}`,
			`{"metadata":{"finalizers":["rnd.vapc.dev/hold"]}}`,
			`{"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
		_, err := w.client(u).Resource(podsGVR).Namespace(ns).Patch(w.ctx, name, pt, []byte(body), o)
		w.got(fmt.Sprintf("%s patches pod %s/%s (%s %s)%s", u.name, ns, name, pt, body, dry(o.DryRun)), err)
		return
	}
	name := w.existing(deploymentsGVR, ns, depNames)
	body := pick(w.r,
		`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"nginx"}]}}}}`,
		`{"spec":{"template":{"metadata":{"annotations":{"rnd.vapc.dev/restart":"1"}}}}}`)
	_, err := w.client(u).Resource(deploymentsGVR).Namespace(ns).Patch(w.ctx, name, pt, []byte(body), o)
	w.got(fmt.Sprintf("%s patches deployment %s/%s (%s %s)%s", u.name, ns, name, pt, body, dry(o.DryRun)), err)
}

// strategyWrite writes a pod's status through the pod and its spec through its status: each
// strategy keeps the stored other half before admission.
func (w *randomWorld) strategyWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := w.existing(podsGVR, ns, podNames)
	ri := w.client(u).Resource(podsGVR).Namespace(ns)
	cur, err := ri.Get(w.ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	o := w.updateOptions()
	if chance(w.r, 0.5) {
		_ = unstructured.SetNestedField(cur.Object, pick(w.r, "Failed", "Running"), "status", "phase")
		cur.SetLabels(toStrings(w.labels()))
		_, err = ri.Update(w.ctx, cur, o)
		w.got(fmt.Sprintf("%s updates pod %s/%s with a status%s", u.name, ns, name, dry(o.DryRun)), err)
		return
	}
	if cs, ok, _ := unstructured.NestedSlice(cur.Object, "spec", "containers"); ok && len(cs) > 0 {
		cs[0].(map[string]any)["image"] = pick(w.r, "busybox", "nginx")
		_ = unstructured.SetNestedSlice(cur.Object, cs, "spec", "containers")
	}
	_ = unstructured.SetNestedField(cur.Object, "rnd", "status", "message")
	_, err = ri.UpdateStatus(w.ctx, cur, o)
	w.got(fmt.Sprintf("%s updates the status of pod %s/%s with a spec%s", u.name, ns, name, dry(o.DryRun)), err)
}

// finalizerStep holds a ConfigMap with a finalizer, deletes it (it stays, marked deleted), or
// releases it (the deletion completes).
func (w *randomWorld) finalizerStep() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	ri := w.client(u).Resource(configMapsGVR).Namespace(ns)
	name := w.existing(configMapsGVR, ns, cmNames)
	o := w.patchOptions()
	var body string
	switch w.r.IntN(3) {
	case 0:
		body = `{"metadata":{"finalizers":["rnd.vapc.dev/hold"]}}`
	case 1:
		body = `{"metadata":{"finalizers":null}}`
	default:
		d := w.deleteOptions(ri, name)
		w.got(fmt.Sprintf("%s deletes configmap %s/%s %s", u.name, ns, name, optionsString(d)), ri.Delete(w.ctx, name, d))
		return
	}
	_, err := ri.Patch(w.ctx, name, types.MergePatchType, []byte(body), o)
	w.got(fmt.Sprintf("%s patches the finalizers of configmap %s/%s (%s)%s", u.name, ns, name, body, dry(o.DryRun)), err)
}

// podDeleteCollection deletes the pods of a namespace a selector picks: the store admits them
// one by one.
func (w *randomWorld) podDeleteCollection() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	sel := pick(w.r, "color=red", "app=db", "color in (blue,green)", "!app", "app=web,color!=red")
	o := metav1.DeleteOptions{}
	if chance(w.r, 0.5) {
		o.DryRun = []string{metav1.DryRunAll}
	}
	if chance(w.r, 0.3) {
		o.GracePeriodSeconds = ptr.To(pick(w.r, int64(0), int64(15)))
	}
	err := w.client(u).Resource(podsGVR).Namespace(ns).DeleteCollection(w.ctx, o, metav1.ListOptions{LabelSelector: sel})
	w.got(fmt.Sprintf("%s deletes the pods %s of %s%s", u.name, sel, ns, dry(o.DryRun)), err)
}

// connectStep sends exec, attach or portforward, or a request through the apiserver's proxy to
// a pod, a service or a node (kubectl proxy's and a Prometheus scraping through the
// apiserver's way: a GET, or a POST, whose options are the path after proxy/, a trailing slash
// kept): admission runs (CONNECT), then the server fails to reach what it connects to (no
// kubelet, no endpoints, a node that does not exist). Where the controllers run, the played
// kubelets give pods an address nothing answers at, which the proxy would wait on: only the
// node that does not exist is proxied to there.
func (w *randomWorld) connectStep() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := w.existing(podsGVR, ns, podNames)
	q := url.Values{}
	sub := pick(w.r, "exec", "attach", "portforward", "proxy")
	method := http.MethodPost
	switch sub {
	case "exec":
		for _, c := range pick(w.r, []string{"ls"}, []string{"rm", "-rf", "/"}, []string{"sh", "-c", "id"}) {
			q.Add("command", c)
		}
		q.Set("stdout", "true")
		if chance(w.r, 0.5) {
			q.Set("container", pick(w.r, "c", "sidecar"))
		}
	case "attach":
		q.Set("stdin", pick(w.r, "true", "false"))
		q.Set("container", pick(w.r, "c", "sidecar"))
	case "proxy":
		method = pick(w.r, http.MethodGet, http.MethodGet, http.MethodPost)
		rest := pick(w.r, "metrics", "metrics/cadvisor", "configz", "healthz/", "")
		var path string
		to := w.r.IntN(3)
		if w.controllers {
			to = 2
		}
		switch to {
		case 0:
			path = fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/proxy/%s", ns, name, rest)
		case 1:
			svc := pick(w.r, svcNames...)
			path = fmt.Sprintf("/api/v1/namespaces/%s/services/%s/proxy/%s", ns, pick(w.r, svc, "https:"+svc+":443", svc+":80"), rest)
		default:
			path = "/api/v1/nodes/rnd-nowhere/proxy/" + rest
		}
		err := w.rawRequest(u, method, path, nil)
		w.got(fmt.Sprintf("%s %s %s", u.name, method, path), err)
		return
	default:
		q.Set("ports", pick(w.r, "80", "22", "80,8080"))
	}
	path := fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/%s?%s", ns, name, sub, q.Encode())
	err := w.rawRequest(u, method, path, nil)
	w.got(fmt.Sprintf("%s %s pod %s/%s", u.name, sub, ns, name), err)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// randomAuditPolicy is an audit policy of the run: a level for each resource the scenario
// writes, RequestResponse most often (now and then with omitManagedFields), Request and
// Metadata now and then, so that the replay is held to what each level lets it know. The
// ReplicaLimit CRD, the params' kind, is logged at Metadata level half the time: the replay
// learns the kind from its use. The barrier's objects stay at RequestResponse; the admission
// policies and bindings are at admission (admissionLevel).
func randomAuditPolicy(r *rand.Rand, all bool, admission string) (string, map[string]string) {
	levels := map[string]string{}
	if admission != "RequestResponse" {
		levels["admissionregistration.k8s.io"] = admission
	}
	var rules []string
	resources := []struct{ group, resource string }{
		{"", "configmaps"}, {"", "secrets"}, {"", "pods"}, {"", "nodes"}, {"", "services"}, {"", "namespaces"},
		{"", "serviceaccounts"}, {"", "events"}, {"apps", "deployments"}, {"apps", "replicasets"}, {"apps", "statefulsets"},
		{"", "replicationcontrollers"}, {"batch", "jobs"}, {"autoscaling", "horizontalpodautoscalers"},
		{rndGroup, "widgets"}, {rndGroup, "replicalimits"}, {"apiextensions.k8s.io", "customresourcedefinitions"},
		{"", "persistentvolumeclaims"}, {"networking.k8s.io", "ingresses"}, {"rbac.authorization.k8s.io", "rolebindings"},
		{"batch", "cronjobs"}, {"coordination.k8s.io", "leases"}, {"apps", "daemonsets"}, {"policy", "poddisruptionbudgets"},
		{"networking.k8s.io", "networkpolicies"}, {"scheduling.k8s.io", "priorityclasses"}, {"certificates.k8s.io", "certificatesigningrequests"},
		{"", "limitranges"}, {"", "resourcequotas"},
	}
	for _, res := range resources {
		level := "RequestResponse"
		if !all {
			omit := ""
			switch n := r.IntN(10); {
			case n == 0, n == 3 && (res.resource == "pods" || res.resource == "configmaps"):
				// Pods at Metadata as many production audit policies log them: their DELETEs
				// are decided without their options (verify/replay/unlogged.go).
				level = "Metadata"
			case n == 1:
				level = "Request"
			case n == 2:
				// The objects without their managedFields, as production audit policies
				// often log them.
				omit = "\n  omitManagedFields: true"
			}
			if res.resource == "customresourcedefinitions" && chance(r, 0.5) {
				level, omit = "Metadata", ""
			}
			if slices.Contains(strings.Split(os.Getenv("VAPC_RANDOM_METADATA"), ","), res.resource) {
				level, omit = "Metadata", ""
			}
			if omit != "" {
				levels[res.group+"/"+res.resource] = level + " omitManagedFields"
				rules = append(rules, fmt.Sprintf("- level: %s%s\n  resources:\n  - group: %q\n    resources: [%q, %q]\n  omitStages: []", level, omit, res.group, res.resource, res.resource+"/*"))
				continue
			}
		}
		levels[res.group+"/"+res.resource] = level
		if level == "RequestResponse" {
			continue
		}
		rules = append(rules, fmt.Sprintf("- level: %s\n  resources:\n  - group: %q\n    resources: [%q, %q]\n  omitStages: []", level, res.group, res.resource, res.resource+"/*"))
	}
	sort.Strings(rules)
	// The barrier's objects first, at RequestResponse: its ConfigMaps and Node are how the test
	// waits for the server's policy informers.
	policy := "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitManagedFields: false\nrules:\n" +
		"- level: RequestResponse\n  resources:\n  - group: \"\"\n    resources: [\"configmaps\", \"nodes\", \"namespaces\"]\n    resourceNames: [\"vapc-barrier\", \"probe\"]\n" +
		"- level: " + admission + "\n  resources:\n  - group: \"admissionregistration.k8s.io\"\n" +
		strings.Join(rules, "\n") + "\n- level: RequestResponse\n"
	return policy, levels
}

// admissionLevel is the level the run logs the admission policies and bindings at:
// RequestResponse, but for a mixed run now and then Request (their writes' bodies: a patch's
// result not shown) or Metadata (none: the replay cannot tell the cluster's policies are the
// given ones, and takes the log's verdicts of them as evidence only with --check-recorded). It
// draws from a stream of its own, so that the seeds' scenarios are as they were.
func admissionLevel(seed uint64, mixed bool) string {
	if !mixed {
		return "RequestResponse"
	}
	switch n := rand.New(rand.NewPCG(seed, 0x61646d)).IntN(10); {
	case n == 0:
		return "Metadata"
	case n < 3:
		return "Request"
	}
	return "RequestResponse"
}

// writeAuditPolicy writes the audit policy into dir.
func writeAuditPolicy(dir, policy string) (string, error) {
	path := filepath.Join(dir, "audit-policy.yaml")
	return path, os.WriteFile(path, []byte(policy), 0o600)
}

// raceStep sends two writes to one configmap at once, as controllers racing each other (or a
// user racing one) do, then a third right after them. The log records each request when its
// response completes, not when it read the object: the replay must decide none of them on a
// version it may not have read (a write logged after a request it ran concurrently with; the
// server's first attempt on its watch cache's copy from before a write that completed
// moments earlier). One of the writes may relabel the configmap's namespace or write a param,
// which the policies read from an informer that may not hold it yet, or hold already.
func (w *randomWorld) raceStep() {
	ns := pick(w.r, w.namespaces()...)
	name := w.existing(configMapsGVR, ns, cmNames)
	type write struct {
		what string
		do   func() error
	}
	typed := false // a write to a namespace or a param
	next := func() write {
		u := w.user()
		ri := w.client(u).Resource(configMapsGVR).Namespace(ns)
		if w.r.IntN(5) == 0 {
			typed = true
			// A param of the policies, written without a sync: kube-apiserver's informer may
			// hold it before the other write's admission reads it, though the log records it
			// after.
			what, do := w.paramWrite()
			return write{what, do}
		}
		if w.r.IntN(5) == 0 {
			typed = true
			// The namespace the other writes are in, relabelled without a sync: the
			// policies read it from kube-apiserver's informer, which may lag.
			body := pick(w.r, `{"metadata":{"labels":{"tier":"gold"}}}`, `{"metadata":{"labels":{"tier":null}}}`, `{"metadata":{"labels":{"env":"prod"}}}`, `{"metadata":{"labels":{"env":"dev"}}}`)
			u := rndUsers[0]
			return write{fmt.Sprintf("%s labels namespace %s %s", u.name, ns, body), func() error {
				_, err := w.client(u).Resource(namespacesGVR).Patch(w.ctx, ns, types.MergePatchType, []byte(body), metav1.PatchOptions{})
				return err
			}}
		}
		if w.r.IntN(4) == 0 {
			o := w.deleteOptions(ri, name)
			return write{fmt.Sprintf("%s deletes configmap %s/%s %s", u.name, ns, name, optionsString(o)), func() error { return ri.Delete(w.ctx, name, o) }}
		}
		pt, body := w.patch()
		o := w.patchOptions()
		return write{fmt.Sprintf("%s patches configmap %s/%s (%s %s)%s", u.name, ns, name, pt, body, dry(o.DryRun)), func() error {
			_, err := ri.Patch(w.ctx, name, pt, []byte(body), o)
			return err
		}}
	}
	_, before := w.cluster.auditIDsSince(0)
	defer func() {
		ids, _ := w.cluster.auditIDsSince(before)
		for _, id := range ids {
			w.racing[id] = true
		}
	}()
	racing := []write{next(), next()}
	errs := make([]error, len(racing))
	var wg sync.WaitGroup
	for i, r := range racing {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.do()
		}()
	}
	wg.Wait()
	for i, r := range racing {
		n := len(w.denied)
		w.got(r.what+" (racing another write)", errs[i])
		if len(w.denied) > n {
			// Which of the two responses came last is not known here: the check of every
			// denial of the log covers it.
			w.denied[n].auditID = ""
		}
	}
	after := next()
	w.got(after.what+" (right after two racing writes)", after.do())
	if typed {
		// The requests after these are not racing: received once kube-apiserver's informers
		// hold the namespace or param written (after both writes completed, as the replay
		// takes it to be likely).
		w.sync(w.ctx)
		w.settleLag()
	}
}
