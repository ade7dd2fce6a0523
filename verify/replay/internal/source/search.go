package source

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"slices"
	"sync"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// searches are the byte searches of the files of one replay (Shared): a search of a file for
// one of the replay's needles looks for all of them in the same reading, until it finds the
// one it was asked for, and keeps what it found by file; a later search for another needle is
// answered from it where the reading found that one or read the file to its end.
type searches struct {
	needles [][]byte
	mu      sync.Mutex
	done    map[string]searched
	// copies are the decompressed bytes of the compressed files a search read to their end,
	// for the readers after it (see maxCopies).
	copies copies
}

// searched is what a search of a file found: which of the needles it holds, whether it read
// the file to its end (or to the error that stopped it, err), so that a needle it did not
// find is not there.
type searched struct {
	file  os.FileInfo
	found []bool
	ended bool
	err   error
}

func newSearches(needles [][]byte) *searches {
	return &searches{needles: needles, done: map[string]searched{}, copies: copies{of: map[string]decompressedCopy{}, budget: -1}}
}

// holds says whether the source's file's bytes, decompressed as package export reads them,
// hold needle; an error when they could not be read to the end without finding it. A source
// of a replay's (Shared) looks for every needle of the replay's in the same reading (GKE's
// dry-run label, then the admission policies' names: a GKE export's bytes are read once
// where no dry run is in them).
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
		found, ended, err := holdsAny(ctx, file, [][]byte{needle}, 0, nil)
		return result(searched{found: found, ended: ended, err: err}, 0)
	}
	fi, statErr := os.Stat(file)
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if d, ok := sr.done[file]; ok && statErr == nil && export.SameFile(d.file, fi) && (d.found[k] || d.ended) {
		return result(d, k)
	}
	var copyTo *copies
	if _, ok := sr.copies.find(file, fi); statErr == nil && !ok {
		copyTo = &sr.copies
	}
	found, ended, err := holdsAny(ctx, file, sr.needles, k, copyTo)
	d := searched{file: fi, found: found, ended: ended, err: err}
	if statErr == nil && ctx.Err() == nil {
		sr.done[file] = d
	}
	return result(d, k)
}

// result is what a search says of its k-th needle: found, or the error that stopped it
// before it found it.
func result(d searched, k int) (bool, error) {
	if d.found[k] {
		return true, nil
	}
	return false, d.err
}

// holdsAny says which of the needles the file's bytes, decompressed as package export reads
// them, hold, as far as it read them: until it found the one at index stop, or to their end
// (ended); an error when they could not be read to the end without finding it. Given copyTo, a
// compressed file's decompressed bytes are copied to a temporary file (copies.start) and the
// file read to its end whatever it finds: the copy is kept for the readers after it.
func holdsAny(ctx context.Context, file string, needles [][]byte, stop int, copyTo *copies) (found []bool, ended bool, err error) {
	found = make([]bool, len(needles))
	f, err := os.Open(file)
	if err != nil {
		return found, true, err
	}
	defer f.Close()
	r, closers, err := export.Decompressed(f)
	for _, c := range closers {
		defer c.Close()
	}
	if err != nil {
		return found, true, err
	}
	var cp *copying
	if len(closers) > 0 {
		if fi, err := f.Stat(); err == nil {
			cp = copyTo.start(file, fi)
		}
	} else if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() >= grepSplitAt {
		return searchHalves(ctx, f, fi.Size(), needles, stop)
	}
	return search(ctx, r, needles, stop, cp)
}

// search is holdsAny's search of the bytes of r, copied by cp where it is not nil.
func search(ctx context.Context, r io.Reader, needles [][]byte, stop int, cp *copying) (found []bool, ended bool, err error) {
	found = make([]bool, len(needles))
	defer func() {
		if cp != nil {
			cp.abandon()
		}
	}()
	longest, rare := 0, make([]int, len(needles))
	for i, n := range needles {
		longest = max(longest, len(n))
		rare[i] = rarest(n)
	}
	buf := make([]byte, 1<<20)
	keep := 0 // the bytes of the last read kept, which a needle may begin in
	for {
		if err := ctx.Err(); err != nil {
			return found, false, err
		}
		n, err := r.Read(buf[keep:])
		if cp != nil && !cp.write(buf[keep:keep+n]) {
			cp = nil
		}
		for i, needle := range needles {
			if !found[i] && containsFrom(buf[:keep+n], needle, rare[i]) {
				found[i] = true
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			if cp != nil {
				cp.finish()
				cp = nil
			}
			return found, true, nil
		case err != nil:
			return found, true, err
		case found[stop] && cp == nil:
			return found, false, nil
		}
		if end := keep + n; end > longest {
			keep = copy(buf, buf[end-longest+1:end])
		} else {
			keep = end
		}
	}
}

// searchHalves is search of a file of size bytes, not compressed, in two halves at once (the
// first a needle's length past the middle, which a needle may cross; the second to the file's
// end as it is read): what each found, and where one finds the needle it was asked for, the
// other stopped. The second core was idle while a replay's first search of a large file
// (GKE's dry-run label, which no file without a dry run holds) read it before the first event.
func searchHalves(ctx context.Context, f *os.File, size int64, needles [][]byte, stop int) (found []bool, ended bool, err error) {
	longest := 0
	for _, n := range needles {
		longest = max(longest, len(n))
	}
	mid := size / 2
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		found []bool
		ended bool
		err   error
	}
	var halves [2]result
	var wg sync.WaitGroup
	for i, h := range [2]struct{ off, n int64 }{{0, mid + int64(longest) - 1}, {mid, math.MaxInt64 - mid}} {
		wg.Go(func() {
			r := &halves[i]
			r.found, r.ended, r.err = search(ctx, io.NewSectionReader(f, h.off, h.n), needles, stop, nil)
			if r.found[stop] {
				cancel() // the other half need not go on
			}
		})
	}
	wg.Wait()
	found = make([]bool, len(needles))
	ended = true
	for _, h := range halves {
		for i, ok := range h.found {
			found[i] = found[i] || ok
		}
		ended = ended && h.ended
	}
	if found[stop] {
		return found, false, nil
	}
	for _, h := range halves {
		if h.err != nil {
			return found, h.ended, h.err
		}
	}
	return found, ended, nil
}
