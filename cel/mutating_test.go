package cel

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMutatingTypeCheck checks that a MutatingAdmissionPolicy's matchConditions and variables
// are type-checked against the matched kinds, each error at its line and character.
func TestMutatingTypeCheck(t *testing.T) {
	set, diags := ReadPaths(nil, "testdata/mutating-typos.yaml")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range c.Check(set) {
		if d.Category == CategoryType {
			got = append(got, d.Pos.String()+" "+d.Field)
		}
	}
	want := []string{
		"testdata/mutating-typos.yaml:11:21 spec.matchConditions[0].expression",
		"testdata/mutating-typos.yaml:14:29 spec.variables[0].expression",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("type errors (-want +got):\n%s", d)
	}
}
