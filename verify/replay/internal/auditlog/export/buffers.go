package export

import (
	"math/bits"
	"sync"
)

// The records of an export are a copy or two of every event (the envelope's record, the event
// it holds), where the log backend's lines are read into one buffer: a replay's State makes
// each collection of the garbage they leave cost as much as its live heap, and an export's
// replay collected twice as often as the log's. A record's buffers come from pools by size
// and go back to them once their bytes are copied out (Reader.toLine) or unwrapped: a
// record's data, and the envelope's record it was unwrapped from, belong to it alone.

// The capacities of the pooled buffers are the powers of two from 1 KiB to 256 KiB (a buffer
// holds at most twice what it needs). Larger ones are not pooled.
const (
	minBufShift = 10
	maxBufShift = 18
)

var bufPools [maxBufShift - minBufShift + 1]sync.Pool

// getBuf is an empty buffer of at least n bytes.
func getBuf(n int) []byte {
	c := bufClass(n)
	if c < 0 {
		return make([]byte, 0, n)
	}
	if p, _ := bufPools[c].Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return make([]byte, 0, 1<<(minBufShift+c))
}

// putBuf gives b back to the pools; nothing may use it after.
func putBuf(b []byte) {
	c := cap(b)
	if c < 1<<minBufShift {
		return
	}
	// The largest class b holds.
	k := min(bits.Len(uint(c))-1-minBufShift, len(bufPools)-1)
	b = b[:0]
	bufPools[k].Put(&b)
}

// bufClass is the smallest class of n bytes; -1 when none holds it.
func bufClass(n int) int {
	if n <= 1<<minBufShift {
		return 0
	}
	k := bits.Len(uint(n-1)) - minBufShift
	if k >= len(bufPools) {
		return -1
	}
	return k
}
