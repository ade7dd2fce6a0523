package export_test

import (
	"bytes"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// cpuTime is the CPU time the process has used (its garbage collection included): on a
// machine other work shares, a fairer measure of a reader's cost than the time it took.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRead reads the recorded log e2e (or the log VAPC_BENCH_LOG, plain or gzip, such
// as hack/bench.sh's generated ones) as the log backend writes it and as each export wraps
// it, to the lines a replay decodes: what an envelope costs before the replay, as time and
// as CPU time (cpu-ns/op):
//
//	VAPC_BENCH_LOG=$PWD/.cache/bench/audit-seed1-100000.log \
//	go test -run '^$' -bench BenchmarkRead -benchtime 1x ./verify/replay/internal/auditlog/export
func BenchmarkRead(b *testing.B) {
	log := readLog(b, recorded[1])
	if path := os.Getenv("VAPC_BENCH_LOG"); path != "" {
		log = exporttest.ReadLog(b, path)
	}
	read := func(b *testing.B, name string, data []byte, f export.Format) {
		b.SetBytes(int64(len(log)))
		b.ReportAllocs()
		start := cpuTime()
		defer func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }()
		for b.Loop() {
			r, err := export.NewReader(name, bytes.NewReader(data), f, auditlog.DefaultMaxLineBytes)
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
	b.Run("plain", func(b *testing.B) { read(b, "log", log, export.Auto) })
	for _, f := range exporttest.Formats() {
		data, err := exporttest.Wrap(f, log)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(string(f), func(b *testing.B) { read(b, exporttest.Name(f, 0), data, export.Auto) })
	}
}
