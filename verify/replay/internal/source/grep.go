package source

import (
	"bytes"
	"context"
	"errors"
	"io"
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
		g.eof = true
		return g.end > 0
	}
	return true
}

// openGrep opens a filtered source as a grepReader, where it is one log backend's file read
// on its own (its lines in their order, not merged with another's by time, not split or read
// in the order of their stage times); ok is false otherwise, and where it cannot be opened
// (openSource then says why).
func openGrep(ctx context.Context, src Source, maxLine int) (g *grepReader, close func(), ok bool) {
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
