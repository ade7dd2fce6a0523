package auditlog

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// PlainRun is how many bytes at the start of b a JSON string holds as they are: up to the
// first quote, backslash or control character, eight bytes at a time (special). The export
// readers skip the strings of envelopes with it.
func PlainRun(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// CopyPlainRun copies the bytes of b that PlainRun counts to dst and says how many: eight at
// a time, each word copied before it is looked at, so that dst, which must be as long as b at
// least, may hold up to seven bytes of b past the run after it (a string copied without a
// second pass over it, or a call a string).
func CopyPlainRun(dst, b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		binary.LittleEndian.PutUint64(dst[i:], w)
		if m := special(w); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c == '"' || c == '\\' || c < 0x20 {
			return i
		}
		dst[i] = c
	}
	return i
}

// AppendUnquoted appends the JSON string b begins with, decoded as encoding/json does, to
// dst, and says how many bytes the string had; false when b does not begin with one (dst
// may then hold part of it). An event an envelope holds as a string has an escape every few
// bytes (each quote of its JSON): the bytes are moved eight at a time into room made once (a
// string decodes to at most its own length), and only a string with bytes beyond ASCII is
// checked to be UTF-8.
func AppendUnquoted(dst, b []byte) ([]byte, int, bool) {
	if len(b) < 2 || b[0] != '"' {
		return dst, 0, false
	}
	from := len(dst)
	out := slices.Grow(dst, len(b))[:from+len(b)]
	o := out[from:] // j <= i-1 below: what is written never passes what is read
	i, j := 1, 0
	var high uint64 // the high bits of the bytes moved: non-zero when one is not ASCII
	for {
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			binary.LittleEndian.PutUint64(o[j:], x)
			if m := special(x); m != 0 {
				n := bits.TrailingZeros64(m) / 8
				high |= x & (1<<(8*n) - 1)
				i, j = i+n, j+n
				break
			}
			high |= x
			i, j = i+8, j+8
		}
		for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
			high |= uint64(b[i])
			o[j] = b[i]
			i, j = i+1, j+1
		}
		if i >= len(b) || b[i] < 0x20 {
			return out[:from+j], 0, false // the end of b, or a control character
		}
		if b[i] == '"' {
			i++
			break
		}
		// A backslash and what it escapes.
		if i+1 >= len(b) {
			return out[:from+j], 0, false
		}
		c := b[i+1]
		switch c {
		case '"', '\\', '/':
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			r, w, ok := unicodeEscape(b[i:])
			if !ok {
				return out[:from+j], 0, false
			}
			j += utf8.EncodeRune(o[j:], r) // at most 4 bytes of the 6 or 12 read
			i += w
			continue
		default:
			return out[:from+j], 0, false
		}
		o[j] = c
		i, j = i+2, j+1
	}
	out = out[:from+j]
	// encoding/json replaces invalid UTF-8: the caller decodes those strings with it.
	if high&0x8080808080808080 != 0 && !utf8.Valid(out[from:]) {
		return out, 0, false
	}
	return out, i, true
}

// unicodeEscape decodes the \uXXXX escape b begins with, and the one after it when the two
// are a surrogate pair, as encoding/json does (U+FFFD for a lone surrogate); w is how many
// bytes it read.
func unicodeEscape(b []byte) (r rune, w int, ok bool) {
	r, ok = hex4(b[2:])
	if !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, true
	}
	r2, ok2 := rune(-1), false
	if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
		r2, ok2 = hex4(b[8:])
	}
	if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
		return dec, 12, true
	}
	return utf8.RuneError, 6, true
}

func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
