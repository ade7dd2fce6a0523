package parallel

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEachCallsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 100} {
		calls := make([]atomic.Int32, n)
		Each(n, func(i int) { calls[i].Add(1) })
		got := make([]int32, n)
		want := make([]int32, n)
		for i := range calls {
			got[i], want[i] = calls[i].Load(), 1
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Each(%d): calls per index (-want +got):\n%s", n, diff)
		}
	}
}

func TestEachRaisesAPanicInTheCaller(t *testing.T) {
	var got any
	func() {
		defer func() { got = recover() }()
		Each(50, func(i int) {
			if i == 7 {
				panic("piece 7")
			}
		})
	}()
	p, ok := got.(*Panic)
	if !ok {
		t.Fatalf("recovered %#v, want a *Panic", got)
	}
	if p.Value != "piece 7" {
		t.Errorf("Panic.Value = %v, want piece 7", p.Value)
	}
	if !strings.Contains(p.String(), "piece 7") || !strings.Contains(string(p.Stack), "parallel_test.go") {
		t.Errorf("Panic does not name the piece's value and stack:\n%s", p)
	}
}
