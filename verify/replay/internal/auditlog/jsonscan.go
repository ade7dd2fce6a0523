package auditlog

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// A JSON scanner that validates as encoding/json does (RFC 8259) in one pass, for the decoders
// of audit events (eventscan.go) and of objects (objectdecode.go).

// members reads an object: key reads each member's key, member its value, each reporting
// whether it could.
func (s *scanner) members(key, member func() bool) bool {
	if !s.byte('{') {
		return false
	}
	s.space()
	if s.byte('}') {
		return true
	}
	for {
		s.space()
		if !key() {
			return false
		}
		s.space()
		if !s.byte(':') {
			return false
		}
		s.space()
		if !member() {
			return false
		}
		s.space()
		if s.byte('}') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// unquote returns the value of a JSON string, its quotes included and validated already, as
// encoding/json unquotes it; false for invalid UTF-8, which encoding/json replaces.
func unquote(quoted []byte) (string, bool) {
	body := quoted[1 : len(quoted)-1]
	if PlainRun(body) == len(body) {
		return string(body), plain(body)
	}
	out, n, ok := AppendUnquoted(make([]byte, 0, len(body)), quoted)
	if !ok || n != len(quoted) {
		return "", false
	}
	return string(out), true
}

// plain says whether the body of a string has no escapes and is valid UTF-8, so that
// encoding/json would unquote it to itself.
func plain(body []byte) bool {
	ascii := true
	for _, c := range body {
		if c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.Valid(body)
}

// scanner validates JSON (RFC 8259, as encoding/json accepts it) in one pass.
type scanner struct {
	b []byte
	i int
	// floats makes number refuse what does not convert to a float64 (1e400), as decoding into
	// an interface{} does.
	floats bool
}

// maxScanDepth bounds nesting; deeper lines go to encoding/json, whose own limit is 10000.
const maxScanDepth = 1000

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) byte(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plainString scans a string and returns its body when it has no escapes.
func (s *scanner) plainString() ([]byte, bool) {
	start := s.i + 1
	escaped, ok := s.str()
	if !ok || escaped {
		return nil, false
	}
	return s.b[start : s.i-1], true
}

// str scans a string; escaped says whether it holds escapes.
func (s *scanner) str() (escaped, ok bool) {
	if !s.byte('"') {
		return false, false
	}
	b := s.b
	for i := s.i; i < len(b); i++ {
		// Skip eight bytes at a time to the first that ends the string, escapes or is a
		// control character: most of a log line is long strings.
		for i+8 <= len(b) {
			m := special(binary.LittleEndian.Uint64(b[i:]))
			if m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			s.i = i + 1
			return escaped, true
		case c < 0x20:
			return false, false
		case c == '\\':
			escaped = true
			i++
			if i >= len(b) {
				return false, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return false, false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return false, false
					}
				}
				i += 4
			default:
				return false, false
			}
		}
	}
	return false, false
}

// special marks the bytes of x (little-endian) that are a quote, a backslash or a control
// character with their high bit, exactly up to the first such byte ("Bit Twiddling Hacks":
// determine if a word has a zero byte, or a byte less than n).
func special(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote := x ^ (ones * '"')
	backslash := x ^ (ones * '\\')
	return ((quote-ones)&^quote | (backslash-ones)&^backslash | (x-ones*0x20)&^x) & highs
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// value scans one value of any kind, containers iteratively.
func (s *scanner) value() bool {
	// stack holds the open containers: '{' or '['.
	var stackBuf [32]byte
	stack := stackBuf[:0]
	for {
		// A value.
		if s.i >= len(s.b) {
			return false
		}
		switch c := s.b[s.i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxScanDepth {
				return false
			}
			s.i++
			s.space()
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			if s.byte(closer) {
				break // an empty container is a whole value
			}
			stack = append(stack, c)
			if c == '{' && !s.member() {
				return false
			}
			continue
		case c == '"':
			if _, ok := s.str(); !ok {
				return false
			}
		case c == '-' || '0' <= c && c <= '9':
			if !s.number() {
				return false
			}
		case c == 't':
			if !s.literal("true") {
				return false
			}
		case c == 'f':
			if !s.literal("false") {
				return false
			}
		case c == 'n':
			if !s.literal("null") {
				return false
			}
		default:
			return false
		}
		// After a value: close containers, or go on to the next element.
		for {
			if len(stack) == 0 {
				return true
			}
			s.space()
			top := stack[len(stack)-1]
			if s.byte(',') {
				s.space()
				if top == '{' && !s.member() {
					return false
				}
				break
			}
			if top == '{' && s.byte('}') || top == '[' && s.byte(']') {
				stack = stack[:len(stack)-1]
				continue
			}
			return false
		}
	}
}

// member scans `"key" :` and the space after it, up to the member's value.
func (s *scanner) member() bool {
	if _, ok := s.str(); !ok {
		return false
	}
	s.space()
	if !s.byte(':') {
		return false
	}
	s.space()
	return true
}

func (s *scanner) literal(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	b := s.b
	i := s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	exp := false
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		exp = true
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	if s.floats && (exp || i-s.i > 300) {
		if _, err := strconv.ParseFloat(string(b[s.i:i]), 64); err != nil {
			return false
		}
	}
	s.i = i
	return true
}
