package source

import (
	"context"
	"io"
)

// interruptible makes a reader that may block (standard input, a pipe) give up when the context
// is canceled: Read returns the context's error at once, while the read it was waiting for goes
// on in the background and its data is dropped. A replay of `tail -f audit.log | vapc replay -`
// stops on Ctrl-C without waiting for the next line.
func interruptible(ctx context.Context, r io.Reader) io.Reader {
	if ctx.Done() == nil {
		return r
	}
	return &ctxReader{ctx: ctx, r: r}
}

type ctxReader struct {
	ctx     context.Context
	r       io.Reader
	pending chan readResult // the read in flight, when the last Read gave up on it
}

type readResult struct {
	data []byte
	err  error
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	ch := c.pending
	if ch == nil {
		ch = make(chan readResult, 1)
		buf := make([]byte, len(p))
		go func() {
			n, err := c.r.Read(buf)
			ch <- readResult{buf[:n], err}
		}()
	}
	select {
	case res := <-ch:
		c.pending = nil
		n := copy(p, res.data)
		if n < len(res.data) {
			// p is smaller than the read it was waiting for: keep the rest for the next Read.
			rest := make(chan readResult, 1)
			rest <- readResult{res.data[n:], res.err}
			c.pending = rest
			return n, nil
		}
		return n, res.err
	case <-c.ctx.Done():
		c.pending = ch
		return 0, c.ctx.Err()
	}
}
