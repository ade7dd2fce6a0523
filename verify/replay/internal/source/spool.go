package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Spooled is what Spool did.
type Spooled struct {
	// Interrupted says the context was canceled while a source was copied: its copy holds
	// what was read of it until then, which the replay reads (and is partial).
	Interrupted bool
	// Notes says of each source that could not be copied why, and that it is read once.
	Notes   []string
	files   []string
	closers []io.Closer
}

// Remove removes the copies (and closes the pipes opened to stream).
func (s *Spooled) Remove() {
	for _, f := range s.files {
		os.Remove(f)
	}
	for _, c := range s.closers {
		c.Close()
	}
	s.files, s.closers = nil, nil
}

// Spool copies each source that can be read only once (a reader such as standard input, or a
// path that is not a regular file: a named pipe, a shell's process substitution /dev/fd/N) to
// a file of dir (os.TempDir when empty), which is read in its place as often as the replay
// reads the log (the order of several logs, the parts of one whose clock goes back, the writes
// of the given policies ahead of the replay, a paramKind's first use ahead): its Name stays
// the source's, which every message gives. The copy is the bytes as given (a gzip-compressed
// stream stays compressed). A source that cannot be copied (the disk is full) is read once, as
// before: what was copied of it, then the rest; Notes says so. When the context is canceled
// while copying, the copy holds what was read until then and Interrupted is set.
//
// With stream, nothing is copied: a path that is not a regular file is opened once and read
// as a reader is (streamed, in the order given, not read again), as a live log needs
// (tail -f audit.log | vapc replay -).
func Spool(ctx context.Context, sources []Source, dir string, stream bool) ([]Source, *Spooled) {
	sp := &Spooled{}
	out := make([]Source, len(sources))
	for i, src := range sources {
		out[i] = src
		if sp.Interrupted {
			// Not read: an interrupt stops the reading of every log.
			out[i].Reader, out[i].spool = eofReader{}, ""
			continue
		}
		r := src.Reader
		if r == nil {
			f, err := os.Open(src.Name)
			if err != nil {
				continue // openSource reports it
			}
			if info, err := f.Stat(); err != nil || info.Mode().IsRegular() {
				f.Close()
				continue
			}
			r = f
			sp.closers = append(sp.closers, f) // read here, or in its place (stream, or not copied)
			if stream {
				out[i].Reader = f
				continue
			}
		} else if stream {
			continue
		}
		out[i] = sp.spool(ctx, src, r, dir)
	}
	return out, sp
}

// spool copies one source read from r.
func (sp *Spooled) spool(ctx context.Context, src Source, r io.Reader, dir string) Source {
	once := func(err error) Source {
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err
		}
		where := dir
		if where == "" {
			where = os.TempDir() + " ($TMPDIR)"
		}
		sp.Notes = append(sp.Notes, fmt.Sprintf("%s could not be copied to a file in %s to read it again (%v): it is read once, as it comes (the notes say what that leaves unchecked)", src.Name, where, err))
		src.Reader = r
		return src
	}
	f, err := os.CreateTemp(dir, "vapc-replay-*.log")
	if err != nil {
		return once(err)
	}
	sp.files = append(sp.files, f.Name())
	var werr error
	_, err = io.Copy(writerOnly{f, &werr}, interruptible(ctx, readerOnly{r}))
	if cerr := f.Close(); werr == nil && cerr != nil {
		werr = cerr
	}
	switch {
	case werr != nil:
		// What was copied, then the rest.
		copied, oerr := os.Open(f.Name())
		if oerr != nil {
			return once(werr)
		}
		n := once(werr)
		n.Reader = io.MultiReader(copied, r)
		return n
	case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		sp.Interrupted = true
	case err != nil:
		// The input stopped being readable: its copy ends there, and the replay says so
		// where it ends.
		copied, oerr := os.Open(f.Name())
		if oerr != nil {
			return once(err)
		}
		src.Reader = io.MultiReader(copied, errReader{err})
		return src
	}
	src.Reader, src.spool = nil, f.Name()
	return src
}

// writerOnly keeps a write's error apart from the reader's in io.Copy, and hides the file's
// ReadFrom (which would read without the interrupt).
type writerOnly struct {
	w   io.Writer
	err *error
}

func (w writerOnly) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		*w.err = err
	}
	return n, err
}

// readerOnly hides a reader's WriteTo.
type readerOnly struct{ r io.Reader }

func (r readerOnly) Read(p []byte) (int, error) { return r.r.Read(p) }

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// File is the file the source is read from: its copy (Spool), or Name; "" for a reader.
func (s Source) File() string {
	switch {
	case s.spool != "":
		return s.spool
	case s.Reader != nil:
		return ""
	}
	return s.Name
}
