package policies

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/cel/vap"
)

// KosmosNodeNotReadyName is the name of the kosmos-node-not-ready policy and binding.
const KosmosNodeNotReadyName = "kosmos-node-not-ready"

// KosmosNodeNotReady builds the kosmos-node-not-ready guard.
//
// The incident: Kosmos (ClusterTree) shows each member cluster to the host cluster as a virtual
// leaf node, labelled kosmos.io/node, and mirrors the pods bound to it into the member cluster.
// When the link to a member cluster flaps, the leaf node's Ready condition turns Unknown, the
// node lifecycle controller taints it node.kubernetes.io/unreachable:NoExecute, and the taint
// eviction controller deletes every pod on it once their tolerations run out. Kosmos mirrors the
// deletions: a short network flap deletes the member cluster's real workloads, all at once.
//
// The guard denies the DELETE of a pod whose spec.nodeName is a Kosmos leaf node whose Ready
// condition is not True, when the node lifecycle or taint eviction identity makes it
// (s.EvictingUsers: the node-controller service account, and system:kube-controller-manager for
// clusters that run every controller on one shared credential). It leaves alone users, the
// garbage collector (its own service account, or, on a shared credential, the UID precondition
// it sets on every delete), pods on other nodes, pods on Ready Kosmos nodes and pods not yet
// scheduled. The node is looked up as the policy's params: the binding selects the Kosmos nodes,
// the apiserver evaluates the validation once per Kosmos node, and the validation passes for
// every node but the pod's own. With no Kosmos node at all, the policy admits.
//
// failurePolicy is Fail: when the guard cannot decide, the pod stays, which is the side the
// incident asks for; the controllers retry the deletion.
func KosmosNodeNotReady(s KosmosSettings) (*vap.Policy, []*vap.Binding, error) {
	p, err := vap.NewPolicy(KosmosNodeNotReadyName,
		vap.FailurePolicy(admissionregistrationv1.Fail),
		vap.Resources(vap.Delete, "pods"),
		vap.NodeParams(vap.HasLabel(s.NodeLabel), admissionregistrationv1.AllowAction),
		vap.UserIn(s.EvictingUsers...),
		// The garbage collector deletes with a UID precondition; the node lifecycle and taint
		// eviction controllers do not. This matters only when they share a credential. The
		// apiserver evaluates every matchCondition once per param (once per Kosmos node, for
		// every pod DELETE), and reading request.options converts the DeleteOptions each time:
		// the condition looks at them only for the evicting users' deletes, which the
		// requesting-user condition alone lets through.
		vap.MatchCondition("not-garbage-collector",
			`!(request.userInfo.username in `+vap.StringList(s.EvictingUsers...)+`) ||
  !has(request.options) || !has(request.options.preconditions) || !has(request.options.preconditions.uid)`),
		vap.Validation(`!has(oldObject.spec.nodeName) ||
  params.metadata.name != oldObject.spec.nodeName ||
  (has(params.status) && has(params.status.conditions) &&
    params.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True'))`,
			vap.MessageExpression(`request.userInfo.username + ' may not delete pod ' + oldObject.metadata.namespace + '/' + oldObject.metadata.name + ': its Kosmos node ' + params.metadata.name + ' is not Ready'`)),
	)
	if err != nil {
		return nil, nil, err
	}
	b, err := vap.NewBinding(p)
	if err != nil {
		return nil, nil, err
	}
	return p, []*vap.Binding{b}, nil
}
