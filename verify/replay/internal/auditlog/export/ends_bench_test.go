package export

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"
)

// BenchmarkContainerEnd finds the end of every event of a log as containerEnd does, 64 bytes
// at a time, and as valueEnd does, byte by byte between strings: the log recorded by the e2e
// harness, or VAPC_BENCH_LOG (plain, one event a line; its first 64 MiB). A log's lines made
// AKS records (the event escaped into properties.log) measure an envelope's records.
func BenchmarkContainerEnd(b *testing.B) {
	path := os.Getenv("VAPC_BENCH_LOG")
	var data []byte
	if path == "" {
		f, err := os.Open("../../../../../testdata/audit/recorded-e2e/audit.log.gz")
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			b.Fatal(err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			b.Fatal(err)
		}
	} else {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			b.Fatal(err)
		}
	}
	data = data[:bytes.LastIndexByte(data[:min(len(data), 64<<20)], '\n')]
	lines := bytes.Split(data, []byte{'\n'})
	for _, fn := range []struct {
		name string
		end  func([]byte) (int, bool)
	}{
		{"containerEnd", containerEnd},
		{"valueEnd", func(b []byte) (int, bool) { return valueEnd(b, 0) }},
	} {
		b.Run(fn.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				for _, l := range lines {
					if len(l) == 0 {
						continue
					}
					if end, ok := fn.end(l); !ok || end != len(l) {
						b.Fatalf("end %d, %t of a line of %d bytes", end, ok, len(l))
					}
				}
			}
		})
	}
}
