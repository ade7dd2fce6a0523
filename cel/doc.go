// Package cel builds kube-apiserver's own CEL environment for a chosen Kubernetes version and
// checks ValidatingAdmissionPolicies and their bindings the way the apiserver does: the
// create-time validation of admissionregistration/v1 objects, the type checking that
// kube-controller-manager writes into status.typeChecking, and the static cost of each
// expression.
package cel
