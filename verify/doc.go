// Package verify evaluates ValidatingAdmissionPolicies offline and decides an admission request
// exactly as kube-apiserver 1.37 does.
//
// It does not reimplement the decision: it calls the apiserver's own ValidatingAdmissionPolicy
// dispatcher (k8s.io/apiserver/pkg/admission/plugin/policy/validating.NewDispatcher) with
// policy hooks it builds the way the plugin's policy source builds them, each policy compiled as
// the plugin compiles it, over an in-memory, synchronous ObjectStore that holds the cluster
// objects a decision can read: params and namespaces. The decision (allowed, HTTP code, reason,
// message) is the dispatcher's returned error, warnings are what the server's warning recorder
// would send, and audit annotations are what the dispatcher adds to the admission attributes.
// Thin recording wrappers around the matcher, the validator and the authorizer say which
// binding and param decided, and whether the authorizer was asked.
//
// An Evaluator compiles its policies once and can evaluate many requests, concurrently, while
// the ObjectStore changes underneath it (audit-log replay updates params and namespaces as it
// goes).
package verify
