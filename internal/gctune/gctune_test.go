package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live, limit uint64
		want        int
	}{
		{live: 100 * mib, limit: 400 * mib, want: 300}, // next collection at 400 MiB
		{live: 200 * mib, limit: 400 * mib, want: 100},
		{live: 300 * mib, limit: 400 * mib, want: 100}, // never sooner than GOGC=100
		{live: 500 * mib, limit: 400 * mib, want: 100}, // over the limit
		{live: 1 * mib, limit: 400 * mib, want: 2000},  // bounded
		{live: 0, limit: 400 * mib, want: 100},
	} {
		if got := Percent(tc.live, tc.limit); got != tc.want {
			t.Errorf("Percent(%d MiB, %d MiB) = %d, want %d", tc.live/mib, tc.limit/mib, got, tc.want)
		}
	}
}

// TestTuner checks that a collection sets GOGC for the goal, and that Stop sets it to the
// default for good.
func TestTuner(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tu := Start(1 << 40) // far above the test's live heap: the bound
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the finalizer runs on its own goroutine
		if p := debug.SetGCPercent(-1); p == maxPercent {
			break
		} else {
			debug.SetGCPercent(p)
		}
		if time.Now().After(deadline) {
			t.Fatal("GOGC was not set after collections")
		}
	}
	tu.Stop()
	// No collection after Stop sets it again.
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if p := debug.SetGCPercent(100); p != minPercent {
		t.Errorf("GOGC after Stop = %d, want %d", p, minPercent)
	}
}
