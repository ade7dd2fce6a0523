package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

func init() {
	register("completion", verb{summary: "print the shell completion script for bash, zsh or fish", run: runCompletion,
		flags: func() *flagSet { return completionFlagSet(io.Discard, io.Discard) }})
}

func completionFlagSet(stdout, stderr io.Writer) *flagSet {
	fs := newFlagSet("completion", stdout, stderr, help{
		usage:    "vapc completion bash|zsh|fish",
		about:    `Prints a script that completes vapc's commands, flags, flag values and files in the shell.`,
		outcomes: []outcome{{exitOK, "the script was printed"}},
		examples: []example{
			{"bash: this shell (or save it in /etc/bash_completion.d/vapc)", "source <(vapc completion bash)"},
			{"zsh: then start a new shell", `vapc completion zsh > "${fpath[1]}/_vapc"`},
			{"fish", "vapc completion fish > ~/.config/fish/completions/vapc.fish"},
		},
	})
	fs.args = "shells"
	return fs
}

var shells = []string{"bash", "zsh", "fish"}

func runCompletion(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := completionFlagSet(stdout, stderr)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		fs.Usage()
		return usagef("completion: give one shell: bash, zsh or fish")
	}
	cs := completions()
	switch rest[0] {
	case "bash":
		_, err = io.WriteString(stdout, cs.bash())
	case "zsh":
		_, err = io.WriteString(stdout, cs.zsh())
	case "fish":
		_, err = io.WriteString(stdout, cs.fish())
	default:
		return usagef("completion: unknown shell %q: bash, zsh or fish", rest[0])
	}
	return err
}

// completion is what a shell completes of one verb.
type completion struct {
	name, summary string
	flags         []completionFlag
	args          string // "files", "verbs", "shells" or ""
}

type completionFlag struct {
	name, usage string
	bool        bool
	values      []string
}

type completionSet []completion

// completions lists the visible verbs, their flags and what their arguments are.
func completions() completionSet {
	var cs completionSet
	for _, name := range visibleVerbs() {
		v := verbs[name]
		c := completion{name: name, summary: v.summary}
		switch {
		case name == "help":
			c.args = "verbs"
		case v.flags != nil:
			fs := v.flags()
			c.args = fs.args
			fs.VisitAll(func(f *flag.Flag) {
				b, ok := f.Value.(interface{ IsBoolFlag() bool })
				c.flags = append(c.flags, completionFlag{name: f.Name, usage: f.Usage, bool: ok && b.IsBoolFlag(), values: fs.values[f.Name]})
			})
		}
		cs = append(cs, c)
	}
	return cs
}

func visibleVerbs() []string {
	var names []string
	for n, v := range verbs {
		if !v.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

func (cs completionSet) names() string {
	var n []string
	for _, c := range cs {
		n = append(n, c.name)
	}
	return strings.Join(n, " ")
}

func (cs completionSet) bash() string {
	var b strings.Builder
	b.WriteString("# bash completion for vapc: source <(vapc completion bash)\n")
	b.WriteString("_vapc() {\n")
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n")
	b.WriteString("  COMPREPLY=()\n")
	fmt.Fprintf(&b, "  if ((COMP_CWORD == 1)); then\n    COMPREPLY=($(compgen -W '%s --help --version' -- \"$cur\"))\n    return\n  fi\n", cs.names())
	b.WriteString("  case ${COMP_WORDS[1]} in\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "  %s)\n", c.name)
		var names []string
		var valued []string
		for _, f := range c.flags {
			names = append(names, "--"+f.name)
			switch {
			case len(f.values) > 0:
				fmt.Fprintf(&b, "    if [[ $prev == -%s || $prev == --%s ]]; then COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return; fi\n", f.name, f.name, strings.Join(f.values, " "))
			case !f.bool:
				valued = append(valued, "-"+f.name, "--"+f.name)
			}
		}
		if len(valued) > 0 {
			// The value of a flag without choices is a file or a number: the shell's default.
			fmt.Fprintf(&b, "    case $prev in %s) return ;; esac\n", strings.Join(valued, "|"))
		}
		if len(names) > 0 {
			fmt.Fprintf(&b, "    if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W '%s --help' -- \"$cur\")); return; fi\n", strings.Join(names, " "))
		}
		switch c.args {
		case "verbs":
			fmt.Fprintf(&b, "    COMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n", cs.names())
		case "shells":
			fmt.Fprintf(&b, "    COMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n", strings.Join(shells, " "))
		case "files":
			b.WriteString("    COMPREPLY=($(compgen -f -- \"$cur\"))\n")
		}
		b.WriteString("    ;;\n")
	}
	b.WriteString("  esac\n}\ncomplete -o default -o filenames -F _vapc vapc\n")
	return b.String()
}

// zshQuote makes s a description inside a single-quoted _arguments spec.
func zshQuote(s string) string {
	s = strings.NewReplacer("'", `'\''`, "[", "(", "]", ")", ":", " -").Replace(s)
	return s
}

func (cs completionSet) zsh() string {
	var b strings.Builder
	b.WriteString("#compdef vapc\n# zsh completion for vapc: vapc completion zsh > \"${fpath[1]}/_vapc\"\n")
	b.WriteString("_vapc() {\n  local -a verbs\n  verbs=(\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "    '%s:%s'\n", c.name, zshQuote(c.summary))
	}
	b.WriteString("  )\n  if ((CURRENT == 2)); then\n    _describe 'command' verbs\n    return\n  fi\n")
	b.WriteString("  local verb=$words[2]\n  shift words\n  ((CURRENT--))\n  case $verb in\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "  %s)\n    _arguments -S \\\n", c.name)
		for _, f := range c.flags {
			switch {
			case f.bool:
				fmt.Fprintf(&b, "      '--%s[%s]' \\\n", f.name, zshQuote(f.usage))
			case len(f.values) > 0:
				fmt.Fprintf(&b, "      '*--%s=[%s]:value:(%s)' \\\n", f.name, zshQuote(f.usage), strings.Join(f.values, " "))
			default:
				fmt.Fprintf(&b, "      '*--%s=[%s]:value:_files' \\\n", f.name, zshQuote(f.usage))
			}
		}
		switch c.args {
		case "verbs":
			fmt.Fprintf(&b, "      '1:command:(%s)'\n", cs.names())
		case "shells":
			fmt.Fprintf(&b, "      '1:shell:(%s)'\n", strings.Join(shells, " "))
		case "files":
			b.WriteString("      '*:file:_files'\n")
		default:
			b.WriteString("      '--help[show the help]'\n")
		}
		b.WriteString("    ;;\n")
	}
	b.WriteString("  esac\n}\n_vapc \"$@\"\n")
	return b.String()
}

// fishQuote makes s a single-quoted fish string.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

func (cs completionSet) fish() string {
	var b strings.Builder
	b.WriteString("# fish completion for vapc: vapc completion fish > ~/.config/fish/completions/vapc.fish\n")
	b.WriteString("complete -c vapc -f\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "complete -c vapc -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.summary))
	}
	for _, c := range cs {
		cond := fishQuote("__fish_seen_subcommand_from " + c.name)
		for _, f := range c.flags {
			switch {
			case f.bool:
				fmt.Fprintf(&b, "complete -c vapc -n %s -l %s -d %s\n", cond, f.name, fishQuote(f.usage))
			case len(f.values) > 0:
				fmt.Fprintf(&b, "complete -c vapc -n %s -l %s -x -a %s -d %s\n", cond, f.name, fishQuote(strings.Join(f.values, " ")), fishQuote(f.usage))
			default:
				fmt.Fprintf(&b, "complete -c vapc -n %s -l %s -r -F -d %s\n", cond, f.name, fishQuote(f.usage))
			}
		}
		switch c.args {
		case "verbs":
			fmt.Fprintf(&b, "complete -c vapc -n %s -a %s\n", cond, fishQuote(cs.names()))
		case "shells":
			fmt.Fprintf(&b, "complete -c vapc -n %s -a %s\n", cond, fishQuote(strings.Join(shells, " ")))
		case "files":
			fmt.Fprintf(&b, "complete -c vapc -n %s -F\n", cond)
		}
	}
	return b.String()
}
