package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"sort"
	"strings"
)

// Exit codes are a contract: scripts and CI rely on them.
const (
	exitOK       = 0 // clean
	exitFindings = 1 // a policy or verification finding
	exitUsage    = 2 // the command line is wrong
	exitInternal = 3 // vapc itself failed
)

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// findingsError says the verb ran and found problems it already reported.
type findingsError struct{ msg string }

func (e *findingsError) Error() string { return e.msg }

// internalError is anything vapc did not expect, panics included.
type internalError struct{ err error }

func (e *internalError) Error() string { return "internal error: " + e.err.Error() }
func (e *internalError) Unwrap() error { return e.err }

// ExitCode maps an error returned by Run to the process exit code.
func ExitCode(err error) int {
	var u *usageError
	var f *findingsError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &u):
		return exitUsage
	case errors.As(err, &f):
		return exitFindings
	}
	return exitInternal
}

// verb is one vapc subcommand.
type verb struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
	hidden  bool
}

var verbs = map[string]verb{}

func register(name string, v verb) { verbs[name] = v }

// Run runs vapc with the arguments (without the program name). It never panics: anything
// unexpected becomes an internal error (exit code 3).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &internalError{fmt.Errorf("panic: %v\n%s", r, debug.Stack())}
		}
	}()
	if len(args) == 0 {
		usage(stderr)
		return usagef("no command given")
	}
	name := args[0]
	switch name {
	case "-h", "--help", "help":
		usage(stdout)
		return nil
	}
	v, ok := verbs[name]
	if !ok {
		usage(stderr)
		return usagef("unknown command %q", name)
	}
	err = v.run(ctx, args[1:], stdin, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // -h: the verb printed its usage
	}
	return err
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: vapc COMMAND [flags] [args]\n\ncommands:")
	var names []string
	for n, v := range verbs {
		if !v.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, verbs[n].summary)
	}
	fmt.Fprintln(w, "\nexit codes: 0 ok, 1 findings, 2 usage error, 3 internal error")
}

// newFlagSet returns a flag set that reports errors as usage errors instead of exiting, and
// prints usage (the lines of text, then the flags) on -h or a mistake.
func newFlagSet(name string, stderr io.Writer, usage ...string) *flag.FlagSet {
	fs := flag.NewFlagSet("vapc "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		for _, l := range usage {
			fmt.Fprintln(stderr, l)
		}
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses flags interleaved with positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// statInputs returns a usage error naming every path that cannot be read: a file or folder
// that is not there is a wrong argument, not an empty input, and a CI gate must not pass
// because of a typo in a path. what prefixes the message: the verb, and the flag if any
// ("replay: --snapshot"). "-" (stdin) is always there.
func statInputs(what string, paths ...string) error {
	var bad []string
	for _, p := range paths {
		if p == "-" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			bad = append(bad, pathError(p, err))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return usagef("%s: %s", what, strings.Join(bad, "; "))
}

// pathError words an error about the path p as "p: no such file or directory", without the
// system call that failed.
func pathError(p string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path + ": " + pe.Err.Error()
	}
	return p + ": " + err.Error()
}
