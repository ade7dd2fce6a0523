package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/source"
)

// Source is one audit log to read: a file (plain or gzip-compressed, or a managed cluster's
// export) or "-" for the reader given as Stdin (see package source).
type Source = source.Source

// decoded is one line of a log after decoding, and what the decoding workers prepared of its
// event.
type decoded struct {
	file  string
	num   int
	item  int // the event's place among those of its line (auditlog.Line.Item)
	bytes int // the line's, its end included
	ev    *Event
	blank bool
	err   error
	// skip is why an export's record that holds no event to replay was skipped (Line.Skip).
	skip string
	// written is the response object of a write, decoded by a worker (see prepareWrite).
	written *written
	// observed is what the Observer's Prepare returned for the event.
	observed any
	// sum is a hash of a final record's line, to tell an exact duplicate of it (an export
	// delivered at least once) from another event of the same audit ID.
	sum uint64
	// duplicate is an event an export's reader found handed over already (auditlog.Line).
	duplicate bool
	// salvaged is what a line that does not decode still tells (auditlog.Salvage).
	salvaged *auditlog.Salvaged
}

// lineSeed seeds the hashes of lines: they are compared within one run only.
var lineSeed = maphash.MakeSeed()

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
					b.out[i] = decodeLine(l, prepare)
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
		if err := source.Lines(ctx, sources, maxLine, func(l auditlog.Line) bool {
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

// KlogSkip says why a line of klog among a log's events is counted and skipped, not
// malformed.
const KlogSkip = "a line of kube-apiserver's own log (klog's, a trace's, the etcd client's), not an audit event: kubectl logs and the container's log file hold both where the audit log goes to standard output (--audit-log-path=-)"

// decodeLine decodes one line of a log, on a worker.
// errDecodeInternal is a line the replay's decoder failed on (a panic, recovered).
var errDecodeInternal = errors.New("vapc failed to read this line (a bug: please report it with the line)")

func decodeLine(l auditlog.Line, prepare func(*decoded)) (d decoded) {
	defer func() {
		// A panic of the decoder's (on a worker goroutine, where it would end the process)
		// makes the line malformed, named.
		if p := recover(); p != nil {
			d = decoded{file: l.File, num: l.Num, item: l.Item, bytes: l.Size, err: fmt.Errorf("%w: %v", errDecodeInternal, p)}
		}
	}()
	d = decoded{file: l.File, num: l.Num, item: l.Item, bytes: l.Size, err: l.Err, skip: l.Skip, duplicate: l.Duplicate}
	if l.Err != nil || l.Skip != "" || l.Duplicate {
		return d
	}
	if len(bytes.TrimSpace(l.Data)) == 0 {
		d.blank = true
		return d
	}
	d.ev, d.err = auditlog.Decode(l.Data)
	if d.err != nil && auditlog.OwnLogLine(l.Data) {
		d.ev, d.err, d.skip = nil, nil, KlogSkip
		return d
	}
	if d.err != nil {
		s := auditlog.Salvage(l.Data)
		d.salvaged = &s
		if l.Field != "" {
			d.err = fmt.Errorf("%s: %w", l.Field, d.err)
		}
		return d
	}
	d.ev.Loss = l.Loss // what an export lost of the event
	if d.ev.Final() {
		d.sum = maphash.Bytes(lineSeed, bytes.TrimSpace(l.Data))
	}
	if prepare != nil {
		prepare(&d)
	}
	return d
}
