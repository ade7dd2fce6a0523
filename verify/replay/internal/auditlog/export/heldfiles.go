package export

import (
	"fmt"
	"os"
)

// A reorder holds minutes of events (defaultWindow, up to windowBytes): on a large cluster's
// export, hundreds of MiB, which the garbage collector's pacing doubles in the process's
// memory. Beyond heldInMemory bytes, the events it holds are kept in temporary files instead
// (heldFiles) and read back as they are handed over, each event's bytes as they were: the
// window, and so what the replay is handed, is the same. The files are removed as they are
// created (the open file stays readable), so that nothing is left behind however the
// process ends; the first one that cannot be made or written keeps the rest of the events
// in memory, as before.

// heldInMemory is how many bytes of events a reorder holds in memory before it holds them in
// files (a variable: the package's tests lower it, so that every test's reorder holds events
// in files).
var heldInMemory = 32 << 20

// heldFileBytes is the size past which heldFiles writes to its other file, once none of that
// one's events is still held: the files' size stays about the window's.
var heldFileBytes int64 = 64 << 20

// heldWriteBuffer is how many bytes heldFiles gathers before it writes them.
var heldWriteBuffer = 1 << 20

// heldFiles keeps the bytes of held events in two temporary files, written one after the other.
type heldFiles struct {
	// fileBytes and writeBuffer are heldFileBytes and heldWriteBuffer when the reorder was
	// made; dir the folder of the files, os.TempDir() when empty.
	fileBytes   int64
	writeBuffer int
	dir         string
	files       [2]*os.File
	// size is the bytes written to each file, buffered is what is to be written after them
	// to the current one (cur), and held how many events in each are not read back yet.
	size     [2]int64
	held     [2]int
	cur      int
	buffered []byte
	// err is the first error of making or writing a file: nothing is kept in files after it.
	err error
}

// heldRef is where heldFiles keeps one event's bytes.
type heldRef struct {
	file int8
	kept bool
	n    int32
	off  int64
}

// keep writes data to the current file and says where; not kept when it could not.
func (h *heldFiles) keep(data []byte) heldRef {
	if h.err != nil {
		return heldRef{}
	}
	if h.files[h.cur] == nil {
		f, err := os.CreateTemp(h.dir, "vapc-held-*")
		if err != nil {
			h.err = err
			return heldRef{}
		}
		os.Remove(f.Name()) // readable while open; gone however the process ends
		h.files[h.cur] = f
	}
	ref := heldRef{file: int8(h.cur), kept: true, n: int32(len(data)), off: h.size[h.cur] + int64(len(h.buffered))}
	h.buffered = append(h.buffered, data...)
	h.held[h.cur]++
	if len(h.buffered) >= h.writeBuffer && !h.flush() {
		h.held[h.cur]--
		return heldRef{}
	}
	if other := 1 - h.cur; h.size[h.cur] >= h.fileBytes && h.held[other] == 0 {
		// The other file's events are all read back: written over from its start.
		if h.flush() {
			h.cur = other
			h.size[other] = 0
			if f := h.files[other]; f != nil {
				if err := f.Truncate(0); err != nil {
					h.err = err
				}
			}
		}
	}
	return ref
}

// flush writes the bytes gathered to the current file; false when it could not: they stay
// gathered, where readBack finds the events kept before, and the last is not kept.
func (h *heldFiles) flush() bool {
	if len(h.buffered) == 0 || h.err != nil {
		return h.err == nil
	}
	if _, err := h.files[h.cur].WriteAt(h.buffered, h.size[h.cur]); err != nil {
		h.err = err
		return false
	}
	h.size[h.cur] += int64(len(h.buffered))
	h.buffered = h.buffered[:0]
	return true
}

// readBack returns the bytes of the event at ref, in a pooled buffer.
func (h *heldFiles) readBack(ref heldRef) ([]byte, error) {
	h.held[ref.file]--
	data := getBuf(int(ref.n))[:ref.n]
	if int(ref.file) == h.cur && ref.off >= h.size[h.cur] {
		// Not written yet.
		start := ref.off - h.size[h.cur]
		copy(data, h.buffered[start:start+int64(ref.n)])
		return data, nil
	}
	if _, err := h.files[ref.file].ReadAt(data, ref.off); err != nil {
		putBuf(data)
		return nil, fmt.Errorf("the event, held in a temporary file to put the export's events back in order, could not be read back: %v", err)
	}
	return data, nil
}

// Close closes the files (removed as they were made).
func (h *heldFiles) Close() error {
	var first error
	for i, f := range h.files {
		if f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
			h.files[i] = nil
		}
	}
	return first
}
