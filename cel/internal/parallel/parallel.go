// Package parallel runs the independent pieces of one job on every core, as one goroutine
// would have run them: the caller waits for all of them, and a panic in a piece reaches the
// caller (cmd/vapc turns a panic into an internal error, exit code 3; a panic in a goroutine of
// its own would end the process instead).
package parallel

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Panic is what Each raises in its caller's goroutine when a piece panicked: the piece's
// value and the stack of the goroutine it panicked in.
type Panic struct {
	Value any
	Stack []byte
}

func (p *Panic) String() string { return fmt.Sprintf("%v\n%s", p.Value, p.Stack) }

// Each calls f(i) for every i in [0, n) on up to GOMAXPROCS goroutines, and returns when every
// call has returned. f must be safe to call concurrently; each i is given to one call. When a
// call panics, the pieces not yet started are not started, and Each panics with a *Panic once
// the others have returned.
func Each(n int, f func(i int)) {
	var (
		next    atomic.Int64
		stopped atomic.Bool
		first   sync.Once
		failure *Panic
		wg      sync.WaitGroup
	)
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					stopped.Store(true)
					first.Do(func() { failure = &Panic{Value: r, Stack: debug.Stack()} })
				}
			}()
			for i := int(next.Add(1) - 1); i < n && !stopped.Load(); i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
	if failure != nil {
		panic(failure)
	}
}
