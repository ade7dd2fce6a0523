package auditlog

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// TestPlainRuns holds PlainRun and CopyPlainRun to a byte-by-byte reading of random bytes, a
// quote, backslash or control character at every place around a word's: the same run, and
// CopyPlainRun's copy of it.
func TestPlainRuns(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 1))
	for range 20000 {
		b := make([]byte, rnd.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + rnd.IntN(0x60))
			if rnd.IntN(30) == 0 {
				b[i] = "\"\\\x00\x1f\x7f\xff"[rnd.IntN(6)]
			}
		}
		want := 0
		for want < len(b) && b[want] != '"' && b[want] != '\\' && b[want] >= 0x20 {
			want++
		}
		if got := PlainRun(b); got != want {
			t.Fatalf("PlainRun(%q) = %d, want %d", b, got, want)
		}
		dst := make([]byte, len(b))
		if got := CopyPlainRun(dst, b); got != want || !bytes.Equal(dst[:got], b[:want]) {
			t.Fatalf("CopyPlainRun(%q) = %d, %q; want %d, %q", b, got, dst[:got], want, b[:want])
		}
	}
}

// TestAppendUnquoted holds AppendUnquoted to encoding/json on strings of escapes of every kind
// (those of an Event escaped into a string, \n, \u and surrogates, controls, bytes beyond
// ASCII and not UTF-8), long enough for its 64-byte blocks, whatever follows them: the same
// string, its length, and false where encoding/json refuses it (or replaces bytes that are
// not UTF-8, which the callers decode with encoding/json).
func TestAppendUnquoted(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 7))
	pieces := []string{"a", "bcdefghij", `\"`, `\\`, `\/`, `\\\"`, `\n`, `\t`, `\u00e9`, `\ud83d\ude00`, `\ud800`, "\xc3\xa9", "\xff", "\x01", `\x`, `"`, "{", ":"}
	for range 30000 {
		var b []byte
		for n := rnd.IntN(400); len(b) < n; {
			// Mostly an Event's escapes, the others seldom.
			k := rnd.IntN(6)
			if rnd.IntN(8) == 0 {
				k = rnd.IntN(len(pieces))
			}
			b = append(b, pieces[k]...)
		}
		in := append(append([]byte{'"'}, b...), `","next":1}`...)
		end := 0 // the length of the string encoding/json reads: to its first unescaped quote
		for i := 1; i < len(in); i++ {
			if in[i] == '\\' {
				i++
			} else if in[i] == '"' {
				end = i + 1
				break
			}
		}
		var want string
		wantErr := json.Unmarshal(in[:end], &want)
		dst := []byte("kept")
		got, n, ok := AppendUnquoted(dst, in)
		switch {
		case ok && wantErr != nil:
			t.Fatalf("AppendUnquoted(%q) = %q, %d, true; encoding/json: %v", in, got, n, wantErr)
		case ok && (string(got) != "kept"+want || n != end):
			t.Fatalf("AppendUnquoted(%q) = %q, %d; want %q, %d", in, got, n, "kept"+want, end)
		case !ok && wantErr == nil && utf8.Valid(in[:end]):
			t.Fatalf("AppendUnquoted(%q) = false; encoding/json reads %q", in, want)
		}
	}
}
