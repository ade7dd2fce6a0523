package export

import (
	"bytes"
	"encoding/binary"
	"math/bits"
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

// appendMemberString appends the value of the member of the object obj named name, a string,
// decoded, to dst.
func appendMemberString(dst, obj []byte, name string) ([]byte, bool) {
	_, start, ok := memberAt(obj, name)
	if !ok {
		return dst, false
	}
	out, n, ok := auditlog.AppendUnquoted(dst, obj[start:])
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
	eachMemberAt(obj, func(n []byte, k, s int) bool {
		if string(n) == name {
			keyAt, start, ok = k, s, true
		}
		return !ok
	})
	return keyAt, start, ok
}

// eachMember calls fn with the name and value of each member of the object obj, in one pass;
// false when obj is not an object the pass can read (fn may have been called). The name is
// valid during the call.
func eachMember(obj []byte, fn func(name, value []byte) bool) bool {
	_, ok := walkObject(obj, 0, func(name []byte, _, start int) (int, bool) {
		end, ok := valueEnd(obj, start)
		return end, ok && end > start && fn(name, obj[start:end])
	})
	return ok
}

// eachMemberAt calls fn with the name of each member of the object obj, where the member
// begins and where its value begins, until fn returns false; false when obj is not an
// object it can read to its end (or fn stopped it). The name is valid during the call.
func eachMemberAt(obj []byte, fn func(name []byte, keyAt, start int) bool) bool {
	_, ok := walkObject(obj, 0, func(name []byte, keyAt, start int) (int, bool) {
		return -1, fn(name, keyAt, start)
	})
	return ok
}

// walkObject reads the object of b that begins at i (after white space), calling fn with each
// member's name (b's own bytes when it has no escape: valid during the call), where the
// member begins and where its value begins; fn returns where the value ends (-1: walkObject
// finds it) and whether to go on. It returns where the object ends.
func walkObject(b []byte, i int, fn func(name []byte, keyAt, start int) (end int, ok bool)) (int, bool) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	var ok bool
	for i++; ; {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		if i >= len(b) || b[i] != '"' {
			return i + 1, i < len(b) && b[i] == '}'
		}
		var name []byte
		n := 1 + plainRun(b[i+1:])
		if n < len(b)-i && b[i+n] == '"' && utf8.Valid(b[i+1:i+n]) {
			name, n = b[i+1:i+n], n+1 // no escape: the name is its bytes
		} else if name, n, ok = unquotePrefix(b[i:]); !ok {
			return i, false
		}
		keyAt := i
		i = skipSpace(b, i+n)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		i = skipSpace(b, i+1)
		end, ok := fn(name, keyAt, i)
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

// valueEnd is where the value that begins at start ends. It checks structure (brackets,
// strings, escapes), not the grammar of numbers and literals, which the decoder checks.
func valueEnd(b []byte, start int) (int, bool) {
	if start >= len(b) {
		return start, false
	}
	depth := 0
	for i := start; i < len(b); i++ {
		if depth > 0 {
			if i += nestingRun(b[i:]); i >= len(b) {
				break
			}
		}
		c := b[i]
		switch c {
		case '"':
			end, ok := stringBodyEnd(b, i+1)
			if !ok {
				return end, false
			}
			i = end
			if depth == 0 {
				return i + 1, true
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i, true // the end of a literal
			}
			depth--
			if depth == 0 {
				return i + 1, true
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i, true // the end of a literal
			}
		}
	}
	return len(b), depth == 0
}

// nesting are the bytes that matter inside a container, outside its strings.
var nesting = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}

// nestingRun is how many bytes at the start of b are not nesting, eight at a time: most of an
// object is its strings' bytes, which its scan jumps over (stringBodyEnd), and the names,
// numbers, colons and commas between them.
func nestingRun(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// A byte | 0x20 is '{' for '[' and '{' alone, '}' for ']' and '}' alone; a zero byte
		// of q, o or c is a quote, an opening or a closing bracket, and the lowest byte marked
		// is exactly the first of them ("Bit Twiddling Hacks": determine if a word has a zero
		// byte).
		y := x | ones*0x20
		q, o, c := x^(ones*'"'), y^(ones*'{'), y^(ones*'}')
		if m := ((q-ones)&^q | (o-ones)&^o | (c-ones)&^c) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(b) && !nesting[b[i]] {
		i++
	}
	return i
}

// stringBodyEnd is the index of the quote that ends the string whose body begins at i; false
// (and where it stopped) at a control character or the end of b. A string with an escape is
// read from it by stringEnd, 64 bytes at a time (an Event escaped into a record's message has
// an escaped quote every few bytes), then checked for control characters.
func stringBodyEnd(b []byte, i int) (int, bool) {
	i += plainRun(b[i:])
	switch {
	case i >= len(b):
		return len(b), false
	case b[i] == '"':
		return i, true
	case b[i] != '\\':
		return i, false // a control character
	}
	end, found, _ := stringEnd(b[i:], false)
	if c := controlIndex(b[i : i+end]); c >= 0 {
		return i + c, false
	}
	return i + end, found
}

// controlIndex is where the first control character of b is, eight bytes at a time; -1 where
// it has none.
func controlIndex(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// A byte below 0x20 borrows, and its high bit, clear, becomes set: the lowest byte
		// marked is exactly the first ("Bit Twiddling Hacks": determine if a word has a byte
		// less than n).
		if m := (x - ones*0x20) &^ x & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return i
		}
	}
	return -1
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
	if len(b) >= 2 && b[0] == '"' {
		if n := 1 + plainRun(b[1:]); n < len(b) && b[n] == '"' {
			// No escape: the body as it is.
			if !utf8.Valid(b[1:n]) {
				return nil, 0, false
			}
			return bytes.Clone(b[1:n]), n + 1, true
		}
	}
	return auditlog.AppendUnquoted(make([]byte, 0, len(b)), b)
}

// plainRun is auditlog.PlainRun: how much of b a JSON string holds as it is.
func plainRun(b []byte) int { return auditlog.PlainRun(b) }

// validJSON says whether b is one JSON value, white space around it allowed, as json.Valid
// does (its grammar, strings' escapes, a nesting of at most 10,000), at the speed of
// the replay's scans: the small columns of a Log Analytics row are checked in full, and
// json.Valid's scanner takes a call a byte.
func validJSON(b []byte) bool {
	i, ok := validValue(b, skipSpace(b, 0), 0)
	return ok && skipSpace(b, i) == len(b)
}

// validValue checks the value that begins at i, depth containers deep; it returns where the
// value ends.
func validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth >= 10000 {
			return i, false
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1, true
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, false
				}
				var ok bool
				if i, ok = validString(b, i); !ok {
					return i, false
				}
				if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = skipSpace(b, i+1)
			}
			var ok bool
			if i, ok = validValue(b, i, depth+1); !ok {
				return i, false
			}
			switch i = skipSpace(b, i); {
			case i < len(b) && b[i] == ',':
				i = skipSpace(b, i+1)
			case i < len(b) && b[i] == closing:
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '"':
		return validString(b, i)
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
				return i + len(lit), true
			}
		}
		return i, false
	}
}

// validString checks the string whose quote is at i: its escapes (not its bytes' UTF-8, which
// json.Valid leaves to the decoder, as the replay's does).
func validString(b []byte, i int) (int, bool) {
	for i++; ; {
		i += plainRun(b[i:])
		switch {
		case i >= len(b):
			return i, false
		case b[i] == '"':
			return i + 1, true
		case b[i] == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return i, false
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		default:
			return i, false // a control character
		}
	}
}

// validNumber checks the number that begins at i: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i, _ = digits(i)
	default:
		return i, false
	}
	var ok bool
	if i < len(b) && b[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}
