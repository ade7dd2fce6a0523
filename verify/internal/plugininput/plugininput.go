// Package plugininput is what kube-apiserver's default admission plugins read of the cluster,
// by the request they read it for (plugin/pkg/admission/...): the replay keeps those objects
// in its State (verify/replay), and `vapc snapshot` lists them (verify/snapshot), for every
// request a policy can see.
package plugininput

import "k8s.io/apimachinery/pkg/runtime/schema"

// Input is the resources the plugins read for a request of a resource and subresource (a
// create or an update).
type Input struct {
	Resource    schema.GroupVersionResource
	Subresource string
	Reads       []schema.GroupResource
}

// Inputs are a pod's ServiceAccount, LimitRanges, PriorityClass, RuntimeClass and Node
// (PodTopologyLabels, when it names one); a binding's Node; a claim's default StorageClass;
// an ingress's default IngressClass. Namespaces, which NamespaceLifecycle reads for every
// request, are not listed: both users read them anyway.
func Inputs() []Input {
	return []Input{
		{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "", []schema.GroupResource{
			{Resource: "serviceaccounts"}, {Resource: "limitranges"},
			{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, {Group: "node.k8s.io", Resource: "runtimeclasses"},
			{Resource: "nodes"}, // PodTopologyLabels, for a pod written with its node
		}},
		{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "binding", []schema.GroupResource{{Resource: "nodes"}}},
		{schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, "", []schema.GroupResource{{Group: "storage.k8s.io", Resource: "storageclasses"}}},
		{schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}, "", []schema.GroupResource{{Group: "networking.k8s.io", Resource: "ingressclasses"}}},
	}
}
