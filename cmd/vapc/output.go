package main

import (
	"slices"
	"strings"
)

// formatNames is vapc's output vocabulary: a verb that writes a report takes --output with
// these names, and a name means the same in every verb (README.md, "Output formats").
var formatNames = []string{"text", "json", "jsonl", "junit", "sarif"}

// format is one --output format of a verb, and what the verb writes in it.
type format struct{ name, what string }

// outputs are the --output formats of a verb: those it writes, and why it does not write the
// others of the vocabulary.
type outputs struct {
	verb   string
	writes []format
	// why says, for each format of the vocabulary the verb does not write, why not and what to
	// use instead.
	why map[string]string
}

var (
	checkOutputs = outputs{verb: "check", writes: []format{
		{"text", "the findings, each at FILE:LINE:COL with a caret"},
		{"json", "one JSON list of the findings"},
		{"jsonl", "one finding a line"},
		{"sarif", "a SARIF 2.1.0 log, for code scanning"},
	}, why: map[string]string{
		"junit": "a finding is a place in a policy file, which --output sarif carries to code scanning; JUnit is for test cases (vapc test) and replay gates (vapc replay)",
	}}
	testOutputs = outputs{verb: "test", writes: []format{
		{"text", "PASS or FAIL a case, and why"},
		{"json", "one JSON list of the suites and their cases"},
		{"jsonl", "one case a line"},
		{"junit", "a test case a case, for the CI's test report"},
	}, why: map[string]string{
		"sarif": "a failed case is not a place in a policy file (vapc check --output sarif reports those): use junit for the CI's test report",
	}}
	replayOutputs = outputs{verb: "replay", writes: []format{
		{"text", "the summary, its verdict first"},
		{"jsonl", "one record a request, as it is read, and the verdict last"},
		{"junit", "the verdict's gates as test cases"},
	}, why: map[string]string{
		"json":  "a replay writes a record a request while it reads the logs, one JSON line each (--output jsonl, the last line the verdict and totals): one JSON document would hold the records of millions of events in memory until the end",
		"sarif": "a replay's findings are requests of a log, not places in a policy file (vapc check --output sarif reports those): use junit for the CI's test report",
	}}
	versionOutputs = outputs{verb: "version", writes: []format{
		{"text", "one line a version"},
		{"json", "one JSON object"},
	}, why: map[string]string{
		"jsonl": "version writes one record: --output json",
		"junit": "version has nothing to test",
		"sarif": "version has no findings",
	}}
)

// names are the formats the verb writes.
func (o outputs) names() []string {
	var n []string
	for _, f := range o.writes {
		n = append(n, f.name)
	}
	return n
}

// usage is the help of the verb's --output flag.
func (o outputs) usage() string {
	var parts []string
	for _, f := range o.writes {
		parts = append(parts, f.name+" ("+f.what+")")
	}
	return "output format: " + strings.Join(parts, ", ")
}

// check refuses, as a usage error, a format the verb does not write, saying what it writes
// and, for a format of the vocabulary, why not this one.
func (o outputs) check(value string) error {
	if slices.Contains(o.names(), value) {
		return nil
	}
	takes := orList(o.names())
	if why, ok := o.why[value]; ok {
		return usagef("%s: --output %s: %s writes %s: %s", o.verb, value, o.verb, takes, why)
	}
	return usagef("%s: --output %q: %s writes %s (vapc's formats are %s; not every command writes each: vapc help %s)", o.verb, value, o.verb, takes, strings.Join(formatNames, ", "), o.verb)
}

// outputFlag defines a verb's --output flag.
func outputFlag(fs *flagSet, p *string, o outputs) {
	fs.StringVar(p, "output", "text", o.usage())
	fs.choices("output", o.names()...)
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
