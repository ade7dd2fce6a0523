// Package cel builds kube-apiserver's own CEL environment for a chosen Kubernetes version and
// checks ValidatingAdmissionPolicies and their bindings the way the apiserver does: the
// create-time validation of admissionregistration/v1 objects, the type checking that
// kube-controller-manager writes into status.typeChecking, and the static cost of each
// expression.
package cel

import (
	_ "github.com/google/cel-go/cel"
	_ "k8s.io/api/admissionregistration/v1"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	_ "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	_ "k8s.io/client-go/discovery"
	_ "sigs.k8s.io/yaml"
	_ "go.yaml.in/yaml/v3"
	_ "github.com/google/go-cmp/cmp"
)
