package export

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRecordHeap holds the reorder's heap to a stable sort: pushed and popped in turns, it
// hands the records over by their stage, and those of one stage as they were read.
func TestRecordHeap(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var h recordHeap
		var held, got, want []heldRecord
		popLeast := func() {
			got = append(got, h[0])
			h.pop()
			slices.SortStableFunc(held, func(a, b heldRecord) int {
				switch {
				case a.sec != b.sec:
					return int(a.sec - b.sec)
				case a.nsec != b.nsec:
					return int(a.nsec - b.nsec)
				}
				return 0 // as read: the sort is stable
			})
			want = append(want, held[0])
			held = held[1:]
		}
		for seq := range 1 + rng.IntN(300) {
			// Few seconds and nanoseconds: many records of one stage.
			r := heldRecord{sec: int64(rng.IntN(5)), nsec: int32(rng.IntN(3)), seq: seq, slot: int32(seq)}
			h.push(r)
			held = append(held, r)
			if rng.IntN(3) == 0 {
				popLeast()
			}
		}
		for len(h) > 0 {
			popLeast()
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(heldRecord{})); diff != "" {
			t.Fatalf("round %d: order mismatch (-sorted +heap):\n%s", round, diff)
		}
	}
}
