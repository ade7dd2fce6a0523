// Package plugininput is what kube-apiserver's default admission plugins read of the cluster,
// by the request they read it for (plugin/pkg/admission/...): the replay keeps those objects
// in its State (verify/replay), and `vapc snapshot` lists them (verify/snapshot), for every
// request a policy can see, which both tell with RuleMatches.
package plugininput

import (
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
