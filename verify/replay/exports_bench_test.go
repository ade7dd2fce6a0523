package replay

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vapc-dev/vapc/internal/auditgen"
	"github.com/vapc-dev/vapc/verify/replay/exporttest"
)

// cpuTime is the CPU time the process has used: on a machine other work shares, a fairer
// measure of a replay's cost than the time it took.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReplayExports replays logs as the log backend writes them and as each export hands
// them over: an envelope's cost is its time over the plain log's (at most 1.2 of it, see
// BENCHMARKS.md), measured as CPU time too (cpu-ns/op) where other work shares the machine. recorded-e2e is a real server's log through its 19 policies; generated, 5,000
// events of internal/auditgen, with its snapshot, through the in-tree policies. GKE's replay
// does other work than the plain log's: what its entries lost makes other requests
// indeterminate, and others evaluated.
func BenchmarkReplayExports(b *testing.B) {
	bench := func(b *testing.B, log []byte, replayer func(b *testing.B) *Replayer) {
		run := func(b *testing.B, name string, data []byte) {
			b.SetBytes(int64(len(log)))
			b.ReportAllocs()
			start := cpuTime()
			defer func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }()
			for b.Loop() {
				sum, err := replayer(b).Run(context.Background(), []Source{{Name: name, Reader: bytes.NewReader(data)}}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if sum.MalformedCount > 0 {
					b.Fatalf("malformed: %v", sum.Malformed[0])
				}
			}
		}
		b.Run("plain", func(b *testing.B) { run(b, "log", log) })
		for _, f := range exporttest.Formats() {
			data, err := exporttest.Wrap(f, log)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(string(f), func(b *testing.B) { run(b, exporttest.Name(f, 0), data) })
		}
	}
	b.Run("recorded-e2e", func(b *testing.B) {
		dir := filepath.Join(auditData, "recorded-e2e")
		ps, bs := loadPolicies(b, dir)
		bench(b, exporttest.ReadLog(b, filepath.Join(dir, "audit.log.gz")), func(b *testing.B) *Replayer {
			r, err := New(ps, bs)
			if err != nil {
				b.Fatal(err)
			}
			return r
		})
	})
	b.Run("generated", func(b *testing.B) {
		ps, bs := inTreePolicies(b)
		snap := filepath.Join(b.TempDir(), "snapshot.yaml")
		var log, sbuf bytes.Buffer
		if _, err := auditgen.Generate(&log, auditgen.Config{Seed: 1, Events: 5000, SnapshotWriter: &sbuf}); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(snap, sbuf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		bench(b, log.Bytes(), func(b *testing.B) *Replayer {
			r, err := New(ps, bs, WithSnapshot(snap))
			if err != nil {
				b.Fatal(err)
			}
			return r
		})
	})
}
