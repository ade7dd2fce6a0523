package export

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
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
// memory stays bounded, the disk holds the export once more. When the array is a regular file
// read as it is (not compressed, not standard input), it reads back the file itself instead:
// once it holds a chunk of a newest-first array, the scanner only finds where each further
// entry is (entryFile), and the reverser reads those back by their offsets, last first, in
// blocks, before the chunk it holds. A reader of a replay's (Sharing) finds where every entry
// is from the array's first entries on, and keeps it for the replay's readers after it, which
// read the entries back without scanning the array (Arrays).

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
	// spillsKept says the spills are an Arrays': closed when read back, not removed.
	spillsKept bool
	// writing, while a spill is being written, gives its error once it is (waitSpill).
	writing chan error
	err     error
	// file, when set, is the file the array is read from, read again in place of spills.
	file *entryFile
	// unwrap makes the unwrapping of an entry the reverser held on disk, which where names
	// (gkeUnwrap, laUnwrap).
	unwrap func(where string) func(*record)
}

// entryFile is the file a newest-first array is read from, and where its entries are in it
// (32 bytes an entry: what the reverser holds of an export of a million events is 32 MB).
type entryFile struct {
	at    io.ReaderAt
	base  int64 // where the input began in it
	max   int   // the longest entry kept
	index []entryAt
	// kept says the index is kept for the readers after this one (Arrays).
	kept bool
}

// entryAt is where an entry of the array is in its file: from off to end, beginning on line.
type entryAt struct {
	off, end int64
	i, line  int
}

// readBlock is how many bytes of entries the reverser reads back at once.
const readBlock = 8 << 20

func newReverser(yield func(record) bool, unwrap func(where string) func(*record)) *reverser {
	return &reverser{yield: yield, unwrap: unwrap}
}

// decided says whether the reverser knows the array's order: it reads no more times.
func (v *reverser) decided() bool { return v.falling || v.rising }

// indexing says whether the reverser takes where the next entries are (index), not their
// bytes: the array is newest first, its file can be read again, and it holds a chunk of it
// already (a smaller array is held, as reading it back would cost more) or its index is kept
// for the readers after this one, which will read it back anyway.
func (v *reverser) indexing() bool {
	return v.file != nil && v.falling && (v.bytes > reverseChunk || v.file.kept)
}

// index takes where the next entry of the array is: the i-th, on line, from off to end of the
// input.
func (v *reverser) index(i, line int, off, end int64) {
	v.file.index = append(v.file.index, entryAt{off: off, end: end, i: i, line: line})
}

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
	if v.falling && v.file == nil && v.bytes > reverseChunk {
		v.spill()
	}
	return v.err == nil
}

// finish hands over what it holds, last first when the array is newest first; false when
// the reader wants no more.
func (v *reverser) finish() bool {
	defer v.cleanup()
	v.waitSpill()
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
	if v.file != nil && !v.readBack() {
		return false
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
			rec, err := readSpilled(br, v.unwrap)
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

// readBack hands over the entries indexed, last first, read back from the file in blocks of
// entries next to each other; false when the reader wants no more.
func (v *reverser) readBack() bool {
	f := v.file
	var block []byte
	for hi := len(f.index); hi > 0; {
		lo := hi - 1
		for lo > 0 && f.index[hi-1].end-f.index[lo-1].off <= readBlock {
			lo--
		}
		from, to := f.index[lo].off, f.index[hi-1].end
		block = slices.Grow(block[:0], int(to-from))[:to-from]
		if _, err := f.at.ReadAt(block, f.base+from); err != nil {
			return v.yield(record{line: f.index[hi-1].line, err: &auditlog.ReadError{Err: fmt.Errorf("reading back the entries to reverse gcloud's order (newest first): %v (did the file change?)", err)}})
		}
		for k := hi - 1; k >= lo; k-- {
			e := f.index[k]
			if !v.yield(f.entry(e, block[e.off-from:e.end-from], v.unwrap)) {
				return false
			}
		}
		hi = lo
	}
	f.index = nil
	return true
}

// entry is the record of an entry read back: its bytes without the white space outside its
// strings (gcloud's indentation, as a compact scanner drops it), to unwrap.
func (f *entryFile) entry(e entryAt, raw []byte, unwrap func(where string) func(*record)) record {
	where := fmt.Sprintf("entry %d (line %d)", e.i, e.line)
	data, whole := appendCompact(getBuf(len(raw)), raw)
	switch {
	case !whole:
		// Where skipIndented took an indentation that did not tell where the entry ends.
		putBuf(data)
		return record{line: e.line, err: recordError(where, "", errors.New("not one JSON value where the array's indentation says an entry is: read the array oldest first (gcloud logging read --order=asc), or as gcloud prints it"))}
	case len(data) > f.max:
		putBuf(data)
		return record{line: e.line, err: recordError(where, "", &errTooLong{max: f.max, size: len(data)})}
	}
	return record{data: data, line: e.line, unwrap: unwrap(where), where: where}
}

// appendCompact appends the JSON value b without the white space outside its strings to dst,
// into room made once; whole says b is one object or array, its brackets closed at its end
// and not before, its strings too.
func appendCompact(dst, b []byte) (out []byte, whole bool) {
	n := len(dst)
	dst = slices.Grow(dst, len(b))[:n+len(b)]
	o, j := dst[n:], 0
	depth, closed := 0, false
	whole = true
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case '"':
			// The string, its plain runs copied a word at a time (o is as long as b, j <= i).
			o[j] = c
			i, j = i+1, j+1
			for {
				k := auditlog.CopyPlainRun(o[j:], b[i:])
				i, j = i+k, j+k
				if i >= len(b) {
					whole = false // not closed
					break
				}
				c := b[i]
				o[j] = c
				i, j = i+1, j+1
				if c == '"' {
					break
				}
				if c == '\\' && i < len(b) {
					// The escaped byte, which the decoder checks; a control character is
					// the decoder's to report, copied.
					o[j] = b[i]
					i, j = i+1, j+1
				}
			}
			whole = whole && depth > 0
			continue
		case ' ', '\t', '\r', '\n':
			// gcloud's indentation, a line's end then spaces: the spaces skipped a word at a
			// time, up to the first byte that is not one.
			for i++; i+8 <= len(b); i += 8 {
				if x := binary.LittleEndian.Uint64(b[i:]) ^ spaces; x != 0 {
					i += bits.TrailingZeros64(x) / 8
					break
				}
			}
			continue
		case '{', '[':
			whole = whole && !closed
			depth++
			o[j] = c
			j++
		case '}', ']':
			depth--
			closed = depth == 0
			whole = whole && depth >= 0
			o[j] = c
			j++
		default:
			whole = whole && depth > 0
			o[j] = c
			j++
		}
		i++
	}
	return dst[:n+j], whole && closed
}

// spaces is eight spaces, as a little-endian word.
const spaces = 0x2020202020202020

// spill writes the records held, last first, to a temporary file, on a goroutine of its own
// while the reader reads on (a compressed array's reader decompresses and scans on one core:
// the writes took a quarter of its time); one spill is written at a time.
func (v *reverser) spill() {
	v.waitSpill()
	if v.err != nil {
		return
	}
	f, err := os.CreateTemp("", "vapc-gke-reversed-*")
	if err != nil {
		v.err = fmt.Errorf("holding entries to reverse gcloud's order (newest first): %v", err)
		return
	}
	v.spills = append(v.spills, f)
	held := v.held
	v.held, v.bytes = nil, 0
	written := make(chan error, 1)
	v.writing = written
	go func() {
		w := bufio.NewWriterSize(f, spillBuffer)
		for _, rec := range slices.Backward(held) {
			writeSpilled(w, rec)
		}
		written <- w.Flush()
	}()
}

// waitSpill waits for the spill being written, if one is, and takes its error.
func (v *reverser) waitSpill() {
	if v.writing == nil {
		return
	}
	if err := <-v.writing; err != nil && v.err == nil {
		v.err = fmt.Errorf("holding entries to reverse gcloud's order (newest first): %v", err)
	}
	v.writing = nil
}

func (v *reverser) cleanup() {
	v.waitSpill()
	for _, f := range v.spills {
		f.Close()
		if !v.spillsKept {
			os.Remove(f.Name())
		}
	}
	v.spills = nil
}

// spillAll writes what the reverser holds to a temporary file too, so that every record of a
// newest-first array is in its spills, which an Arrays keeps; false when it could not.
func (v *reverser) spillAll() bool {
	if len(v.held) > 0 {
		v.spill()
	}
	v.waitSpill()
	return v.err == nil
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
	put(spilledLoss(rec.loss))
	putBytes([]byte(rec.loss.Export))
	msg := ""
	if rec.err != nil {
		msg = rec.err.Error()
	}
	putBytes([]byte(msg))
	putBytes(rec.data)
	putBytes([]byte(rec.where)) // an entry to unwrap: its record holds the entry
}

// The flags of a record's loss, spilled with its lost parts (auditlog.Lost, 16 bits).
const (
	spilledDryRunLabelled = 1 << (16 + iota)
	spilledStructs
)

// spilledLoss is a record's loss as writeSpilled writes it: the lost parts and the flags.
func spilledLoss(l auditlog.Loss) int64 {
	x := int64(l.Lost)
	if l.DryRunLabelled {
		x |= spilledDryRunLabelled
	}
	if l.Structs {
		x |= spilledStructs
	}
	return x
}

func readSpilled(r *bufio.Reader, unwrap func(where string) func(*record)) (record, error) {
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
	rec.loss = auditlog.Loss{Export: string(export), Lost: auditlog.Lost(lost & 0xffff), DryRunLabelled: lost&spilledDryRunLabelled != 0, Structs: lost&spilledStructs != 0}
	if len(msg) > 0 {
		rec.err = errors.New(string(msg))
	} else {
		rec.data = data
	}
	if len(where) > 0 {
		rec.where = string(where)
		rec.unwrap = unwrap(rec.where)
	}
	return rec, nil
}
