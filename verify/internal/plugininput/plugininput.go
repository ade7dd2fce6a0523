// Package plugininput is what kube-apiserver's default admission plugins read of the cluster,
// by the request they read it for (plugin/pkg/admission/...): the replay keeps those objects
// in its State (verify/replay), and `vapc snapshot` lists them (verify/snapshot), for every
// request a policy can see, which both tell with RuleMatches.
package plugininput

import (
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
)

// RuleMatches says whether an admission rule matches a request of the operation (CREATE,
// UPDATE, DELETE, CONNECT) on the resource and subresource: kube-apiserver's own rules.Matcher
// (k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules), without its scope check. A
// resource "pods/*" matches the pods themselves too (its subresource "*" matches none).
func RuleMatches(r admissionregistrationv1.RuleWithOperations, gvr schema.GroupVersionResource, sub, op string) bool {
	r.Scope = nil // every scope
	m := rules.Matcher{Rule: r, Attr: admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{}, "", "", gvr, sub, admission.Operation(op), nil, false, nil)}
	return m.Matches()
}

// Contains says whether a rule's list (of groups, versions) holds s or "*".
func Contains(list []string, s string) bool {
	for _, v := range list {
		if v == "*" || v == s {
			return true
		}
	}
	return false
}

// Input is the resources the plugins read for a request of a resource and subresource (a
// create or an update, unless Operations says which).
type Input struct {
	Resource    schema.GroupVersionResource
	Subresource string
	Reads       []schema.GroupResource
	// Operations are the requests' operations the plugins read for; none: CREATE and UPDATE.
	Operations []admission.Operation
	// Plugin, when set, is the plugin that reads them, which kube-apiserver does not enable
	// by default: they are read only where it is enabled (see ForPlugins).
	Plugin string
}

// Ops are the operations of the requests the input is read for.
func (in Input) Ops() []admission.Operation {
	if len(in.Operations) == 0 {
		return []admission.Operation{admission.Create, admission.Update}
	}
	return in.Operations
}

// ForPlugins are Inputs and what those of the plugins named that kube-apiserver does not
// enable by default read: NodeRestriction looks up, in its informer, the pod a node deletes or
// evicts (plugin/pkg/admission/noderestriction: admitPod, admitPodEviction).
func ForPlugins(plugins []string) []Input {
	out := Inputs()
	for _, in := range []Input{
		{Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Operations: []admission.Operation{admission.Delete}, Reads: []schema.GroupResource{{Resource: "pods"}}, Plugin: "NodeRestriction"},
		{Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Subresource: "eviction", Operations: []admission.Operation{admission.Create}, Reads: []schema.GroupResource{{Resource: "pods"}}, Plugin: "NodeRestriction"},
	} {
		if slices.Contains(plugins, in.Plugin) {
			out = append(out, in)
		}
	}
	return out
}

// Inputs are a pod's ServiceAccount, LimitRanges, PriorityClass, RuntimeClass and Node
// (PodTopologyLabels, when it names one); a binding's Node; a claim's default StorageClass;
// an ingress's default IngressClass. Namespaces, which NamespaceLifecycle reads for every
// request, are not listed: both users read them anyway.
func Inputs() []Input {
	return []Input{
		{Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Reads: []schema.GroupResource{
			{Resource: "serviceaccounts"}, {Resource: "limitranges"},
			{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, {Group: "node.k8s.io", Resource: "runtimeclasses"},
			{Resource: "nodes"}, // PodTopologyLabels, for a pod written with its node
		}},
		{Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Subresource: "binding", Reads: []schema.GroupResource{{Resource: "nodes"}}},
		{Resource: schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, Reads: []schema.GroupResource{{Group: "storage.k8s.io", Resource: "storageclasses"}}},
		{Resource: schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}, Reads: []schema.GroupResource{{Group: "networking.k8s.io", Resource: "ingressclasses"}}},
	}
}
