package export

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
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
// (skipHeld) and reads the rest byte by byte, and its value, which reads a value it keeps byte
// by byte: to where encoding/json ends the value, whatever part of it the reader's buffer
// holds (escapes and newlines cut at every place), the value kept whole (or reported too
// long, and gone past), and to an error, not a panic, for a value cut short.
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
				for _, max := range []int{-1, len(v), len(v) - 1} {
					s := newScanner(bufio.NewReaderSize(strings.NewReader(src), size))
					raw, err := s.value(max, nil)
					var tooLong *errTooLong
					switch {
					case max == len(v)-1 && !errors.As(err, &tooLong):
						t.Fatalf("value(%q, %d), buffer %d: %q, %v; want too long", src, max, size, raw, err)
					case max != len(v)-1 && err != nil:
						t.Fatalf("value(%q, %d), buffer %d: %v", src, max, size, err)
					case max == len(v) && string(raw) != v:
						t.Fatalf("value(%q, %d), buffer %d: %q, want %q", src, max, size, raw, v)
					}
					if got := int(s.off) - lead; got != want {
						t.Fatalf("value(%q, %d), buffer %d: at %d, want %d", src, max, size, got, want)
					}
					if got, want := s.line, 1+strings.Count(v, "\n"); got != want {
						t.Fatalf("value(%q, %d), buffer %d: line %d, want %d", src, max, size, got, want)
					}
				}
			}
		}
		for cut := 1; cut < len(v); cut++ {
			s := newScanner(bufio.NewReaderSize(strings.NewReader(v[:cut]), 16))
			if err := s.skip(); err == nil {
				t.Errorf("skip(%q): no error for a value cut short", v[:cut])
			}
			s = newScanner(bufio.NewReaderSize(strings.NewReader(v[:cut]), 16))
			if raw, err := s.value(len(v), nil); err == nil {
				t.Errorf("value(%q): %q, no error for a value cut short", v[:cut], raw)
			}
		}
	}
}

// TestIndexClosing holds indexClosing to bytes.Index of the line that closes an object at each
// indentation: braces and newlines at every place, indentations deeper, shallower and cut by
// the input's beginning, spaces in runs longer than a word.
func TestIndexClosing(t *testing.T) {
	t.Parallel()
	pieces := []string{"\n", " ", "  ", "        ", "}", "{", `"}"`, "\n  }", "\n    }", "\n          }", "a", ","}
	for indent := range 12 {
		closing := "\n" + strings.Repeat(" ", indent) + "}"
		rnd := rand.New(rand.NewPCG(uint64(indent), 1))
		for range 5000 {
			var b strings.Builder
			for range 1 + rnd.IntN(10) {
				b.WriteString(pieces[rnd.IntN(len(pieces))])
			}
			in := []byte(b.String())
			if got, want := indexClosing(in, indent), strings.Index(b.String(), closing); got != want {
				t.Fatalf("indexClosing(%q, %d) = %d, want %d", in, indent, got, want)
			}
		}
	}
}

// TestStringEnd holds stringEnd to a reading one byte at a time, on strings of escapes of
// every kind (an Event escaped into a message, escaped again, backslashes before the quote)
// cut at every byte as the reader's chunks cut them: the end is found in the chunk that holds
// it, and a backslash at a chunk's end escapes the next chunk's first byte.
func TestStringEnd(t *testing.T) {
	t.Parallel()
	bodies := []string{
		``, `a`, `\"`, `\\`, `\\\"`, `\\\\`, `abcdefgh\"ijklmnop`, `\u00e9\n\t`,
		`{\"kind\":\"Event\",\"annotations\":{\"a\":\"{\\\"b\\\":1}\"}}`,
		strings.Repeat(`x\\`, 9), strings.Repeat(`\"`, 13), "caf\xc3\xa9 \x80\xff" + strings.Repeat(`\\`, 5),
	}
	// want reads byte by byte: the end of the body, a quote after an even run of backslashes.
	want := func(b []byte, escaped bool) (int, bool, bool) {
		for i := 0; i < len(b); i++ {
			switch {
			case escaped:
				escaped = false
			case b[i] == '\\':
				escaped = true
			case b[i] == '"':
				return i, true, false
			}
		}
		return len(b), false, escaped
	}
	// Any bytes, quotes and backslashes among them, whatever the first byte's escape.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b []byte
		for n := rng.IntN(300); len(b) < n; {
			// Mostly escapes, a lone quote seldom: the end falls anywhere in a long string.
			b = append(b, []string{"a", "\x80\xff", `\"`, `\\`, `\`, `\\\"`, "bcdefgh", `"`}[min(rng.IntN(57)/8, 7)]...)
		}
		for _, escaped := range []bool{false, true} {
			end, found, carry := stringEnd(b, escaped)
			wEnd, wFound, wCarry := want(b, escaped)
			if end != wEnd || found != wFound || carry != wCarry {
				t.Fatalf("stringEnd(%q, %t) = %d, %t, %t; want %d, %t, %t", b, escaped, end, found, carry, wEnd, wFound, wCarry)
			}
		}
	}
	for _, body := range bodies {
		s := []byte(body + `"` + `,"next":"x"}`)
		for cut := 0; cut <= len(s); cut++ {
			end, found, carry := stringEnd(s[:cut], false)
			wEnd, wFound, wCarry := want(s[:cut], false)
			if end != wEnd || found != wFound || carry != wCarry {
				t.Fatalf("stringEnd(%q) = %d, %t, %t; want %d, %t, %t", s[:cut], end, found, carry, wEnd, wFound, wCarry)
			}
			if found {
				continue
			}
			end, found, carry = stringEnd(s[cut:], carry)
			wEnd, wFound, wCarry = want(s[cut:], wCarry)
			if end != wEnd || found != wFound || carry != wCarry {
				t.Fatalf("after %q, stringEnd(%q) = %d, %t, %t; want %d, %t, %t", s[:cut], s[cut:], end, found, carry, wEnd, wFound, wCarry)
			}
			if !found || cut+end != len(body) {
				t.Fatalf("%q cut at %d: the string ends at %d, want %d", s, cut, cut+end, len(body))
			}
		}
	}
}

// TestValueEndEscapes holds valueEnd, by which a search passes over a record, to the object's
// end, with strings that hold brackets and escapes (stringBodyEnd reads those by stringEnd),
// and to false where the bytes held end first or a string holds a control character.
func TestValueEndEscapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int // -1: not held
	}{
		{`{}`, 2},
		{`{} ,{"a":1}`, 2},
		{`{"a":[1,{"b":"}"}],"c":"]"}` + "\n" + `{"d":2}`, 27},
		{`{"message":"{\"kind\":\"Event\",\"a\":\"\\\"}\\\\\"}"}, {}`, 54},
		{`{"a":"\\"}x`, 10},
		{`{"a":"\"}`, -1},
		{`{"a":{"b":[]}`, -1},
		{`{"a":"` + strings.Repeat(`\"{[`, 40) + `"}]`, 6 + 160 + 2},
		{`{"a":"` + strings.Repeat(`x`, 100), -1},
		{`{"a":"\"` + strings.Repeat(`x`, 70) + "\x01\"}", -1},   // a control character after an escape
		{`{"a":"\"` + strings.Repeat(`x`, 70) + "\\\x01\"}", -1}, // and escaped
	} {
		end, ok := valueEnd([]byte(tc.in), 0)
		if got := map[bool]int{true: end, false: -1}[ok]; got != tc.want {
			t.Errorf("valueEnd(%q) = %d, %t; want %d", tc.in, end, ok, tc.want)
		}
	}
}

// TestContainerEnd holds containerEnd, 64 bytes at a time, to a reading byte by byte: random
// objects and arrays with strings of quotes, backslashes and brackets, nested across the
// blocks' bounds, each whole, cut at every byte (not found), and followed by more; and
// compactContainer to that reading's bytes without the white space outside strings.
func TestContainerEnd(t *testing.T) {
	t.Parallel()
	// want reads byte by byte: brackets count outside strings only.
	want := func(b []byte) (int, bool) {
		depth := 0
		for i, outside := range structural(b) {
			switch c := b[i]; {
			case !outside:
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
		}
		return len(b), false
	}
	rng := rand.New(rand.NewPCG(3, 4))
	value := func(b []byte, depth int) []byte { return randomJSON(rng, b, depth) }
	for range 3000 {
		var b []byte
		for len(b) == 0 || (b[0] != '{' && b[0] != '[') {
			b = value(nil, 0)
		}
		whole := len(b)
		b = append(b, `,{"next":"}"}`...)
		for _, cut := range []int{whole, len(b), whole - 1, rng.IntN(whole)} {
			end, found := containerEnd(b[:cut])
			wEnd, wFound := want(b[:cut])
			if end != wEnd || found != wFound {
				t.Fatalf("containerEnd(%q) = %d, %t; want %d, %t", b[:cut], end, found, wEnd, wFound)
			}
		}
		if end, found := containerEnd(b); !found || end != whole {
			t.Fatalf("containerEnd(%q) = %d, %t; want %d", b, end, found, whole)
		}
		// Compacted in the same reading: white space outside strings dropped.
		want := []byte("x")
		for i, outside := range structural(b[:whole]) {
			if c := b[i]; !outside || c != ' ' && c != '\n' && c != '\t' && c != '\r' {
				want = append(want, c)
			}
		}
		got, end, found := compactContainer([]byte("x"), b)
		if !found || end != whole || !bytes.Equal(got, want) {
			t.Fatalf("compactContainer(%q) = %q, %d, %t; want %q, %d", b, got, end, found, want, whole)
		}
	}
}

// structural says of each byte of b, read one at a time, whether it is outside the strings (a
// quote is not).
func structural(b []byte) []bool {
	out := make([]bool, len(b))
	inString, escaped := false, false
	for i, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		default:
			out[i] = !inString
		}
	}
	return out
}

// randomJSON appends a random JSON value to b: objects and arrays nested to depth 6, with white
// space between their members, strings of quotes, backslashes, brackets and spaces escaped
// (long enough to cross 64-byte blocks), numbers and literals.
func randomJSON(rng *rand.Rand, b []byte, depth int) []byte {
	switch n := rng.IntN(10); {
	case n < 3 && depth < 6:
		b = append(b, '{')
		for k := range rng.IntN(5) {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, []string{`"k":`, `"k": `, "\n\t\"k\" :\r\n  ", `"k":`}[rng.IntN(4)]...)
			b = randomJSON(rng, b, depth+1)
		}
		return append(b, '}')
	case n < 5 && depth < 6:
		b = append(b, "[ "[:1+rng.IntN(2)]...)
		for k := range rng.IntN(5) {
			if k > 0 {
				b = append(b, ",\n"[:1+rng.IntN(2)]...)
			}
			b = randomJSON(rng, b, depth+1)
		}
		return append(b, ']')
	case n < 8:
		b = append(b, '"')
		for m := rng.IntN(90); m > 0; m-- {
			b = append(b, []string{"a", `\"`, `\\`, `\\\"`, "{", "}", "[", "]", `\u005c`, "\xc3\xa9", "bcdefghij", " a b ", "\t"}[rng.IntN(13)]...)
		}
		return append(b, '"')
	}
	return append(b, []string{"1", "true", "null", "-2.5e3"}[rng.IntN(4)]...)
}

// TestValueBlocksAsBytes holds scanner.value's reading of a container the reader holds whole
// (64 bytes at a time) to its reading byte by byte (what it does when the reader holds part of
// it, here a reader of one byte at a time): the same values, errors, lines and offsets, compact
// or not, within a limit or over it, on documents made wrong too (a backslash outside a
// string, a line's end or a control character in one, a bracket left open).
func TestValueBlocksAsBytes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	type read struct {
		Value      string
		Err        string
		Line       int
		Off        int64
		Terminated bool
	}
	readAll := func(r io.Reader, compact bool, max int) []read {
		s := newScanner(bufio.NewReaderSize(r, 1<<16))
		s.compact = compact
		var out []read
		for range 50 {
			if _, err := s.peek(); err != nil {
				out = append(out, read{Err: err.Error(), Line: s.line, Off: s.off, Terminated: true})
				break
			}
			v, err := s.value(max, nil)
			rd := read{Value: string(v), Line: s.line, Off: s.off}
			if err != nil {
				rd.Err = err.Error()
			}
			out = append(out, rd)
			if err != nil {
				var long *errTooLong
				if !errors.As(err, &long) {
					break
				}
			}
		}
		return out
	}
	for range 4000 {
		var doc []byte
		for range 1 + rng.IntN(4) {
			var v []byte
			for len(v) == 0 || (v[0] != '{' && v[0] != '[') {
				v = randomJSON(rng, nil, 0)
			}
			// Made wrong, sometimes: a byte replaced by one JSON has no place for.
			if rng.IntN(3) == 0 {
				v[rng.IntN(len(v))] = []byte{'\\', '\n', 0x01, '{', '"'}[rng.IntN(5)]
			}
			doc = append(append(doc, v...), " \n\t"[rng.IntN(3)])
		}
		for _, compact := range []bool{false, true} {
			max := []int{-1, 1 << 20, 40 + rng.IntN(200)}[rng.IntN(3)]
			blocks := readAll(bytes.NewReader(doc), compact, max)
			bytewise := readAll(iotest.OneByteReader(bytes.NewReader(doc)), compact, max)
			if diff := cmp.Diff(bytewise, blocks); diff != "" {
				t.Fatalf("%q (compact %t, max %d): the blocks' reading (+) against the bytes' (-):\n%s", doc, compact, max, diff)
			}
		}
	}
}
