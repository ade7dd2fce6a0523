package gctune

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live, base uint64
		want       int64
	}{
		{live: 0, base: 400 * mib, want: 400 * mib},
		{live: 100 * mib, base: 400 * mib, want: 400 * mib}, // the next collection at the base
		{live: 200 * mib, base: 400 * mib, want: 400 * mib},
		{live: 300 * mib, base: 400 * mib, want: 600 * mib}, // never sooner than GOGC=100
		{live: 500 * mib, base: 400 * mib, want: 1000 * mib},
		{live: math.MaxUint64 / 2, base: 400 * mib, want: math.MaxInt64},   // bounded
		{live: math.MaxUint64/2 + 1, base: 400 * mib, want: math.MaxInt64}, // twice it would wrap
	} {
		if got := Limit(tc.live, tc.base); got != tc.want {
			t.Errorf("Limit(%d MiB, %d MiB) = %d MiB, want %d MiB", tc.live/mib, tc.base/mib, got/mib, tc.want/mib)
		}
	}
}

// TestTuner checks that Start turns GOGC off, that a collection sets the soft memory limit
// for the live heap, and that Stop puts both back for good.
func TestTuner(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	const base = 1 << 40        // far above the test's live heap: the base
	const probe = 3 << 40       // far above the heap: the collector does not spin while it holds
	debug.SetMemoryLimit(probe) // set back by Start until the first collection
	tu := Start(base)
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("GOGC after Start = %d, want off (-1)", p)
	}
	debug.SetMemoryLimit(probe) // the tuner sets it again after a collection
	deadline := time.Now().Add(10 * time.Second)
	for debug.SetMemoryLimit(-1) != base {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the finalizer runs on its own goroutine
		if time.Now().After(deadline) {
			t.Fatal("the soft memory limit was not set after collections")
		}
	}
	tu.Stop()
	// No collection after Stop sets it again.
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); p != 100 || l != probe {
		t.Errorf("GOGC, soft memory limit after Stop = %d, %d; want 100, %d (as before Start)", p, l, probe)
	}
}

func TestBaseFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		input, max, want uint64
	}{
		{input: 0, max: 400 * mib, want: MinBase},
		{input: 2 << 10, max: 400 * mib, want: MinBase},          // one event
		{input: 20 * mib, max: 400 * mib, want: 80 * mib},        // 10,000 pods
		{input: 55 * mib, max: 400 * mib, want: 220 * mib},       // recording a x40
		{input: 360 * mib, max: 400 * mib, want: 400 * mib},      // a long log: the base it started with
		{input: math.MaxUint64, max: 400 * mib, want: 400 * mib}, // four times it would wrap
		{input: 0, max: 32 * mib, want: 32 * mib},                // never above the start's
	} {
		if got := BaseFor(tc.input, tc.max); got != tc.want {
			t.Errorf("BaseFor(%d, %d MiB) = %d MiB, want %d MiB", tc.input, tc.max/mib, got/mib, tc.want/mib)
		}
	}
}

// TestFit checks that Fit sets the running tuner's base, and with it the soft memory limit,
// and does nothing once the tuner stopped.
func TestFit(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	const base = 1 << 40 // far above the test's live heap
	tu := Start(base)
	Fit(1 << 30)
	if l := debug.SetMemoryLimit(-1); l != 4<<30 {
		t.Errorf("the soft memory limit after Fit(1 GiB) = %d, want 4 GiB", l)
	}
	tu.Stop()
	before := debug.SetMemoryLimit(-1)
	Fit(1 << 20)
	if l := debug.SetMemoryLimit(-1); l != before {
		t.Errorf("Fit after Stop set the soft memory limit to %d, want it left at %d", l, before)
	}
}
