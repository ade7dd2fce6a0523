package export

import (
	"bytes"
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// The envelopes of CloudWatch and Azure hold the event as a JSON string in one member of a
// record: member finds it in the record's bytes and unquote decodes it, without decoding the
// rest of the record with encoding/json (which validates all of it first, and costs as much as
// the replay's own decoding). The record's structure is the scanner's to check, the event's
// the replay decoder's; where either function cannot tell, the caller decodes the record with
// encoding/json, whose error it reports.

// memberString is the value of the member of the object obj named name, a string, decoded in
// the pass that finds its end.
func memberString(obj []byte, name string) ([]byte, bool) {
	start, ok := memberAt(obj, name)
	if !ok {
		return nil, false
	}
	out, n, ok := unquotePrefix(obj[start:])
	return out, ok && n > 0
}

// member is the value of the member of the object obj named name (unquoted), as its bytes.
func member(obj []byte, name string) ([]byte, bool) {
	start, ok := memberAt(obj, name)
	if !ok {
		return nil, false
	}
	end, ok := valueEnd(obj, start)
	return obj[start:end], ok
}

// memberAt is where the value of the member of the object obj named name begins.
func memberAt(obj []byte, name string) (int, bool) {
	depth, inString, escaped := 0, false, false
	for i := 0; i < len(obj); i++ {
		b := obj[i]
		switch {
		case escaped:
			escaped = false
			continue
		case inString:
			if b == '\\' {
				escaped = true
			} else if b == '"' {
				inString = false
			} else {
				i += plainRun(obj[i:]) - 1
			}
			continue
		}
		switch b {
		case '"':
			if depth == 1 && i+len(name)+1 < len(obj) && obj[i+len(name)+1] == '"' && string(obj[i+1:i+1+len(name)]) == name {
				rest := obj[i+len(name)+2:]
				trimmed := bytes.TrimLeft(rest, " \t\r\n")
				if len(trimmed) > 0 && trimmed[0] == ':' {
					return len(obj) - len(bytes.TrimLeft(trimmed[1:], " \t\r\n")), true
				}
			}
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return 0, false
}

// valueEnd is where the value that begins at start ends.
func valueEnd(b []byte, start int) (int, bool) {
	if start >= len(b) {
		return start, false
	}
	depth, inString, escaped := 0, false, false
	for i := start; i < len(b); i++ {
		c := b[i]
		switch {
		case escaped:
			escaped = false
		case inString:
			if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
				if depth == 0 {
					return i + 1, true
				}
			} else if c < 0x20 {
				return i, false
			} else {
				i += plainRun(b[i:]) - 1
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return i, true // the end of a literal
			}
			depth--
			if depth == 0 {
				return i + 1, true
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			return i, true
		}
	}
	return len(b), depth == 0 && !inString
}

// unquote decodes a JSON string's bytes, quotes included, as encoding/json does; false when
// they are not one.
func unquote(s []byte) ([]byte, bool) {
	out, n, ok := unquotePrefix(s)
	return out, ok && n == len(s)
}

// unquotePrefix decodes the JSON string b begins with, as encoding/json does, and says how
// many bytes it had; false when b does not begin with one.
func unquotePrefix(b []byte) ([]byte, int, bool) {
	if len(b) < 2 || b[0] != '"' {
		return nil, 0, false
	}
	// The string's end: the first quote no backslash escapes.
	end := 1
	for {
		end += plainRun(b[end:])
		if end >= len(b) || b[end] < 0x20 {
			return nil, 0, false
		}
		if b[end] == '"' {
			break
		}
		end += 2 // a backslash and what it escapes
		if end > len(b) {
			return nil, 0, false
		}
	}
	out, ok := unescape(b[1:end])
	return out, end + 1, ok
}

// unescape decodes the bytes between a JSON string's quotes.
func unescape(s []byte) ([]byte, bool) {
	i := bytes.IndexByte(s, '\\')
	if i < 0 {
		if !validPlain(s) {
			return nil, false
		}
		return bytes.Clone(s), true
	}
	out := make([]byte, 0, len(s))
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			i = len(s)
		}
		if !validPlain(s[:i]) {
			return nil, false
		}
		out = append(out, s[:i]...)
		s = s[i:]
		if len(s) == 0 {
			break
		}
		if len(s) < 2 {
			return nil, false
		}
		switch c := s[1]; c {
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
			r, ok := hex4(s[2:])
			if !ok {
				return nil, false
			}
			n := 6
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(-1), false
				if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
					r2, ok2 = hex4(s[8:])
				}
				if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
					r, n = dec, 12
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
			s = s[n:]
			continue
		default:
			return nil, false
		}
		s = s[2:]
	}
	return out, true
}

// validPlain says whether bytes of a string need no decoding: no quote, no control
// character, valid UTF-8 (encoding/json replaces invalid UTF-8: the caller decodes those).
func validPlain(s []byte) bool {
	return plainRun(s) == len(s) && (ascii(s) || utf8.Valid(s))
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

// eachMember calls fn with the name and value of each member of the object obj, in one pass;
// false when obj is not an object the pass can read (fn may have been called).
func eachMember(obj []byte, fn func(name string, value []byte) bool) bool {
	i := len(obj) - len(bytes.TrimLeft(obj, " \t\r\n"))
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i++
	for {
		for i < len(obj) && (obj[i] == ' ' || obj[i] == '\t' || obj[i] == '\r' || obj[i] == '\n' || obj[i] == ',') {
			i++
		}
		if i >= len(obj) {
			return false
		}
		if obj[i] == '}' {
			return true
		}
		end, ok := valueEnd(obj, i)
		if !ok || obj[i] != '"' {
			return false
		}
		name, ok := unquote(obj[i:end])
		if !ok {
			return false
		}
		i = end
		for i < len(obj) && (obj[i] == ' ' || obj[i] == '\t' || obj[i] == '\r' || obj[i] == '\n') {
			i++
		}
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		i++
		for i < len(obj) && (obj[i] == ' ' || obj[i] == '\t' || obj[i] == '\r' || obj[i] == '\n') {
			i++
		}
		end, ok = valueEnd(obj, i)
		if !ok || end == i {
			return false
		}
		if !fn(string(name), obj[i:end]) {
			return false
		}
		i = end
	}
}

// plainRun is how many bytes at the start of b a JSON string holds as they are: up to the
// first quote, backslash or control character. It reads eight bytes at a time.
func plainRun(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if special(binary.LittleEndian.Uint64(b[i:])) {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special says whether one of the eight bytes of x is a quote, a backslash or below 0x20.
func special(x uint64) bool {
	zero := func(v uint64) bool { return (v-ones)&^v&highs != 0 }
	return zero(x^(ones*'"')) || zero(x^(ones*'\\')) || (x-ones*0x20)&^x&highs != 0
}

// ascii says whether every byte of b is below 0x80, eight at a time.
func ascii(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&highs != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		if b[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
