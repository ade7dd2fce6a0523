package replay

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// TestNumbersUnsaid: a custom resource's create or update may have held whole numbers sent as
// doubles, but from a client-go program (its default user agent), which writes them as ints;
// a patch's body says how it wrote them, and a built-in kind's are its Go type's.
func TestNumbersUnsaid(t *testing.T) {
	widget := target{op: admission.Create, reqKind: schema.GroupVersionKind{Group: "exac.io", Version: "v1", Kind: "Widget"}}
	pod := target{op: admission.Create, reqKind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}}
	for _, tc := range []struct {
		name      string
		verb, ua  string
		t         target
		wantDoubt bool
	}{
		{"a raw client's create", "create", "vapc-e2e", widget, true},
		{"Python's client", "create", "OpenAPI-Generator/31.0.0/python", widget, true},
		{"no user agent", "create", "", widget, true},
		{"kubectl", "create", "kubectl/v1.37.0 (linux/amd64) kubernetes/unknown", widget, false},
		{"a controller", "create", "kube-controller-manager/v1.37.0 (linux/amd64) kubernetes/abc1234/system:serviceaccount:kube-system:job-controller", widget, false},
		{"a patch", "patch", "vapc-e2e", widget, false},
		{"a built-in kind", "create", "vapc-e2e", pod, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Event{Verb: tc.verb, UserAgent: tc.ua}
			if got := numbersUnsaid(ev, tc.t); got != tc.wantDoubt {
				t.Errorf("numbersUnsaid(%s by %q) = %v, want %v", tc.verb, tc.ua, got, tc.wantDoubt)
			}
		})
	}
}
