package auditlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// ReadError is why a log could not be read to its end: it cannot be opened, its gzip stream is
// truncated or corrupt, or a read failed. The Reader reports it as the last line of the log;
// a replay counts it as malformed and lists it as unreadable, which fails the replay whatever
// it tolerates of malformed lines.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// ConvertError is a log in a form a replay does not read (UTF-16 text, gcloud's YAML): the file
// is whole, and converted it reads.
type ConvertError struct{ Err error }

func (e *ConvertError) Error() string { return e.Err.Error() }
func (e *ConvertError) Unwrap() error { return e.Err }

// DefaultMaxLineBytes is the longest log line a replay reads; longer lines are reported as
// malformed and skipped, and the rest of the file is replayed.
const DefaultMaxLineBytes = 16 << 20

// Line is one line of a log, or why it could not be read.
type Line struct {
	// File and Num say where the line is: the log's name and the line's number from 1 (for
	// an event read from an export, the line where the record that holds it begins).
	File string
	Num  int
	// Item is the event's place among the events its line holds, from 1, where an export
	// packs several in one line (a webhook batch, Firehose's records, which no newline
	// separates); 0 for a log backend's line.
	Item int
	// Data is the line, its end included; nil when Err is set.
	Data []byte
	// Size is the bytes the line had, read or not.
	Size int
	// Err is a line too long, or a *ReadError after which the log ends.
	Err error
	// Loss is what the export the line was read from lost of its event (the zero Loss for
	// a log backend's line): Decode's caller sets it on the Event.
	Loss Loss
	// Skip, when set, says the export's record holds no audit event of the cluster's
	// servers, or one read already, and why ("another service's entry"): it is counted, not
	// replayed, and Data is nil.
	Skip string
	// Duplicate says the line is an event the export handed over already, delivered again
	// later than its reader puts events back in order (Data is nil): the replay counts it
	// as a duplicate and does not replay it.
	Duplicate bool
	// Field is where the export's record holds the event ("properties.log",
	// "events[3].message"), for what is said of an event that does not decode; "" for a
	// log backend's line.
	Field string
}

// Reader reads the lines of one log with a bounded buffer, transparently decompressing gzip.
type Reader struct {
	file string
	br   *bufio.Reader
	max  int
	num  int
	done bool
	buf  []byte
}

// NewReader returns a Reader of the log named file that r reads, with lines of at most max
// bytes, and the gzip stream to close, if the log is compressed.
func NewReader(file string, r io.Reader, max int) (*Reader, io.Closer, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var closer io.Closer
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		closer = zr
		br = bufio.NewReaderSize(zr, 256<<10)
	}
	return &Reader{file: file, br: br, max: max}, closer, nil
}

// Next returns the next line; ok is false at the end of the log. The data of a line is valid
// until the next call.
func (r *Reader) Next() (l Line, ok bool) {
	if r.done {
		return Line{}, false
	}
	r.buf = r.buf[:0]
	tooLong := 0
	for {
		frag, err := r.br.ReadSlice('\n')
		switch {
		case tooLong > 0:
			tooLong += len(frag)
		case len(r.buf)+len(frag) > r.max:
			tooLong = len(r.buf) + len(frag)
			r.buf = r.buf[:0]
		default:
			r.buf = append(r.buf, frag...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		r.num++
		l = Line{File: r.file, Num: r.num, Size: len(r.buf)}
		if tooLong > 0 {
			l.Size = tooLong
			l.Err = fmt.Errorf("line longer than %d bytes (at least %d): skipped", r.max, tooLong)
		} else {
			l.Data = r.buf
		}
		if err != nil {
			r.done = true
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return Line{}, false // interrupted: the log ends where the reading stopped
			}
			if !errors.Is(err, io.EOF) {
				rerr := fmt.Errorf("reading stopped: %v", err)
				if errors.Is(err, io.ErrUnexpectedEOF) {
					rerr = fmt.Errorf("compressed stream truncated: reading stopped")
				}
				if len(bytes.TrimSpace(l.Data)) == 0 && l.Err == nil {
					l.Data, l.Err = nil, &ReadError{rerr}
				} else if l.Err == nil {
					l.Err = &ReadError{fmt.Errorf("%v (last line of %d bytes incomplete)", rerr, len(l.Data))}
					l.Data = nil
				} else {
					l.Err = &ReadError{fmt.Errorf("%v; then %v", l.Err, rerr)}
				}
			}
			if l.Err == nil && len(bytes.TrimSpace(l.Data)) == 0 {
				return Line{}, false
			}
		}
		return l, true
	}
}
