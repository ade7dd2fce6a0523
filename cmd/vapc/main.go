// Command vapc type-checks ValidatingAdmissionPolicies, emits them from Go, evaluates them as
// kube-apiserver does, and replays audit logs through them. See README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/vapc-dev/vapc/internal/gctune"
)

// memoryLimit is vapc's soft memory limit unless GOMEMLIMIT sets another: near it the garbage
// collector runs more often instead of letting a long replay's heap grow to twice its live
// objects (the State of a large cluster). It is not a cap. Unless GOGC is set too, the
// collector is paced by it alone (internal/gctune, GOGC off): a collection when the process's
// memory reaches it, and once the live heap passes half of it, the limit follows twice the
// live heap (about GOGC=100's pace) instead of collecting without end. A replay fits it to
// its input (gctune.Fit): a small log's heap is collected before it grows this far.
const memoryLimit = 400 << 20

func main() {
	// kube-apiserver's code that replay runs logs through klog (the admission plugins it loads,
	// errors it hands to its own log): vapc reports what matters itself.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	// Without a log file, klog writes errors to stderr too (stderrthreshold): not those.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("stderrthreshold", "FATAL")
	switch {
	case os.Getenv("GOMEMLIMIT") != "":
	case os.Getenv("GOGC") == "":
		gctune.Start(memoryLimit)
	default:
		debug.SetMemoryLimit(memoryLimit)
	}
	// The first Ctrl-C or SIGTERM cancels ctx: a replay stops reading, writes the summary of
	// what it read and exits 130. The signals then get their default action again, so that a
	// second Ctrl-C stops vapc at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	stopProfile := cpuProfile(os.Getenv("VAPC_CPUPROFILE"))
	err := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	stopProfile()
	allocsProfile(os.Getenv("VAPC_MEMPROFILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "vapc:", err)
	}
	os.Exit(ExitCode(err))
}

// allocsProfile writes the run's allocations profile to path (the environment's
// VAPC_MEMPROFILE: `go tool pprof -sample_index=alloc_space bin/vapc PATH` says what allocated
// the bytes the collector and fresh pages cost); nothing when path is empty.
func allocsProfile(path string) {
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vapc: VAPC_MEMPROFILE:", err)
	}
}

// cpuProfile writes a CPU profile of the run to path (the environment's VAPC_CPUPROFILE, for
// BENCHMARKS.md's measurements: `go tool pprof bin/vapc PATH`) until the returned func is
// called; nothing when path is empty.
func cpuProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vapc: VAPC_CPUPROFILE:", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "vapc: VAPC_CPUPROFILE:", err)
		}
	}
}
