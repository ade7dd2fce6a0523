// Package source reads the audit logs a replay is given as one log: each opened (a file, plain
// or gzip-compressed, or a reader such as standard input; the log backend's lines or a managed
// cluster's export, through package export), the logs merged in the time order of their events
// (Lines), and the logs put in the order of their first events (InTimeOrder). What it yields is
// auditlog.Line: the replay's decoding stage takes it from there.
package source

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// Source is one audit log to read: a file (plain or gzip-compressed) or "-" for the reader
// given as Stdin.
type Source struct {
	// Name is the path, or "-".
	Name string
	// Reader, when set, is read instead of opening Name.
	Reader io.Reader
	// Format is how the log is wrapped (InputFormats): "" or "auto" detects it from its
	// first bytes.
	Format string
	// Read, when set, counts the bytes read of the source as it is stored (a gzip-compressed
	// file's compressed bytes), for a progress line's share of the input read.
	Read *atomic.Int64
	// part, when set, is the span of the file to read: a part of a log whose clock goes back
	// (Split).
	part *part
	// first, when set, is the stage time of the first event the source's reader hands over
	// (InTimeOrder), which Lines opens it at (earliest).
	first time.Time
	// filter, when set, passes over an export's records that do not hold it (Filtered).
	filter []byte
	// spool, when set, is the file the source was copied to, read in its place (Spool).
	spool string
	// inStageOrder reads a plain log in the order of its events' stage times
	// (export.InStageOrder): it goes back by more than OrderJitter (Split).
	inStageOrder bool
	// shared, when set, is what the readers of the sources of one replay share (Shared).
	shared *shared
}

// shared is what the readers of the sources of one replay share: what one found of an
// export's array, and the byte searches of the files.
type shared struct {
	arrays   *export.Arrays
	searches *searches
}

// Shared are the sources of one replay, which reads them several times (the passes before
// its first event, then its events): their readers share what one of them found of an export
// (export.Arrays: where a newest-first array's entries are, which a reader finds by scanning
// the whole array, or the temporary files it wrote them to), and a search of a file's bytes
// for one of needles (or GKE's dry-run label) looks for the others in the same reading, for
// the passes after it (see searches: a compressed file's bytes are decompressed once where
// they can be).
// release removes the temporary files: the replay calls it once it has read the sources for
// the last time.
func Shared(sources []Source, needles ...[]byte) (out []Source, release func()) {
	sh := &shared{arrays: export.NewArrays(), searches: newSearches(append([][]byte{gkeDryRunLabel}, needles...))}
	out = make([]Source, len(sources))
	for i, s := range sources {
		s.shared = sh
		out[i] = s
	}
	return out, func() {
		sh.arrays.Close()
		sh.searches.mu.Lock()
		defer sh.searches.mu.Unlock()
		sh.searches.copies.remove()
	}
}

// Ahead is Shared, and begins on a goroutine of its own the searches of the sources' files
// that the replay makes before its first event (an export's file for the first of needles,
// GKE's dry-run label in the same reading: searchable), while the caller does other work (reads
// its policies and snapshot): the replay's searches wait for it and are answered by what it
// found. release stops the searches not done and removes the temporary files: call it once
// the sources have been read for the last time.
func Ahead(ctx context.Context, sources []Source, needles ...[]byte) (out []Source, release func()) {
	out, removeShared := Shared(sources, needles...)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]bool{}
		for _, src := range out {
			if file := src.File(); file != "" && !seen[file] && searchable(src) {
				seen[file] = true
				_, _ = src.holds(ctx, needles[0])
			}
		}
	}()
	return out, func() {
		cancel()
		<-done
		removeShared()
	}
}

// IsShared says whether the sources are the sources of one call of Shared (or Ahead).
func IsShared(sources []Source) bool {
	for _, s := range sources {
		if s.shared == nil || s.shared != sources[0].shared {
			return false
		}
	}
	return len(sources) > 0
}

// arrays is what the source's readers share of arrays; nil when they share nothing.
func (s Source) arrays() *export.Arrays {
	if s.shared == nil {
		return nil
	}
	return s.shared.arrays
}

// InStageOrder says whether the source is read in the order of its events' stage times: a
// plain log that goes back by more than OrderJitter (Split).
func (s Source) InStageOrder() bool { return s.inStageOrder }

// Filtered are the sources read for the events whose lines hold filter only: an export's
// records that do not hold it are passed over undecoded and not handed over (export.Filter),
// and an export's file whose bytes do not hold it is not read at
// all (no lines, no errors: mayHold). A log backend's file read on its own hands over the
// lines that hold it and no other, its bytes searched, not split into lines (grepReader);
// read with others, merged by time, all its lines.
func Filtered(sources []Source, filter []byte) []Source {
	out := make([]Source, len(sources))
	for i, s := range sources {
		s.filter = filter
		// A filtered export's reader hands over events its reorder, with the others passed
		// over, does not find late, which may be before the first event of the whole file's
		// reading: opened from the start (those whose bytes lack the filter are not read).
		s.first = time.Time{}
		out[i] = s
	}
	return out
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// countingFile counts the bytes read through it of a file, which it still is to the readers
// that read a file back by offsets (gcloud's array, newest first: export.NewReader): a read
// at an offset is read again, and not counted.
type countingFile struct {
	f *os.File
	n *atomic.Int64
	// share, for the decompressed copy of a compressed file (Source.openCopy), counts the
	// bytes read of it as their share of the compressed file's.
	share *copyShare
}

func (c countingFile) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	if c.share != nil {
		c.n.Add(c.share.add(n, err))
	} else {
		c.n.Add(int64(n))
	}
	return n, err
}

func (c countingFile) ReadAt(p []byte, off int64) (int, error) { return c.f.ReadAt(p, off) }

func (c countingFile) Seek(offset int64, whence int) (int64, error) {
	return c.f.Seek(offset, whence)
}

// Stat says what the file is, as it does to a reader that keeps what it found of it
// (export.Arrays).
func (c countingFile) Stat() (os.FileInfo, error) { return c.f.Stat() }

// mayHold says whether an event of the source may hold its filter: false for an export's file
// (Filterable) whose bytes do not hold it, which a byte search says faster than its reader,
// which scans every record (a log backend's file, whose lines are filtered as they are read,
// is read).
func mayHold(ctx context.Context, src Source) bool {
	if !searchable(src) {
		return true
	}
	found, err := src.holds(ctx, src.filter)
	return found || err != nil
}

// searchable says whether mayHold searches the source's file: an export's (Filterable), a file
// that can be read again.
func searchable(src Source) bool {
	if src.Reader != nil || src.part != nil {
		return false
	}
	f, err := os.Open(src.File())
	if err != nil {
		return false
	}
	format, err := export.FormatOf(src.Name, f, export.Format(src.Format))
	f.Close()
	return err == nil && format != export.Plain && format.Filterable()
}

// openSource opens one source for reading its lines, one line per call of next, which says
// false at the end of the log. An error opening it is its one line. close closes what it
// opened.
func openSource(ctx context.Context, src Source, maxLine int) (next func() (auditlog.Line, bool), close func()) {
	failed := func(err error) (func() (auditlog.Line, bool), func()) { return failedSource(src, err) }
	if src.filter != nil && !mayHold(ctx, src) {
		return func() (auditlog.Line, bool) { return auditlog.Line{}, false }, func() {}
	}
	r := src.Reader
	var f *os.File
	var share *copyShare
	if r != nil {
		r = interruptible(ctx, r) // standard input may block: an interrupt must not wait for it
	} else if cf, sh := src.openCopy(); cf != nil {
		// What a search decompressed of it (see maxCopies).
		f, r, share = cf, cf, sh
	} else {
		var err error
		if f, err = os.Open(src.File()); err != nil {
			return failed(fmt.Errorf("cannot open: %v", err))
		}
		r = f
		if src.part != nil {
			if r, err = partReader(f, src.part); err != nil {
				f.Close()
				return failed(fmt.Errorf("cannot read: %v", err))
			}
		}
	}
	closeFile := func() {
		if f != nil {
			f.Close()
		}
	}
	switch file, ok := r.(*os.File); {
	case src.Read == nil:
	case ok:
		r = countingFile{f: file, n: src.Read, share: share}
	default:
		r = countingReader{r, src.Read}
	}
	// The log backend's lines, or the events of a managed cluster's export as such lines.
	format := export.Format(src.Format)
	if src.inStageOrder {
		format = export.InStageOrder
	}
	lr, err := export.NewReader(src.Name, r, format, maxLine, export.Filter(src.filter), export.Sharing(src.arrays()))
	if err != nil {
		closeFile()
		return failed(err)
	}
	next = lr.Next
	if src.part != nil {
		next = numbered(next, src.part)
	}
	return next, func() {
		lr.Close()
		closeFile()
	}
}

// failedSource is a source that could not be read: its one line is the error that says why.
func failedSource(src Source, err error) (next func() (auditlog.Line, bool), close func()) {
	read := false
	return func() (auditlog.Line, bool) {
		if read {
			return auditlog.Line{}, false
		}
		read = true
		return auditlog.Line{File: src.Name, Err: &auditlog.ReadError{Err: err}}, true
	}, func() {}
}

// PlainLogs says which of the sources (files, by name) are kube-apiserver's log backend's
// lines, plain or gzip-compressed: each the log of one server, where an export's file may
// interleave several servers' events. A file whose clock goes back (read in parts: Split), or
// that is out of the order a log backend writes (read in the order of its stage times), is
// not: it may be several servers' logs concatenated or interleaved.
func PlainLogs(sources []Source) map[string]bool {
	out := map[string]bool{}
	for _, src := range sources {
		if src.part != nil || src.inStageOrder {
			out[src.Name] = false
			continue
		}
		if src.Reader != nil {
			continue
		}
		f, err := os.Open(src.File())
		if err != nil {
			continue
		}
		if format, err := export.FormatOf(src.Name, f, export.Format(src.Format)); err == nil {
			out[src.Name] = format == export.Plain
		}
		f.Close()
	}
	return out
}
