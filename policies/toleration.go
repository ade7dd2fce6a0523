package policies

import (
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/cel/vap"
)

// EvictionTolerationFloorName is the name of the eviction-toleration-floor policy and binding.
const EvictionTolerationFloorName = "eviction-toleration-floor"

// EvictionTolerationFloor builds the eviction-toleration-floor guard.
//
// The incident: a pod that tolerates node.kubernetes.io/unreachable or
// node.kubernetes.io/not-ready (NoExecute) for a few seconds only is evicted as soon as its node
// misses a few heartbeats: a short network flap evicts it, and a flap across a zone evicts a
// whole tier at once. Pods that say nothing get the cluster's 300 seconds
// (DefaultTolerationSeconds admission).
//
// The guard refuses pods that tolerate those taints (a toleration with one of the two keys, or
// with no key, which tolerates every taint) with a tolerationSeconds below the floor. The floor
// is data.minTolerationSeconds of the ConfigMap s.ConfigMapNamespace/s.ConfigMapName (the
// policy's params), or s.DefaultMinTolerationSeconds when the ConfigMap has no valid value;
// while the ConfigMap does not exist, the guard admits every pod (parameterNotFoundAction Allow:
// create the ConfigMap to turn it on). Tolerations without tolerationSeconds (tolerate forever)
// pass. On UPDATE only tolerations the update adds or changes are judged, so a pod created before
// the guard can still be updated (to remove a finalizer, say).
//
// failurePolicy is Ignore: the guard sits on every pod creation, and an evaluation error must not
// stop the cluster from creating pods.
//
// With s.Mode TolerationMutate the guard repairs instead of refusing: see
// evictionTolerationFloorMutating.
func EvictionTolerationFloor(s TolerationSettings) (*vap.Policy, []*vap.Binding, error) {
	var p *vap.Policy
	var err error
	if s.Mode == TolerationMutate {
		p, err = evictionTolerationFloorMutating(s)
	} else {
		p, err = vap.NewPolicy(EvictionTolerationFloorName, append(tolerationFloorOptions(s),
			vap.Resources(vap.Create|vap.Update, "pods"),
			vap.Variable("added", `request.operation == 'CREATE' || !has(oldObject.spec.tolerations) ?
  variables.short :
  variables.short.filter(t, !(t in oldObject.spec.tolerations))`),
			vap.Validation(`size(variables.added) == 0`,
				vap.MessageExpression(`'pod ' + object.metadata.name + ' tolerates unreachable or not-ready nodes for less than ' + string(variables.floor) + ' seconds (' + variables.added.map(t, (has(t.key) ? t.key : 'every taint') + ': ' + string(t.tolerationSeconds) + 's').join(', ') + '): a short network flap would evict it; use at least ' + string(variables.floor) + ' or leave tolerationSeconds out'`)),
		)...)
	}
	if err != nil {
		return nil, nil, err
	}
	b, err := vap.NewBinding(p)
	if err != nil {
		return nil, nil, err
	}
	return p, []*vap.Binding{b}, nil
}

// evictionTolerationFloorMutating is the guard's mutating form (TolerationSettings.Mode
// mutate): a MutatingAdmissionPolicy that raises every too short tolerationSeconds of a new
// pod to the floor instead of refusing the pod. It runs after DefaultTolerationSeconds (a
// floor above 300 seconds raises the tolerations that plugin adds too) and again when a later
// mutation adds a short toleration (reinvocationPolicy IfNeeded). Only creations are changed:
// the apiserver refuses most changes to the tolerations of an existing pod. A pod that lists
// one short toleration twice, identically, has only the first raised (indexOf finds the first).
func evictionTolerationFloorMutating(s TolerationSettings) (*vap.Policy, error) {
	return vap.NewMutatingPolicy(EvictionTolerationFloorName, append(tolerationFloorOptions(s),
		vap.Resources(vap.Create, "pods"),
		vap.Reinvocation(admissionregistrationv1.IfNeededReinvocationPolicy),
		vap.JSONPatch(`variables.short.map(t, JSONPatch{
  op: 'replace',
  path: '/spec/tolerations/' + string(object.spec.tolerations.indexOf(t)) + '/tolerationSeconds',
  value: variables.floor})`),
	)...)
}

// tolerationFloorOptions are what both forms of the guard share: params, failure policy and
// the tolerations below the floor.
func tolerationFloorOptions(s TolerationSettings) []vap.PolicyOption {
	return []vap.PolicyOption{
		vap.FailurePolicy(admissionregistrationv1.Ignore),
		vap.ConfigMapParam(s.ConfigMapNamespace, s.ConfigMapName, admissionregistrationv1.AllowAction),
		vap.Variable("defaultFloor", strconv.FormatInt(s.DefaultMinTolerationSeconds, 10)),
		vap.Variable("floor", `has(params.data) && 'minTolerationSeconds' in params.data &&
  params.data.minTolerationSeconds.matches('^[0-9]{1,9}$') ?
  int(params.data.minTolerationSeconds) : variables.defaultFloor`),
		vap.Variable("short", `has(object.spec.tolerations) ?
  object.spec.tolerations.filter(t, has(t.tolerationSeconds) && t.tolerationSeconds < variables.floor &&
    (!has(t.key) || t.key in ['node.kubernetes.io/unreachable', 'node.kubernetes.io/not-ready']) &&
    (!has(t.effect) || t.effect == 'NoExecute')) :
  []`),
	}
}
