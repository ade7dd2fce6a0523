package state

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	vapccel "github.com/vapc-dev/vapc/cel"
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

// TestDiffering: the fields where two readings of an object part, each unknown: a field one
// holds and the other not (null included: has() tells them apart), a value that differs, a
// list that differs (whole); nothing of what they share.
func TestDiffering(t *testing.T) {
	t.Parallel()
	at := func(steps ...string) vapccel.Unknown {
		return vapccel.Unknown{Path: vapccel.FieldPath{Root: "object", Steps: steps}, Why: "w"}
	}
	for _, tc := range []struct {
		name string
		a, b map[string]any
		want []vapccel.Unknown
	}{
		{name: "same", a: map[string]any{"spec": map[string]any{"n": int64(1)}}, b: map[string]any{"spec": map[string]any{"n": int64(1)}}},
		{name: "a default added", a: map[string]any{"spec": map[string]any{"n": int64(1)}}, b: map[string]any{"spec": map[string]any{"n": int64(1), "min": int64(2)}},
			want: []vapccel.Unknown{at("spec", "min")}},
		{name: "a null pruned", a: map[string]any{"spec": map[string]any{"knobs": nil, "n": int64(1)}}, b: map[string]any{"spec": map[string]any{"n": int64(1)}},
			want: []vapccel.Unknown{at("spec", "knobs")}},
		{name: "a value changed", a: map[string]any{"spec": map[string]any{"z": "a"}}, b: map[string]any{"spec": map[string]any{"z": "b"}},
			want: []vapccel.Unknown{at("spec", "z")}},
		{name: "a list", a: map[string]any{"spec": map[string]any{"l": []any{"a"}}}, b: map[string]any{"spec": map[string]any{"l": []any{"a", "b"}}},
			want: []vapccel.Unknown{at("spec", "l")}},
		{name: "keys in order", a: map[string]any{"b": int64(1), "a": int64(1)}, b: map[string]any{"d": int64(1), "c": int64(1)},
			want: []vapccel.Unknown{at("a"), at("b"), at("c"), at("d")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, Differing(tc.a, tc.b, nil, "w")); diff != "" {
				t.Errorf("Differing (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRereadRacing: a param a racing informer may hold read through either schema is known
// but for the fields where the readings part; where the CRD changed twice within the window,
// a reading through the schema between the changes may be the informer's, and the param is not
// known whole.
func TestRereadRacing(t *testing.T) {
	t.Parallel()
	stored := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"max": int64(3)}}}
	again := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"max": int64(3), "tier": "std"}}}
	read := func(runtime.Object) (runtime.Object, string) { return again, "" }
	for _, tc := range []struct {
		name      string
		thrice    bool
		wantObj   runtime.Object
		wantParts int
		wantWhy   bool
	}{
		{name: "once", wantObj: stored, wantParts: 1},
		{name: "twice within the window", thrice: true, wantWhy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj, parts, why := Reread{Read: read, Racing: "racing", Thrice: tc.thrice}.reread(stored)
			if obj != tc.wantObj || len(parts) != tc.wantParts || (why != "") != tc.wantWhy {
				t.Errorf("reread = %v, %v, %q; want %v, %d parts, why %v", obj, parts, why, tc.wantObj, tc.wantParts, tc.wantWhy)
			}
		})
	}
}
