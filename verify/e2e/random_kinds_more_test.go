package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// More everyday kinds of TestRandomParity, each with what the server adds before validating
// admission: DaemonSets (update strategy and history defaults; their pods select no node),
// PodDisruptionBudgets (status reset; the eviction REST reads them, and refuses an eviction
// they do not allow with 429), NetworkPolicies (policyTypes and port protocols defaulted),
// PriorityClasses and pods naming one (the Priority plugin resolves the class into the pod's
// priority and preemption policy, or refuses an unknown class before validating admission),
// CertificateSigningRequests (the strategy writes the requesting user's name, uid, groups and
// extra into the spec; approval through the approval subresource, as kubectl certificate
// approve does), LimitRanges (the LimitRanger plugin gives later pods their defaults, or
// refuses them before validating admission) and ResourceQuotas (the ResourceQuota plugin
// refuses what exceeds one after validating admission, and everything it counts while its
// controller, when it runs, has not computed its status).

var (
	daemonSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}
	pdbsGVR       = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
	netPolsGVR    = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}
	prioritiesGVR = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}
	csrsGVR       = schema.GroupVersionResource{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"}
	limitsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}
	quotasGVR     = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}

	dsNames       = []string{"ds-a", "ds-b"}
	pdbNames      = []string{"pdb-a", "pdb-b"}
	netPolNames   = []string{"np-a", "np-b"}
	priorityNames = []string{"rnd-high", "rnd-low"}
	csrNames      = []string{"csr-a", "csr-b"}
)

// moreKindAtoms are conditions on what the server sets in these kinds before validating
// admission.
var moreKindAtoms = []string{
	`object.?spec.?updateStrategy.?type.orValue('') == 'RollingUpdate'`,
	`object.?spec.?revisionHistoryLimit.orValue(0) == 10`,
	`object.?status.?disruptionsAllowed.orValue(0) == 0`,
	`object.?spec.?policyTypes.orValue([]).size() == 1`,
	`object.?spec.?ingress.orValue([]).all(r, r.?ports.orValue([]).all(p, p.?protocol.orValue('') == 'TCP'))`,
	`object.?spec.?priority.orValue(0) < 1000`,
	`object.?spec.?preemptionPolicy.orValue('') != 'Never'`,
	`object.?spec.?username.orValue('') != 'rnd-bob'`,
	`object.?spec.?groups.orValue([]).exists(g, g == 'system:authenticated')`,
	`object.?status.?conditions.orValue([]).all(c, c.type != 'Approved')`,
	`object.?spec.?containers.orValue([]).all(c, string(c.?resources.?limits[?'cpu'].orValue('')) != '300m')`,
	`object.?spec.?hard.orValue({}).size() < 2`,
	`object.metadata.?generation.orValue(0) <= 1`,
}

// moreKindStrings are string expressions over the same.
var moreKindStrings = []string{
	`'csr ' + object.?spec.?username.orValue('-') + ' ' + object.?spec.?uid.orValue('-') + ' ' + object.?spec.?groups.orValue([]).join(',') + ' ' + string(size(object.?spec.?extra.orValue({})))`,
	`'priority ' + string(object.?spec.?priority.orValue(-1)) + ' ' + object.?spec.?preemptionPolicy.orValue('-') + ' ' + object.?spec.?priorityClassName.orValue('-')`,
	`'pdb ' + string(object.?spec.?minAvailable.orValue('-')) + ' ' + string(object.?status.?disruptionsAllowed.orValue(-1)) + ' ' + string(object.?status.?observedGeneration.orValue(-1))`,
	`'netpol ' + object.?spec.?policyTypes.orValue([]).join(',')`,
	`'gen ' + string(object.metadata.?generation.orValue(-1)) + ' ' + object.?status.?phase.orValue('-') + ' ' + object.?spec.?color.orValue('-')`,
	`'resources ' + object.?spec.?containers.orValue([]).map(c, string(c.?resources.?limits[?'cpu'].orValue('-')) + '/' + string(c.?resources.?requests[?'memory'].orValue('-'))).join(',')`,
}

// moreKindRules are rule templates of these kinds.
var moreKindRules = []ruleTemplate{
	{[]string{"apps"}, []string{"v1"}, []string{"daemonsets"}},
	{[]string{"policy"}, []string{"v1"}, []string{"poddisruptionbudgets"}},
	{[]string{"networking.k8s.io"}, []string{"v1"}, []string{"networkpolicies"}},
	{[]string{"scheduling.k8s.io"}, []string{"v1"}, []string{"priorityclasses"}},
	{[]string{"certificates.k8s.io"}, []string{"v1"}, []string{"certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"}},
	{[]string{""}, []string{"v1"}, []string{"limitranges", "resourcequotas"}},
}

func init() {
	boolAtoms = append(boolAtoms, moreKindAtoms...)
	stringAtoms = append(stringAtoms, moreKindStrings...)
	ruleTemplates = append(ruleTemplates, moreKindRules...)
}

// setupMoreKinds makes the PriorityClasses pods name.
func (w *randomWorld) setupMoreKinds(ctx context.Context) {
	for _, name := range priorityNames {
		w.put(ctx, priorityClass(name, map[string]int64{"rnd-high": 100000, "rnd-low": 10}[name], "PreemptLowerPriority"))
	}
}

func priorityClass(name string, value int64, preemption string) *unstructured.Unstructured {
	return obj(map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": map[string]any{"name": name},
		"value": value, "preemptionPolicy": preemption, "description": "rnd"})
}

// daemonSetWrite creates, changes the image of (a strategic merge patch) or deletes a
// DaemonSet whose pods select no node.
func (w *randomWorld) daemonSetWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	switch w.r.IntN(3) {
	case 0:
		name := pick(w.r, dsNames...)
		sel := map[string]any{"app": name}
		spec := map[string]any{
			"selector": map[string]any{"matchLabels": sel},
			"template": map[string]any{"metadata": map[string]any{"labels": sel}, "spec": map[string]any{
				"nodeSelector": map[string]any{"rnd.vapc.dev/none": "true"},
				"containers":   []any{map[string]any{"name": "c", "image": pick(w.r, "nginx", "busybox")}}}},
		}
		if chance(w.r, 0.3) {
			spec["updateStrategy"] = map[string]any{"type": "OnDelete"}
		}
		ds := obj(map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]any{"name": name, "namespace": ns, "labels": w.labels()}, "spec": spec})
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates daemonset %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), daemonSetsGVR, ds, o))
	case 1:
		w.patchExisting(u, daemonSetsGVR, ns, "daemonset", dsNames, func() (types.PatchType, string) {
			return types.StrategicMergePatchType, fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":%q}]}}}}`, pick(w.r, "nginx", "busybox", "redis"))
		})
	default:
		w.deleteExisting(u, daemonSetsGVR, ns, "daemonset", dsNames)
	}
}

// pdbWrite creates, changes or deletes a PodDisruptionBudget over the random pods: evictions
// of the pods it selects are then refused while the disruption controller (when it runs) has
// not allowed them.
func (w *randomWorld) pdbWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	switch w.r.IntN(3) {
	case 0:
		name := pick(w.r, pdbNames...)
		spec := map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": pick(w.r, "web", "db")}}}
		if chance(w.r, 0.5) {
			spec["minAvailable"] = pick[any](w.r, int64(1), "50%")
		} else {
			spec["maxUnavailable"] = pick[any](w.r, int64(0), int64(1))
		}
		if chance(w.r, 0.3) {
			spec["unhealthyPodEvictionPolicy"] = pick(w.r, "AlwaysAllow", "IfHealthyBudget")
		}
		pdb := obj(map[string]any{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec})
		if chance(w.r, 0.2) {
			// A status the strategy drops on create.
			pdb.Object["status"] = map[string]any{"disruptionsAllowed": int64(3), "currentHealthy": int64(3), "desiredHealthy": int64(0), "expectedPods": int64(3)}
		}
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates poddisruptionbudget %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), pdbsGVR, pdb, o))
	case 1:
		w.patchExisting(u, pdbsGVR, ns, "poddisruptionbudget", pdbNames, func() (types.PatchType, string) {
			return types.MergePatchType, pick(w.r, `{"spec":{"minAvailable":null,"maxUnavailable":1}}`, `{"metadata":{"labels":{"color":"red"}}}`, `{"spec":{"minAvailable":"50%","maxUnavailable":null}}`)
		})
	default:
		w.deleteExisting(u, pdbsGVR, ns, "poddisruptionbudget", pdbNames)
	}
}

// netPolWrite creates, changes or deletes a NetworkPolicy.
func (w *randomWorld) netPolWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	switch w.r.IntN(3) {
	case 0:
		name := pick(w.r, netPolNames...)
		port := map[string]any{"port": int64(pick(w.r, 80, 443))}
		if chance(w.r, 0.3) {
			port["protocol"] = pick(w.r, "UDP", "TCP")
		}
		spec := map[string]any{"podSelector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"ingress": []any{map[string]any{"ports": []any{port}, "from": []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"tier": "gold"}}}}}}}
		if chance(w.r, 0.4) {
			spec["egress"] = []any{map[string]any{"to": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/8"}}}}}
		}
		if chance(w.r, 0.2) {
			spec["policyTypes"] = []any{"Ingress"}
		}
		np := obj(map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec})
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates networkpolicy %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), netPolsGVR, np, o))
	case 1:
		w.patchExisting(u, netPolsGVR, ns, "networkpolicy", netPolNames, func() (types.PatchType, string) {
			return pick(w.r, types.MergePatchType, types.StrategicMergePatchType), pick(w.r,
				`{"spec":{"ingress":[{"ports":[{"port":8080}]}]}}`, `{"spec":{"policyTypes":["Ingress","Egress"]}}`, `{"metadata":{"labels":{"color":"blue"}}}`)
		})
	default:
		w.deleteExisting(u, netPolsGVR, ns, "networkpolicy", netPolNames)
	}
}

// priorityWrite creates a pod naming a PriorityClass (one of the run's, a built-in one, or one
// that does not exist), or writes or deletes one of the run's classes, now and then as the
// global default.
func (w *randomWorld) priorityWrite() {
	u := w.user()
	switch w.r.IntN(4) {
	case 0, 1:
		ns, name := pick(w.r, w.namespaces()...), pick(w.r, podNames...)
		p := podIn(ns, name, pick(w.r, "", "w-0"), pick(w.r, "nginx", "busybox"), w.labels())
		class := pick(w.r, "rnd-high", "rnd-low", "system-cluster-critical", "rnd-missing")
		spec := p.Object["spec"].(map[string]any)
		spec["priorityClassName"] = class
		if chance(w.r, 0.2) {
			spec["priority"] = int64(7) // refused unless it is the class's
		}
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates pod %s/%s of priority class %s%s", u.name, ns, name, class, dry(o.DryRun)), w.tryCreate(w.client(u), podsGVR, p, o))
	case 2:
		name := pick(w.r, priorityNames...)
		pc := priorityClass(name, int64(pick(w.r, 10, 5000, 100000)), pick(w.r, "PreemptLowerPriority", "Never"))
		if cur, err := w.dyn.Resource(prioritiesGVR).Get(w.ctx, name, metav1.GetOptions{}); err == nil && chance(w.r, 0.9) {
			// Value and preemption policy are immutable: an update keeps them (now and then
			// not, which the registry refuses before admission).
			pc.Object["value"], pc.Object["preemptionPolicy"] = cur.Object["value"], cur.Object["preemptionPolicy"]
		}
		if name == "rnd-low" && chance(w.r, 0.3) {
			pc.Object["globalDefault"] = true
		}
		_, err := w.tryPut(w.ctx, pc)
		w.got("the administrator writes priorityclass "+name, err)
		w.settle() // the Priority plugin reads classes from its informer
	default:
		name := w.existing(prioritiesGVR, "", priorityNames)
		o := w.deleteOptions(w.dyn.Resource(prioritiesGVR), name)
		w.got(fmt.Sprintf("the administrator deletes priorityclass %s %s", name, optionsString(o)), w.dyn.Resource(prioritiesGVR).Delete(w.ctx, name, o))
		w.settle()
	}
}

// csrWrite creates a CertificateSigningRequest for a custom signer (no controller signs it),
// approves or denies one through its approval subresource, or deletes one.
func (w *randomWorld) csrWrite() {
	u := w.user()
	ri := w.client(u).Resource(csrsGVR)
	switch w.r.IntN(4) {
	case 0, 1:
		name := pick(w.r, csrNames...)
		cn, org, signer := pick(w.r, "rnd-client", "rnd-other"), "rnd", "example.com/rnd"
		client := w.client(u)
		switch w.r.IntN(4) {
		case 0:
			// kube-apiserver's client signer: the CertificateSubjectRestriction plugin refuses
			// system:masters before validating admission.
			signer, org = "kubernetes.io/kube-apiserver-client", pick(w.r, "rnd", "system:masters")
		case 1:
			// A kubelet's client certificate, as its kubelet asks for it: the CSR approving
			// and signing controllers approve and sign it when they run.
			cn, org, signer = "system:node:"+kubeletNode, "system:nodes", "kubernetes.io/kube-apiserver-client-kubelet"
			client = w.dynamicFor(rest.ImpersonationConfig{UserName: "system:node:" + kubeletNode, Groups: []string{"system:nodes"}})
		}
		spec := map[string]any{"request": w.csrPEM(cn, org), "signerName": signer, "usages": []any{"client auth", "digital signature"}}
		if chance(w.r, 0.3) {
			spec["expirationSeconds"] = int64(pick(w.r, 600, 3600))
		}
		if chance(w.r, 0.2) {
			spec["username"] = "someone-else" // the strategy writes the requester's
		}
		csr := obj(map[string]any{"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": map[string]any{"name": name, "labels": w.labels()}, "spec": spec})
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates certificatesigningrequest %s for %s (CN %s, O %s)%s", u.name, name, signer, cn, org, dry(o.DryRun)), w.tryCreate(client, csrsGVR, csr, o))
	case 2:
		name := w.undecidedCSR()
		cur, err := ri.Get(w.ctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		kind := pick(w.r, "Approved", "Denied")
		conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
		conds = append(conds, map[string]any{"type": kind, "status": "True", "reason": "RndReview", "message": "by the random test"})
		_ = unstructured.SetNestedSlice(cur.Object, conds, "status", "conditions")
		o := w.updateOptions()
		_, err = ri.Update(w.ctx, cur, o, "approval")
		w.got(fmt.Sprintf("%s marks certificatesigningrequest %s %s%s", u.name, name, kind, dry(o.DryRun)), err)
	default:
		name := w.existing(csrsGVR, "", csrNames)
		o := w.deleteOptions(ri, name)
		w.got(fmt.Sprintf("%s deletes certificatesigningrequest %s %s", u.name, name, optionsString(o)), ri.Delete(w.ctx, name, o))
	}
}

// undecidedCSR picks a CSR of the pool that is neither approved nor denied yet (another decision
// is refused before admission), or any name of the pool when there is none.
func (w *randomWorld) undecidedCSR() string {
	var names []string
	if l, err := w.dyn.Resource(csrsGVR).List(w.ctx, metav1.ListOptions{}); err == nil {
		for _, it := range l.Items {
			conds, _, _ := unstructured.NestedSlice(it.Object, "status", "conditions")
			if slices.Contains(csrNames, it.GetName()) && len(conds) == 0 {
				names = append(names, it.GetName())
			}
		}
	}
	if len(names) == 0 {
		names = csrNames
	}
	return pick(w.r, names...)
}

// csrPEM is a PEM-encoded certificate request of a new key for the subject, base64-encoded as
// the API takes it.
func (w *randomWorld) csrPEM(cn, org string) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		w.t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{org}}}, key)
	if err != nil {
		w.t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// limitRangeWrite writes the LimitRange of a namespace (container defaults, now and then a
// maximum) or deletes it.
func (w *randomWorld) limitRangeWrite() {
	ns := pick(w.r, w.namespaces()...)
	if chance(w.r, 0.25) {
		name := w.existing(limitsGVR, ns, []string{"limits"})
		o := w.deleteOptions(w.dyn.Resource(limitsGVR).Namespace(ns), name)
		w.got(fmt.Sprintf("the administrator deletes limitrange %s/%s %s", ns, name, optionsString(o)), w.dyn.Resource(limitsGVR).Namespace(ns).Delete(w.ctx, name, o))
		w.settle() // the LimitRanger plugin reads them from its informer
		return
	}
	limit := map[string]any{"type": "Container", "default": map[string]any{"cpu": pick(w.r, "200m", "300m")}, "defaultRequest": map[string]any{"memory": pick(w.r, "64Mi", "128Mi")}}
	if chance(w.r, 0.3) {
		limit["max"] = map[string]any{"cpu": pick(w.r, "250m", "1")}
	}
	lr := obj(map[string]any{"apiVersion": "v1", "kind": "LimitRange", "metadata": map[string]any{"name": "limits", "namespace": ns}, "spec": map[string]any{"limits": []any{limit}}})
	_, err := w.tryPut(w.ctx, lr)
	w.got("the administrator writes limitrange "+ns+"/limits", err)
	w.settle()
}

// quotaWrite writes the ResourceQuota of a namespace over a few of the run's kinds, or deletes
// it.
func (w *randomWorld) quotaWrite() {
	ns := pick(w.r, w.namespaces()...)
	if chance(w.r, 0.3) {
		name := w.existing(quotasGVR, ns, []string{"quota"})
		o := w.deleteOptions(w.dyn.Resource(quotasGVR).Namespace(ns), name)
		w.got(fmt.Sprintf("the administrator deletes resourcequota %s/%s %s", ns, name, optionsString(o)), w.dyn.Resource(quotasGVR).Namespace(ns).Delete(w.ctx, name, o))
		return
	}
	hard := map[string]any{"count/poddisruptionbudgets.policy": pick(w.r, "1", "5")}
	if chance(w.r, 0.5) {
		hard["count/networkpolicies.networking.k8s.io"] = pick(w.r, "1", "5")
	}
	q := obj(map[string]any{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": map[string]any{"name": "quota", "namespace": ns}, "spec": map[string]any{"hard": hard}})
	_, err := w.tryPut(w.ctx, q)
	w.got("the administrator writes resourcequota "+ns+"/quota", err)
}
