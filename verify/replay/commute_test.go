package replay

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	vapccel "github.com/vapc-dev/vapc/cel"
)

// TestSameBut: two orders of concurrent writes compare alike but for the unknown fields; one
// below a list leaves the whole list out, which is then not known either.
func TestSameBut(t *testing.T) {
	t.Parallel()
	obj := func(t0, second, y string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"resourceVersion": y},
			"spec": map[string]any{"y": y, "c": []any{map[string]any{"n": "1", "t": t0}, map[string]any{"n": second}}}}}
	}
	unknownT := []vapccel.Unknown{{Path: objectPath("spec", "c", "t")}}
	for _, tc := range []struct {
		name       string
		a, b       *unstructured.Unstructured
		unknowns   []vapccel.Unknown
		wantSame   bool
		wantCoarse []string // the paths of coarser
	}{
		{name: "alike but the resourceVersion", a: obj("1", "2", "y"), b: obj("1", "2", "y"), wantSame: true},
		{name: "a known field differs", a: obj("1", "2", "y"), b: obj("1", "2", "z")},
		{name: "below a list: the list", a: obj("1", "2", "y"), b: obj("9", "3", "y"), unknowns: unknownT, wantSame: true, wantCoarse: []string{"object.spec.c"}},
		{name: "a map's field", a: obj("1", "2", "y"), b: obj("1", "2", "z"), unknowns: []vapccel.Unknown{{Path: objectPath("spec", "y")}}, wantSame: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			coarser, same := sameBut(tc.a, tc.b, tc.unknowns)
			var got []string
			for _, u := range coarser {
				got = append(got, u.Path.String())
			}
			if same != tc.wantSame || !cmp.Equal(got, tc.wantCoarse) {
				t.Errorf("sameBut = %v, coarser %v; want %v, %v", same, got, tc.wantSame, tc.wantCoarse)
			}
		})
	}
}
