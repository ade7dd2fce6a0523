// Package gctune paces vapc's garbage collector toward a heap goal. With GOGC=100 alone a
// replay whose live heap is a fourth of the goal collects three times as often as the goal
// needs; with GOGC off and a soft memory limit alone, one whose live heap nears the limit
// collects without end (and a soft memory limit beside GOGC makes the limit the trigger
// whenever it is lower). The tuner sets GOGC after every collection so that the next one
// starts when the heap reaches the goal, but never sooner than GOGC=100 would start it. It is
// meant to run without a soft memory limit.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// minPercent and maxPercent bound the GOGC the tuner sets: never below the default's pace, and
// not so high that a heap with almost no live objects waits for the limit alone.
const (
	minPercent = 100
	maxPercent = 2000
)

// Percent is the GOGC under which a heap of live bytes is next collected at limit bytes (the
// goal), within [minPercent, maxPercent].
func Percent(live, limit uint64) int {
	if live == 0 || limit <= live {
		return minPercent
	}
	p := (limit - live) * 100 / live
	switch {
	case p < minPercent:
		return minPercent
	case p > maxPercent:
		return maxPercent
	}
	return int(p)
}

// Tuner sets GOGC after every garbage collection (see Percent) until stopped.
type Tuner struct {
	limit uint64
	// mu orders tune (on the finalizers' goroutine) and Stop: none tunes after Stop.
	mu      sync.Mutex
	stopped bool
	sample  []metrics.Sample
}

// sentinel is garbage whose finalizer runs after each collection. It holds a pointer and is
// larger than the tiny allocator's blocks, so that it is freed on its own.
type sentinel struct {
	t *Tuner
	_ [16]byte
}

// Start starts tuning for the heap goal limit (bytes): GOGC stays as it is until the first
// collection, after which the tuner sets it. Stop ends it.
func Start(limit uint64) *Tuner {
	t := &Tuner{limit: limit, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.arm()
	return t
}

func (t *Tuner) arm() {
	runtime.SetFinalizer(&sentinel{t: t}, func(s *sentinel) {
		if s.t.tune() {
			s.t.arm()
		}
	})
}

// tune sets GOGC for the live heap the last collection left, unless stopped; it says whether
// it did.
func (t *Tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	var live uint64
	if v := t.sample[0].Value; v.Kind() == metrics.KindUint64 {
		live = v.Uint64()
	}
	debug.SetGCPercent(Percent(live, t.limit))
	return true
}

// Stop stops tuning and sets GOGC to 100, the default.
func (t *Tuner) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	debug.SetGCPercent(minPercent)
}
