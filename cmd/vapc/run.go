package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/vapc-dev/vapc/cel"
)

// Exit codes are a contract: scripts and CI rely on them.
const (
	exitOK       = 0 // clean
	exitFindings = 1 // a policy or verification finding
	exitUsage    = 2 // the command line is wrong
	exitInternal = 3 // vapc itself failed
	// exitInterrupted is a shell's code for a command that SIGINT stopped (128+2): vapc stopped
	// on Ctrl-C or SIGTERM and reported what it had done.
	exitInterrupted = 130
)

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// findingsError says the verb ran and found problems it already reported.
type findingsError struct{ msg string }

func (e *findingsError) Error() string { return e.msg }

// interruptedError says the verb was stopped by a signal and wrote what it had done so far.
type interruptedError struct{ msg string }

func (e *interruptedError) Error() string { return e.msg }

// internalError is anything vapc did not expect, panics included.
type internalError struct{ err error }

func (e *internalError) Error() string { return "internal error: " + e.err.Error() }
func (e *internalError) Unwrap() error { return e.err }

// ExitCode maps an error returned by Run to the process exit code.
func ExitCode(err error) int {
	var u *usageError
	var f *findingsError
	var i *interruptedError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &i), errors.Is(err, context.Canceled):
		return exitInterrupted
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
	// flags returns the verb's flags, for shell completion.
	flags  func() *flagSet
	hidden bool
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
	case "-h", "-help", "--help":
		usage(stdout)
		return nil
	case "-version", "--version":
		name = "version"
	}
	v, ok := verbs[name]
	if !ok {
		usage(stderr)
		return usagef("%s", unknownCommand(name))
	}
	err = v.run(ctx, args[1:], stdin, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // -h: the verb printed its usage
	}
	return err
}

// flagSet is a verb's flags and its help: what the verb does, its outcomes, examples, then
// the flags.
type flagSet struct {
	*flag.FlagSet
	name           string
	stdout, stderr io.Writer
	doc            help
	// values are the values a flag takes, for shell completion and the help; metas name the
	// values of the other flags in the help (FILE|DIR); args says what the verb's arguments
	// are: "files", or "" for none.
	values map[string][]string
	metas  map[string]string
	args   string
}

// choices records the values a flag takes, for shell completion and the help.
func (fs *flagSet) choices(name string, values ...string) { fs.values[name] = values }

// meta names the value of a flag in the help: --policies FILE|DIR.
func (fs *flagSet) meta(name, value string) { fs.metas[name] = value }

// newFlagSet returns a flag set that reports errors as usage errors instead of exiting: -h
// (and vapc help VERB) prints the help on stdout, a mistake is reported once, by Run's caller.
func newFlagSet(name string, stdout, stderr io.Writer, doc help) *flagSet {
	fs := flag.NewFlagSet("vapc "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, name: name, stdout: stdout, stderr: stderr, doc: doc, values: map[string][]string{}, metas: map[string]string{}, args: "files"}
}

// Usage prints the help on stderr, for a verb that is missing its arguments.
func (fs *flagSet) Usage() { fs.help(fs.stderr) }

// help writes the verb's help and its flags.
func (fs *flagSet) help(w io.Writer) { fs.doc.write(w, fs) }

// parseFlags parses flags interleaved with positional arguments. -h and --help print the help
// on stdout and return flag.ErrHelp.
func parseFlags(fs *flagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.help(fs.stdout)
				return nil, err
			}
			return nil, usagef("%s: %s (vapc help %s lists its flags)", fs.name, fs.flagError(err), fs.name)
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

// flagError words an error of the flag package as the help writes flags (--name, not -name),
// with the flags of the verb a mistyped one may have meant.
func (fs *flagSet) flagError(err error) string {
	msg := dashRE.ReplaceAllString(err.Error(), "$1--$2")
	const undefined = "flag provided but not defined: "
	if name, ok := strings.CutPrefix(msg, undefined); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if close := cel.Closest(strings.TrimLeft(name, "-"), names); len(close) > 0 {
			for i, c := range close {
				close[i] = flagName(c)
			}
			msg += ": did you mean " + strings.Join(close, " or ") + "?"
		}
	}
	return msg
}

// dashRE matches a flag of more than one letter written with one dash in the flag package's
// errors.
var dashRE = regexp.MustCompile(`(^|[ :])-([A-Za-z0-9][A-Za-z0-9-]+)`)

// unknownCommand says a command is not vapc's, and which it may have meant.
func unknownCommand(name string) string {
	msg := fmt.Sprintf("unknown command %q", name)
	if close := cel.Closest(name, visibleVerbs()); len(close) > 0 {
		msg += ": did you mean " + strings.Join(close, " or ") + "?"
	}
	return msg
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

// inputProblems writes every problem of err (errors joined) on stderr, one a line, and returns
// the verb's findings error: an input was read and something in it is wrong. what prefixes the
// message: the verb, and the flag if any ("replay: --snapshot").
func inputProblems(stderr io.Writer, what string, err error) error {
	lines := errorLines(err)
	for _, l := range lines {
		fmt.Fprintln(stderr, l)
	}
	return &findingsError{fmt.Sprintf("%s: %d %s in the input", what, len(lines), plural(len(lines), "problem", "problems"))}
}

// errorLines splits joined errors into one line each, wording a path that cannot be read as
// "path: no such file or directory".
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, errorLines(e)...)
		}
		return out
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return []string{pathError(pe.Path, err)}
	}
	return []string{err.Error()}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
