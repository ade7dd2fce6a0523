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

// TestParted: the fields where two readings of an object part, each unknown: a field one holds
// and the other not (its shape too), a scalar that differs (its value only), a list that
// differs (whole); nothing of what they share.
func TestParted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		a, b map[string]any
		want []vapccel.Unknown
	}{
		{name: "same", a: map[string]any{"spec": map[string]any{"n": int64(1)}}, b: map[string]any{"spec": map[string]any{"n": int64(1)}}},
		{name: "a default added", a: map[string]any{"spec": map[string]any{"n": int64(1)}}, b: map[string]any{"spec": map[string]any{"n": int64(1), "min": int64(2)}},
			want: []vapccel.Unknown{{Path: vapccel.FieldPath{Steps: []string{"spec", "min"}}, Why: "w"}}},
		{name: "a field pruned, another changed", a: map[string]any{"spec": map[string]any{"knobs": true, "n": int64(1), "z": "a"}}, b: map[string]any{"spec": map[string]any{"n": int64(1), "z": "b"}},
			want: []vapccel.Unknown{{Path: vapccel.FieldPath{Steps: []string{"spec", "knobs"}}, Why: "w"}, {Path: vapccel.FieldPath{Steps: []string{"spec", "z"}}, ValueOnly: true, Why: "w"}}},
		{name: "a list", a: map[string]any{"spec": map[string]any{"l": []any{"a"}}}, b: map[string]any{"spec": map[string]any{"l": []any{"a", "b"}}},
			want: []vapccel.Unknown{{Path: vapccel.FieldPath{Steps: []string{"spec", "l"}}, Why: "w"}}},
		{name: "a map for a scalar", a: map[string]any{"spec": "x"}, b: map[string]any{"spec": map[string]any{}},
			want: []vapccel.Unknown{{Path: vapccel.FieldPath{Steps: []string{"spec"}}, Why: "w"}}},
		{name: "keys in order", a: map[string]any{"b": int64(1), "a": int64(1)}, b: map[string]any{"d": int64(1), "c": int64(1)},
			want: []vapccel.Unknown{{Path: vapccel.FieldPath{Steps: []string{"a"}}, Why: "w"}, {Path: vapccel.FieldPath{Steps: []string{"b"}}, Why: "w"},
				{Path: vapccel.FieldPath{Steps: []string{"c"}}, Why: "w"}, {Path: vapccel.FieldPath{Steps: []string{"d"}}, Why: "w"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []vapccel.Unknown
			parted(tc.a, tc.b, nil, "w", &got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parted (-want +got):\n%s", diff)
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
