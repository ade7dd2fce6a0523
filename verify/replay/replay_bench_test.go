package replay

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/internal/auditgen"
)

// inTreePolicies reads the in-tree policies of policies/.
func inTreePolicies(tb testing.TB) ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	tb.Helper()
	_, ps, bs := readPolicies(tb, filepath.Join("..", "..", "policies"))
	return ps, bs
}

// BenchmarkReplayGenerated replays a generated log of 20,000 events, with its snapshot, through
// the in-tree policies: New (the snapshot) and Run.
func BenchmarkReplayGenerated(b *testing.B) {
	const events = 20000
	ps, bs := inTreePolicies(b)
	dir := b.TempDir()
	snap := filepath.Join(dir, "snapshot.yaml")
	var log, sbuf bytes.Buffer
	st, err := auditgen.Generate(&log, auditgen.Config{Seed: 1, Events: events, SnapshotWriter: &sbuf})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(snap, sbuf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Bytes)
	b.ReportAllocs()
	for b.Loop() {
		r, err := New(ps, bs, WithSnapshot(snap))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Run(context.Background(), []Source{{Name: "log", Reader: bytes.NewReader(log.Bytes())}}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}

// BenchmarkReplayFile replays the log VAPC_BENCH_LOG from the snapshot VAPC_BENCH_SNAPSHOT
// through the in-tree policies (or those of VAPC_BENCH_POLICIES, with the admission plugins of
// VAPC_BENCH_DISABLE_PLUGINS disabled), for profiling a replay of hack/bench.sh's logs:
//
//	VAPC_BENCH_LOG=.cache/bench/audit-seed1-100000.log \
//	VAPC_BENCH_SNAPSHOT=.cache/bench/snapshot-seed1-100000.yaml \
//	go test ./verify/replay -run '^$' -bench ReplayFile -benchtime 1x -cpuprofile cpu.out
func BenchmarkReplayFile(b *testing.B) {
	logPath, snap := os.Getenv("VAPC_BENCH_LOG"), os.Getenv("VAPC_BENCH_SNAPSHOT")
	if logPath == "" {
		b.Skip("VAPC_BENCH_LOG is not set")
	}
	if !filepath.IsAbs(logPath) {
		logPath = filepath.Join("..", "..", logPath)
	}
	var opts []Option
	if snap != "" {
		if !filepath.IsAbs(snap) {
			snap = filepath.Join("..", "..", snap)
		}
		opts = append(opts, WithSnapshot(snap))
	}
	ps, bs := inTreePolicies(b)
	if p := os.Getenv("VAPC_BENCH_POLICIES"); p != "" {
		if !filepath.IsAbs(p) {
			p = filepath.Join("..", "..", p)
		}
		_, ps, bs = readPolicies(b, p)
	}
	if d := os.Getenv("VAPC_BENCH_DISABLE_PLUGINS"); d != "" {
		plugins, err := AdmissionPlugins(nil, strings.Split(d, ","))
		if err != nil {
			b.Fatal(err)
		}
		opts = append(opts, WithAdmissionPlugins(plugins))
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := New(ps, bs, opts...)
		if err != nil {
			b.Fatal(err)
		}
		sum, err := r.Run(context.Background(), []Source{{Name: logPath}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(sum.Bytes)
		if heap := os.Getenv("VAPC_BENCH_HEAP"); heap != "" {
			// What the replay holds at its end: its State, summary and aggregates.
			writeHeapProfile(b, heap)
			runtime.KeepAlive(r)
		}
	}
}

func writeHeapProfile(b *testing.B, path string) {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}
