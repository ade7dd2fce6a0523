package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOutputVocabulary: every verb that writes a report takes --output with the names of one
// vocabulary (text, json, jsonl, junit, sarif), each meaning the same in every verb; a name a
// verb does not write is a usage error that says what the verb writes and why not this one.
func TestOutputVocabulary(t *testing.T) {
	t.Parallel()
	inputs := map[string][]string{
		"check":   {"../../testdata/check/lint-scale-subresource.yaml"}, // warnings: exit 0, findings to write
		"test":    {"../../testdata/suites/kosmos/kosmos.suite.yaml"},
		"replay":  {"--policies", auditData + "kosmos-basic/policy.yaml", auditData + "kosmos-basic/audit.log.gz"},
		"version": nil,
	}
	for _, o := range []outputs{checkOutputs, testOutputs, replayOutputs, versionOutputs} {
		for _, format := range formatNames {
			t.Run(o.verb+"/"+format, func(t *testing.T) {
				t.Parallel()
				args := append([]string{o.verb, "--output", format}, inputs[o.verb]...)
				stdout, stderr, code := runVapc(t, "", args...)
				why, refused := o.why[format]
				switch {
				case refused:
					want := "vapc: " + o.verb + ": --output " + format + ": " + o.verb + " writes " + orList(o.names()) + ": " + why + "\n"
					if code != exitUsage || stderr != want {
						t.Errorf("vapc %s: exit %d, stderr %q; want %d and %q", strings.Join(args, " "), code, stderr, exitUsage, want)
					}
				case code != exitOK || stdout == "":
					t.Errorf("vapc %s: exit %d, stdout %q, stderr %q; want 0 and the output", strings.Join(args, " "), code, stdout, stderr)
				case format == "json":
					if !json.Valid([]byte(stdout)) {
						t.Errorf("vapc %s: not one JSON document:\n%s", strings.Join(args, " "), stdout)
					}
				case format == "jsonl":
					for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
						if !json.Valid([]byte(l)) || !strings.HasPrefix(l, "{") {
							t.Errorf("vapc %s: a line is not a JSON object: %s", strings.Join(args, " "), l)
						}
					}
				}
			})
		}
		// Each format of the vocabulary is written or refused with a reason.
		for _, format := range formatNames {
			_, refused := o.why[format]
			writes := strings.Contains(" "+strings.Join(o.names(), " ")+" ", " "+format+" ")
			if refused == writes {
				t.Errorf("%s: --output %s is written: %t, refused with a reason: %t; want one of them", o.verb, format, writes, refused)
			}
		}
	}
	_, stderr, code := runVapc(t, "", "check", "--output", "yaml", "../../testdata/check/valid-kosmos-guard.yaml")
	if want := `vapc: check: --output "yaml": check writes text, json, jsonl or sarif (vapc's formats are text, json, jsonl, junit, sarif; not every command writes each: vapc help check)` + "\n"; code != exitUsage || stderr != want {
		t.Errorf("vapc check --output yaml: exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, want)
	}
}
