// Package vap authors ValidatingAdmissionPolicies and their bindings as Go values.
//
// A policy is built with NewPolicy from options that mirror the admissionregistration/v1 fields
// people write all the time: resource rules (Resources), matchConditions on the requesting user
// (UserIn), variables, validations with a message, messageExpression or reason, audit
// annotations, and params (NodeParams to read the node a pod runs on, ConfigMapParam for
// settings held in a ConfigMap). Every expression is compiled and type-checked while the policy
// is built, with the checker of package cel: a policy that does not type-check is never
// returned, and every error points at the Go file and line that wrote the field, with a caret
// under the offending character:
//
//	policies/kosmos.go:44:41: spec.validations[0].expression: undefined field 'nodeNmae' (checked as v1/Pod): did you mean 'nodeName'?
//	 |   params.metadata.name != oldObject.spec.nodeNmae ||
//	 | ........................................^
//
// The column is found when the expression is a Go string literal near the call; an expression
// built at run time (from settings, say) is placed at the line of the call.
//
// Bindings (NewBinding) leave the rollout stage open: Emit chooses it, so the same Go code moves
// a policy from StageAudit ([Audit]) through StageWarn ([Warn, Audit]) to StageDeny ([Deny,
// Audit]). Emit writes the deterministic YAML that `kubectl apply` takes.
package vap
