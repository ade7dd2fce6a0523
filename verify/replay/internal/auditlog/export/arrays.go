package export

import (
	"os"
	"sync"
)

// Arrays keeps, for the readers of one replay (Sharing), what the first reader of each
// newest-first array found of it: where its entries are in its file (entryFile's index, 32
// bytes an entry), or, for an array read as a stream (compressed), the temporary files it
// wrote its entries to, reversed (see reverser). A replay reads its logs several times: each
// pass before its first event reads the log's first events, which a newest-first array holds
// last, and a reader of it scans the whole array to find them (a 348 MB array: 0.2 s a pass;
// compressed, its decompression too). A reader after the first reads the entries back,
// last first, without scanning the array. A file whose size or modification time has changed
// since is scanned again. Close removes the temporary files kept.
type Arrays struct {
	mu     sync.Mutex
	known  []*knownArray
	closed bool
}

// knownArray is what a reader found of the array of a file read from base, with records of at
// most max bytes: index, or spills.
type knownArray struct {
	file os.FileInfo
	base int64
	max  int
	// index is where the entries are in the file, read back by their offsets.
	index []entryAt
	// spills are the temporary files holding the entries (compacted), each file's last
	// first, the files in the array's order: read back last file first (reverser.finish).
	spills []string
}

// NewArrays returns an empty Arrays, for the readers of one replay.
func NewArrays() *Arrays { return &Arrays{} }

// statter is a file, or what reads one (such as a reader counting its bytes), that says what
// it is.
type statter interface {
	Stat() (os.FileInfo, error)
}

// find is what a reader before found of the array of the file fi, read from base with records
// of at most max bytes; nil when none did, or the file has changed since. What it holds is
// shared: the caller reads it, never writes it.
func (a *Arrays) find(fi os.FileInfo, base int64, max int) *knownArray {
	if a == nil || fi == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lookup(fi, base, max)
}

// lookup is find, a.mu held.
func (a *Arrays) lookup(fi os.FileInfo, base int64, max int) *knownArray {
	for _, k := range a.known {
		if k.base == base && k.max == max && SameFile(k.file, fi) {
			return k
		}
	}
	return nil
}

// keep takes what a reader found of an array, for the readers after it; false when it keeps
// one of the file already, the Arrays is closed, or k holds no entry: the caller keeps its
// spills, and removes them.
func (a *Arrays) keep(k *knownArray) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || len(k.index) == 0 && len(k.spills) == 0 || a.lookup(k.file, k.base, k.max) != nil {
		return false
	}
	a.known = append(a.known, k)
	return true
}

// Close removes the temporary files kept; the Arrays keeps nothing after it.
func (a *Arrays) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range a.known {
		for _, name := range k.spills {
			os.Remove(name)
		}
	}
	a.known, a.closed = nil, true
}

// fileInfo is what r, a file or what reads one, says of the file; nil when it is not a
// regular file that says so.
func fileInfo(r any) os.FileInfo {
	st, ok := r.(statter)
	if !ok {
		return nil
	}
	fi, err := st.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	return fi
}

// SameFile says whether a and b are the same file, unchanged: its size and modification time
// the same (what a replay's readers found of a file holds for it: Arrays, and the searches
// of package source).
func SameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
