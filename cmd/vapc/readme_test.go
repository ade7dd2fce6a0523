package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// ciCommands returns the commands of README.md's CI section: the lines of the block between
// <!-- ci-commands --> and <!-- /ci-commands -->.
func ciCommands(t *testing.T, readme string) []string {
	t.Helper()
	_, block, ok := strings.Cut(readme, "<!-- ci-commands -->")
	block, _, ok2 := strings.Cut(block, "<!-- /ci-commands -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no <!-- ci-commands --> block")
	}
	var cmds []string
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(l, "vapc ") {
			cmds = append(cmds, l)
		}
	}
	if len(cmds) != 3 {
		t.Fatalf("README.md's CI block has %d vapc commands, want check, test and replay: %q", len(cmds), cmds)
	}
	return cmds
}

// TestREADMECI runs the CI steps of README.md as written, from the root of the repository:
// each exits 0 and writes the report it names (SARIF, JUnit). The examples of examples/ci run
// the same commands.
func TestREADMECI(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := ciCommands(t, string(readme))
	for _, example := range []string{"../../examples/ci/github/vapc.yml", "../../examples/ci/gitlab/.gitlab-ci.yml"} {
		data, err := os.ReadFile(example)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Errorf("%s is not YAML: %v", example, err)
		}
		for _, c := range cmds {
			if !strings.Contains(string(data), c) {
				t.Errorf("%s does not run %q as README.md does", example, c)
			}
		}
	}

	out := t.TempDir()
	t.Chdir("../..")
	for _, c := range cmds {
		args := strings.Fields(c)[1:]
		file := ""
		if n := len(args); n >= 2 && args[n-2] == ">" {
			file, args = filepath.Join(out, args[n-1]), args[:n-2]
		}
		var stdout, stderr bytes.Buffer
		err := Run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		if code := ExitCode(err); code != exitOK {
			t.Fatalf("%s: exit %d (%v)\nstderr:\n%s", c, code, err, stderr.String())
		}
		if file == "" {
			continue
		}
		switch {
		case strings.HasSuffix(file, ".sarif"):
			var log struct {
				Version string
				Runs    []struct{ Results []any }
			}
			if err := json.Unmarshal(stdout.Bytes(), &log); err != nil || log.Version != "2.1.0" || len(log.Runs) != 1 {
				t.Errorf("%s: not a SARIF 2.1.0 log (%v)", c, err)
			}
		case strings.HasSuffix(file, ".xml"):
			var suites struct {
				Suites []struct {
					Tests    int `xml:"tests,attr"`
					Failures int `xml:"failures,attr"`
				} `xml:"testsuite"`
			}
			if err := xml.Unmarshal(stdout.Bytes(), &suites); err != nil || len(suites.Suites) == 0 || suites.Suites[0].Tests == 0 || suites.Suites[0].Failures != 0 {
				t.Errorf("%s: JUnit %+v (%v)\n%s", c, suites, err, stdout.String())
			}
		}
	}
}
