package replay

import (
	"io"
	"os"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// InputFormats are the formats a Source may be in (Source.Format), "auto" first: a file's
// format is detected from its first bytes unless one is given. Besides kube-apiserver's log
// backend ("audit"), they are its webhook backend and the exports of managed clusters' logging
// services (EKS's CloudWatch Logs, AKS's diagnostic settings, GKE's Cloud Logging); see
// README.md, "Where your audit log is".
func InputFormats() []string {
	var out []string
	for _, f := range export.Formats() {
		out = append(out, string(f))
	}
	return out
}

// CheckInputFormat says whether a replay reads the format named s ("" is auto).
func CheckInputFormat(s string) error {
	_, err := export.ParseFormat(s)
	return err
}

// InputSize is about how many bytes the files hold, decompressed (a gzip-compressed file
// counts eight times its size, an audit log's usual ratio); false when one is standard input
// or cannot be read, whose size is not known. vapc fits its garbage collector's pace to it.
func InputSize(paths []string) (uint64, bool) {
	var n uint64
	for _, p := range paths {
		if p == "-" {
			return 0, false
		}
		info, err := os.Stat(p)
		if err != nil || !info.Mode().IsRegular() {
			// A pipe (a process substitution's /dev/fd/N, a named pipe): not opened here,
			// which would wait for a named pipe's writer, and whose bytes the replay reads
			// once.
			return 0, false
		}
		f, err := os.Open(p)
		if err != nil {
			return 0, false
		}
		var magic [2]byte
		_, rerr := io.ReadFull(f, magic[:])
		f.Close()
		size := uint64(info.Size())
		if rerr == nil && magic == [2]byte{0x1f, 0x8b} {
			size *= 8
		}
		n += size
	}
	return n, true
}
