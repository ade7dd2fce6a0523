package state

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

// TestValuesEqual: ValuesEqual says of values decoded from JSON what equality.Semantic says (a
// nil and an empty list or map are equal; an integer and a float are not).
func TestValuesEqual(t *testing.T) {
	t.Parallel()
	values := []any{
		nil, "a", "b", int64(1), float64(1), true, false,
		map[string]any(nil), map[string]any{}, map[string]any{"a": int64(1)}, map[string]any{"a": float64(1)}, map[string]any{"a": nil},
		[]any(nil), []any{}, []any{"a"}, []any{"a", "b"}, []any{map[string]any{"a": []any{}}}, []any{map[string]any{"a": []any(nil)}},
	}
	for i, a := range values {
		for j, b := range values {
			if got, want := ValuesEqual(a, b), equality.Semantic.DeepEqual(a, b); got != want {
				t.Errorf("ValuesEqual(%#v, %#v) = %v, equality.Semantic says %v (values %d, %d)", a, b, got, want, i, j)
			}
		}
	}
}
