package export

import (
	"io"
	"sync"
)

// aheadReader reads a decompressing reader ahead of its own reader, on a goroutine of its own:
// a compressed export's reader would otherwise decompress and scan on one core (gcloud's
// compressed array: 0.6 s of decompression beside 0.3 s of scanning on the first reader, all
// before the first event). It holds at most aheadChunks chunks read ahead; Close stops the
// goroutine and waits for it, before the decompression is closed.
type aheadReader struct {
	chunks chan aheadChunk
	free   chan []byte
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once
	// cur is what is left of the chunk being read, buf that chunk's buffer; err the error
	// that ends the input after cur.
	cur, buf []byte
	err      error
}

// aheadChunk is a chunk read ahead, and the error the reading stopped with after it.
type aheadChunk struct {
	b   []byte
	err error
}

const (
	// aheadSize is the bytes of a chunk read ahead.
	aheadSize = 1 << 20
	// aheadChunks is how many chunks are read ahead at most.
	aheadChunks = 2
)

func newAheadReader(r io.Reader) *aheadReader {
	a := &aheadReader{
		chunks: make(chan aheadChunk, aheadChunks),
		free:   make(chan []byte, aheadChunks+1),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	for range aheadChunks + 1 {
		a.free <- make([]byte, aheadSize)
	}
	go a.readAhead(r)
	return a
}

// readAhead reads r into free buffers until r ends or Close is called.
func (a *aheadReader) readAhead(r io.Reader) {
	defer close(a.done)
	defer close(a.chunks)
	for {
		var b []byte
		select {
		case b = <-a.free:
		case <-a.quit:
			return
		}
		n := 0
		var err error
		for n < len(b) && err == nil {
			var k int
			k, err = r.Read(b[n:])
			n += k
		}
		select {
		case a.chunks <- aheadChunk{b: b[:n], err: err}:
		case <-a.quit:
			return
		}
		if err != nil {
			return
		}
	}
}

func (a *aheadReader) Read(p []byte) (int, error) {
	select {
	case <-a.quit:
		return 0, io.ErrClosedPipe // read after Close
	default:
	}
	for len(a.cur) == 0 {
		if a.err != nil {
			return 0, a.err
		}
		if a.buf != nil {
			a.free <- a.buf[:cap(a.buf)] // room for every buffer: never waits
			a.buf = nil
		}
		c, ok := <-a.chunks
		if !ok {
			return 0, io.ErrClosedPipe // closed while waiting (Close is not called while Read runs)
		}
		a.buf, a.cur, a.err = c.b, c.b, c.err
	}
	n := copy(p, a.cur)
	a.cur = a.cur[n:]
	return n, nil
}

// Close stops the reading ahead and waits for it to end.
func (a *aheadReader) Close() error {
	a.once.Do(func() { close(a.quit) })
	<-a.done
	return nil
}
