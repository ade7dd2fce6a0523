package replay

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// systemNamespaces are the namespaces kube-apiserver creates itself when it starts (its
// system namespaces controller, pkg/controlplane/controller/systemnamespaces): every cluster
// has them, whether or not the log or the snapshot shows them.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// systemNamespaceSource is where the State's version of a system namespace comes from when
// neither the snapshot nor the log shows it.
const systemNamespaceSource = "one of kube-apiserver's system namespaces"

// learnSystemNamespace puts the system namespace of a request into the State when the State
// does not hold it and the log shows the request got past kube-apiserver's NamespaceLifecycle
// plugin (completed, or refused by a policy): the namespace existed, as the namespace strategy
// creates them (labelled with its name, Active). When the log begins with the cluster's
// creation, nothing changed it since (a write would be in the log: the audit backend missed its
// create, which the server makes as it starts); otherwise what the cluster changed of it is not
// known.
func (r *Replayer) learnSystemNamespace(ev *Event, t target, rec recording) {
	if t.namespace == "" || !slices.Contains(systemNamespaces, t.namespace) || !r.state.Keeps(state.NamespacesGR) {
		return
	}
	if code := ev.Code(); !(code >= 200 && code < 300) && rec.policy == "" {
		return
	}
	if _, _, _, found := r.state.Lookup(state.NamespacesGR, "", t.namespace); found {
		return
	}
	r.seedSystemNamespace(t.namespace, r.state.Complete(state.NamespacesGR))
}

// seedSystemNamespace puts the system namespace into the State as the namespace strategy creates
// it; unchanged says nothing changed it since.
func (r *Replayer) seedSystemNamespace(name string, unchanged bool) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"kubernetes.io/metadata.name": name}},
		"spec":     map[string]any{"finalizers": []any{"kubernetes"}},
		"status":   map[string]any{"phase": "Active"},
	}}
	if unchanged {
		_ = r.state.Put(state.NamespacesGR, u, systemNamespaceSource+", created as the cluster began")
		return
	}
	why := "the labels, annotations and metadata the cluster gave kube-apiserver's own namespace, which neither the snapshot nor the log shows"
	var unknowns []vapccel.Unknown
	for _, f := range []string{"labels", "annotations", "uid", "resourceVersion", "creationTimestamp", "managedFields", "ownerReferences"} {
		unknowns = append(unknowns, vapccel.Unknown{Path: objectPath("metadata", f), Why: why})
	}
	_ = r.state.PutPartly(state.NamespacesGR, u, unknowns, systemNamespaceSource)
}
