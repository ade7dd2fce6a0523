package replay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// Source is one audit log to read: a file (plain or gzip-compressed) or "-" for the reader
// given as Stdin.
type Source struct {
	// Name is the path, or "-".
	Name string
	// Reader, when set, is read instead of opening Name.
	Reader io.Reader
	// Format is how the log is wrapped (InputFormats): "" or "auto" detects it from its
	// first bytes.
	Format string
	// Read, when set, counts the bytes read of the source as it is stored (a gzip-compressed
	// file's compressed bytes), for a progress line's share of the input read.
	Read *atomic.Int64
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// decoded is one line of a log after decoding, and what the decoding workers prepared of its
// event.
type decoded struct {
	file  string
	num   int
	bytes int // the line's, its end included
	ev    *Event
	blank bool
	err   error
	// written is the response object of a write, decoded by a worker (see prepareWrite).
	written *written
	// observed is what the Observer's Prepare returned for the event.
	observed any
}

// batch is a run of lines decoded together by one worker.
type batch struct {
	buf   []byte
	lines []auditlog.Line
	out   []decoded
	done  chan struct{}
}

const (
	batchLines = 256
	batchBytes = 4 << 20
)

// decodeLogs reads the sources in order and calls fn with every line, in order, decoded on up
// to workers goroutines. Memory stays bounded: at most 2×workers batches are in flight. An
// error opening a source is reported through fn as a line error and the next source is read.
// prepare, when set, is called on the worker with every line decoded to an event.
func decodeLogs(ctx context.Context, sources []Source, maxLine, workers int, prepare func(*decoded), fn func(decoded)) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	work := make(chan *batch, workers)
	ordered := make(chan *batch, 2*workers)
	// Line buffers are reused once their batch is decoded: a decoded event holds copies of
	// what it keeps, never the line.
	free := make(chan []byte, 3*workers+1)
	newBuf := func() []byte {
		select {
		case b := <-free:
			return b[:0]
		default:
			return make([]byte, 0, batchBytes+batchBytes/4)
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				b.out = make([]decoded, len(b.lines))
				for i, l := range b.lines {
					d := decoded{file: l.File, num: l.Num, bytes: l.Size, err: l.Err}
					if l.Err == nil {
						if len(bytes.TrimSpace(l.Data)) == 0 {
							d.blank = true
						} else {
							d.ev, d.err = auditlog.Decode(l.Data)
							if d.err == nil {
								d.ev.Loss = l.Loss // what an export lost of the event
							}
							if d.err == nil && prepare != nil {
								prepare(&d)
							}
						}
					}
					b.out[i] = d
				}
				if cap(b.buf) <= 2*batchBytes {
					select {
					case free <- b.buf:
					default:
					}
				}
				b.buf, b.lines = nil, nil
				close(b.done)
			}
		}()
	}

	readErr := make(chan error, 1)
	go func() {
		defer close(ordered)
		defer close(work)
		cur := &batch{buf: newBuf(), done: make(chan struct{})}
		flush := func() bool {
			if len(cur.lines) == 0 {
				return true
			}
			select {
			case ordered <- cur:
			case <-ctx.Done():
				return false
			}
			work <- cur
			cur = &batch{buf: newBuf(), done: make(chan struct{})}
			return true
		}
		if err := readSources(ctx, sources, maxLine, func(l auditlog.Line) bool {
			if l.Data != nil {
				start := len(cur.buf)
				cur.buf = append(cur.buf, l.Data...)
				l.Data = cur.buf[start:len(cur.buf):len(cur.buf)]
			}
			cur.lines = append(cur.lines, l)
			if len(cur.lines) >= batchLines || len(cur.buf) >= batchBytes {
				return flush()
			}
			return true
		}); err != nil {
			// Interrupted: what was read is accounted for, the batch being filled too.
			if len(cur.lines) > 0 {
				ordered <- cur
				work <- cur
			}
			readErr <- err
			return
		}
		flush()
		readErr <- ctx.Err()
	}()

	for b := range ordered {
		<-b.done
		for _, d := range b.out {
			fn(d)
		}
	}
	wg.Wait()
	return <-readErr
}

// readSources calls fn with every line of the sources, as one log in the time order of its
// events; fn returns false to stop. A log's own lines keep their order; among the next lines of
// the logs, the one of the earliest event (its stageTimestamp) goes first, and a line that is
// not an event at once. Several logs are those of several kube-apiservers of one cluster, each
// of which writes its own, whose requests interleave (replayed one log after another, a log's
// requests would meet the State as the other logs leave it at their end), or rotated logs of
// one, which follow each other. Ties go to the log given first.
func readSources(ctx context.Context, sources []Source, maxLine int, fn func(auditlog.Line) bool) error {
	type head struct {
		next  func() (auditlog.Line, bool)
		line  auditlog.Line
		at    time.Time
		timed bool
	}
	var heads []*head
	merge := len(sources) > 1 // one log's lines go as they are
	advance := func(h *head) bool {
		l, ok := h.next()
		if !ok {
			return false
		}
		h.line = l
		if merge {
			h.at, h.timed = stageTime(l)
		}
		return true
	}
	for _, src := range sources {
		next, closeSource := openSource(ctx, src, maxLine)
		defer closeSource()
		if h := (&head{next: next}); advance(h) {
			heads = append(heads, h)
		}
	}
	for len(heads) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		first := 0
		for i, h := range heads {
			if !h.timed {
				first = i
				break
			}
			if h.at.Before(heads[first].at) {
				first = i
			}
		}
		h := heads[first]
		if !fn(h.line) {
			return ctx.Err()
		}
		if !advance(h) {
			heads = append(heads[:first], heads[first+1:]...)
		}
	}
	return ctx.Err()
}

// stageTime reads the stageTimestamp of a line's event without decoding it: the last member of
// that name (the event's own follows its objects, which may have members of any name, and only
// its annotations follow it: the search from the end is short).
func stageTime(l auditlog.Line) (time.Time, bool) {
	const key = `"stageTimestamp":"`
	i := bytes.LastIndex(l.Data, []byte(key))
	if i < 0 {
		return time.Time{}, false
	}
	v := l.Data[i+len(key):]
	j := bytes.IndexByte(v, '"')
	if j < 0 {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, string(v[:j]))
	return at, err == nil
}

// openSource opens one source for reading its lines, one line per call of next, which says
// false at the end of the log. An error opening it is its one line. close closes what it
// opened.
func openSource(ctx context.Context, src Source, maxLine int) (next func() (auditlog.Line, bool), close func()) {
	failed := func(err error) (func() (auditlog.Line, bool), func()) {
		read := false
		return func() (auditlog.Line, bool) {
			if read {
				return auditlog.Line{}, false
			}
			read = true
			return auditlog.Line{File: src.Name, Err: &auditlog.ReadError{Err: err}}, true
		}, func() {}
	}
	r := src.Reader
	var f *os.File
	if r != nil {
		r = interruptible(ctx, r) // standard input may block: an interrupt must not wait for it
	} else {
		var err error
		if f, err = os.Open(src.Name); err != nil {
			return failed(fmt.Errorf("cannot open: %v", err))
		}
		r = f
	}
	closeFile := func() {
		if f != nil {
			f.Close()
		}
	}
	if src.Read != nil {
		r = countingReader{r, src.Read}
	}
	// The log backend's lines, or the events of a managed cluster's export as such lines.
	lr, err := export.NewReader(src.Name, r, export.Format(src.Format), maxLine)
	if err != nil {
		closeFile()
		return failed(err)
	}
	return lr.Next, func() {
		lr.Close()
		closeFile()
	}
}

// inTimeOrder returns the sources in the order of the time of their first event, so that
// rotated logs given newest first (audit.log audit.log.1.gz, as a shell glob sorts them) are
// replayed oldest first, as the State must see the writes; reordered says whether the order
// changed. Sources are left as given when one is a reader (stdin) or a file's first events
// carry no time.
func inTimeOrder(sources []Source, maxLine int) (ordered []Source, reordered bool) {
	type timed struct {
		src Source
		at  time.Time
	}
	var ts []timed
	for _, src := range sources {
		if src.Reader != nil {
			return sources, false
		}
		at, ok := firstEventTime(src, maxLine)
		if !ok {
			return sources, false
		}
		ts = append(ts, timed{src, at})
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].at.Before(ts[j].at) })
	for i, t := range ts {
		ordered = append(ordered, t.src)
		reordered = reordered || t.src.Name != sources[i].Name
	}
	return ordered, reordered
}

// firstEventTime reads the stage time of the first of the first lines of a log that is an
// event.
func firstEventTime(src Source, maxLine int) (time.Time, bool) {
	next, closeSource := openSource(context.Background(), src, maxLine)
	defer closeSource()
	for i := 0; i < 100; i++ {
		l, ok := next()
		if !ok {
			break
		}
		if l.Err != nil {
			continue
		}
		if ev, err := auditlog.Decode(l.Data); err == nil {
			if at, err := time.Parse(time.RFC3339Nano, ev.StageTimestamp); err == nil {
				return at, true
			}
		}
	}
	return time.Time{}, false
}
