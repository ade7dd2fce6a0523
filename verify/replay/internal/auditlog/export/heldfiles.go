package export

import (
	"fmt"
	"math"
	"os"
	"sync"
	"syscall"
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
	// budget is the share of the disk the files of every reorder may take (heldBudget):
	// these take what they hold, written and gathered (taken).
	budget *diskBudget
	files  [2]*os.File
	// size is the bytes written to each file, buffered is what is to be written after them
	// to the current one (cur), and held how many events in each are not read back yet.
	size     [2]int64
	held     [2]int
	cur      int
	buffered []byte
	// err is the first error of making or writing a file: nothing is kept in files after it.
	err error
}

// heldBudget is the share of the temporary folder's disk the held files of a process may
// take: a fourth of its free space when the first is written (as the decompressed copies of
// compressed logs take a fourth, verify/replay/internal/source), so that another reader's
// temporary files (gcloud's reversed arrays) still find room. An event that does not fit is
// held in memory.
var heldBudget diskBudget

// diskBudget is what temporary files may take of a disk.
type diskBudget struct {
	mu       sync.Mutex
	measured bool
	left     int64
}

// take takes n bytes of the budget of dir's disk (os.TempDir() when empty); false when they
// are not left.
func (b *diskBudget) take(dir string, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.measured {
		b.measured = true
		if dir == "" {
			dir = os.TempDir()
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err == nil {
			b.left = int64(st.Bavail) * int64(st.Bsize) / 4
		}
	}
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

// give gives n bytes back.
func (b *diskBudget) give(n int64) {
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
}

// heldRef is where heldFiles keeps one event's bytes.
type heldRef struct {
	file int8
	kept bool
	n    int32
	off  int64
}

// keep writes data to the current file and says where; not kept when it could not, or when
// the files' share of the disk (budget) is spent.
func (h *heldFiles) keep(data []byte) heldRef {
	n := int64(len(data))
	if h.err != nil || n > math.MaxInt32 || !h.budget.take(h.dir, n) {
		return heldRef{}
	}
	if h.files[h.cur] == nil {
		f, err := os.CreateTemp(h.dir, "vapc-held-*")
		if err != nil {
			h.err = err
			h.budget.give(n)
			return heldRef{}
		}
		os.Remove(f.Name()) // readable while open; gone however the process ends
		h.files[h.cur] = f
	}
	ref := heldRef{file: int8(h.cur), kept: true, n: int32(n), off: h.size[h.cur] + int64(len(h.buffered))}
	if len(data) >= h.writeBuffer {
		// A large event is written as it is, after what was gathered before it.
		if !h.flush() || !h.write(data) {
			h.budget.give(n)
			return heldRef{}
		}
	} else {
		h.buffered = append(h.buffered, data...)
		if len(h.buffered) >= h.writeBuffer && !h.flush() {
			h.buffered = h.buffered[:len(h.buffered)-len(data)]
			h.budget.give(n)
			return heldRef{}
		}
	}
	h.held[h.cur]++
	if other := 1 - h.cur; h.size[h.cur] >= h.fileBytes && h.held[other] == 0 && h.flush() {
		// The other file's events are all read back (and it emptied): written from its start.
		h.release(other)
		h.cur = other
	}
	return ref
}

// release empties file i, whose events are all read back (those gathered for it too), and
// gives its share of the disk back.
func (h *heldFiles) release(i int) {
	n := h.size[i]
	if i == h.cur {
		n += int64(len(h.buffered))
		h.buffered = h.buffered[:0]
	}
	h.budget.give(n)
	if h.size[i] > 0 {
		h.size[i] = 0
		if err := h.files[i].Truncate(0); err != nil && h.err == nil {
			h.err = err
		}
	}
}

// flush writes the bytes gathered to the current file; false when it could not: they stay
// gathered, where readBack finds the events kept before.
func (h *heldFiles) flush() bool {
	if len(h.buffered) == 0 || h.err != nil {
		return h.err == nil
	}
	if !h.write(h.buffered) {
		return false
	}
	h.buffered = h.buffered[:0]
	return true
}

// write writes p after what the current file holds; where it fails, the file is cut back to
// what it held (a write cut short by a full disk leaves nothing the budget does not count).
func (h *heldFiles) write(p []byte) bool {
	if _, err := h.files[h.cur].WriteAt(p, h.size[h.cur]); err != nil {
		h.err = err
		h.files[h.cur].Truncate(h.size[h.cur])
		return false
	}
	h.size[h.cur] += int64(len(p))
	return true
}

// readBack returns the bytes of the event at ref, in a pooled buffer. A file whose events are
// all read back is emptied.
func (h *heldFiles) readBack(ref heldRef) ([]byte, error) {
	i := int(ref.file)
	h.held[i]--
	data := getBuf(int(ref.n))[:ref.n]
	var err error
	if i == h.cur && ref.off >= h.size[i] {
		// Not written yet.
		start := ref.off - h.size[i]
		copy(data, h.buffered[start:start+int64(ref.n)])
	} else {
		_, err = h.files[i].ReadAt(data, ref.off)
	}
	if h.held[i] == 0 {
		h.release(i)
	}
	if err != nil {
		putBuf(data)
		return nil, fmt.Errorf("the event, held in a temporary file to put the export's events back in order, could not be read back: %v", err)
	}
	return data, nil
}

// taken is what the files take of the budget: the bytes written to them and gathered.
func (h *heldFiles) taken() int64 { return h.size[0] + h.size[1] + int64(len(h.buffered)) }

// Close closes the files (removed as they were made) and gives their share of the disk back;
// nothing is kept after.
func (h *heldFiles) Close() error {
	h.budget.give(h.taken())
	h.size, h.held, h.buffered, h.err = [2]int64{}, [2]int{}, nil, os.ErrClosed
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
