// Package recordedlogs walks the audit logs real kube-apiservers recorded that the repository
// keeps under its testdata folders, for tests that hold a decoder or a conversion to every
// object they hold.
package recordedlogs

import (
	"bufio"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each calls fn with every line of every gzip-compressed log (*.log.gz) under the roots, and
// where it is (the log's path, the line's number). A log that is not gzip (a cut of a
// malformed file) is skipped; none found at all fails the test.
func Each(t testing.TB, roots []string, fn func(log string, n int, line []byte)) {
	t.Helper()
	var logs []string
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".log.gz") {
				logs = append(logs, path)
			}
			return nil
		})
	}
	if len(logs) == 0 {
		t.Fatalf("no recorded logs found under %v", roots)
	}
	for _, log := range logs {
		f, err := os.Open(log)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			continue
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for n := 1; sc.Scan(); n++ {
			fn(log, n, sc.Bytes())
		}
		zr.Close()
		f.Close()
	}
}
