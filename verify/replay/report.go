package replay

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
)

// JSONLWriter returns a sink that writes every record as one JSON line.
func JSONLWriter(w io.Writer) func(*Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return func(r *Record) error { return enc.Encode(r) }
}

// WriteText writes the human summary.
func WriteText(w io.Writer, s *Summary) error {
	p := &printer{w: w}
	p.f("Replayed %d lines (%s) from %s.\n", s.Lines, humanBytes(s.Bytes), strings.Join(s.Files, ", "))
	for _, n := range s.Notes {
		p.f("  note: %s\n", n)
	}
	p.f("  requests:            %d\n", s.Requests)
	p.f("  intermediate stages: %d (RequestReceived/ResponseStarted of the same requests)\n", s.IntermediateStages)
	if n := total(s.Incomplete); n > 0 {
		var parts []string
		for _, k := range sortedKeys(s.Incomplete) {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.Incomplete[k]))
		}
		p.f("  incomplete requests: %d without a final record (%s)\n", n, strings.Join(parts, ", "))
	}
	if s.Blank > 0 {
		p.f("  blank lines:         %d\n", s.Blank)
	}
	p.f("  malformed lines:     %d\n", s.MalformedCount)
	for _, m := range s.Malformed {
		p.f("    %s\n", m)
	}
	if s.MalformedCount > len(s.Malformed) {
		p.f("    ... and %d more\n", s.MalformedCount-len(s.Malformed))
	}
	p.f("Requests:\n")
	p.f("  evaluated:     %d (admit %d, deny %d, indeterminate %d; with Warn %d, with Audit %d)\n", s.Evaluated, s.Admit, s.Deny, total(s.Indeterminate), s.Warn, s.Audit)
	p.f("  not matched:   %d\n", s.NotMatched)
	p.f("  skipped:       %d (never reached validating admission)\n", total(s.Skipped))
	for _, k := range sortedKeys(s.Skipped) {
		p.f("    %-60s %d\n", k, s.Skipped[k])
	}
	if len(s.Indeterminate) > 0 {
		p.f("  indeterminate: %d\n", total(s.Indeterminate))
		for _, k := range sortedKeys(s.Indeterminate) {
			p.f("    %-60s %d\n", k, s.Indeterminate[k])
		}
	}
	if s.NoObject > 0 {
		p.f("  %d requests were logged at Metadata level, without objects: log pod and param writes at RequestResponse level to replay them.\n", s.NoObject)
	}
	p.f("  changed:       %d (decided otherwise than the log records)\n", s.Changed)
	if len(s.CustomResourceDefinitions) > 0 {
		p.f("CustomResourceDefinitions of the snapshot and the log:\n")
		for _, c := range s.CustomResourceDefinitions {
			p.f("  %s\n", c)
		}
	}
	for _, b := range s.Bindings {
		p.f("\nPolicy %s, binding %s:\n", b.Policy, b.Binding)
		p.f("  admit %d, deny %d, warn %d, audit %d, error %d, indeterminate %d\n", b.Admit, b.Deny, b.Warn, b.Audit, b.Error, b.Indeterminate)
		if len(b.TopUsers) > 0 {
			p.f("  top denied users:      %s\n", counts(b.TopUsers))
			p.f("  top denied namespaces: %s\n", counts(b.TopNamespaces))
			p.f("  top denied resources:  %s\n", counts(b.TopResources))
		}
		for _, e := range b.Examples {
			p.f("  %-13s %s (%s)\n", e.Outcome+":", e.Request, e.AuditID)
			if e.Detail != "" {
				p.f("                %s\n", firstLine(e.Detail))
			}
		}
	}
	if s.Checked > 0 || len(s.Disagreements) > 0 {
		p.f("\nChecked against the log's own verdicts: %d requests, %d disagreements.\n", s.Checked, len(s.Disagreements))
		for _, d := range s.Disagreements {
			p.f("  %s:%d %s: %s\n", d.File, d.Line, d.AuditID, d.Detail)
		}
	}
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func counts(cs []Count) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s (%d)", c.Value, c.Count))
	}
	return strings.Join(parts, ", ")
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// JUnit test report types.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes one test case per policy and binding; a case fails when failed says so
// for its binding (with --fail-on, what the gate refuses).
func WriteJUnit(w io.Writer, s *Summary, failed func(*BindingSummary) bool) error {
	suite := junitSuite{Name: "vapc replay"}
	for _, b := range s.Bindings {
		c := junitCase{Name: b.Policy + "/" + b.Binding, Classname: "vapc.replay." + b.Policy}
		counts := fmt.Sprintf("admit %d, deny %d, warn %d, audit %d, error %d, indeterminate %d", b.Admit, b.Deny, b.Warn, b.Audit, b.Error, b.Indeterminate)
		var ex []string
		for _, e := range b.Examples {
			ex = append(ex, fmt.Sprintf("%s %s (%s): %s", e.Outcome, e.Request, e.AuditID, firstLine(e.Detail)))
		}
		c.SystemOut = counts + "\n" + strings.Join(ex, "\n")
		if failed(b) {
			c.Failure = &junitFailure{Message: counts, Text: strings.Join(ex, "\n")}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
		suite.Tests++
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{suite}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
