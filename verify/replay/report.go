package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/vapc-dev/vapc/verify/internal/junit"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// JSONLWriter returns a sink that writes every record as one JSON line.
func JSONLWriter(w io.Writer) func(*Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return func(r *Record) error { return enc.Encode(r) }
}

// maxTextList is how many items of a list the text summary shows before "and N more".
const maxTextList = 10

// WriteText writes the human summary: the verdict first when Decide has computed it, then the
// totals, then the details, every list cut at ten items with "and N more".
func WriteText(w io.Writer, s *Summary) error {
	p := &printer{w: w}
	if v := s.Verdict; v != nil {
		writeVerdict(p, s, v)
	}
	writeRead(p, &s.Read)
	writeDecided(p, &s.Decided)
	writeMalformed(p, &s.Read)
	if len(s.CustomResourceDefinitions) > 0 {
		p.f("CustomResourceDefinitions of the snapshot and the log:\n")
		for _, c := range s.CustomResourceDefinitions {
			p.f("  %s\n", c)
		}
	}
	for _, b := range s.Bindings {
		writeBinding(p, b)
	}
	writeChecks(p, &s.Checks)
	return p.err
}

// writeRead writes what the replay read.
func writeRead(p *printer, s *Read) {
	p.f("Replayed %d lines (%s) from %s.\n", s.Lines, humanBytes(s.Bytes), filesText(s.Files))
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
	if s.Duplicates > 0 {
		p.f("  duplicates:          %d (events read again, the same as ones read before: not replayed again)\n", s.Duplicates)
	}
	if n := total(s.ExportSkipped); n > 0 {
		p.f("  export records skipped: %d (not events of the cluster's kube-apiservers, or read already)\n", n)
		for _, k := range sortedKeys(s.ExportSkipped) {
			p.f("    %-60s %d\n", k, s.ExportSkipped[k])
		}
	}
	p.f("  malformed lines:     %d\n", s.MalformedCount)
}

// writeDecided writes what the replay decided of the requests.
func writeDecided(p *printer, s *Decided) {
	p.f("Requests:\n")
	p.f("  evaluated:     %d (admit %d, deny %d, indeterminate %d; with Warn %d, with Audit %d)\n", s.Evaluated, s.Admit, s.Deny, total(s.Indeterminate), s.Warn, s.Audit)
	if s.Likely.Count > 0 {
		p.f("  likely:        %d of them (admit %d, deny %d): decided on the state the log's order gives, where a lag of kube-apiserver's informers or watch cache would give another outcome (--output jsonl lists the alternatives)\n",
			s.Likely.Count, s.Likely.Count-s.Likely.Deny, s.Likely.Deny)
	}
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
	if len(s.Mutated) > 0 {
		p.f("  mutated:       requests a MutatingAdmissionPolicy changed before validation, by policy:\n")
		for _, k := range sortedKeys(s.Mutated) {
			p.f("    %-60s %d\n", k, s.Mutated[k])
		}
		fields := sortedKeys(s.MutatedFields)
		sort.SliceStable(fields, func(i, j int) bool { return s.MutatedFields[fields[i]] > s.MutatedFields[fields[j]] })
		if len(fields) > 5 {
			fields = fields[:5]
		}
		for _, f := range fields {
			p.f("    field %-54s %d\n", f, s.MutatedFields[f])
		}
	}
	if s.NoObject > 0 && s.Truncated == 0 {
		p.f("  %d requests were logged at Metadata level, without objects: log pod and param writes at RequestResponse level to replay them.\n", s.NoObject)
	} else if s.NoObject > 0 {
		p.f("  %d requests were logged without objects (at Metadata level, or truncated): log pod and param writes at RequestResponse level to replay them.\n", s.NoObject)
	}
	if s.Truncated > 0 {
		p.f("  %d requests were logged without their objects by an audit backend that truncates (%s): raise kube-apiserver's --audit-log-truncate-max-event-size (and -max-batch-size), or leave --audit-log-truncate-enabled off; it also drops an event it cannot shrink below the limit, which the log then lacks.\n", s.Truncated, auditlog.AnnotationTruncated)
	}
	p.f("  changed:       %d (decided otherwise than the log records)\n", s.Changed)
	listed(p, "    ", s.Changes, s.Changed, "--output jsonl lists every request")
	if s.Unreproduced > 0 {
		p.f("  unreproduced:  %d (indeterminate, though the log records a verdict of a replayed policy)\n", s.Unreproduced)
		listed(p, "    ", s.UnreproducedRequests, s.Unreproduced, "--output jsonl lists every request")
	}
}

// listed writes the first maxTextList items, one a line after indent, and "and N more" of the
// total the items are the first of.
func listed[T fmt.Stringer](p *printer, indent string, items []T, total int, hint string) {
	for _, it := range items[:min(len(items), maxTextList)] {
		p.f("%s%s\n", indent, it)
	}
	more(p, indent, total, min(len(items), maxTextList), hint)
}

// writeMalformed writes the malformed lines.
func writeMalformed(p *printer, s *Read) {
	if s.MalformedCount > 0 {
		p.f("Malformed lines: %d\n", s.MalformedCount)
		listed(p, "  ", s.Malformed, s.MalformedCount, "")
	}
}

// writeBinding writes a binding's counts and examples.
func writeBinding(p *printer, b *BindingSummary) {
	p.f("\nPolicy %s, binding %s:\n", b.Policy, b.Binding)
	p.f("  admit %d, deny %d, warn %d, audit %d, error %d, indeterminate %d, likely %d\n", b.Admit, b.Deny, b.Warn, b.Audit, b.Error, b.Indeterminate, b.Likely)
	if len(b.TopUsers) > 0 {
		p.f("  top denied users:      %s\n", counts(b.TopUsers, b.DeniedUsers))
		p.f("  top denied namespaces: %s\n", counts(b.TopNamespaces, b.DeniedNamespaces))
		p.f("  top denied resources:  %s\n", counts(b.TopResources, b.DeniedResources))
	}
	shown := map[string]int{}
	var outcomes []string
	for _, e := range b.Examples {
		if shown[e.Outcome] == 0 {
			outcomes = append(outcomes, e.Outcome)
		}
		shown[e.Outcome]++
		p.f("  %-13s %s (%s)\n", e.Outcome+":", e.Request, e.AuditID)
		if e.Detail != "" {
			p.f("                %s\n", firstLine(e.Detail))
		}
	}
	var rest []string
	for _, o := range outcomes {
		if n := b.Outcomes(o) - shown[o]; n > 0 {
			rest = append(rest, fmt.Sprintf("%d more %s", n, o))
		}
	}
	if len(rest) > 0 {
		p.f("  ... and %s: --output jsonl lists every request\n", strings.Join(rest, ", "))
	}
}

// writeChecks writes the decisions compared with the log's verdicts.
func writeChecks(p *printer, s *Checks) {
	if s.Checked > 0 || len(s.Disagreements) > 0 || len(s.CheckedPolicies)+len(s.UncheckedPolicies) > 0 {
		p.f("\nChecked against the log's own verdicts: %d requests, %d disagreements.\n", s.Checked, len(s.Disagreements))
		if len(s.UncheckedPolicies) > 0 {
			them := plural(len(s.UncheckedPolicies), "it", "them")
			p.f("  not checked: %s: the log does not show %s installed (neither a create of %s with a binding's nor a verdict of %s), and a verdict the cluster did not give is no evidence\n",
				strings.Join(s.UncheckedPolicies, ", "), them, them, them)
		}
		for i, d := range s.Disagreements {
			if i == 2*maxTextList {
				break
			}
			p.f("  %s:%d %s: %s\n", d.File, d.Line, d.AuditID, d.Detail)
		}
		more(p, "  ", len(s.Disagreements), min(len(s.Disagreements), 2*maxTextList), "--output jsonl lists every one")
	}
}

// writeVerdict writes the verdict, and each reason of a failure on a line of its own.
func writeVerdict(p *printer, s *Summary, v *Verdict) {
	switch {
	case v.Pass:
		p.f("PASS: %s\n", passed(s, v.Gate))
	case v.Partial:
		p.f("INTERRUPTED: the replay was stopped; what follows is what was read\n")
	default:
		p.f("FAIL: %d %s\n", len(v.Failures), plural(len(v.Failures), "reason", "reasons"))
	}
	for _, f := range v.Failures {
		p.f("  %s: %s\n", f.Reason, f.Detail)
	}
	p.f("\n")
}

// passed says what a passing replay was checked for.
func passed(s *Summary, g Gate) string {
	parts := []string{fmt.Sprintf("the logs were read to their end, %d audit events, %d malformed lines (--max-malformed %d)", s.IntermediateStages+s.Requests, s.MalformedCount, g.MaxMalformed)}
	if g.CheckRecorded {
		parts = append(parts, fmt.Sprintf("%d requests checked against the log's verdicts without a disagreement", s.Checked))
	}
	strict := ""
	if g.Strict {
		strict = ", likely decisions counted as indeterminate (--strict)"
	}
	for _, f := range g.FailOn {
		switch f {
		case FailOnDeny:
			parts = append(parts, "no request would be denied (--fail-on deny"+strict+")")
		case FailOnWarn:
			parts = append(parts, "no request would be denied or warned (--fail-on warn"+strict+")")
		case FailOnAnyChange:
			parts = append(parts, "no request would be decided otherwise than recorded, every verdict the log records reproduced (--fail-on any-change"+strict+")")
		case FailOnIndeterminate:
			parts = append(parts, "every request decided (--fail-on indeterminate"+strict+")")
		}
	}
	return strings.Join(parts, "; ")
}

// more writes "... and N more" when shown of n items were written.
func more(p *printer, indent string, n, shown int, hint string) {
	if n <= shown {
		return
	}
	if hint != "" {
		hint = ": " + hint
	}
	p.f("%s... and %d more%s\n", indent, n-shown, hint)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
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

func total[K ~string](m map[K]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys[K ~string](m map[K]int) []K {
	var ks []K
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// counts lists the top values of a count of n distinct ones.
func counts(cs []Count, n int) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s (%d)", c.Value, c.Count))
	}
	if n > len(cs) {
		parts = append(parts, fmt.Sprintf("and %d more", n-len(cs)))
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
// WriteJUnit writes the replay as JUnit: the summary's Verdict (a zero Gate's when Decide has
// not run) is its cases, so that a CI page fails exactly when the exit code does. The case
// "input" fails on damaged input and has an error when the replay was interrupted; "recorded
// verdicts" (with Gate.CheckRecorded) fails on a disagreement; "fail-on VALUE" (with
// Gate.FailOn) fails on the predictions it refuses; each policy binding is a case that fails
// when --fail-on deny or warn refuses what it decided.
func WriteJUnit(w io.Writer, s *Summary) error {
	v := verdictOf(s)
	suite := &junit.Suite{Name: "vapc replay"}
	add := suite.Add
	reasons := func(pick func(Reason) bool) (msg string, lines []string) {
		var heads []string
		for _, f := range v.Failures {
			if pick(f.Reason) {
				heads = append(heads, fmt.Sprintf("%s: %d", f.Reason, f.Count))
				lines = append(lines, string(f.Reason)+": "+f.Detail)
			}
		}
		return strings.Join(heads, ", "), lines
	}

	input := &junit.Case{Name: "input", Classname: "vapc.replay",
		SystemOut: fmt.Sprintf("%d lines (%s) from %s: %d requests, %d malformed lines", s.Lines, humanBytes(s.Bytes), filesText(s.Files), s.Requests, s.MalformedCount)}
	if msg, lines := reasons(func(r Reason) bool { return r.Damaged() && r != ReasonInterrupted }); msg != "" {
		input.Failure = &junit.Failure{Message: msg, Type: "damaged-input", Text: strings.Join(lines, "\n")}
	}
	if v.Partial {
		input.Error = &junit.Failure{Message: "interrupted", Type: string(ReasonInterrupted),
			Text: fmt.Sprintf("the replay was interrupted after %d lines: this report is partial", s.Lines)}
	}
	add(input)

	if v.Gate.CheckRecorded {
		c := &junit.Case{Name: "recorded verdicts", Classname: "vapc.replay",
			SystemOut: fmt.Sprintf("%d requests checked, %d disagreements", s.Checked, len(s.Disagreements))}
		if msg, _ := reasons(func(r Reason) bool { return r == ReasonDisagreement }); msg != "" {
			var lines []string
			for i, d := range s.Disagreements {
				if i == 100 {
					lines = append(lines, fmt.Sprintf("... and %d more", len(s.Disagreements)-i))
					break
				}
				lines = append(lines, fmt.Sprintf("%s:%d %s: %s", d.File, d.Line, d.AuditID, d.Detail))
			}
			c.Failure = &junit.Failure{Message: msg, Type: string(ReasonDisagreement), Text: strings.Join(lines, "\n")}
		}
		add(c)
	}
	if len(v.Gate.FailOn) > 0 {
		c := &junit.Case{Name: "fail-on " + v.Gate.failOnFlag(), Classname: "vapc.replay",
			SystemOut: fmt.Sprintf("%d evaluated: admit %d, deny %d, warn %d, indeterminate %d, likely %d, changed %d, unreproduced %d", s.Evaluated, s.Admit, s.Deny, s.Warn, total(s.Indeterminate), s.Likely.Count, s.Changed, s.Unreproduced)}
		if msg, lines := reasons(func(r Reason) bool {
			return r == ReasonDeny || r == ReasonWarn || r == ReasonChanged || r == ReasonUnreproduced || r == ReasonIndeterminate
		}); msg != "" {
			if v.Gate.Fails(FailOnAnyChange) {
				for _, list := range [][]Change{s.Changes, s.UnreproducedRequests} {
					for i, ch := range list {
						if i == 100 {
							lines = append(lines, "... and more: --output jsonl lists every request")
							break
						}
						lines = append(lines, ch.String())
					}
				}
			}
			c.Failure = &junit.Failure{Message: msg, Type: v.Gate.failOnFlag(), Text: strings.Join(lines, "\n")}
		}
		add(c)
	}
	for _, b := range s.Bindings {
		c := &junit.Case{Name: b.Policy + "/" + b.Binding, Classname: "vapc.replay." + b.Policy}
		counts := fmt.Sprintf("admit %d, deny %d, warn %d, audit %d, error %d, indeterminate %d, likely %d", b.Admit, b.Deny, b.Warn, b.Audit, b.Error, b.Indeterminate, b.Likely)
		var ex []string
		for _, e := range b.Examples {
			ex = append(ex, fmt.Sprintf("%s %s (%s): %s", e.Outcome, e.Request, e.AuditID, firstLine(e.Detail)))
		}
		c.SystemOut = counts + "\n" + strings.Join(ex, "\n")
		if v.Gate.BindingFails(b) {
			c.Failure = &junit.Failure{Message: counts, Type: v.Gate.failOnFlag(), Text: strings.Join(ex, "\n")}
		}
		add(c)
	}
	return junit.Write(w, &junit.Suites{Suites: []*junit.Suite{suite}})
}

// End is the last line of `vapc replay --output jsonl`: the verdict and the totals. A stream
// without it was cut short; Partial says the replay was interrupted.
type End struct {
	Partial bool     `json:"partial"`
	Verdict *Verdict `json:"verdict"`
	Totals  Totals   `json:"totals"`
}

// Totals are the counts of a Summary that a JSON consumer needs most.
type Totals struct {
	Files         []string `json:"files"`
	Lines         int      `json:"lines"`
	Requests      int      `json:"requests"`
	Evaluated     int      `json:"evaluated"`
	Admit         int      `json:"admit"`
	Deny          int      `json:"deny"`
	Indeterminate int      `json:"indeterminate"`
	Likely        int      `json:"likely"`
	Warn          int      `json:"warn"`
	Changed       int      `json:"changed"`
	Unreproduced  int      `json:"unreproduced"`
	Malformed     int      `json:"malformed"`
	Unreadable    int      `json:"unreadable"`
	Checked       int      `json:"checked"`
	Disagreements int      `json:"disagreements"`
}

// WriteJSONLEnd writes the End line of the summary (its Verdict, or a zero Gate's when Decide
// has not run).
func WriteJSONLEnd(w io.Writer, s *Summary) error {
	v := verdictOf(s)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(End{Partial: s.Partial, Verdict: v, Totals: Totals{
		Files: s.Files, Lines: s.Lines, Requests: s.Requests, Evaluated: s.Evaluated,
		Admit: s.Admit, Deny: s.Deny, Indeterminate: total(s.Indeterminate), Likely: s.Likely.Count, Warn: s.Warn,
		Changed: s.Changed, Unreproduced: s.Unreproduced, Malformed: s.MalformedCount, Unreadable: len(s.Unreadable),
		Checked: s.Checked, Disagreements: len(s.Disagreements),
	}})
}

// filesText names the files a replay read: each of a few, and of many (a folder of an export's
// hourly objects) how many, the first and the last (the JSON summary lists every one).
func filesText(files []string) string {
	const few = 6
	if len(files) <= few {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%d files: %s, %s, ... %s", len(files), files[0], files[1], files[len(files)-1])
}
