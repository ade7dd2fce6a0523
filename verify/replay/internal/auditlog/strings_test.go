package auditlog

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestPlainRuns holds PlainRun and CopyPlainRun to a byte-by-byte reading of random bytes, a
// quote, backslash or control character at every place around a word's: the same run, and
// CopyPlainRun's copy of it.
func TestPlainRuns(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 1))
	for range 20000 {
		b := make([]byte, rnd.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + rnd.IntN(0x60))
			if rnd.IntN(30) == 0 {
				b[i] = "\"\\\x00\x1f\x7f\xff"[rnd.IntN(6)]
			}
		}
		want := 0
		for want < len(b) && b[want] != '"' && b[want] != '\\' && b[want] >= 0x20 {
			want++
		}
		if got := PlainRun(b); got != want {
			t.Fatalf("PlainRun(%q) = %d, want %d", b, got, want)
		}
		dst := make([]byte, len(b))
		if got := CopyPlainRun(dst, b); got != want || !bytes.Equal(dst[:got], b[:want]) {
			t.Fatalf("CopyPlainRun(%q) = %d, %q; want %d, %q", b, got, dst[:got], want, b[:want])
		}
	}
}
