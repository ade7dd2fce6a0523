package replay

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LogFiles are the files of the logs given: a file as it is, "-" (standard input) too, and a
// folder as the files under it, at any depth, in the order of their paths, which is the time
// order of the folders the exports write (an S3 export task's folder a stream, the hour
// folders of AKS's blobs, y=2026/m=11/d=20/h=08, the day folders of a Cloud Logging sink's
// objects, 2026/11/20): the replay orders their events by time anyway. A file or folder whose
// name begins with a dot (a tool's state, .DS_Store) is passed over, and so is anything that
// is not a regular file (a socket, a link to a folder, which the walk does not follow). A
// folder that holds no file is an error, as a path that is not there is.
func LogFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if p == "-" || err != nil || !info.IsDir() {
			files = append(files, p)
			continue
		}
		n := len(files)
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != p && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(files) == n {
			return nil, &fs.PathError{Op: "walk", Path: p, Err: errNoFile}
		}
	}
	return files, nil
}

var errNoFile = errors.New("a folder that holds no file")
