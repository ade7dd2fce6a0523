// Package gctune paces vapc's garbage collector by a soft memory limit that follows the live
// heap. With GOGC=100 alone a replay whose live heap is a fourth of the limit collects three
// times as often as the limit needs; with GOGC off and a fixed limit alone, one whose live
// heap nears the limit collects without end; with both, the limit is the trigger once the
// live heap passes half of it. The tuner turns GOGC off and, after every collection, sets the
// soft memory limit to the larger of its base and twice the live heap: the next collection
// comes when the process's memory reaches the base, or, once the live heap passes half the
// base, somewhat sooner than GOGC=100 would bring it (the limit counts the runtime's own
// memory too, the heap goal does not). The limit is set on the finalizers' goroutine: a
// finalizer elsewhere that blocks holds it where it was.
package gctune

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// Limit is the soft memory limit the tuner sets after a collection that left live bytes of
// heap: base, or twice the live heap when that is more (GOGC=100's pace).
func Limit(live, base uint64) int64 {
	l := base
	if live > base/2 {
		l = 2 * live
	}
	if live > math.MaxInt64/2 || l > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(l)
}

// MinBase is the least base Fit sets: what a replay holds whatever its input (the built-in
// catalog, the compiled policies, the request pipeline).
const MinBase = 64 << 20

// BaseFor is the base for a run that reads about input bytes, up to max: four times the
// input (a replay holds a fraction of what it reads, and its collections are not worth their
// cost until the heap has grown past it), and at least MinBase. A small input's run then
// collects before its heap has touched hundreds of fresh pages it does not need: on the
// 2-core machine of BENCHMARKS.md a fresh page costs more than the collection that spares
// it (a RequestResponse log of 55 MB: 1.6 s at four times against 2.0 to 2.8 s at eight,
// the system time halved).
func BaseFor(input, max uint64) uint64 {
	b := uint64(MinBase)
	if input > max/4 {
		return max
	}
	if 4*input > b {
		b = 4 * input
	}
	return min(b, max)
}

// active is the tuner Start started, until Stop: the runtime's collector has one pacing.
var active atomic.Pointer[Tuner]

// Fit sets the base of the running tuner, if any, for a run that reads about input bytes
// (BaseFor, up to the base it was started with).
func Fit(input uint64) {
	if t := active.Load(); t != nil {
		t.setBase(BaseFor(input, t.max))
	}
}

// Tuner sets the soft memory limit after every garbage collection (see Limit) until stopped.
type Tuner struct {
	// base is what the limit is while the live heap is under half of it; max the base it
	// was started with, which Fit does not exceed.
	base, max uint64
	// mu orders tune (on the finalizers' goroutine) and Stop: none tunes after Stop.
	mu      sync.Mutex
	stopped bool
	sample  []metrics.Sample
	// percent and limit are GOGC and the soft memory limit before Start, for Stop.
	percent int
	limit   int64
}

// sentinel is garbage whose finalizer runs after each collection. It holds a pointer and is
// larger than the tiny allocator's blocks, so that it is freed on its own.
type sentinel struct {
	t *Tuner
	_ [16]byte
}

// Start turns GOGC off, sets the soft memory limit to base (bytes), and tunes it after every
// collection. Stop ends it and puts both back as they were.
func Start(base uint64) *Tuner {
	t := &Tuner{base: base, max: base, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.limit = debug.SetMemoryLimit(Limit(0, base))
	t.percent = debug.SetGCPercent(-1)
	t.arm()
	active.Store(t)
	return t
}

// setBase sets the base, and the limit for the live heap of the last collection with it.
func (t *Tuner) setBase(base uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.base = base
	debug.SetMemoryLimit(Limit(t.live(), base))
}

// live is the live heap the last collection left.
func (t *Tuner) live() uint64 {
	metrics.Read(t.sample)
	if v := t.sample[0].Value; v.Kind() == metrics.KindUint64 {
		return v.Uint64()
	}
	return 0
}

func (t *Tuner) arm() {
	runtime.SetFinalizer(&sentinel{t: t}, func(s *sentinel) {
		if s.t.tune() {
			s.t.arm()
		}
	})
}

// tune sets the soft memory limit for the live heap the last collection left, unless
// stopped; it says whether it did.
func (t *Tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	debug.SetMemoryLimit(Limit(t.live(), t.base))
	return true
}

// Stop stops tuning and puts GOGC and the soft memory limit back as they were before Start.
func (t *Tuner) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	active.CompareAndSwap(t, nil)
	debug.SetGCPercent(t.percent)
	debug.SetMemoryLimit(t.limit)
}
