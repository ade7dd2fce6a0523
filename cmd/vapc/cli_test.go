package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHelp: vapc help, vapc help VERB and VERB -h print on stdout and exit 0; the help of
// --kubernetes-version lists the versions it accepts.
func TestHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args         []string
		code         int
		stdoutPrefix string
		stdoutHas    []string
		stderr       string
	}{
		{args: []string{"help"}, stdoutPrefix: "usage: vapc COMMAND", stdoutHas: []string{"  completion ", "  version ", "130  interrupted", "a first run"}},
		{args: []string{"--help"}, stdoutPrefix: "usage: vapc COMMAND"},
		{args: []string{"help", "check"}, stdoutPrefix: "usage: vapc check", stdoutHas: []string{"Kubernetes minor to check against: 1.30, 1.31, 1.32, 1.33, 1.34, 1.35, 1.36, 1.37", "--output text|json|jsonl|sarif (default text)"}},
		{args: []string{"check", "-h"}, stdoutPrefix: "usage: vapc check"},
		{args: []string{"check", "--help"}, stdoutPrefix: "usage: vapc check"},
		{args: []string{"help", "test"}, stdoutPrefix: "usage: vapc test", stdoutHas: []string{"Kubernetes minor to decide as: 1.37"}},
		{args: []string{"help", "replay"}, stdoutPrefix: "usage: vapc replay", stdoutHas: []string{"--max-malformed N (default 0)", "--fail-on deny|warn|any-change", "--check-recorded\n"}},
		{args: []string{"help", "help"}, stdoutPrefix: "usage: vapc help [COMMAND]"},
		{args: []string{"help", "--help"}, stdoutPrefix: "usage: vapc help [COMMAND]"},
		{args: []string{"help", "-h"}, stdoutPrefix: "usage: vapc help [COMMAND]"},
		{args: []string{"help", "completion"}, stdoutPrefix: "usage: vapc completion bash|zsh|fish"},
		{args: []string{"help", "version"}, stdoutPrefix: "usage: vapc version"},
		{args: []string{"help", "emit"}, stdoutPrefix: "usage: vapc emit"},
		{args: []string{"help", "nope"}, code: exitUsage, stderr: `vapc: help: unknown command "nope"`},
		{args: []string{"help", "replya"}, code: exitUsage, stderr: `vapc: help: unknown command "replya": did you mean replay?`},
		{args: []string{"chek"}, code: exitUsage, stderr: `vapc: unknown command "chek": did you mean check?`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runVapc(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("vapc %v: exit %d, want %d\nstderr:\n%s", tc.args, code, tc.code, stderr)
			}
			if !strings.HasPrefix(stdout, tc.stdoutPrefix) {
				t.Errorf("vapc %v: stdout begins %q, want %q", tc.args, firstLineOf(stdout), tc.stdoutPrefix)
			}
			for _, w := range tc.stdoutHas {
				if !strings.Contains(stdout, w) {
					t.Errorf("vapc %v: stdout lacks %q:\n%s", tc.args, w, stdout)
				}
			}
			if tc.stderr != "" && !strings.HasSuffix(strings.TrimSpace(stderr), tc.stderr) {
				t.Errorf("vapc %v: stderr ends %q, want %q", tc.args, stderr, tc.stderr)
			}
			if tc.code == exitOK && stderr != "" {
				t.Errorf("vapc %v: stderr %q, want nothing", tc.args, stderr)
			}
		})
	}
}

// TestEveryVerbHelp: the help of every verb (vapc help VERB, VERB --help and VERB -h print the
// same, on stdout, exit 0) says what the verb does, its outcomes with their exit codes (the
// shared 2 and 3 included), two or three examples whose flags are the verb's, and its flags
// as the README writes them: --name, or -n for a one-letter flag.
func TestEveryVerbHelp(t *testing.T) {
	t.Parallel()
	for _, name := range visibleVerbs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			help, stderr, code := runVapc(t, "", "help", name)
			if code != exitOK || stderr != "" {
				t.Fatalf("vapc help %s: exit %d, stderr %q", name, code, stderr)
			}
			for _, args := range [][]string{{name, "--help"}, {name, "-h"}} {
				if got, _, code := runVapc(t, "", args...); got != help || code != exitOK {
					t.Errorf("vapc %s (exit %d) differs from vapc help %s:\n%s", strings.Join(args, " "), code, name, cmp.Diff(help, got))
				}
			}
			sections := map[string]string{}
			var section string
			for _, l := range strings.Split(help, "\n") {
				switch {
				case strings.HasSuffix(l, ":") && !strings.HasPrefix(l, " "):
					section = l
				case section != "":
					sections[section] += l + "\n"
				}
			}
			if !strings.HasPrefix(help, "usage: vapc "+name) || !strings.Contains(strings.SplitN(help, "\n\n", 3)[1], " ") {
				t.Errorf("vapc help %s does not start with its usage and what it does:\n%s", name, help)
			}
			for _, code := range []int{exitOK, exitUsage, exitInternal} {
				if !regexp.MustCompile(fmt.Sprintf(`(?m)^  %-4d \S`, code)).MatchString(sections["outcomes (exit codes):"]) {
					t.Errorf("vapc help %s does not say when it exits %d:\n%s", name, code, help)
				}
			}
			var examples []string
			for _, l := range strings.Split(sections["examples:"], "\n") {
				if c, ok := strings.CutPrefix(l, "  "); ok && !strings.HasPrefix(c, "#") {
					examples = append(examples, c)
				}
			}
			if len(examples) < 2 || len(examples) > 3 {
				t.Errorf("vapc help %s has %d examples, want 2 or 3:\n%s", name, len(examples), help)
			}
			for _, e := range examples {
				i := strings.Index(e, "vapc "+name+" ")
				if i < 0 {
					continue // vapc help's examples: vapc replay --help
				}
				words := strings.Fields(e[i+len("vapc "+name+" "):])
				if j := slices.Index(words, ">"); j >= 0 {
					words = words[:j]
				}
				if _, err := parseFlags(verbs[name].flags(), words); err != nil {
					t.Errorf("vapc help %s: the example %q: %v", name, e, err)
				}
			}
			flags := sections["flags:"]
			for _, l := range strings.Split(flags, "\n") {
				if !strings.HasPrefix(l, "  -") {
					continue
				}
				f := strings.Fields(l)[0]
				if n := strings.TrimLeft(f, "-"); f != flagName(n) {
					t.Errorf("vapc help %s writes the flag %s, want %s", name, f, flagName(n))
				}
			}
			verbs[name].flags().VisitAll(func(f *flag.Flag) {
				if !strings.Contains(flags, "  "+flagName(f.Name)+" ") && !strings.Contains(flags, "  "+flagName(f.Name)+"\n") {
					t.Errorf("vapc help %s does not list %s:\n%s", name, flagName(f.Name), flags)
				}
			})
		})
	}
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestFlagErrorsOnce: a wrong flag is reported once, on stderr, with the verb and where to
// find its flags, written with two dashes as the help writes them, with the flags a mistyped
// one may have meant, and nothing on stdout (exit 2).
func TestFlagErrorsOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--nope", "x.yaml"}, "vapc: check: flag provided but not defined: --nope (vapc help check lists its flags)\n"},
		{[]string{"replay", "--max-malformed", "many"}, "vapc: replay: invalid value \"many\" for flag --max-malformed: parse error (vapc help replay lists its flags)\n"},
		{[]string{"test", "-output"}, "vapc: test: flag needs an argument: --output (vapc help test lists its flags)\n"},
		{[]string{"version", "--nope"}, "vapc: version: flag provided but not defined: --nope (vapc help version lists its flags)\n"},
		{[]string{"replay", "--fail-no", "deny"}, "vapc: replay: flag provided but not defined: --fail-no: did you mean --fail-on? (vapc help replay lists its flags)\n"},
		{[]string{"test", "-vv"}, "vapc: test: flag provided but not defined: --vv: did you mean -v? (vapc help test lists its flags)\n"},
	} {
		stdout, stderr, code := runVapc(t, "", tc.args...)
		if code != exitUsage || stdout != "" {
			t.Errorf("vapc %v: exit %d, stdout %q; want %d and nothing", tc.args, code, stdout, exitUsage)
		}
		if diff := cmp.Diff(tc.want, stderr); diff != "" {
			t.Errorf("vapc %v: stderr mismatch (-want +got):\n%s", tc.args, diff)
		}
	}
}

// TestVersion: vapc version and --version name vapc, the Kubernetes versions and the
// libraries; --output json is the same as JSON.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		stdout, stderr, code := runVapc(t, "", args...)
		if code != exitOK || stderr != "" {
			t.Fatalf("vapc %v: exit %d, stderr %q", args, code, stderr)
		}
		for _, w := range []string{"vapc ", "Kubernetes 1.37: decides and replays as kube-apiserver 1.37; checks 1.30, 1.31, 1.32, 1.33, 1.34, 1.35, 1.36, 1.37", "k8s.io/apiserver v0.37.0", "github.com/google/cel-go v"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("vapc %v lacks %q:\n%s", args, w, stdout)
			}
		}
	}
	stdout, _, code := runVapc(t, "", "version", "--output", "json")
	var v Versions
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != exitOK {
		t.Fatalf("vapc version --output json: exit %d, %v\n%s", code, err, stdout)
	}
	if v.Kubernetes != "1.37" || v.Libraries["k8s.io/apiserver"] != "v0.37.0" || v.Vapc == "" || v.Go == "" {
		t.Errorf("vapc version --output json = %+v", v)
	}
}

// TestCompletion: the scripts are valid in their shells and complete verbs, flags, flag
// values and files. bash is required; zsh and fish are checked where installed (CI installs
// them with hack/ci-packages.sh).
func TestCompletion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scripts := map[string]string{}
	for _, sh := range shells {
		stdout, stderr, code := runVapc(t, "", "completion", sh)
		if code != exitOK || stderr != "" || stdout == "" {
			t.Fatalf("vapc completion %s: exit %d, stderr %q", sh, code, stderr)
		}
		scripts[sh] = filepath.Join(dir, "vapc."+sh)
		if err := os.WriteFile(scripts[sh], []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, code := runVapc(t, "", "completion", "tcsh"); code != exitUsage {
		t.Errorf("vapc completion tcsh: exit %d, want %d", code, exitUsage)
	}

	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	complete := func(line string) string {
		t.Helper()
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		script := "source " + scripts["bash"] + "\nCOMP_WORDS=(" + quoteWords(words) + ")\nCOMP_CWORD=" + itoa(len(words)-1) + "\n_vapc\necho \"${COMPREPLY[*]}\"\n"
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash completion of %q: %v\n%s", line, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, tc := range []struct{ line, want string }{
		{"vapc re", "replay"},
		{"vapc ", "check completion emit help replay snapshot test version --help --version"},
		{"vapc replay --fail", "--fail-on"},
		{"vapc replay --output ", "text jsonl junit"},
		{"vapc check --kubernetes-version 1.3", "1.30 1.31 1.32 1.33 1.34 1.35 1.36 1.37"},
		{"vapc check --output s", "sarif"},
		{"vapc check pol", "policy.yaml"},
		{"vapc help ch", "check"},
		{"vapc completion f", "fish"},
		{"vapc emit --stage ", "Audit Warn Deny"},
	} {
		if got := complete(tc.line); got != tc.want {
			t.Errorf("bash completes %q with %q, want %q", tc.line, got, tc.want)
		}
	}

	for _, sh := range []string{"zsh", "fish"} {
		if _, err := exec.LookPath(sh); err != nil {
			t.Logf("%s is not installed: its script is not checked here (hack/ci-packages.sh installs it)", sh)
			continue
		}
		if out, err := exec.Command(sh, "-n", scripts[sh]).CombinedOutput(); err != nil {
			t.Errorf("%s -n %s: %v\n%s", sh, scripts[sh], err, out)
		}
	}
	if _, err := exec.LookPath("fish"); err == nil {
		out, err := exec.Command("fish", "-c", "source "+scripts["fish"]+"; complete -C 'vapc replay --output '").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "jsonl\t") {
			t.Errorf("fish completes 'vapc replay --output ' with %q (%v), want jsonl among them", out, err)
		}
	}
}

func quoteWords(words []string) string {
	var q []string
	for _, w := range words {
		q = append(q, "'"+strings.ReplaceAll(w, "'", `'\''`)+"'")
	}
	return strings.Join(q, " ")
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestSameMistakeSameCode: a mistake has one exit code in every verb and flag: a path that is
// not there is a usage error (2); a file that is not YAML, and a folder with nothing to read,
// are findings (1).
func TestSameMistakeSameCode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: x\n")
	badSuite := filepath.Join(dir, "bad.suite.yaml")
	writeFile(t, badSuite, "apiVersion: vapc.dev/v1alpha1\nkind: TestSuite\nmetadata:\n\tname: x\n")
	empty := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	policy := auditData + "kosmos-basic/policy.yaml"
	log := auditData + "kosmos-basic/audit.log.gz"
	tabAt := func(file string) string { return file + ":4:1: invalid YAML: a tab character in the indentation" }
	nothingIn := func(d string) string { return d + ": no .yaml, .yml or .json files in this folder" }
	for _, tc := range []struct {
		name string
		args []string
		code int
		has  string // in stderr or stdout
	}{
		{"check: missing", []string{"check", missing}, exitUsage, "vapc: check: " + missing + ": no such file or directory"},
		{"check --crd: missing", []string{"check", "--crd", missing, policy}, exitUsage, "vapc: check: --crd: " + missing + ": no such file or directory"},
		{"test: missing", []string{"test", missing}, exitUsage, "vapc: test: " + missing + ": no such file or directory"},
		{"replay --policies: missing", []string{"replay", "--policies", missing, log}, exitUsage, "vapc: replay: --policies: " + missing + ": no such file or directory"},
		{"replay --snapshot: missing", []string{"replay", "--policies", policy, "--snapshot", missing, log}, exitUsage, "vapc: replay: --snapshot: " + missing + ": no such file or directory"},
		{"replay --crd: missing", []string{"replay", "--policies", policy, "--crd", missing, log}, exitUsage, "vapc: replay: --crd: " + missing + ": no such file or directory"},
		{"replay log: missing", []string{"replay", "--policies", policy, missing}, exitUsage, "vapc: replay: " + missing + ": no such file or directory"},

		{"check: bad YAML", []string{"check", bad}, exitFindings, tabAt(bad)},
		{"check --crd: bad YAML", []string{"check", "--crd", bad, policy}, exitFindings, tabAt(bad)},
		{"test: bad YAML", []string{"test", badSuite}, exitFindings, tabAt(badSuite)},
		{"replay --policies: bad YAML", []string{"replay", "--policies", bad, log}, exitFindings, tabAt(bad)},
		{"replay --snapshot: bad YAML", []string{"replay", "--policies", policy, "--snapshot", bad, log}, exitFindings, tabAt(bad)},
		{"replay --crd: bad YAML", []string{"replay", "--policies", policy, "--crd", bad, log}, exitFindings, tabAt(bad)},

		{"check: empty folder", []string{"check", empty}, exitFindings, nothingIn(empty)},
		{"check --crd: empty folder", []string{"check", "--crd", empty, policy}, exitFindings, nothingIn(empty)},
		{"test: empty folder", []string{"test", empty}, exitFindings, nothingIn(empty)},
		{"replay --policies: empty folder", []string{"replay", "--policies", empty, log}, exitFindings, nothingIn(empty)},
		{"replay --snapshot: empty folder", []string{"replay", "--policies", policy, "--snapshot", empty, log}, exitFindings, nothingIn(empty)},
		{"replay --crd: empty folder", []string{"replay", "--policies", policy, "--crd", empty, log}, exitFindings, nothingIn(empty)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runVapc(t, "", tc.args...)
			if code != tc.code {
				t.Errorf("vapc %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, tc.has) {
				t.Errorf("vapc %v: output lacks %q\nstdout:\n%s\nstderr:\n%s", tc.args, tc.has, stdout, stderr)
			}
		})
	}
}
