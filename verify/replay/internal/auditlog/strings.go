package auditlog

import (
	"encoding/binary"
	"math/bits"
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

// AppendUnquoted appends the JSON string b begins with, decoded as encoding/json does, to
// dst, and says how many bytes the string had; false when b does not begin with one (dst
// may then hold part of it).
func AppendUnquoted(dst, b []byte) ([]byte, int, bool) {
	if len(b) < 2 || b[0] != '"' {
		return dst, 0, false
	}
	out, from := dst, len(dst)
	i := 1
	for {
		n := PlainRun(b[i:])
		out = append(out, b[i:i+n]...)
		i += n
		if i >= len(b) || b[i] < 0x20 {
			return out, 0, false // the end of b, or a control character
		}
		if b[i] == '"' {
			i++
			break
		}
		// A backslash and what it escapes.
		if i+1 >= len(b) {
			return out, 0, false
		}
		switch c := b[i+1]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b[i+2:])
			if !ok {
				return out, 0, false
			}
			w := 6
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(-1), false
				if i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
					r2, ok2 = hex4(b[i+8:])
				}
				if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
					r, w = dec, 12
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
			i += w
			continue
		default:
			return out, 0, false
		}
		i += 2
	}
	// encoding/json replaces invalid UTF-8: the caller decodes those strings with it.
	if !utf8.Valid(out[from:]) {
		return out, 0, false
	}
	return out, i, true
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
