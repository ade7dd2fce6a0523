package auditlog

import (
	"encoding/binary"
	"math/bits"
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
