package e2e

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Storage writes for TestRandomParity: PersistentVolumes as a provisioner or an administrator
// writes them (kube-apiserver's strategy sets a new volume's phase Pending and the time of its
// phase's last transition, which it moves on a change of phase through the status subresource;
// the StorageObjectInUseProtection plugin gives it the pv-protection finalizer before validating
// admission, which the protection controller removes once it is released), and StorageClasses
// (reclaim policy and binding mode defaulted; the default class's annotation, which the
// DefaultStorageClass plugin reads from its informer to give a claim without a class the
// default one before validating admission). Where the controllers run, the PV controller binds
// the claims pvcWrite writes to the volumes that fit them (the volume's claimRef and phase, the
// claim's volumeName and its annotations).

var (
	pvsGVR = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	scsGVR = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}

	pvNames = []string{"rnd-pv-a", "rnd-pv-b"}
	scNames = []string{"fast", "standard"}
)

// storageAtoms read what these writes, the plugins and the controllers set.
var storageAtoms = []string{
	`object.?spec.?persistentVolumeReclaimPolicy.orValue('') == 'Retain'`,
	`object.?status.?phase.orValue('') != 'Released'`,
	`object.metadata.?finalizers.orValue([]).all(f, f != 'kubernetes.io/pv-protection')`,
	`object.?reclaimPolicy.orValue('Delete') == 'Delete' && object.?volumeBindingMode.orValue('Immediate') == 'Immediate'`,
	`object.?spec.?storageClassName.orValue('') != 'standard'`,
	`!has(object.status) || !has(object.status.lastPhaseTransitionTime) || object.?status.?phase.orValue('') == 'Pending'`,
}

// storageStrings are string expressions over the same.
var storageStrings = []string{
	`'pv ' + object.?status.?phase.orValue('-') + ' ' + object.?spec.?claimRef.?name.orValue('-') + ' ' + object.?spec.?storageClassName.orValue('-') + ' ' + object.metadata.?finalizers.orValue([]).join(',') + ' ' + string(has(object.status) && has(object.status.lastPhaseTransitionTime))`,
	`'sc ' + object.?provisioner.orValue('-') + ' ' + object.?reclaimPolicy.orValue('-') + ' ' + object.?volumeBindingMode.orValue('-') + ' ' + object.metadata.?annotations[?'storageclass.kubernetes.io/is-default-class'].orValue('-')`,
}

// storageRules are rule templates of the kinds they write.
var storageRules = []ruleTemplate{
	{[]string{""}, []string{"v1"}, []string{"persistentvolumes", "persistentvolumes/status"}},
	{[]string{"storage.k8s.io"}, []string{"v1"}, []string{"storageclasses"}},
	{[]string{""}, []string{"v1"}, []string{"persistentvolumeclaims", "persistentvolumeclaims/status", "persistentvolumes"}},
}

func init() {
	boolAtoms = append(boolAtoms, storageAtoms...)
	stringAtoms = append(stringAtoms, storageStrings...)
	ruleTemplates = append(ruleTemplates, storageRules...)
}

// pvWrite creates a PersistentVolume, labels it, changes its phase through its status, removes
// its finalizers or deletes it, as a random user.
func (w *randomWorld) pvWrite() {
	u := w.user()
	switch w.r.IntN(6) {
	case 0, 1:
		name := pick(w.r, pvNames...)
		spec := map[string]any{"capacity": map[string]any{"storage": pick(w.r, "1Gi", "5Gi")}, "accessModes": []any{"ReadWriteOnce"},
			"hostPath": map[string]any{"path": "/tmp/" + name}}
		if class := pick(w.r, "", "fast", "standard"); class != "" {
			spec["storageClassName"] = class
		}
		if chance(w.r, 0.4) {
			spec["persistentVolumeReclaimPolicy"] = pick(w.r, "Retain", "Delete", "Recycle")
		}
		pv := obj(map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": name, "labels": w.labels()}, "spec": spec})
		if chance(w.r, 0.2) {
			pv.Object["status"] = map[string]any{"phase": "Bound"} // the strategy sets Pending
		}
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates persistentvolume %s%s", u.name, name, dry(o.DryRun)), w.tryCreate(w.client(u), pvsGVR, pv, o))
	case 2:
		w.patchExisting(u, pvsGVR, "", "persistentvolume", pvNames, func() (types.PatchType, string) {
			return types.MergePatchType, pick(w.r, `{"metadata":{"labels":{"color":"blue"}}}`, `{"spec":{"persistentVolumeReclaimPolicy":"Retain"}}`, `{"spec":{"capacity":{"storage":"2Gi"}}}`)
		})
	case 3:
		// A phase written through the status subresource, as the PV controller writes it: the
		// strategy moves lastPhaseTransitionTime to its clock when the phase changes.
		name := w.existing(pvsGVR, "", pvNames)
		o := w.patchOptions()
		body := fmt.Sprintf(`{"status":{"phase":%q}}`, pick(w.r, "Available", "Released", "Failed"))
		_, err := w.client(u).Resource(pvsGVR).Patch(w.ctx, name, types.MergePatchType, []byte(body), o, "status")
		w.got(fmt.Sprintf("%s patches the status of persistentvolume %s (%s)%s", u.name, name, body, dry(o.DryRun)), err)
	case 4:
		// What the protection controller does once the volume is released.
		name := w.existing(pvsGVR, "", pvNames)
		o := w.patchOptions()
		_, err := w.client(u).Resource(pvsGVR).Patch(w.ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), o)
		w.got(fmt.Sprintf("%s removes the finalizers of persistentvolume %s%s", u.name, name, dry(o.DryRun)), err)
	default:
		w.deleteExisting(u, pvsGVR, "", "persistentvolume", pvNames)
	}
}

// storageClassWrite creates a StorageClass (now and then the default one), moves the default
// annotation or deletes one, as the administrator: the DefaultStorageClass plugin reads them
// from its informer.
func (w *randomWorld) storageClassWrite() {
	switch w.r.IntN(4) {
	case 0, 1:
		name := pick(w.r, scNames...)
		sc := map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": map[string]any{"name": name}, "provisioner": "example.com/rnd"}
		if chance(w.r, 0.3) {
			sc["metadata"].(map[string]any)["annotations"] = map[string]any{"storageclass.kubernetes.io/is-default-class": "true"}
		}
		if chance(w.r, 0.4) {
			sc["reclaimPolicy"] = pick(w.r, "Retain", "Delete")
			sc["volumeBindingMode"] = pick(w.r, "Immediate", "WaitForFirstConsumer")
		}
		if chance(w.r, 0.3) {
			sc["parameters"] = map[string]any{"tier": pick(w.r, "gold", "silver")} // immutable: an update is refused
		}
		_, err := w.tryPut(w.ctx, obj(sc))
		w.got("the administrator writes storageclass "+name, err)
	case 2:
		name := w.existing(scsGVR, "", scNames)
		o := w.patchOptions()
		body := fmt.Sprintf(`{"metadata":{"annotations":{"storageclass.kubernetes.io/is-default-class":%q}}}`, pick(w.r, "true", "false"))
		_, err := w.dyn.Resource(scsGVR).Patch(w.ctx, name, types.MergePatchType, []byte(body), o)
		w.got(fmt.Sprintf("the administrator patches storageclass %s (%s)%s", name, body, dry(o.DryRun)), err)
	default:
		name := w.existing(scsGVR, "", scNames)
		o := w.deleteOptions(w.dyn.Resource(scsGVR), name)
		w.got(fmt.Sprintf("the administrator deletes storageclass %s %s", name, optionsString(o)), w.dyn.Resource(scsGVR).Delete(w.ctx, name, o))
	}
	w.settle() // the DefaultStorageClass plugin reads classes from its informer
}
