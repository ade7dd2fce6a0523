package export

import "testing"

// TestNestingRun holds nestingRun to the table it jumps by: the first byte that nests, at each
// place of a word, after bytes of every kind.
func TestNestingRun(t *testing.T) {
	t.Parallel()
	for c := range 256 {
		for at := range 17 {
			b := make([]byte, 20)
			for i := range b {
				b[i] = byte(at*7+i*13+c) | 0x80 // bytes beyond ASCII, which never nest
				if i%3 == 0 {
					b[i] = "ab:,0 \\zZ\x1f\x7f"[(i+c)%11]
				}
			}
			b[at] = byte(c)
			want := 0
			for want < len(b) && !nesting[b[want]] {
				want++
			}
			if got := nestingRun(b); got != want {
				t.Errorf("nestingRun(%q) = %d, want %d", b, got, want)
			}
		}
	}
}
