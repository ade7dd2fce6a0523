package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// help is a verb's help: what vapc help VERB and vapc VERB --help print before its flags.
type help struct {
	// usage is the synopsis, without "usage: ".
	usage string
	// about says what the verb does: paragraphs between blank lines, each wrapped to
	// helpWidth.
	about string
	// outcomes are the exit codes the verb returns and when, but 2 and 3, which every verb
	// shares (sharedOutcomes).
	outcomes []outcome
	// examples are two or three commands, each with what it does.
	examples []example
}

// outcome is an exit code and what it says.
type outcome struct {
	code int
	when string
}

// example is a command of a verb's help, with a comment saying what it does.
type example struct{ what, command string }

// sharedOutcomes are the exit codes of every verb besides its own.
var sharedOutcomes = []outcome{
	{exitUsage, "usage error: a wrong flag or value, a missing argument, a file or folder that is not there"},
	{exitInternal, "internal error: a bug of vapc's (please report it, with the output of vapc version)"},
}

// helpWidth is the width help text is wrapped to.
const helpWidth = 100

// write writes the help, then the flags of fs.
func (h help) write(w io.Writer, fs *flagSet) {
	fmt.Fprintf(w, "usage: %s\n", h.usage)
	for _, para := range strings.Split(strings.TrimSpace(h.about), "\n\n") {
		if para != "" {
			fmt.Fprint(w, "\n"+hanging("", para))
		}
	}
	outcomes := append(append([]outcome{}, h.outcomes...), sharedOutcomes...)
	sort.SliceStable(outcomes, func(i, j int) bool { return outcomes[i].code < outcomes[j].code })
	fmt.Fprintln(w, "\noutcomes (exit codes):")
	for _, o := range outcomes {
		fmt.Fprint(w, hanging(fmt.Sprintf("  %-4d ", o.code), o.when))
	}
	if len(h.examples) > 0 {
		fmt.Fprintln(w, "\nexamples:")
		for i, e := range h.examples {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprint(w, hanging("  # ", e.what))
			fmt.Fprintf(w, "  %s\n", e.command)
		}
	}
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	if len(flags) == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	for _, f := range flags {
		fmt.Fprintf(w, "  %s\n", fs.synopsis(f))
		fmt.Fprint(w, hanging("        ", f.Usage))
	}
}

// synopsis writes a flag as the README does: --name VALUE (one dash for a one-letter flag),
// with its default.
func (fs *flagSet) synopsis(f *flag.Flag) string {
	s := flagName(f.Name)
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
		meta := fs.metas[f.Name]
		switch {
		case meta != "":
		case len(fs.values[f.Name]) > 0:
			meta = strings.Join(fs.values[f.Name], "|")
		default:
			meta, _ = flag.UnquoteUsage(f)
			meta = strings.ToUpper(meta)
		}
		s += " " + meta
	}
	switch f.DefValue {
	case "", "false", "[]":
	default:
		s += " (default " + f.DefValue + ")"
	}
	return s
}

// flagName writes a flag's name as it is typed: --name, or -n for a one-letter flag.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// hanging wraps text to helpWidth after prefix, the lines after the first indented as deep
// as the prefix; it ends with a newline.
func hanging(prefix, text string) string {
	indent := strings.Repeat(" ", len(prefix))
	var b strings.Builder
	line := prefix
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len(line)+1+len(word) > helpWidth {
			b.WriteString(line + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}

// usage is vapc's own help: what it does, its commands, a first run, the exit codes.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: vapc COMMAND [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprint(w, hanging("", "vapc checks, tests and replays Kubernetes admission policies (ValidatingAdmissionPolicies and MutatingAdmissionPolicies, admissionregistration.k8s.io/v1) as kube-apiserver decides them: with kube-apiserver's own admission code."))
	fmt.Fprintln(w, "\ncommands:")
	for _, n := range visibleVerbs() {
		fmt.Fprintf(w, "  %-10s %s\n", n, verbs[n].summary)
	}
	fmt.Fprintln(w, "\na first run, with your policies and a kube-apiserver audit log of your cluster:")
	fmt.Fprintln(w, "  vapc check policies/                                # what kube-apiserver would refuse or never run")
	fmt.Fprintln(w, "  vapc snapshot --policies policies/ -o cluster.yaml  # what the policies read, from the cluster")
	fmt.Fprintln(w, "  vapc replay --policies policies/ --snapshot cluster.yaml --report replay.html audit.log")
	fmt.Fprintln(w)
	fmt.Fprint(w, hanging("", "vapc help COMMAND (or vapc COMMAND --help) describes a command: what it does, its outcomes and exit codes, examples and flags. vapc --version prints the versions a bug report needs."))
	fmt.Fprintln(w, "\nexit codes, the same for every command:")
	fmt.Fprint(w, hanging(fmt.Sprintf("  %-4d ", exitOK), "clean"))
	fmt.Fprint(w, hanging(fmt.Sprintf("  %-4d ", exitFindings), "findings, in the inputs or about them: a policy error, a failed case, a replay gate that fails, an input that cannot be parsed, damaged or empty input, nothing found"))
	for _, o := range sharedOutcomes {
		fmt.Fprint(w, hanging(fmt.Sprintf("  %-4d ", o.code), o.when))
	}
	fmt.Fprint(w, hanging(fmt.Sprintf("  %-4d ", exitInterrupted), "interrupted (Ctrl-C, SIGTERM)"))
}

func init() {
	register("help", verb{summary: "describe vapc or one of its commands: vapc help COMMAND", run: runHelp,
		flags: func() *flagSet { return helpFlagSet(io.Discard, io.Discard) }})
}

func helpFlagSet(stdout, stderr io.Writer) *flagSet {
	fs := newFlagSet("help", stdout, stderr, help{
		usage: "vapc help [COMMAND]",
		about: `Describes vapc (without a COMMAND) or one of its commands: what it does, its outcomes and exit
codes, examples and its flags. vapc COMMAND --help (or -h) prints the same.`,
		outcomes: []outcome{{exitOK, "the help was printed"}},
		examples: []example{
			{"what vapc replay does, its exit codes and flags", "vapc help replay"},
			{"the same", "vapc replay --help"},
		},
	})
	fs.args = "verbs"
	return fs
}

// runHelp prints the usage of vapc, or the help of a verb, on stdout.
func runHelp(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := helpFlagSet(stdout, stderr)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(rest) == 0:
		usage(stdout)
		return nil
	case len(rest) > 1:
		return usagef("help: give one command, not %q", rest)
	}
	name := rest[0]
	if name == "help" {
		fs.help(stdout)
		return nil
	}
	v, ok := verbs[name]
	if !ok {
		usage(stderr)
		return usagef("help: %s", unknownCommand(name))
	}
	return v.run(ctx, []string{"--help"}, stdin, stdout, stderr)
}
