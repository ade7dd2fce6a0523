package export

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// record is one audit event an envelope holds, or why a record of it holds none.
type record struct {
	// data is the audit.k8s.io/v1 Event, JSON, owned by the record.
	data []byte
	// line is where the record begins in the file.
	line int
	// err says where in the record and in which field it is wrong; a *auditlog.ReadError
	// when the file stops being readable.
	err error
	// loss is what the envelope does not carry of the event.
	loss auditlog.Loss
	// at is the event's stageTimestamp, the zero time when it has none.
	at time.Time
	// dry is what tells whether a GKE entry's request was a dry run, in the server's order
	// (see dryRuns).
	dry *dryCheck
}

// input is what a format reads: the decompressed file, with its name and the longest record
// a replay reads.
type input struct {
	file    string
	r       *bufio.Reader
	maxLine int
}

// A format's reader yields the records of a file in the file's order.
type formatReader func(in input, yield func(record) bool)

var readers = map[Format]formatReader{
	Webhook:       readWebhook,
	CloudWatch:    readCloudWatch,
	CloudWatchS3:  readCloudWatchS3,
	Firehose:      readFirehose,
	AzureBlob:     readAzureBlob,
	AzureEventHub: readAzureEventHub,
	GKE:           readGKE,
}

// Reader reads the audit events of one file in any format as the lines of a log backend's
// file: each line one audit.k8s.io/v1 Event, in the order the server completed them (an
// envelope's records are put back in that order within a bounded window: see reorder), with
// the line of the record it was read from and what the envelope lost of it.
type Reader struct {
	format Format
	plain  *auditlog.Reader
	next   func() (record, bool)
	stop   func()
	order  *reorder
	file   string
	closer []io.Closer
	line   []byte
	dry    *dryRuns
}

// NewReader returns a Reader of the file named file that r reads, plain or gzip-compressed
// (twice, as Firehose writes a subscription's gzip records into a gzip object), in the given
// format (Auto detects it from the file's first bytes), with records of at most maxLine
// bytes.
func NewReader(file string, r io.Reader, format Format, maxLine int) (*Reader, error) {
	rd := &Reader{file: file}
	br := bufio.NewReaderSize(r, 256<<10)
	for range 2 {
		magic, err := br.Peek(2)
		if err != nil || magic[0] != 0x1f || magic[1] != 0x8b {
			break
		}
		zr, err := gzip.NewReader(br)
		if err != nil {
			rd.Close()
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		rd.closer = append(rd.closer, zr)
		br = bufio.NewReaderSize(zr, 256<<10)
	}
	if format == Auto || format == "" {
		head, _ := br.Peek(detectBytes)
		format = detect(head)
	}
	rd.format = format
	if format == Plain {
		lr, c, err := auditlog.NewReader(file, br, maxLine)
		if err != nil {
			rd.Close()
			return nil, err
		}
		if c != nil {
			rd.closer = append(rd.closer, c)
		}
		rd.plain = lr
		return rd, nil
	}
	read, ok := readers[format]
	if !ok {
		rd.Close()
		return nil, fmt.Errorf("%s: unknown input format %q", file, format)
	}
	in := input{file: file, r: br, maxLine: maxLine}
	rd.next, rd.stop = iter.Pull(iter.Seq[record](func(yield func(record) bool) { read(in, yield) }))
	rd.order = newReorder(file, defaultWindow, maxLine)
	rd.dry = newDryRuns()
	return rd, nil
}

// Format is the format the Reader reads: the one given, or the one detected.
func (r *Reader) Format() Format { return r.format }

// Next returns the next line; ok is false at the end. A line's data is valid until the next
// call.
func (r *Reader) Next() (l auditlog.Line, ok bool) {
	if r.plain != nil {
		return r.plain.Next()
	}
	for {
		if rec, ok := r.order.pop(); ok {
			return r.toLine(rec), true
		}
		if r.next == nil {
			return auditlog.Line{}, false
		}
		rec, ok := r.next()
		if !ok {
			r.stop()
			r.next = nil
			r.order.drain()
			continue
		}
		r.order.push(rec)
	}
}

func (r *Reader) toLine(rec record) auditlog.Line {
	if rec.dry != nil && rec.err == nil {
		r.dry.settle(&rec)
	}
	l := auditlog.Line{File: r.file, Num: rec.line, Err: rec.err, Loss: rec.loss}
	if rec.err == nil {
		// The log backend's lines end with a newline: so do these (the size a summary counts).
		r.line = append(append(r.line[:0], rec.data...), '\n')
		l.Data, l.Size = r.line, len(r.line)
	}
	return l
}

// Close releases what the Reader opened (not the reader it was given).
func (r *Reader) Close() error {
	if r.stop != nil {
		r.stop()
	}
	var errs []error
	for i := len(r.closer) - 1; i >= 0; i-- {
		errs = append(errs, r.closer[i].Close())
	}
	return errors.Join(errs...)
}

// recordError is a record of an envelope that holds no audit event: where (the record, the
// field) and why.
func recordError(where, field string, err error) error {
	if field == "" {
		return fmt.Errorf("%s: %v", where, err)
	}
	return fmt.Errorf("%s: %s: %v", where, field, err)
}

// streamStopped turns the scanner's error into the record that ends the file: a read error
// (the file stops being readable) or the envelope's syntax error, which ends it too (the
// records after it cannot be found).
func streamStopped(err error, line int) record {
	var se *streamError
	if errors.As(err, &se) {
		return record{line: line, err: &auditlog.ReadError{Err: se}}
	}
	var syn *syntaxError
	if errors.As(err, &syn) {
		line = syn.line
	}
	return record{line: line, err: &auditlog.ReadError{Err: fmt.Errorf("the envelope is not JSON, reading stopped: %v", err)}}
}
