package policies

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/cel/vap"
)

// DrainerCordonGuardName is the name of the drainer-cordon-guard policy and binding.
const DrainerCordonGuardName = "drainer-cordon-guard"

// DrainerCordonGuard builds the drainer-cordon-guard guard.
//
// The incident: an automated drainer (Draino) cordons and drains nodes on which
// node-problem-detector reports a problem condition. When it misreads the conditions, is
// misconfigured, or reacts to a flapping condition, it cordons healthy nodes, one after
// another, until the cluster has no room left to reschedule what it drains.
//
// The guard lets the drainers (s.DrainerUsers) set spec.unschedulable to true on a node (a
// cordon: the stored node is schedulable, the new one is not) only while one of the problem
// conditions (s.ProblemConditions) is True on the stored node. Uncordons, updates that leave
// spec.unschedulable alone, and every other user pass. A cordon is an UPDATE of nodes whether the
// drainer sends a PUT or a PATCH. The node's status is read from oldObject: a spec update cannot
// change the stored status.
//
// failurePolicy is Fail: when the guard cannot decide, the node stays schedulable.
func DrainerCordonGuard(s DrainerSettings) (*vap.Policy, []*vap.Binding, error) {
	p, err := vap.NewPolicy(DrainerCordonGuardName,
		vap.FailurePolicy(admissionregistrationv1.Fail),
		vap.Resources(vap.Update, "nodes"),
		vap.UserIn(s.DrainerUsers...),
		vap.Variable("problemConditions", vap.StringList(s.ProblemConditions...)),
		vap.Variable("cordoning", `has(object.spec.unschedulable) && object.spec.unschedulable &&
  !(has(oldObject.spec.unschedulable) && oldObject.spec.unschedulable)`),
		vap.Variable("problems", `has(oldObject.status) && has(oldObject.status.conditions) ?
  oldObject.status.conditions.filter(c, c.type in variables.problemConditions && c.status == 'True').map(c, c.type) :
  []`),
		vap.Validation(`!variables.cordoning || size(variables.problems) > 0`,
			vap.MessageExpression(`request.userInfo.username + ' may not cordon node ' + object.metadata.name + ': none of the conditions ' + variables.problemConditions.join(', ') + ' is True on it'`)),
		// An audit annotation cannot be left out conditionally (a string or null does not
		// type-check), so every drainer update of a node says what the guard saw.
		vap.AuditAnnotation("cordon",
			`!variables.cordoning ? 'not a cordon' :
  size(variables.problems) > 0 ? 'cordon for ' + variables.problems.join(', ') :
  'cordon without a problem condition'`),
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
