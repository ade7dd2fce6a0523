package replay

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// kubectlUA is kubectl's user agent (client-go's default).
const kubectlUA = "kubectl/v1.37.0 (linux/amd64) kubernetes/unknown"

// TestNumbersUnsaid: a custom resource's create or update may have held whole numbers sent as
// doubles, but from a client-go program (its default user agent), which writes them as ints,
// kubectl's --raw aside (its writes name no field manager);
// a patch's body says how it wrote them, and a built-in kind's are its Go type's.
func TestNumbersUnsaid(t *testing.T) {
	widget := target{op: admission.Create, reqKind: schema.GroupVersionKind{Group: "exac.io", Version: "v1", Kind: "Widget"}}
	pod := target{op: admission.Create, reqKind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}}
	for _, tc := range []struct {
		name          string
		verb, ua, uri string
		t             target
		wantDoubt     bool
	}{
		{"a raw client's create", "create", "vapc-e2e", "", widget, true},
		{"Python's client", "create", "OpenAPI-Generator/31.0.0/python", "", widget, true},
		{"no user agent", "create", "", "", widget, true},
		{"kubectl create", "create", kubectlUA, "/apis/exac.io/v1/namespaces/a/widgets?fieldManager=kubectl-create&fieldValidation=Strict", widget, false},
		{"kubectl apply", "create", kubectlUA, "/apis/exac.io/v1/namespaces/a/widgets?fieldManager=kubectl-client-side-apply&fieldValidation=Strict", widget, false},
		{"kubectl replace", "update", kubectlUA, "/apis/exac.io/v1/namespaces/a/widgets/w?fieldManager=kubectl-replace&fieldValidation=Strict", widget, false},
		{"kubectl create --raw", "create", kubectlUA, "/apis/exac.io/v1/namespaces/a/widgets", widget, true},
		{"kubectl replace --raw", "update", kubectlUA, "/apis/exac.io/v1/namespaces/a/widgets/w", widget, true},
		{"a controller", "create", "kube-controller-manager/v1.37.0 (linux/amd64) kubernetes/abc1234/system:serviceaccount:kube-system:job-controller", "", widget, false},
		{"a patch", "patch", "vapc-e2e", "", widget, false},
		{"a built-in kind", "create", "vapc-e2e", "", pod, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Event{Verb: tc.verb, UserAgent: tc.ua, RequestURI: tc.uri}
			if got := numbersUnsaid(ev, tc.t); got != tc.wantDoubt {
				t.Errorf("numbersUnsaid(%s by %q) = %v, want %v", tc.verb, tc.ua, got, tc.wantDoubt)
			}
		})
	}
}
