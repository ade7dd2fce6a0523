package export

import (
	"bufio"
	"strings"
	"testing"
)

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

// TestSkip holds the scanner's skip, which finds a value the reader holds whole with valueEnd
// and reads the rest byte by byte, to where encoding/json ends the value, whatever part of
// it the reader's buffer holds (escapes and newlines cut at every place), and to an error,
// not a panic, for a value cut short.
func TestSkip(t *testing.T) {
	t.Parallel()
	values := []string{
		`{"a": "b\\\"c", "d": [1, {"e": "\u00e9\\"}],` + "\n" + `  "f": null}`,
		`["x\\", "\"]", {"}": "{"}]`,
		`"a string with \" and \\ and ] and }"`,
		"{\n  \"n\": {\n    \"m\": \"\\\\\"\n  }\n}",
	}
	for _, v := range values {
		in := v + " ,\n" + `{"next": 1}`
		want := len(v)
		for size := 16; size <= len(in)+16; size++ {
			for lead := range 20 {
				src := strings.Repeat(" ", lead) + in
				s := newScanner(bufio.NewReaderSize(strings.NewReader(src), size))
				if err := s.skip(); err != nil {
					t.Fatalf("skip(%q), buffer %d: %v", src, size, err)
				}
				if got := int(s.off) - lead; got != want {
					t.Fatalf("skip(%q), buffer %d: at %d, want %d", src, size, got, want)
				}
				if got, want := s.line, 1+strings.Count(v, "\n"); got != want {
					t.Fatalf("skip(%q), buffer %d: line %d, want %d", src, size, got, want)
				}
			}
		}
		for cut := 1; cut < len(v); cut++ {
			s := newScanner(bufio.NewReaderSize(strings.NewReader(v[:cut]), 16))
			if err := s.skip(); err == nil {
				t.Errorf("skip(%q): no error for a value cut short", v[:cut])
			}
		}
	}
}
