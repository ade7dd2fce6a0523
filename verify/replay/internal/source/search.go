package source

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// searches are the byte searches of the files of one replay (Shared): a file's bytes are read
// once for every needle of the replay's, the results kept by file.
type searches struct {
	needles [][]byte
	mu      sync.Mutex
	done    map[string]searched
}

// searched is what a search of a file found: which of the needles it holds, and the error
// that stopped the reading of it before it found them all.
type searched struct {
	file  os.FileInfo
	found []bool
	err   error
}

func newSearches(needles [][]byte) *searches {
	return &searches{needles: needles, done: map[string]searched{}}
}

// holds says whether the source's file's bytes, decompressed as package export reads them,
// hold needle; an error when they could not be read to the end without finding it. A source
// of a replay's (Shared) searches its file for every needle of the replay's at once, the
// first time it is searched for one of them.
func (s Source) holds(ctx context.Context, needle []byte) (bool, error) {
	file := s.File()
	var sr *searches
	if s.shared != nil {
		sr = s.shared.searches
	}
	k := -1
	if sr != nil {
		k = slices.IndexFunc(sr.needles, func(n []byte) bool { return bytes.Equal(n, needle) })
	}
	if k < 0 {
		found, err := holdsAny(ctx, file, [][]byte{needle})
		return result(found, 0, err)
	}
	fi, statErr := os.Stat(file)
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if d, ok := sr.done[file]; ok && statErr == nil && sameFile(d.file, fi) {
		return result(d.found, k, d.err)
	}
	found, err := holdsAny(ctx, file, sr.needles)
	if statErr == nil && ctx.Err() == nil {
		sr.done[file] = searched{file: fi, found: found, err: err}
	}
	return result(found, k, err)
}

// result is what a search says of its k-th needle: found, or the error that stopped it
// before it found it.
func result(found []bool, k int, err error) (bool, error) {
	if found[k] {
		return true, nil
	}
	return false, err
}

// sameFile says whether a and b are the same file, unchanged: its size and modification time
// the same.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// holdsAny says which of the needles the file's bytes, decompressed as package export reads
// them, hold; an error when they could not be read to the end without finding them all.
func holdsAny(ctx context.Context, file string, needles [][]byte) (found []bool, err error) {
	found = make([]bool, len(needles))
	f, err := os.Open(file)
	if err != nil {
		return found, err
	}
	defer f.Close()
	r, closers, err := export.Decompressed(f)
	for _, c := range closers {
		defer c.Close()
	}
	if err != nil {
		return found, err
	}
	longest, rare := 0, make([]int, len(needles))
	for i, n := range needles {
		longest = max(longest, len(n))
		rare[i] = rarest(n)
	}
	left := len(needles)
	buf := make([]byte, 1<<20)
	keep := 0 // the bytes of the last read kept, which a needle may begin in
	for {
		if err := ctx.Err(); err != nil {
			return found, err
		}
		n, err := r.Read(buf[keep:])
		for i, needle := range needles {
			if !found[i] && containsFrom(buf[:keep+n], needle, rare[i]) {
				found[i] = true
				left--
			}
		}
		if left == 0 || errors.Is(err, io.EOF) {
			return found, nil
		}
		if err != nil {
			return found, err
		}
		if end := keep + n; end > longest {
			keep = copy(buf, buf[end-longest+1:end])
		} else {
			keep = end
		}
	}
}
