// Package validation reproduces the create-time validation kube-apiserver v1.37 applies to
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding
// objects, on the v1 types directly.
//
// It mirrors, function by function, k8s.io/kubernetes pkg/apis/admissionregistration/validation
// (validation.go and static_suffix.go), what the registry strategies in
// pkg/registry/admissionregistration/validatingadmissionpolicy{,binding} add on create
// (PrepareForCreate, the reserved ".static.k8s.io" name suffix), the create handler of
// k8s.io/apiserver pkg/endpoints/handlers (owner references without duplicates), the generic
// create path of k8s.io/apiserver pkg/registry/rest (name generation, namespace clearing, the
// path segment name check) and the declarative validation the strategies enforce with the
// v1.37 default feature gates. Errors carry the server's field paths, error types and detail strings.
//
// Every expression is treated as new, as on create: it is compiled against the CEL
// environment of Options.CompatibilityVersion (environment.NewExpressions), which
// kube-apiserver sets one minor version behind its own.
//
// The inputs must already hold the server's defaults (see package
// github.com/vapc-dev/vapc/cel/defaults).
package validation
