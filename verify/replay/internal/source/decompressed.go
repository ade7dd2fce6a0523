package source

import (
	"bufio"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// A compressed export (a Firehose object, gzip twice; a gzip-compressed export of any cloud's)
// is decompressed by every pass of a replay that reads it to its end: the search of its bytes
// for the admission policies' names before the first event (searches), which reads a log that
// writes none of them to its end, then the replay of its events. A search that reads a
// compressed file to its end writes what it decompressed to a temporary file, which the
// readers after it read instead (openSource): the replay decompresses it once. Measured on the
// exports bench's Firehose object (30 MB, 231 MB decompressed, see BENCHMARKS.md).
//
// The copies of one replay take at most maxCopies bytes, and at most a quarter of the space
// free where they are written when the first is made: a file whose copy would take more is
// decompressed again by each reader, as before.
const maxCopies = 4 << 30

// decompressedCopy is the decompressed bytes of a compressed file, kept in a temporary file.
type decompressedCopy struct {
	// file is what the compressed file was when its copy was made: a file changed since is
	// read itself.
	file os.FileInfo
	path string
	size int64
}

// copies are the decompressed copies of the files of one replay's (Shared), made by its
// searches (searches.mu held by them).
type copies struct {
	of map[string]decompressedCopy
	// budget is what the copies may take still; -1 until the first is made.
	budget int64
	closed bool
}

// find is the copy of the file file is now; false when there is none or it has changed.
func (c *copies) find(file string, now os.FileInfo) (decompressedCopy, bool) {
	d, ok := c.of[file]
	if !ok || now == nil || !export.SameFile(d.file, now) {
		return decompressedCopy{}, false
	}
	return d, true
}

// copying is a copy being written by a search of a compressed file: nil when none is (the
// file is not compressed, the copies' budget is spent, the temporary file could not be made).
type copying struct {
	c    *copies
	of   string
	file os.FileInfo
	f    *os.File
	w    *bufio.Writer
	size int64
}

// start begins the copy of file, fi what it is; nil when it is not made.
func (c *copies) start(file string, fi os.FileInfo) *copying {
	if c == nil || c.closed || fi == nil {
		return nil
	}
	if c.budget < 0 {
		c.budget = maxCopies
		var st syscall.Statfs_t
		if err := syscall.Statfs(os.TempDir(), &st); err == nil {
			c.budget = min(c.budget, int64(st.Bavail)*int64(st.Bsize)/4)
		}
	}
	if c.budget <= 0 {
		return nil
	}
	f, err := os.CreateTemp("", "vapc-decompressed-*")
	if err != nil {
		return nil
	}
	return &copying{c: c, of: file, file: fi, f: f, w: bufio.NewWriterSize(f, 1<<20)}
}

// write adds p to the copy; false when the copy is given up (its budget spent, a write
// failed), which removes it.
func (w *copying) write(p []byte) bool {
	if w.size+int64(len(p)) > w.c.budget {
		w.abandon()
		return false
	}
	if _, err := w.w.Write(p); err != nil {
		w.abandon()
		return false
	}
	w.size += int64(len(p))
	return true
}

// abandon removes the copy.
func (w *copying) abandon() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// finish keeps the copy, the file read to its end: the readers after it read it.
func (w *copying) finish() {
	err := w.w.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(w.f.Name())
		return
	}
	w.c.budget -= w.size
	if old, ok := w.c.of[w.of]; ok {
		os.Remove(old.path) // of the file before it changed
	}
	w.c.of[w.of] = decompressedCopy{file: w.file, path: w.f.Name(), size: w.size}
}

// remove removes the copies; none is made after it.
func (c *copies) remove() {
	for _, d := range c.of {
		os.Remove(d.path)
	}
	c.of, c.closed = nil, true
}

// openCopy opens the decompressed copy of the source's file, when a search made one and the
// file has not changed since; nil when there is none. share counts the bytes read of it as
// the compressed file's share (Source.Read).
func (s Source) openCopy() (*os.File, *copyShare) {
	if s.shared == nil || s.part != nil {
		return nil, nil
	}
	file := s.File()
	fi, err := os.Stat(file)
	if err != nil {
		return nil, nil
	}
	sr := s.shared.searches
	sr.mu.Lock()
	d, ok := sr.copies.find(file, fi)
	sr.mu.Unlock()
	if !ok {
		return nil, nil
	}
	f, err := os.Open(d.path)
	if err != nil {
		return nil, nil
	}
	return f, &copyShare{stored: fi.Size(), size: d.size}
}

// copyShare counts the bytes read of a decompressed copy of size bytes as their share of the
// compressed file's stored bytes.
type copyShare struct {
	stored, size int64
	read, told   int64
}

// add is what n more bytes read (err the read's error) add to the compressed file's count.
func (c *copyShare) add(n int, err error) int64 {
	c.read += int64(n)
	share := c.stored
	if c.size > 0 && c.read < c.size && !errors.Is(err, io.EOF) {
		share = int64(float64(c.read) / float64(c.size) * float64(c.stored))
	}
	added := share - c.told
	c.told = share
	return added
}
