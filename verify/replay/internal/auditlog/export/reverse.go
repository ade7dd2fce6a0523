package export

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// gcloud prints entries newest first by default: no window puts a day of them back in order.
// A reverser watches the order of an array's records: as long as their times do not fall, it
// hands them over as they come; once they fall (the array is newest first), it holds them
// and hands them over last first when the array ends. It holds a chunk of them in memory and
// writes each full chunk, reversed, to a temporary file, which it reads back last chunk first:
// memory stays bounded, the disk holds the export once more.

// reverseChunk is the bytes of records a reverser holds in memory (a variable for its test).
var reverseChunk = 32 << 20

// spillBuffer is the buffer of a spill's writes and reads: records are a few KiB, each
// system call should move many.
const spillBuffer = 1 << 20

type reverser struct {
	yield   func(record) bool
	first   time.Time // the first record's time
	falling bool      // the records' times fall: the array is newest first
	rising  bool      // they rose: it is oldest first
	held    []record
	bytes   int
	spills  []*os.File
	err     error
}

func newReverser(yield func(record) bool) *reverser { return &reverser{yield: yield} }

// decided says whether the reverser knows the array's order: it reads no more times.
func (v *reverser) decided() bool { return v.falling || v.rising }

// add takes the next record of the array; false when the reader wants no more.
func (v *reverser) add(rec record) bool {
	if v.rising {
		return v.yield(rec)
	}
	if !rec.at.IsZero() && !v.falling {
		switch {
		case v.first.IsZero():
			v.first = rec.at
		case rec.at.After(v.first):
			v.rising = true
			for _, h := range v.held {
				if !v.yield(h) {
					return false
				}
			}
			v.held = nil
			return v.yield(rec)
		case rec.at.Before(v.first):
			v.falling = true
		}
	}
	v.held = append(v.held, rec)
	v.bytes += len(rec.data) + 64
	if v.falling && v.bytes > reverseChunk {
		v.spill()
	}
	return v.err == nil
}

// finish hands over what it holds, last first when the array is newest first; false when
// the reader wants no more.
func (v *reverser) finish() bool {
	defer v.cleanup()
	if v.err != nil {
		return v.yield(record{err: &auditlog.ReadError{Err: v.err}})
	}
	if !v.falling {
		for _, h := range v.held {
			if !v.yield(h) {
				return false
			}
		}
		return true
	}
	for i := len(v.held) - 1; i >= 0; i-- {
		if !v.yield(v.held[i]) {
			return false
		}
	}
	for i := len(v.spills) - 1; i >= 0; i-- {
		f := v.spills[i]
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return v.yield(record{err: &auditlog.ReadError{Err: fmt.Errorf("reading back the entries held to reverse gcloud's order: %v", err)}})
		}
		br := bufio.NewReaderSize(f, spillBuffer)
		for {
			rec, err := readSpilled(br)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return v.yield(record{err: &auditlog.ReadError{Err: fmt.Errorf("reading back the entries held to reverse gcloud's order: %v", err)}})
			}
			if !v.yield(rec) {
				return false
			}
		}
	}
	return true
}

// spill writes the records held, last first, to a temporary file.
func (v *reverser) spill() {
	f, err := os.CreateTemp("", "vapc-gke-reversed-*")
	if err != nil {
		v.err = fmt.Errorf("holding entries to reverse gcloud's order (newest first): %v", err)
		return
	}
	v.spills = append(v.spills, f)
	w := bufio.NewWriterSize(f, spillBuffer)
	for _, rec := range slices.Backward(v.held) {
		writeSpilled(w, rec)
	}
	if err := w.Flush(); err != nil {
		v.err = fmt.Errorf("holding entries to reverse gcloud's order (newest first): %v", err)
	}
	v.held, v.bytes = nil, 0
}

func (v *reverser) cleanup() {
	for _, f := range v.spills {
		f.Close()
		os.Remove(f.Name())
	}
	v.spills = nil
}

// writeSpilled writes a record: its line, time, loss, error message, data and, for an entry
// still to unwrap, where it is.
func writeSpilled(w *bufio.Writer, rec record) {
	var n [binary.MaxVarintLen64]byte
	put := func(x int64) { w.Write(n[:binary.PutVarint(n[:], x)]) }
	putBytes := func(b []byte) { put(int64(len(b))); w.Write(b) }
	put(int64(rec.line))
	at := int64(0)
	if !rec.at.IsZero() {
		at = rec.at.UnixNano()
	}
	put(at)
	put(int64(rec.loss.Lost))
	putBytes([]byte(rec.loss.Export))
	msg := ""
	if rec.err != nil {
		msg = rec.err.Error()
	}
	putBytes([]byte(msg))
	putBytes(rec.data)
	putBytes([]byte(rec.where)) // an entry to unwrap: its record holds the entry
}

func readSpilled(r *bufio.Reader) (record, error) {
	get := func() (int64, error) { return binary.ReadVarint(r) }
	getBytes := func() ([]byte, error) {
		n, err := get()
		if err != nil {
			return nil, err
		}
		if n < 0 || n > 1<<31 {
			return nil, errors.New("corrupt")
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return b, err
	}
	var rec record
	line, err := get()
	if err != nil {
		return rec, err // io.EOF at a record's start: the file's end
	}
	at, err1 := get()
	lost, err2 := get()
	export, err3 := getBytes()
	msg, err4 := getBytes()
	data, err5 := getBytes()
	where, err6 := getBytes()
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return rec, fmt.Errorf("corrupt: %v", err)
	}
	rec.line = int(line)
	if at != 0 {
		rec.at = time.Unix(0, at).UTC()
	}
	rec.loss = auditlog.Loss{Export: string(export), Lost: auditlog.Lost(lost)}
	if len(msg) > 0 {
		rec.err = errors.New(string(msg))
	} else {
		rec.data = data
	}
	if len(where) > 0 {
		rec.where = string(where)
		rec.unwrap = gkeUnwrap(rec.where)
	}
	return rec, nil
}
