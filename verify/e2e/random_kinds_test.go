package e2e

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Everyday kinds of TestRandomParity beyond pods, ConfigMaps and workloads, each with what the
// server adds before validating admission: PersistentVolumeClaims (the DefaultStorageClass
// plugin's class from the cluster's default StorageClass, the StorageObjectInUseProtection
// plugin's finalizer, which keeps a deleted claim until it is removed), Ingresses (the
// DefaultIngressClass plugin's class), RoleBindings (subjects' apiGroup defaulted, roleRef
// immutable), CronJobs (defaults, a schedule the registry refuses before admission) and
// Leases (microsecond times, updated whole as leader election does).

var (
	pvcsGVR         = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	ingressesGVR    = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	roleBindingsGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
	cronJobsGVR     = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}
	leasesGVR       = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

	pvcNames   = []string{"pvc-a", "pvc-b"}
	ingNames   = []string{"ing-a", "ing-b"}
	rbNames    = []string{"rb-a", "rb-b"}
	cronNames  = []string{"cj-a", "cj-b"}
	leaseNames = []string{"lease-a", "lease-b"}
)

// kindAtoms are conditions on what the server sets in these kinds before validating admission.
var kindAtoms = []string{
	`object.?spec.?storageClassName.orValue('') != 'standard'`,
	`object.metadata.?finalizers.orValue([]).all(f, f != 'kubernetes.io/pvc-protection')`,
	`object.?spec.?volumeMode.orValue('Filesystem') == 'Filesystem'`,
	`object.?spec.?ingressClassName.orValue('') != 'nginx'`,
	`object.?subjects.orValue([]).all(s, s.?apiGroup.orValue('') != 'rbac.authorization.k8s.io')`,
	`object.?spec.?concurrencyPolicy.orValue('Allow') == 'Allow'`,
	`object.?spec.?successfulJobsHistoryLimit.orValue(3) == 3`,
	`object.?spec.?leaseDurationSeconds.orValue(0) <= 15`,
	`object.?spec.?holderIdentity.orValue('') != 'rnd-bob'`,
}

// kindStrings are string expressions over the same.
var kindStrings = []string{
	`'class ' + object.?spec.?storageClassName.orValue(object.?spec.?ingressClassName.orValue('-'))`,
	`'subjects ' + object.?subjects.orValue([]).map(s, s.kind + ':' + s.?apiGroup.orValue('-')).join(',')`,
	`'lease ' + object.?spec.?holderIdentity.orValue('-') + ' ' + string(object.?spec.?renewTime.orValue('-'))`,
	`'cron ' + object.?spec.?schedule.orValue('-') + ' ' + string(object.?spec.?suspend.orValue(false))`,
}

// kindRules are rule templates of these kinds.
var kindRules = []ruleTemplate{
	{[]string{""}, []string{"v1"}, []string{"persistentvolumeclaims"}},
	{[]string{"networking.k8s.io"}, []string{"v1"}, []string{"ingresses"}},
	{[]string{"rbac.authorization.k8s.io"}, []string{"v1"}, []string{"rolebindings"}},
	{[]string{"batch"}, []string{"v1"}, []string{"cronjobs", "jobs"}},
	{[]string{"coordination.k8s.io"}, []string{"v1"}, []string{"leases"}},
}

func init() {
	boolAtoms = append(boolAtoms, kindAtoms...)
	stringAtoms = append(stringAtoms, kindStrings...)
	ruleTemplates = append(ruleTemplates, kindRules...)
}

// setupKinds makes the classes the plugins default to: a default StorageClass and IngressClass,
// and another of each.
func (w *randomWorld) setupKinds(ctx context.Context) {
	for _, name := range []string{"standard", "fast"} {
		sc := obj(map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": map[string]any{"name": name},
			"provisioner": "example.com/none", "allowVolumeExpansion": name == "fast"})
		if name == "standard" {
			sc.SetAnnotations(map[string]string{"storageclass.kubernetes.io/is-default-class": "true"})
		}
		w.put(ctx, sc)
	}
	for _, name := range []string{"nginx", "other"} {
		ic := obj(map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"controller": "example.com/" + name}})
		if name == "nginx" {
			ic.SetAnnotations(map[string]string{"ingressclass.kubernetes.io/is-default-class": "true"})
		}
		w.put(ctx, ic)
	}
}

// pvcWrite creates, labels, deletes (it stays: the protection finalizer) or releases a claim.
func (w *randomWorld) pvcWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	ri := w.client(u).Resource(pvcsGVR).Namespace(ns)
	switch w.r.IntN(5) {
	case 0, 1:
		name := pick(w.r, pvcNames...)
		spec := map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": pick(w.r, "1Gi", "500Mi")}}}
		if chance(w.r, 0.4) {
			spec["storageClassName"] = pick(w.r, "fast", "standard")
		}
		c := obj(map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": name, "namespace": ns, "labels": w.labels()}, "spec": spec})
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates persistentvolumeclaim %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), pvcsGVR, c, o))
	case 2:
		w.patchExisting(u, pvcsGVR, ns, "persistentvolumeclaim", pvcNames, func() (types.PatchType, string) {
			return types.MergePatchType, fmt.Sprintf(`{"metadata":{"labels":{"color":%q}}}`, pick(w.r, "blue", "red"))
		})
	case 3:
		w.deleteExisting(u, pvcsGVR, ns, "persistentvolumeclaim", pvcNames)
	default:
		// What the protection controller does once no pod uses the claim.
		name := w.existing(pvcsGVR, ns, pvcNames)
		o := w.patchOptions()
		_, err := ri.Patch(w.ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), o)
		w.got(fmt.Sprintf("%s removes the finalizers of persistentvolumeclaim %s/%s%s", u.name, ns, name, dry(o.DryRun)), err)
	}
}

// ingressWrite creates, labels or deletes an Ingress.
func (w *randomWorld) ingressWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	switch w.r.IntN(3) {
	case 0:
		name := pick(w.r, ingNames...)
		path := map[string]any{"path": "/", "pathType": pick(w.r, "Prefix", "Exact", "ImplementationSpecific"),
			"backend": map[string]any{"service": map[string]any{"name": pick(w.r, svcNames...), "port": map[string]any{"number": int64(80)}}}}
		spec := map[string]any{"rules": []any{map[string]any{"host": pick(w.r, "a.example.com", "b.example.com"), "http": map[string]any{"paths": []any{path}}}}}
		if chance(w.r, 0.4) {
			spec["ingressClassName"] = pick(w.r, "other", "nginx")
		}
		ing := obj(map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": map[string]any{"name": name, "namespace": ns, "labels": w.labels()}, "spec": spec})
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates ingress %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), ingressesGVR, ing, o))
	case 1:
		w.patchExisting(u, ingressesGVR, ns, "ingress", ingNames, func() (types.PatchType, string) {
			return types.MergePatchType, pick(w.r, `{"metadata":{"labels":{"color":"green"}}}`, `{"spec":{"ingressClassName":"other"}}`)
		})
	default:
		w.deleteExisting(u, ingressesGVR, ns, "ingress", ingNames)
	}
}

// roleBindingWrite creates, changes the subjects of, tries to change the roleRef of (refused
// before admission: it is immutable) or deletes a RoleBinding.
func (w *randomWorld) roleBindingWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	ri := w.client(u).Resource(roleBindingsGVR).Namespace(ns)
	subject := func() any {
		switch w.r.IntN(3) {
		case 0:
			return map[string]any{"kind": "ServiceAccount", "name": "robot", "namespace": ns}
		case 1:
			return map[string]any{"kind": "Group", "name": pick(w.r, "rnd-dev", "rnd-ops")}
		}
		s := map[string]any{"kind": "User", "name": pick(w.r, "rnd-alice", "rnd-bob")}
		if chance(w.r, 0.3) {
			s["apiGroup"] = "rbac.authorization.k8s.io"
		}
		return s
	}
	switch w.r.IntN(4) {
	case 0, 1:
		name := pick(w.r, rbNames...)
		rb := obj(map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": map[string]any{"name": name, "namespace": ns},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": pick(w.r, "view", "edit")},
			"subjects": []any{subject(), subject()}})
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates rolebinding %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), roleBindingsGVR, rb, o))
	case 2:
		name := w.existing(roleBindingsGVR, ns, rbNames)
		cur, err := ri.Get(w.ctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		what := "subjects"
		if chance(w.r, 0.25) {
			what = "roleRef"
			_ = unstructured.SetNestedField(cur.Object, pick(w.r, "view", "admin"), "roleRef", "name")
		} else {
			_ = unstructured.SetNestedSlice(cur.Object, []any{subject()}, "subjects")
		}
		o := w.updateOptions()
		_, err = ri.Update(w.ctx, cur, o)
		w.got(fmt.Sprintf("%s updates the %s of rolebinding %s/%s%s", u.name, what, ns, name, dry(o.DryRun)), err)
	default:
		w.deleteExisting(u, roleBindingsGVR, ns, "rolebinding", rbNames)
	}
}

// cronJobWrite creates (now and then with a schedule the registry refuses), suspends or
// deletes a CronJob.
func (w *randomWorld) cronJobWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	switch w.r.IntN(3) {
	case 0:
		name := pick(w.r, cronNames...)
		spec := map[string]any{"schedule": pick(w.r, "*/5 * * * *", "0 3 * * *", "61 * * * *"),
			"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "OnFailure",
				"containers": []any{map[string]any{"name": "c", "image": pick(w.r, "busybox", "nginx")}}}}}}}
		if chance(w.r, 0.3) {
			spec["concurrencyPolicy"] = pick(w.r, "Forbid", "Replace", "Allow")
		}
		if chance(w.r, 0.3) {
			spec["successfulJobsHistoryLimit"] = int64(w.r.IntN(5))
		}
		cj := obj(map[string]any{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": map[string]any{"name": name, "namespace": ns, "labels": w.labels()}, "spec": spec})
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates cronjob %s/%s (%s)%s", u.name, ns, name, spec["schedule"], dry(o.DryRun)), w.tryCreate(w.client(u), cronJobsGVR, cj, o))
	case 1:
		w.patchExisting(u, cronJobsGVR, ns, "cronjob", cronNames, func() (types.PatchType, string) {
			body := fmt.Sprintf(`{"spec":{"suspend":%v}}`, chance(w.r, 0.5))
			return pick(w.r, types.MergePatchType, types.StrategicMergePatchType), body
		})
	default:
		w.deleteExisting(u, cronJobsGVR, ns, "cronjob", cronNames)
	}
}

// leaseWrite takes or renews a Lease as leader election does: a create, then updates of the
// whole object with microsecond times.
func (w *randomWorld) leaseWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	ri := w.client(u).Resource(leasesGVR).Namespace(ns)
	now := metav1.NewMicroTime(time.Now()).UTC().Format(metav1.RFC3339Micro)
	holder := pick(w.r, "rnd-alice", "rnd-bob", "controller-0")
	name := w.existing(leasesGVR, ns, leaseNames)
	cur, err := ri.Get(w.ctx, name, metav1.GetOptions{})
	if err != nil || chance(w.r, 0.1) {
		l := obj(map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"holderIdentity": holder, "leaseDurationSeconds": int64(pick(w.r, 15, 40)), "acquireTime": now, "renewTime": now, "leaseTransitions": int64(0)}})
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates lease %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), leasesGVR, l, o))
		return
	}
	_ = unstructured.SetNestedField(cur.Object, now, "spec", "renewTime")
	if chance(w.r, 0.3) {
		_ = unstructured.SetNestedField(cur.Object, holder, "spec", "holderIdentity")
		_ = unstructured.SetNestedField(cur.Object, now, "spec", "acquireTime")
	}
	o := w.updateOptions()
	_, err = ri.Update(w.ctx, cur, o)
	w.got(fmt.Sprintf("%s renews lease %s/%s%s", u.name, ns, name, dry(o.DryRun)), err)
}
