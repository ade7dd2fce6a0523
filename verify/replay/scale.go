package replay

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// scaleResources are the resources whose scale subresource the replay derives; selectorSet
// says the selector is a map (a ReplicationController's).
var scaleResources = map[schema.GroupResource]struct{ selectorSet bool }{
	{Group: "apps", Resource: "deployments"}:  {},
	{Group: "apps", Resource: "replicasets"}:  {},
	{Group: "apps", Resource: "statefulsets"}: {},
	{Resource: "replicationcontrollers"}:      {selectorSet: true},
}

// derivesScale says whether a request is for a scale subresource whose Scale the replay
// derives.
func derivesScale(t target) bool {
	_, ok := scaleResources[t.gvr.GroupResource()]
	return ok && t.sub == "scale" && t.reqKind == autoscalingV1Scale
}

var autoscalingV1Scale = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// scaleFrom mirrors scaleFromDeployment, scaleFromReplicaSet and scaleFromStatefulSet
// (status.selector is metav1.LabelSelectorAsSelector(spec.selector).String()) and scaleFromRC
// (labels.SelectorFromSet(spec.selector).String()): the autoscaling/v1 Scale of a stored
// object. Its spec.replicas is the object's (the defaulters give it 1 when a request omits it),
// its status.replicas the object's status.replicas, 0 when it has none.
func scaleFrom(gr schema.GroupResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	kind, ok := scaleResources[gr]
	if !ok {
		return nil, fmt.Errorf("%s has no scale subresource vapc derives", gr)
	}
	var selector string
	if kind.selectorSet {
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
	if v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); found {
		if n, ok := intValue(v); ok {
			replicas = n
		}
	}
	statusReplicas := int64(0)
	if v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "replicas"); found {
		statusReplicas, _ = intValue(v)
	}
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
	}}, nil
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

// applyScale applies a successful scale update to the stored object, as
// scaleUpdatedObjectInfo.UpdatedObject and the registry's PrepareForUpdate changed it: the
// spec.replicas and metadata.resourceVersion of the Scale the apiserver returned, and
// metadata.generation one higher when spec.replicas changed. It reports false when the
// response is not a Scale. The object's managedFields are those before the update: the
// field manager's entry for the scale is not in the log.
func applyScale(obj *unstructured.Unstructured, resp *unstructured.Unstructured) bool {
	if resp == nil || resp.GroupVersionKind() != autoscalingV1Scale {
		return false
	}
	v, found, _ := unstructured.NestedFieldNoCopy(resp.Object, "spec", "replicas")
	replicas, ok := intValue(v)
	if !found || !ok {
		replicas = 0 // omitted: the internal Scale's zero
	}
	rv := resp.GetResourceVersion()
	if rv == "" {
		return false
	}
	old := int64(1)
	if v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); found {
		old, _ = intValue(v)
	}
	if replicas != old {
		obj.SetGeneration(obj.GetGeneration() + 1)
	}
	_ = unstructured.SetNestedField(obj.Object, replicas, "spec", "replicas")
	obj.SetResourceVersion(rv)
	return true
}
