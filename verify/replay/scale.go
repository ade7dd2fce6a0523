package replay

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// The scale subresource of the built-in workloads. Its REST (ScaleREST in
// k8s.io/kubernetes/pkg/registry/apps/deployment/storage/storage.go, and in the storage of
// replicasets, statefulsets and replicationcontrollers) never stores a Scale: its Update reads
// the stored object, derives the old Scale from it (scaleFromDeployment), applies the request
// to that Scale (the body of an update, the patch of a patch), copies spec.replicas and
// metadata.resourceVersion of the result into the object (scaleUpdatedObjectInfo.UpdatedObject),
// and runs validating admission on the Scales derived from the object before and after the
// registry's PrepareForUpdate (toScaleUpdateValidation), converted to autoscaling/v1. It
// returns the Scale of the stored result.

// scaleResources are the built-in resources whose scale subresource the replay derives;
// selectorSet says the selector is a map (a ReplicationController's).
var scaleResources = map[schema.GroupResource]struct{ selectorSet bool }{
	{Group: "apps", Resource: "deployments"}:  {},
	{Group: "apps", Resource: "replicasets"}:  {},
	{Group: "apps", Resource: "statefulsets"}: {},
	{Resource: "replicationcontrollers"}:      {selectorSet: true},
}

// scaleSubresource is how a resource's scale subresource derives its Scale: a built-in
// workload's (scaleResources), or a custom resource's by the paths of its CRD's
// subresources.scale. The ScaleREST of the apiextensions apiserver
// (k8s.io/apiextensions-apiserver/pkg/registry/customresource/etcd.go) does what the built-in
// ones do, with scaleFromCustomResource: spec.replicas from specReplicasPath (0 when the object
// has none), status.replicas from statusReplicasPath, status.selector the string at
// labelSelectorPath; a successful update sets specReplicasPath (scaleUpdatedObjectInfo).
//
// A custom resource without a value at its specReplicasPath gets, as the old Scale its mutating
// admission sees, spec.replicas -2147483648 (invalidSpecReplicas), and a patch that does not set
// it is refused before validating admission: the replay's Scale has 0.
type scaleSubresource struct {
	// builtin is set for a built-in workload, whose selector is its spec.selector and whose
	// spec.replicas the defaulters give 1 when a request omits it.
	builtin, selectorSet bool
	// specReplicas and statusReplicas are the paths of the replicas; selector is a custom
	// resource's labelSelectorPath (empty: none).
	specReplicas, statusReplicas, selector []string
}

// builtinReplicas are the replicas' paths of the built-in workloads.
var builtinReplicas = struct{ spec, status []string }{[]string{"spec", "replicas"}, []string{"status", "replicas"}}

// scaleSubresourceOf is the scale subresource of a resource, nil when the replay does not
// derive its Scale: a built-in workload, or a custom resource whose CRD the catalog of res
// holds with a scale subresource in the version requested.
func scaleSubresourceOf(res verify.Resources, gvr schema.GroupVersionResource, mainKind schema.GroupVersionKind) *scaleSubresource {
	if kind, ok := scaleResources[gvr.GroupResource()]; ok {
		return &scaleSubresource{builtin: true, selectorSet: kind.selectorSet, specReplicas: builtinReplicas.spec, statusReplicas: builtinReplicas.status}
	}
	cat := verify.CatalogOf(res)
	if cat == nil || mainKind.Empty() {
		return nil
	}
	crd := cat.CustomResourceDefinitionOf(mainKind)
	if crd == nil {
		return nil
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != gvr.Version || v.Subresources == nil || v.Subresources.Scale == nil {
			continue
		}
		sc := v.Subresources.Scale
		out := &scaleSubresource{specReplicas: splitReplicasPath(sc.SpecReplicasPath), statusReplicas: splitReplicasPath(sc.StatusReplicasPath)}
		if sc.LabelSelectorPath != nil && *sc.LabelSelectorPath != "" {
			out.selector = splitReplicasPath(*sc.LabelSelectorPath)
		}
		return out
	}
	return nil
}

// splitReplicasPath mirrors the apiextensions apiserver's: a path per period, the leading one
// ignored.
func splitReplicasPath(path string) []string {
	return strings.Split(strings.TrimPrefix(path, "."), ".")
}

// derivesScale says whether a request is for a scale subresource whose Scale the replay
// derives.
func derivesScale(t target) bool {
	return t.scale != nil && t.sub == "scale" && t.reqKind == autoscalingV1Scale
}

var autoscalingV1Scale = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// scaleFrom mirrors scaleFromDeployment, scaleFromReplicaSet and scaleFromStatefulSet
// (status.selector is metav1.LabelSelectorAsSelector(spec.selector).String()), scaleFromRC
// (labels.SelectorFromSet(spec.selector).String()) and scaleFromCustomResource: the
// autoscaling/v1 Scale of a stored object. Its spec.replicas is the object's (a built-in's
// defaulters give it 1 when a request omits it; a custom resource without it has 0), its
// status.replicas the object's, 0 when it has none.
func scaleFrom(sc *scaleSubresource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if !sc.builtin {
		return scaleFromCustomResource(sc, obj)
	}
	var selector string
	if sc.selectorSet {
		set, _, err := unstructured.NestedStringMap(obj.Object, "spec", "selector")
		if err != nil {
			return nil, fmt.Errorf("spec.selector: %v", err)
		}
		selector = labels.SelectorFromSet(set).String()
	} else {
		var ls *metav1.LabelSelector
		if m, found, err := unstructured.NestedMap(obj.Object, "spec", "selector"); err != nil {
			return nil, fmt.Errorf("spec.selector: %v", err)
		} else if found && m != nil {
			ls = &metav1.LabelSelector{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, ls); err != nil {
				return nil, fmt.Errorf("spec.selector: %v", err)
			}
		}
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, err // the apiserver answers BadRequest
		}
		selector = sel.String()
	}
	replicas := int64(1)
	if v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, sc.specReplicas...); found {
		if n, ok := intValue(v); ok {
			replicas = n
		}
	}
	statusReplicas := int64(0)
	if v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, sc.statusReplicas...); found {
		statusReplicas, _ = intValue(v)
	}
	return newScale(obj, replicas, statusReplicas, selector), nil
}

// scaleFromCustomResource mirrors the apiextensions apiserver's: unstructured.NestedInt64 at
// the CRD's paths (an error where the value is not an integer), NestedString at its
// labelSelectorPath.
func scaleFromCustomResource(sc *scaleSubresource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	integer := func(path []string) (int64, error) {
		v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
		if !found {
			return 0, nil
		}
		n, ok := intValue(v)
		if !ok {
			return 0, fmt.Errorf(".%s accessor error: %v is of the type %T, expected int64", strings.Join(path, "."), v, v)
		}
		return int64(int32(n)), nil // the Scale's replicas are int32
	}
	replicas, err := integer(sc.specReplicas)
	if err != nil {
		return nil, err
	}
	statusReplicas, err := integer(sc.statusReplicas)
	if err != nil {
		return nil, err
	}
	var selector string
	if len(sc.selector) > 0 {
		if selector, _, err = unstructured.NestedString(obj.Object, sc.selector...); err != nil {
			return nil, err
		}
	}
	return newScale(obj, replicas, statusReplicas, selector), nil
}

// newScale is the autoscaling/v1 Scale of an object, as the ScaleRESTs make it.
func newScale(obj *unstructured.Unstructured, replicas, statusReplicas int64, selector string) *unstructured.Unstructured {
	md := map[string]any{"name": obj.GetName()}
	if ns := obj.GetNamespace(); ns != "" {
		md["namespace"] = ns
	}
	if uid := obj.GetUID(); uid != "" {
		md["uid"] = string(uid)
	}
	if rv := obj.GetResourceVersion(); rv != "" {
		md["resourceVersion"] = rv
	}
	if ts, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "creationTimestamp"); found && ts != nil {
		md["creationTimestamp"] = ts
	}
	status := map[string]any{"replicas": statusReplicas}
	if selector != "" {
		status["selector"] = selector
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": autoscalingV1Scale.GroupVersion().String(), "kind": autoscalingV1Scale.Kind,
		"metadata": md,
		"spec":     map[string]any{"replicas": replicas},
		"status":   status,
	}}
}

// scaleUpdated mirrors what admission sees as the object of a scale update the log refused:
// scaleUpdatedObjectInfo.UpdatedObject copies only spec.replicas and metadata.resourceVersion of
// the requested Scale (the request body, or the patch applied to the old Scale) into the stored
// object, whose Scale is then derived again. A resourceVersion other than the stored one is a
// conflict before admission, and an empty one takes the stored one (an unconditional update),
// so the new Scale is the old one with the requested spec.replicas (0 when it has none, as the
// internal Scale decodes it); PrepareForUpdate keeps the stored status.
func scaleUpdated(old, requested *unstructured.Unstructured) *unstructured.Unstructured {
	out := old.DeepCopy()
	replicas := int64(0)
	if v, found, _ := unstructured.NestedFieldNoCopy(requested.Object, "spec", "replicas"); found {
		replicas, _ = intValue(v)
	}
	_ = unstructured.SetNestedField(out.Object, replicas, "spec", "replicas")
	return out
}

// scaledGeneration is the generation the registry's PrepareForUpdate gives obj when a scale
// update sets its spec.replicas to replicas: one higher when that changes them.
func scaledGeneration(sc *scaleSubresource, obj *unstructured.Unstructured, replicas int64) int64 {
	v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, sc.specReplicas...)
	old, ok := intValue(v)
	switch {
	case !found && sc.builtin:
		old, ok = 1, true // defaulted
	case !found:
		ok = false // a custom resource gains the field
	}
	if !ok || replicas != old {
		// The strategies raise the generation for a change of the spec (a custom
		// resource's: of anything but its metadata).
		return obj.GetGeneration() + 1
	}
	return obj.GetGeneration()
}

// answeredReplicas is the spec.replicas of the Scale the server answered a scale update with
// (resp; 0 where it omits them, the internal Scale's zero); false when resp is not a Scale.
func answeredReplicas(resp *unstructured.Unstructured) (int64, bool) {
	if resp == nil || resp.GroupVersionKind() != autoscalingV1Scale {
		return 0, false
	}
	v, found, _ := unstructured.NestedFieldNoCopy(resp.Object, "spec", "replicas")
	replicas, ok := intValue(v)
	if !found || !ok {
		return 0, true
	}
	return replicas, true
}

// setReplicas gives obj the spec.replicas a scale update of old stored, and the generation
// the registry's PrepareForUpdate gives it for them (scaledGeneration).
func setReplicas(sc *scaleSubresource, old, obj *unstructured.Unstructured, replicas int64) bool {
	generation := scaledGeneration(sc, old, replicas)
	if unstructured.SetNestedField(obj.Object, replicas, sc.specReplicas...) != nil {
		return false
	}
	obj.SetGeneration(generation)
	return true
}

// scaleAnswered puts into the object a scale update replayed through the pipeline stored
// (written, from old) the spec.replicas of the Scale the server answered with (resp), where
// they differ: a MutatingAdmissionPolicy or webhook of the cluster the replay does not run
// changed the Scale (a cap on replicas), and the server stored what it answered. It says
// whether it changed the object.
func scaleAnswered(sc *scaleSubresource, old, written, resp *unstructured.Unstructured) bool {
	replicas, ok := answeredReplicas(resp)
	if !ok {
		return false
	}
	v, found, _ := unstructured.NestedFieldNoCopy(written.Object, sc.specReplicas...)
	if got, ok := intValue(v); found && ok && got == replicas {
		return false
	}
	return setReplicas(sc, old, written, replicas)
}

// answeredScale says whether the log holds the Scale the server answered a scale update of a
// built-in workload or custom resource with: its spec.replicas are the object's only field
// the update's admission can change (scaleUpdatedObjectInfo copies no other).
func answeredScale(ev *Event, t target) bool {
	if !derivesScale(t) {
		return false
	}
	_, ok := answeredReplicas(auditlog.DecodeAnyObject(ev.ResponseObject))
	return ok
}

// applyScale applies a successful scale update to the stored object, as
// scaleUpdatedObjectInfo.UpdatedObject and the registry's PrepareForUpdate changed it: the
// spec.replicas and metadata.resourceVersion of the Scale the apiserver returned, and
// metadata.generation one higher when spec.replicas changed. It reports false when the
// response is not a Scale. The object's managedFields are those before the update: the
// field manager's entry for the scale is not in the log.
func applyScale(sc *scaleSubresource, obj *unstructured.Unstructured, resp *unstructured.Unstructured) bool {
	replicas, ok := answeredReplicas(resp)
	if !ok || resp.GetResourceVersion() == "" || !setReplicas(sc, obj, obj, replicas) {
		return false
	}
	obj.SetResourceVersion(resp.GetResourceVersion())
	return true
}
