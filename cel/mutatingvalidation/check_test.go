package mutatingvalidation_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/cel"
)

// TestManagedFieldsPlaced: an error about a managedFields entry points at the entry of the
// file that became it, after the field manager merged and sorted the entries, for a
// MutatingAdmissionPolicy as for a ValidatingAdmissionPolicy.
func TestManagedFieldsPlaced(t *testing.T) {
	set, diags := cel.ReadPaths(nil, "testdata/managed-fields.yaml")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c, err := cel.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range c.Check(set) {
		if d.Severity == cel.Error {
			got = append(got, d.Object+" "+d.Pos.String())
		}
	}
	want := []string{
		"MutatingAdmissionPolicy/mf-mutatingadmissionpolicy testdata/managed-fields.yaml:13:14",
		"ValidatingAdmissionPolicy/mf-validatingadmissionpolicy testdata/managed-fields.yaml:38:14",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
}
