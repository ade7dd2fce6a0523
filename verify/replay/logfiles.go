package replay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LogFiles are the files of the logs given: a file as it is, "-" (standard input) too, and a
// folder as the files under it, at any depth, folder by folder in the order of their names
// (the time order of the folders the exports write: an S3 export task's folder a stream, the
// hour folders of AKS's blobs, y=2026/m=11/d=20/h=08, the day folders of a Cloud Logging
// sink's objects, 2026/11/20; the replay orders their events by time anyway). A link is
// followed, to a folder too (a folder reached again, through a link back up the tree or
// another link, is read once); a name beginning with a dot (a tool's state, .DS_Store) is
// passed over. What the replay cannot read is an error, never left out unsaid: a link to
// nothing, what is neither a file nor a folder (a socket), a folder that holds no file. A file
// given twice, or in a folder given and on its own, is read once.
func LogFiles(paths []string) ([]string, error) {
	w := logWalk{seen: map[string]bool{}, holds: map[string]bool{}}
	for _, p := range paths {
		info, err := os.Stat(p)
		if p == "-" || err != nil || !info.IsDir() {
			if real, err := realPath(p); p != "-" && err == nil {
				if w.seen[real] {
					continue
				}
				w.seen[real] = true
			}
			w.files = append(w.files, p) // the CLI says what is wrong with a path that is not there
			continue
		}
		real, err := realPath(p)
		if err != nil {
			return nil, err
		}
		holds, err := w.folder(p, real)
		if err != nil {
			return nil, err
		}
		if !holds {
			return nil, &fs.PathError{Op: "walk", Path: p, Err: errNoFile}
		}
	}
	return w.files, nil
}

// logWalk is what LogFiles found: the files, as the paths given name them, the real paths
// of the files and folders read (seen), and of each folder read whether it holds a file
// (holds; a folder read again, or a file given before it, holds the files it was read with).
type logWalk struct {
	files []string
	seen  map[string]bool
	holds map[string]bool
}

// folder adds the files under the folder shown, whose real path is real, and says whether it
// holds one (read before or not).
func (w *logWalk) folder(shown, real string) (holds bool, err error) {
	if w.seen[real] {
		return w.holds[real], nil // read already (or being read: a link back up the tree)
	}
	w.seen[real] = true
	entries, err := os.ReadDir(real)
	if err != nil {
		return false, &fs.PathError{Op: "read", Path: shown, Err: underlying(err)}
	}
	for _, e := range entries { // by name
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		sp, rp := filepath.Join(shown, e.Name()), filepath.Join(real, e.Name())
		info, err := os.Stat(rp) // through a link
		if err != nil {
			if target, lerr := os.Readlink(rp); lerr == nil && errors.Is(err, fs.ErrNotExist) {
				return false, &fs.PathError{Op: "read", Path: sp, Err: fmt.Errorf("a link to %s, which is not there", target)}
			}
			return false, &fs.PathError{Op: "read", Path: sp, Err: underlying(err)}
		}
		r, err := realPath(rp)
		if err != nil {
			return false, &fs.PathError{Op: "read", Path: sp, Err: underlying(err)}
		}
		switch {
		case info.IsDir():
			sub, err := w.folder(sp, r)
			if err != nil {
				return false, err
			}
			holds = holds || sub
		case info.Mode().IsRegular():
			holds = true
			if !w.seen[r] {
				w.seen[r] = true
				w.files = append(w.files, sp)
			}
		default:
			return false, &fs.PathError{Op: "read", Path: sp, Err: errNotFile}
		}
	}
	w.holds[real] = holds
	return holds, nil
}

// realPath is the absolute path of p, its links followed: one file's, however it is named.
func realPath(p string) (string, error) {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	return filepath.Abs(r)
}

// underlying is err without the path an fs error names (the real one, not the one shown).
func underlying(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var (
	errNoFile  = errors.New("a folder that holds no file")
	errNotFile = errors.New("neither a file nor a folder: not a log the replay reads")
)
