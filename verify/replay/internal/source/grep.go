package source

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// grepReader hands over the lines of a log backend's file that hold a needle, numbered as its
// line reader numbers them, and no other: the bytes between them are searched for the needle
// and counted for their newlines, not split into lines (a pass before the replay's first event
// that looks for a rare string, as the admission policies' names, in a log of gigabytes). A line
// longer than the longest the replay reads is passed over, as the line reader passes it over
// (its Err set, which the passes that filter skip).
type grepReader struct {
	ctx    context.Context
	file   string
	r      io.Reader
	needle []byte
	max    int

	buf        []byte
	start, end int  // the bytes of buf not handed over yet
	num        int  // the lines before buf[start]
	eof        bool // r is read to its end: what buf holds after the last newline is a line
	failed     bool // r failed before its end (eof is set too)
	skipping   bool // in a line longer than max, which is not handed over
}

// grepChunk is the bytes a grepReader reads at once; it grows to hold the longest line.
const grepChunk = 1 << 20

func newGrepReader(ctx context.Context, file string, r io.Reader, needle []byte, max int) *grepReader {
	return &grepReader{ctx: ctx, file: file, r: r, needle: needle, max: max, buf: make([]byte, grepChunk)}
}

// Next is the next line that holds the needle; false at the end of the file, or at an error
// reading it (which the replay's own reading of the file reports).
func (g *grepReader) Next() (auditlog.Line, bool) {
	for {
		region := g.buf[g.start:g.end]
		complete := len(region) // the bytes of whole lines in region
		if !g.eof {
			complete = bytes.LastIndexByte(region, '\n') + 1
		}
		if g.skipping {
			// The rest of a line too long to hand over, up to its newline.
			nl := bytes.IndexByte(region[:complete], '\n')
			if nl < 0 {
				if g.eof { // the long line ends with the file
					g.skipping = false
					g.num++
					g.start = g.end
					continue
				}
				g.start = g.end
				if !g.fill() {
					return auditlog.Line{}, false
				}
				continue
			}
			g.skipping = false
			g.num++
			g.start += nl + 1
			continue
		}
		if i := bytes.Index(region[:complete], g.needle); i >= 0 {
			from := bytes.LastIndexByte(region[:i], '\n') + 1
			to := complete
			if nl := bytes.IndexByte(region[i:complete], '\n'); nl >= 0 {
				to = i + nl + 1
			}
			g.num += bytes.Count(region[:from], []byte{'\n'}) + 1
			g.start += to
			line := region[from:to]
			if len(line) > g.max {
				continue // as the line reader, which hands it over without its bytes
			}
			return auditlog.Line{File: g.file, Num: g.num, Data: line, Size: len(line)}, true
		}
		g.num += bytes.Count(region[:complete], []byte{'\n'})
		g.start += complete
		if g.eof {
			return auditlog.Line{}, false
		}
		if !g.fill() {
			return auditlog.Line{}, false
		}
	}
}

// fill reads more of the file after what buf holds of a line begun; false at an error, at an
// interrupt, or at the end of the file with nothing left to hand over.
func (g *grepReader) fill() bool {
	if g.ctx.Err() != nil {
		return false
	}
	g.end = copy(g.buf, g.buf[g.start:g.end])
	g.start = 0
	if g.end == len(g.buf) {
		// A line longer than the buffer: the buffer grows to the longest line the replay
		// reads, and a line longer than that is passed over.
		if len(g.buf) > g.max {
			g.skipping, g.end = true, 0
		} else {
			g.buf = append(g.buf, make([]byte, min(len(g.buf), g.max+1-len(g.buf)))...)
		}
	}
	n, err := io.ReadAtLeast(g.r, g.buf[g.end:], 1)
	g.end += n
	switch {
	case errors.Is(err, io.EOF):
		g.eof = true
		return g.end > 0 || g.skipping
	case err != nil:
		// A truncated compressed stream, a failed read: as the line reader, the line the
		// error cut is not handed over, the lines before it are.
		g.end = bytes.LastIndexByte(g.buf[:g.end], '\n') + 1
		g.eof, g.failed = true, true
		return g.end > 0
	}
	return true
}

// grepper hands over the lines of a file that hold a needle (a grepReader, a splitGrep).
type grepper interface {
	Next() (auditlog.Line, bool)
}

// openGrep opens a filtered source as a grepReader, where it is one log backend's file read
// on its own (its lines in their order, not merged with another's by time, not split or read
// in the order of their stage times), or a splitGrep where that file is large and not
// compressed; ok is false otherwise, and where it cannot be opened (openSource then says why).
func openGrep(ctx context.Context, src Source, maxLine int) (g grepper, close func(), ok bool) {
	if src.filter == nil || bytes.IndexByte(src.filter, '\n') >= 0 || src.Reader != nil || src.part != nil || src.inStageOrder {
		return nil, nil, false
	}
	f, err := os.Open(src.File())
	if err != nil {
		return nil, nil, false
	}
	format, err := export.FormatOf(src.Name, f, export.Format(src.Format))
	if err != nil || format != export.Plain {
		f.Close()
		return nil, nil, false
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, false
	}
	if sg := newSplitGrep(ctx, src, f, maxLine, grepSplitAt); sg != nil {
		return sg, func() {
			sg.close()
			f.Close()
		}, true
	}
	var r io.Reader = f
	if src.Read != nil {
		r = countingFile{f: f, n: src.Read}
	}
	dr, closers, err := export.Decompressed(r)
	if err != nil {
		for _, c := range closers {
			c.Close()
		}
		f.Close()
		return nil, nil, false
	}
	return newGrepReader(ctx, src.Name, dr, src.filter, maxLine), func() {
		for _, c := range closers {
			c.Close()
		}
		f.Close()
	}, true
}

// grepSplitAt is the size from which a log backend's file, not compressed, is searched in two
// halves at once (splitGrep). A filtered pass reads the whole file where none of its lines
// holds the needle, or where they are reads of the admission policies and no write of the
// given ones (kube-apiserver's and the controllers' lists and watches): on one core the file's
// bytes copied from the kernel and searched took half a second for the cluster traffic x30
// (586 MB) before the replay's first event, and the second core idle.
const grepSplitAt = 64 << 20

// splitGrep hands over what a grepReader over the whole file hands over, the file searched
// in two halves, cut after a newline: the first by Next, on the caller's goroutine, the second
// on a goroutine of its own, which hands over copies of its lines (up to grepAhead bytes of
// them ahead of Next: heldFor), numbered in the file once the first half is counted. A read of
// the first half that fails ends the lines there, as one reader's does.
type splitGrep struct {
	first     *grepReader
	firstDone bool
	base      int // the lines of the first half
	second    chan auditlog.Line
	// held has a token for each grepToken bytes of the lines sent on second and not yet
	// taken by Next (heldFor).
	held   chan struct{}
	ctx    context.Context
	cancel func()
	done   chan struct{}
}

// grepAhead bounds the bytes of the lines the second half's goroutine holds before Next takes
// them (the whole first half is handed over first: a bound by lines held 4,096 of them, a
// list response logged whole each, 155 MB of a 300 MB file), counted in tokens of grepToken.
const (
	grepAhead = 32 << 20
	grepToken = 64 << 10
)

// heldFor is how many tokens a line of n bytes holds: one for each grepToken begun, all of
// them for a line longer than grepAhead.
func heldFor(n int) int {
	return min(grepAhead/grepToken, max(1, (n+grepToken-1)/grepToken))
}

// newSplitGrep is a splitGrep of the file f of src (plain), or nil where it is compressed,
// smaller than at, or has no newline within 16 MiB after its middle.
func newSplitGrep(ctx context.Context, src Source, f *os.File, maxLine int, at int64) *splitGrep {
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Size() < at {
		return nil
	}
	var magic [2]byte
	if n, _ := f.ReadAt(magic[:], 0); n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return nil // compressed: read as one stream
	}
	size := info.Size()
	cut, ok := lineEndAfter(f, size/2, size)
	if !ok || cut >= size {
		return nil
	}
	reader := func(off, n int64) io.Reader {
		var r io.Reader = io.NewSectionReader(f, off, n)
		if src.Read != nil {
			r = countingReader{r, src.Read}
		}
		return r
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &splitGrep{
		first: newGrepReader(ctx, src.Name, reader(0, cut), src.filter, maxLine),
		// To the file's end as it is read, as one reader reads it.
		second: make(chan auditlog.Line, grepAhead/grepToken),
		held:   make(chan struct{}, grepAhead/grepToken),
		ctx:    ctx, cancel: cancel, done: make(chan struct{}),
	}
	second := newGrepReader(ctx, src.Name, reader(cut, math.MaxInt64-cut), src.filter, maxLine)
	go func() {
		defer close(s.done)
		defer close(s.second)
		for l, ok := second.Next(); ok; l, ok = second.Next() {
			for range heldFor(len(l.Data)) {
				select {
				case s.held <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
			l.Data = bytes.Clone(l.Data)
			s.second <- l // as many held as the channel holds: it has room
		}
	}()
	return s
}

// lineEndAfter is where the line that holds byte from of f ends (after its newline), looking
// no further than 16 MiB.
func lineEndAfter(f io.ReaderAt, from, size int64) (int64, bool) {
	buf := make([]byte, 64<<10)
	for off := from; off < size && off-from < 16<<20; {
		n, err := f.ReadAt(buf, off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, true
		}
		if err != nil {
			return 0, false
		}
		off += int64(n)
	}
	return 0, false
}

// Next is the next line that holds the needle, as grepReader's.
func (s *splitGrep) Next() (auditlog.Line, bool) {
	if !s.firstDone {
		if l, ok := s.first.Next(); ok {
			return l, true
		}
		s.firstDone = true
		if s.first.failed || s.ctx.Err() != nil {
			s.cancel()
			return auditlog.Line{}, false
		}
		s.base = s.first.num
	}
	l, ok := <-s.second
	if !ok || s.ctx.Err() != nil {
		return auditlog.Line{}, false
	}
	for range heldFor(len(l.Data)) {
		<-s.held
	}
	l.Num += s.base
	return l, true
}

// close stops the second half's goroutine and waits for it, before its file is closed.
func (s *splitGrep) close() {
	s.cancel()
	<-s.done
}
