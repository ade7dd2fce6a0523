package export

import (
	"fmt"
	"io"
	"sync"
)

// layerAhead reads an outer layer of compression on a goroutine of its own, a few chunks ahead
// of its reader, which decompresses the inner layer meanwhile: a file compressed twice (as
// Firehose writes a subscription's gzip records into a gzip object) decompresses on two cores.
// Each layer is about half of the work: the outer one holds bytes compressed already, which
// inflate a literal at a time (Firehose's objects of the recorded traffic: 0.40 s for the
// outer layer's 30 MB, 0.38 s for the inner layer's 231 MB, one after the other).
//
// It owns the outer layer's reader: Close stops the goroutine, waits for it, then closes it.
type layerAhead struct {
	outer  io.ReadCloser
	filled chan aheadChunk
	free   chan []byte
	quit   chan struct{}
	done   chan struct{}
	cur    aheadChunk
	off    int
	closed sync.Once
}

// aheadChunk is what one read of the outer layer gave: its bytes, and the error that ended
// it (io.EOF at the end).
type aheadChunk struct {
	data []byte
	err  error
}

const (
	aheadChunkBytes = 64 << 10
	aheadChunks     = 4
)

func newLayerAhead(outer io.ReadCloser) *layerAhead {
	a := &layerAhead{
		outer:  outer,
		filled: make(chan aheadChunk, aheadChunks),
		free:   make(chan []byte, aheadChunks+1),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	for range aheadChunks + 1 {
		a.free <- make([]byte, aheadChunkBytes)
	}
	go a.run()
	return a
}

// run reads the outer layer into the free chunks until it ends (or fails), or Close.
func (a *layerAhead) run() {
	defer close(a.done)
	for {
		var buf []byte
		select {
		case buf = <-a.free:
		case <-a.quit:
			return
		}
		c := a.fill(buf)
		select {
		case a.filled <- c:
		case <-a.quit:
			return
		}
		if c.err != nil {
			return
		}
	}
}

// fill reads the outer layer into buf, as far as it goes; a panic of the decompressor is the
// chunk's error (ErrInternal), as a format's reader's is its record's.
func (a *layerAhead) fill(buf []byte) (c aheadChunk) {
	defer func() {
		if p := recover(); p != nil {
			c = aheadChunk{err: fmt.Errorf("%w: %v", ErrInternal, p)}
		}
	}()
	n := 0
	for empty := 0; n < len(buf); {
		k, err := a.outer.Read(buf[n:])
		n += k
		if err != nil {
			return aheadChunk{data: buf[:n], err: err}
		}
		if k > 0 {
			empty = 0
		} else if empty++; empty == 100 { // as bufio gives up on a reader
			return aheadChunk{data: buf[:n], err: io.ErrNoProgress}
		}
	}
	return aheadChunk{data: buf[:n]}
}

// Read reads the outer layer's bytes in order, then the error that ended them; after Close,
// io.ErrClosedPipe.
func (a *layerAhead) Read(p []byte) (int, error) {
	for a.off == len(a.cur.data) {
		if a.cur.err != nil {
			return 0, a.cur.err
		}
		if a.cur.data != nil {
			a.free <- a.cur.data[:cap(a.cur.data)]
		}
		select {
		case a.cur = <-a.filled:
			a.off = 0
		case <-a.quit:
			return 0, io.ErrClosedPipe
		}
	}
	n := copy(p, a.cur.data[a.off:])
	a.off += n
	return n, nil
}

// Close stops the reading ahead and closes the outer layer's reader.
func (a *layerAhead) Close() error {
	var err error
	a.closed.Do(func() {
		close(a.quit)
		<-a.done
		err = a.outer.Close()
	})
	return err
}
