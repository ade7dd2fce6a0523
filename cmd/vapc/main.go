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
	"syscall"

	"k8s.io/klog/v2"

	"github.com/vapc-dev/vapc/internal/gctune"
)

// memoryLimit is the heap vapc's garbage collector is paced toward unless GOGC or GOMEMLIMIT
// is set (internal/gctune): a collection when the heap reaches it, not sooner than GOGC=100
// would make one, so that a long replay's heap neither grows to twice its live objects (the
// State of a large cluster) while they are few nor collects without end when they near it.
// With GOGC set and not GOMEMLIMIT, it is vapc's soft memory limit. It is not a cap: a heap
// of more live objects grows.
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
		// Paced by the tuner alone: a soft memory limit beside it would trigger collections
		// sooner than GOGC=100 once the live heap passed half of it.
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
	err := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "vapc:", err)
	}
	os.Exit(ExitCode(err))
}
