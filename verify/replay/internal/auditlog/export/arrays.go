package export

import (
	"io"
	"os"
	"sync"
)

// Arrays keeps, for the readers of one replay (Sharing), where the entries of each
// newest-first array read whole from a regular file are (entryFile's index, 32 bytes an
// entry). A replay reads its logs several times: each pass before its first event reads the
// log's first events, which a newest-first array holds last, and a reader of it scans the
// whole array to find them (a 348 MB array: 0.2 s a pass). A reader after the first reads the
// entries back by where the first found them, last first, without scanning the array. A
// file whose size or modification time has changed since is scanned again.
type Arrays struct {
	mu    sync.Mutex
	known []knownArray
}

// knownArray is where the entries of an array are in a file read from base, read with
// records of at most max bytes.
type knownArray struct {
	file  os.FileInfo
	base  int64
	max   int
	index []entryAt
}

// NewArrays returns an empty Arrays, for the readers of one replay.
func NewArrays() *Arrays { return &Arrays{} }

// statter is a file, or what reads one (such as a reader counting its bytes), that says what
// it is.
type statter interface {
	Stat() (os.FileInfo, error)
}

// find is where the entries of the array in at, read from base, are, as a reader before
// found them; nil when none did or the file has changed since. The index is shared: the
// caller reads it, never writes it.
func (a *Arrays) find(at io.ReaderAt, base int64, max int) []entryAt {
	fi := fileInfo(at)
	if a == nil || fi == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range a.known {
		if k.base == base && k.max == max && sameFile(k.file, fi) {
			return k.index
		}
	}
	return nil
}

// keeps says whether the array in at would be kept (keep): a file that says what it is.
func (a *Arrays) keeps(at io.ReaderAt) bool { return a != nil && fileInfo(at) != nil }

// keep takes where the entries of the array in at, read from base, are, for the readers after
// this one.
func (a *Arrays) keep(at io.ReaderAt, base int64, max int, index []entryAt) {
	fi := fileInfo(at)
	if a == nil || fi == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range a.known {
		if k.base == base && k.max == max && sameFile(k.file, fi) {
			return
		}
	}
	a.known = append(a.known, knownArray{file: fi, base: base, max: max, index: index})
}

// fileInfo is what the file at reads says of itself; nil when it is not a file that says so.
func fileInfo(at io.ReaderAt) os.FileInfo {
	st, ok := at.(statter)
	if !ok {
		return nil
	}
	fi, err := st.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	return fi
}

// sameFile says whether a and b are the same file, unchanged: its size and modification time
// the same.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
