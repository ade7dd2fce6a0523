// Command vapc-bench is vapc's benchmark tooling, kept out of the product binary. hack/bench.sh
// (make bench) runs it:
//
//	vapc-bench gen-audit --events N|--bytes SIZE [--seed N] [--gzip] [--snapshot FILE] [-o FILE]
//	vapc-bench decode-floor AUDIT.LOG[.gz]|- ...
//	vapc-bench repeat --times N [-o FILE] AUDIT.LOG[.gz]
//	vapc-bench pods --count N --policy FILE [-o FILE]
//	vapc-bench library-floor --policy FILE AUDIT.LOG
//
// gen-audit writes a realistic audit log of any size from a seed (internal/auditgen), and the
// cluster it starts from as a snapshot; decode-floor decodes logs with encoding/json only, the
// floor a replay's speed is measured against; repeat makes a recorded log as long as a benchmark
// needs; pods writes the pod-CREATE workload peers are measured on, and library-floor the floor
// of that workload (kube-apiserver's dispatcher called once per pod, no replay around it). Exit codes are vapc's: 0 ok, 2 usage error, 3
// any other error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
)

const (
	exitOK       = 0
	exitUsage    = 2
	exitInternal = 3
)

// usageError is a wrong command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// exitCode is the exit code of run's error.
func exitCode(err error) int {
	var u *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &u):
		return exitUsage
	}
	return exitInternal
}

// verbs are the commands of vapc-bench, by name.
var verbs = map[string]struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}{
	"gen-audit":     {"generate a realistic audit log of any size", runGenAudit},
	"decode-floor":  {"decode audit logs with encoding/json only: the replay benchmark's floor", runDecodeFloor},
	"repeat":        {"repeat a recorded audit log, each repetition shifted in time", runRepeat},
	"pods":          {"write an audit log of pod CREATEs and a policy with two rules that refuses half of them", runPods},
	"library-floor": {"validate the pods of a log with kube-apiserver's validating dispatcher alone: the floor of the pods benchmark", runLibraryFloor},
}

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vapc-bench:", err)
	}
	os.Exit(exitCode(err))
}

// run runs vapc-bench with the arguments (without the program name).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return usagef("no command given")
	}
	v, ok := verbs[args[0]]
	if !ok {
		usage(stderr)
		return usagef("unknown command %q", args[0])
	}
	err := v.run(ctx, args[1:], stdin, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: vapc-bench COMMAND [flags] [args]\n\ncommands:")
	var names []string
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-13s %s\n", n, verbs[n].summary)
	}
}

// newFlagSet returns a flag set that prints its usage line and flags on stderr.
func newFlagSet(name, usageLine string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usageLine)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses the arguments; a wrong flag is a usage error.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usagef("%s: %v", fs.Name(), err)
	}
	return fs.Args(), nil
}
