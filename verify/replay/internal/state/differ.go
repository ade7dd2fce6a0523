package state

import (
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"

	vapccel "github.com/vapc-dev/vapc/cel"
)

// Differing are the fields two versions of an object hold different values in, as unknowns
// (a list that differs is unknown as a whole; a field one holds, null, and the other not,
// differs too: has() tells them apart).
func Differing(a, b any, steps []string, why string) []vapccel.Unknown {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if ValuesEqual(a, b) {
			return nil
		}
		return []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object", Steps: slices.Clone(steps)}, Why: why}}
	}
	var out []vapccel.Unknown
	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		av, inA := am[k]
		bv, inB := bm[k]
		if inA != inB {
			out = append(out, vapccel.Unknown{Path: vapccel.FieldPath{Root: "object", Steps: append(slices.Clone(steps), k)}, Why: why})
			continue
		}
		out = append(out, Differing(av, bv, append(steps, k), why)...)
	}
	return out
}

// ValuesEqual says whether two values decoded from JSON are equal, as equality.Semantic does
// (a nil and an empty list or map are), without its reflection for the values JSON has.
func ValuesEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !ValuesEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !ValuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case string, int64, float64, bool, nil:
		return a == b
	}
	return equality.Semantic.DeepEqual(a, b)
}
