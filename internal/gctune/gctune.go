// Package gctune paces vapc's garbage collector by its soft memory limit. With GOGC=100 alone a
// replay whose live heap is a third of the limit collects three times as often as the limit
// needs; with GOGC off and the limit alone, one whose live heap nears the limit collects
// without end. The tuner sets GOGC after every collection so that the next one starts when the
// heap reaches the limit, but never sooner than GOGC=100 would start it.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// minPercent and maxPercent bound the GOGC the tuner sets: never below the default's pace, and
// not so high that a heap with almost no live objects waits for the limit alone.
const (
	minPercent = 100
	maxPercent = 2000
)

// Percent is the GOGC under which a heap of live bytes is next collected at limit bytes,
// within [minPercent, maxPercent].
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
	limit   uint64
	stopped atomic.Bool
	sample  []metrics.Sample
}

// sentinel is garbage whose finalizer runs after each collection. It holds a pointer and is
// larger than the tiny allocator's blocks, so that it is freed on its own.
type sentinel struct {
	t *Tuner
	_ [16]byte
}

// Start starts tuning for the soft memory limit limit (bytes); it sets GOGC for the first
// collection at once. Stop ends it and puts GOGC back to what it was.
func Start(limit uint64) *Tuner {
	t := &Tuner{limit: limit, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.arm()
	return t
}

func (t *Tuner) arm() {
	runtime.SetFinalizer(&sentinel{t: t}, func(s *sentinel) {
		if s.t.stopped.Load() {
			return
		}
		s.t.tune()
		s.t.arm()
	})
}

func (t *Tuner) tune() {
	metrics.Read(t.sample)
	var live uint64
	if v := t.sample[0].Value; v.Kind() == metrics.KindUint64 {
		live = v.Uint64()
	}
	debug.SetGCPercent(Percent(live, t.limit))
}

// Stop stops tuning and sets GOGC back to 100.
func (t *Tuner) Stop() {
	t.stopped.Store(true)
	debug.SetGCPercent(minPercent)
}
