package export

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// gzipped is data gzip-compressed, as members of at most member bytes each (all of it in one
// where member is 0).
func gzipped(t *testing.T, data []byte, member int) []byte {
	t.Helper()
	var out bytes.Buffer
	for len(data) > 0 || out.Len() == 0 {
		n := len(data)
		if member > 0 {
			n = min(n, member)
		}
		zw := gzip.NewWriter(&out)
		if _, err := zw.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
	return out.Bytes()
}

// TestDecompressedTwice: a file compressed twice (Firehose's subscription records in a gzip
// object), whose outer layer decompresses ahead on a goroutine of its own (layerAhead), reads
// as the same bytes, and ends in the same error, as decompressing it one layer after the
// other does.
func TestDecompressedTwice(t *testing.T) {
	t.Parallel()
	inner := gzipped(t, events(3<<20), 100<<10)
	outer := gzipped(t, inner, 0)
	for _, tc := range []struct {
		name string
		file []byte
	}{
		{"whole", outer},
		{"cut in the outer layer's middle", outer[:len(outer)/2]},
		{"cut before the outer layer's trailer", outer[:len(outer)-4]},
		{"outer layer corrupt", corrupt(outer, len(outer)/3)},
		{"once, not twice", inner},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want, wantErr := layerByLayer(tc.file)
			br, closers, err := Decompressed(bytes.NewReader(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, gotErr := io.ReadAll(br)
			for _, c := range closers {
				c.Close()
			}
			if !bytes.Equal(got, want) {
				t.Errorf("read %d bytes, want the %d bytes decompressing layer by layer gives", len(got), len(want))
			}
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("ended in %v, want %v", gotErr, wantErr)
			}
		})
	}
}

// TestDecompressedTwiceClosed: closing a twice-compressed file's decompression before its end
// stops the reading ahead (Close returns; the outer layer is not read again).
func TestDecompressedTwiceClosed(t *testing.T) {
	t.Parallel()
	outer := gzipped(t, gzipped(t, events(8<<20), 64<<10), 0)
	in := &countingBytes{r: bytes.NewReader(outer)}
	br, closers, err := Decompressed(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := br.Peek(1); err != nil {
		t.Fatal(err)
	}
	for _, c := range closers {
		c.Close()
	}
	read := in.n
	// What the inner layer's decompression had read ahead is read, then an error.
	n, err := io.Copy(io.Discard, br)
	if err == nil {
		t.Errorf("read %d bytes after Close, to the end, without an error", n)
	}
	if in.n > read {
		t.Errorf("read %d bytes of the file after Close", in.n-read)
	}
}

// events is n bytes of lines like audit events, which compress about as they do.
func events(n int) []byte {
	rnd := rand.New(rand.NewPCG(1, 2))
	var text bytes.Buffer
	for i := 0; text.Len() < n; i++ {
		fmt.Fprintf(&text, `{"kind":"Event","auditID":"%d","verb":"get","n":%d}`+"\n", i, rnd.IntN(1<<30))
	}
	return text.Bytes()
}

// layerByLayer decompresses file's gzip layers (two at most) as Decompressed did before the
// outer one read ahead: the inner layer's reader reads the outer one's, on one goroutine.
func layerByLayer(file []byte) ([]byte, error) {
	var r io.Reader = bytes.NewReader(file)
	for range 2 {
		br := bufio.NewReader(r)
		if magic, err := br.Peek(2); err != nil || magic[0] != 0x1f || magic[1] != 0x8b {
			r = br
			break
		}
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		r = zr
	}
	return io.ReadAll(r)
}

// corrupt is data with the byte at i changed.
func corrupt(data []byte, i int) []byte {
	c := bytes.Clone(data)
	c[i] ^= 0x55
	return c
}

type countingBytes struct {
	r io.Reader
	n int
}

func (c *countingBytes) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
