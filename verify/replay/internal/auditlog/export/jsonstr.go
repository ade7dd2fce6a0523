package export

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
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
	_, start, ok := memberAt(obj, name)
	if !ok {
		return nil, false
	}
	out, n, ok := unquotePrefix(obj[start:])
	return out, ok && n > 0
}

// member is the value of the member of the object obj named name, as its bytes.
func member(obj []byte, name string) ([]byte, bool) {
	_, start, ok := memberAt(obj, name)
	if !ok {
		return nil, false
	}
	end, ok := valueEnd(obj, start)
	return obj[start:end], ok
}

// memberAt is where the member of the object obj named name begins (its name) and where its
// value begins.
func memberAt(obj []byte, name string) (keyAt, start int, ok bool) {
	eachMemberAt(obj, func(n string, k, s int) bool {
		if n == name {
			keyAt, start, ok = k, s, true
		}
		return !ok
	})
	return keyAt, start, ok
}

// eachMember calls fn with the name and value of each member of the object obj, in one pass;
// false when obj is not an object the pass can read (fn may have been called).
func eachMember(obj []byte, fn func(name string, value []byte) bool) bool {
	_, ok := walkObject(obj, 0, func(name string, _, start int) (int, bool) {
		end, ok := valueEnd(obj, start)
		return end, ok && end > start && fn(name, obj[start:end])
	})
	return ok
}

// eachMemberAt calls fn with the name of each member of the object obj, where the member
// begins and where its value begins, until fn returns false; false when obj is not an
// object it can read to its end (or fn stopped it).
func eachMemberAt(obj []byte, fn func(name string, keyAt, start int) bool) bool {
	_, ok := walkObject(obj, 0, func(name string, keyAt, start int) (int, bool) {
		return -1, fn(name, keyAt, start)
	})
	return ok
}

// walkObject reads the object of b that begins at i (after white space), calling fn with each
// member's name, where the member begins and where its value begins; fn returns where the
// value ends (-1: walkObject finds it) and whether to go on. It returns where the object ends.
func walkObject(b []byte, i int, fn func(name string, keyAt, start int) (end int, ok bool)) (int, bool) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	for i++; ; {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		if i >= len(b) || b[i] != '"' {
			return i + 1, i < len(b) && b[i] == '}'
		}
		name, n, ok := unquotePrefix(b[i:])
		if !ok {
			return i, false
		}
		keyAt := i
		i = skipSpace(b, i+n)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		i = skipSpace(b, i+1)
		end, ok := fn(string(name), keyAt, i)
		if !ok {
			return i, false
		}
		if end < 0 {
			if end, ok = valueEnd(b, i); !ok {
				return i, false
			}
		}
		if end == i {
			return i, false
		}
		i = end
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
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
// many bytes it had; false when b does not begin with one. It finds the string's end and
// decodes it in one pass, copying the runs between escapes at once.
func unquotePrefix(b []byte) ([]byte, int, bool) {
	if len(b) < 2 || b[0] != '"' {
		return nil, 0, false
	}
	var out []byte
	i := 1
	for {
		n := plainRun(b[i:])
		if i+n >= len(b) || b[i+n] < 0x20 {
			return nil, 0, false
		}
		if b[i+n] == '"' {
			if out == nil {
				out = bytes.Clone(b[1 : i+n]) // no escape: the body as it is
			} else {
				out = append(out, b[i:i+n]...)
			}
			i += n + 1
			break
		}
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		out = append(out, b[i:i+n]...)
		i += n
		// A backslash and what it escapes.
		if i+1 >= len(b) {
			return nil, 0, false
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
				return nil, 0, false
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
			return nil, 0, false
		}
		i += 2
	}
	// encoding/json replaces invalid UTF-8: the caller decodes those strings with it.
	if !utf8.Valid(out) {
		return nil, 0, false
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

// plainRun is auditlog.PlainRun: how much of b a JSON string holds as it is.
func plainRun(b []byte) int { return auditlog.PlainRun(b) }
