package export

import "testing"

// TestBufClasses holds getBuf and putBuf to their classes: a buffer got holds n bytes, and a
// buffer put back is put in a class it holds.
func TestBufClasses(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 1023, 1024, 1025, 4095, 4096, 4097, 16384, 16385, 65536, 65537, 262144, 262145, 1 << 20} {
		b := getBuf(n)
		if cap(b) < n || len(b) != 0 {
			t.Errorf("getBuf(%d) = len %d cap %d", n, len(b), cap(b))
		}
		putBuf(b)
		if c := bufClass(n); c >= 0 && 1<<(minBufShift+c) < n {
			t.Errorf("bufClass(%d) = %d, which holds %d", n, c, 1<<(minBufShift+c))
		}
	}
	for _, c := range []int{1000, 1024, 1500, 4096, 5000, 16384, 70000, 1 << 18, 1 << 19} {
		putBuf(make([]byte, 0, c))
		for k := range bufPools {
			if p, _ := bufPools[k].Get().(*[]byte); p != nil && cap(*p) < 1<<(minBufShift+k) {
				t.Errorf("put a buffer of %d bytes in class %d", cap(*p), k)
			}
		}
	}
}
