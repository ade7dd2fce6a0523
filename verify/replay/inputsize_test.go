package replay

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputSize: the size of a replay's input, a gzip-compressed file's counted eight times;
// not known with standard input, a folder or a file that is not there.
func TestInputSize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(plain, []byte(strings.Repeat("x", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte(strings.Repeat("y", 5000))); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	compressed := filepath.Join(dir, "audit.log.1.gz")
	if err := os.WriteFile(compressed, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		paths []string
		want  uint64
		known bool
	}{
		{"a plain log", []string{plain}, 1000, true},
		{"a plain log and a compressed one", []string{plain, compressed}, 1000 + 8*uint64(gz.Len()), true},
		{"standard input", []string{plain, "-"}, 0, false},
		{"a folder", []string{dir}, 0, false},
		{"no such file", []string{filepath.Join(dir, "nope")}, 0, false},
	} {
		got, known := InputSize(tc.paths)
		if got != tc.want || known != tc.known {
			t.Errorf("%s: InputSize = %d, %v; want %d, %v", tc.name, got, known, tc.want, tc.known)
		}
	}
}
