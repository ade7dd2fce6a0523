package export_test

import (
	"bytes"
	"testing"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// BenchmarkRead reads the recorded log e2e as the log backend writes it and as each export
// wraps it, to the lines a replay decodes: what an envelope costs before the replay.
func BenchmarkRead(b *testing.B) {
	log := readLog(b, recorded[1])
	read := func(b *testing.B, data []byte, f export.Format) {
		b.SetBytes(int64(len(log)))
		b.ReportAllocs()
		for b.Loop() {
			r, err := export.NewReader("log", bytes.NewReader(data), f, auditlog.DefaultMaxLineBytes)
			if err != nil {
				b.Fatal(err)
			}
			for {
				l, ok := r.Next()
				if !ok {
					break
				}
				if l.Err != nil {
					b.Fatal(l.Err)
				}
			}
			r.Close()
		}
	}
	b.Run("plain", func(b *testing.B) { read(b, log, export.Auto) })
	for _, f := range exporttest.Formats() {
		data, err := exporttest.Wrap(f, log)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(string(f), func(b *testing.B) { read(b, data, export.Auto) })
	}
}
