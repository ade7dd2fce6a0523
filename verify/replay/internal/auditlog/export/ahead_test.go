package export

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// TestAheadReader: what an aheadReader reads is its input's bytes, in reads of every size,
// then the error its input ended with (io.EOF, or a truncated stream's); Close ends the
// reading ahead of an input that is not read to its end.
func TestAheadReader(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(5, 1))
	data := make([]byte, 3*aheadSize+12345)
	for i := range data {
		data[i] = byte(rnd.IntN(256))
	}
	truncated := errors.New("unexpected EOF of the gzip stream")
	for _, tc := range []struct {
		name string
		in   io.Reader
		end  error
	}{
		{"whole", bytes.NewReader(data), io.EOF},
		{"a byte at a time", iotest.OneByteReader(bytes.NewReader(data[:3*aheadSize/2])), io.EOF},
		{"empty", bytes.NewReader(nil), io.EOF},
		{"truncated", io.MultiReader(bytes.NewReader(data), iotest.ErrReader(truncated)), truncated},
		{"data with its error", iotest.DataErrReader(bytes.NewReader(data)), io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAheadReader(tc.in)
			defer a.Close()
			var got []byte
			var err error
			for err == nil {
				p := make([]byte, 1+rnd.IntN(3*aheadSize/2))
				var n int
				n, err = a.Read(p)
				got = append(got, p[:n]...)
			}
			want := data
			if tc.name == "a byte at a time" {
				want = data[:3*aheadSize/2]
			} else if tc.name == "empty" {
				want = nil
			}
			if !errors.Is(err, tc.end) || !bytes.Equal(got, want) {
				t.Errorf("read %d bytes (the input's: %v), ended with %v; want %d, %v", len(got), bytes.Equal(got, want), err, len(want), tc.end)
			}
		})
	}
	// Closed early: the goroutine ends, however far the input goes.
	a := newAheadReader(iotest.OneByteReader(bytes.NewReader(make([]byte, 64*aheadSize))))
	if _, err := a.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if _, err := a.Read(make([]byte, 10)); err == nil {
		t.Error("a read after Close read on")
	}
}
