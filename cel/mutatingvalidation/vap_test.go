package mutatingvalidation_test

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/cel"
	_ "github.com/vapc-dev/vapc/cel/mutatingvalidation"
	"github.com/vapc-dev/vapc/cel/vap"
)

// TestGoAuthoredPolicies checks that a MutatingAdmissionPolicy built in Go with this package
// linked gets kube-apiserver's create-time validation: what the server refuses fails at the Go
// line that wrote it, and what it accepts builds without a warning.
func TestGoAuthoredPolicies(t *testing.T) {
	p, err := vap.NewMutatingPolicy("team-label",
		vap.Resources(vap.Create, "configmaps"),
		vap.Reinvocation(admissionregistrationv1.IfNeededReinvocationPolicy),
		vap.ApplyConfiguration("Object{metadata: Object.metadata{labels: {'team': 'payments'}}}"),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range p.Diagnostics() {
		if d.Severity != cel.Info {
			t.Errorf("a valid policy has %s", d)
		}
	}
	if _, err := vap.NewBinding(p); err != nil {
		t.Fatal(err)
	}

	_, err = vap.NewMutatingPolicy("broken", vap.Resources(vap.Create, "pods"),
		vap.JSONPatch("[JSONPatch{op: 'add', path: '/x', value: object.nope(]"))
	if err == nil {
		t.Fatal("a mutation that does not compile built")
	}
	for _, want := range []string{"cel/mutatingvalidation/vap_test.go:", "spec.mutations[0].jsonPatch.expression"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
