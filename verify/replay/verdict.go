package replay

import (
	"fmt"
	"slices"
	"strings"
)

// FailOn is a prediction that fails a replay (`vapc replay --fail-on`).
type FailOn string

// The predictions a replay can fail on. Damaged input always fails it, and, with
// Gate.CheckRecorded, a disagreement.
const (
	// FailOnDeny fails a replay when a request would be denied.
	FailOnDeny FailOn = "deny"
	// FailOnWarn fails a replay when a request would be denied or warned.
	FailOnWarn FailOn = "warn"
	// FailOnAnyChange fails a replay when a request would be decided otherwise than the log
	// records, or when a verdict the log records cannot be reproduced (the request is
	// indeterminate).
	FailOnAnyChange FailOn = "any-change"
	// FailOnIndeterminate fails a replay when a request cannot be decided.
	FailOnIndeterminate FailOn = "indeterminate"
)

// FailOnValues are the values ParseFailOn accepts.
var FailOnValues = []FailOn{FailOnDeny, FailOnWarn, FailOnAnyChange, FailOnIndeterminate}

// ParseFailOn parses the value of --fail-on: one value, or several separated by commas
// ("deny,indeterminate"); "" is none.
func ParseFailOn(s string) ([]FailOn, error) {
	var out []FailOn
	for _, v := range strings.Split(s, ",") {
		f := FailOn(strings.TrimSpace(v))
		switch {
		case f == "" && strings.TrimSpace(s) == "":
			return nil, nil
		case !slices.Contains(FailOnValues, f):
			return nil, fmt.Errorf("must be deny, warn, any-change or indeterminate (several separated by commas), not %q", v)
		case !slices.Contains(out, f):
			out = append(out, f)
		}
	}
	return out, nil
}

// Gate is the exit rule of a replay in CI: what it fails on besides damaged input, which
// always fails it.
type Gate struct {
	// FailOn are the predictions that fail the replay.
	FailOn []FailOn `json:"failOn,omitempty"`
	// Strict counts a likely decision as indeterminate: it rests on a timing assumption. By
	// default a likely decision counts as its decision.
	Strict bool `json:"strict,omitempty"`
	// CheckRecorded fails the replay on a prediction that contradicts the log's own verdicts
	// (the replay must run WithCheckRecorded).
	CheckRecorded bool `json:"checkRecorded,omitempty"`
	// MaxMalformed is how many malformed lines the replay tolerates; more fail it.
	MaxMalformed int `json:"maxMalformed"`
}

// Fails says whether the gate fails on the prediction f.
func (g Gate) Fails(f FailOn) bool { return slices.Contains(g.FailOn, f) }

// failOnFlag is the gate's --fail-on as the flag takes it.
func (g Gate) failOnFlag() string {
	var parts []string
	for _, f := range g.FailOn {
		parts = append(parts, string(f))
	}
	return strings.Join(parts, ",")
}

// Reasons a replay fails, damaged input first.
const (
	// ReasonInterrupted: the replay was stopped (Ctrl-C, SIGTERM) before the end of its logs.
	ReasonInterrupted Reason = "interrupted"
	// ReasonUnreadable: a log could not be read to its end (a truncated or corrupt gzip
	// stream, a file that cannot be opened, a read error).
	ReasonUnreadable Reason = "unreadable"
	// ReasonNoEvents: the logs hold no audit event at all.
	ReasonNoEvents Reason = "no-events"
	// ReasonMalformed: more lines than Gate.MaxMalformed are not audit events.
	ReasonMalformed Reason = "malformed"
	// ReasonDisagreement: with Gate.CheckRecorded, a prediction contradicts the log.
	ReasonDisagreement Reason = "disagreement"
	// ReasonDeny: with FailOnDeny or FailOnWarn, a request would be denied.
	ReasonDeny Reason = "deny"
	// ReasonWarn: with FailOnWarn, a request would be warned.
	ReasonWarn Reason = "warn"
	// ReasonChanged: with FailOnAnyChange, a request would be decided otherwise than the log
	// records.
	ReasonChanged Reason = "changed"
	// ReasonUnreproduced: with FailOnAnyChange, a verdict the log records for a replayed
	// policy cannot be reproduced: the request is indeterminate.
	ReasonUnreproduced Reason = "unreproduced"
	// ReasonIndeterminate: with FailOnIndeterminate, a request cannot be decided.
	ReasonIndeterminate Reason = "indeterminate"
)

// Damaged says whether the reason is about the input rather than the predictions.
func (r Reason) Damaged() bool {
	switch r {
	case ReasonInterrupted, ReasonUnreadable, ReasonNoEvents, ReasonMalformed:
		return true
	}
	return false
}

// Failure is one reason a replay fails, with how many lines or requests it concerns and a
// sentence for people.
type Failure struct {
	Reason Reason `json:"reason"`
	Count  int    `json:"count"`
	Detail string `json:"detail"`
}

// Verdict is whether a replay passes its Gate: computed once (Summary.Decide), it is what the
// exit code, the text summary, JUnit and the final JSON line all state.
type Verdict struct {
	Pass bool `json:"pass"`
	// Partial says the replay was interrupted: the summary is of what was read.
	Partial bool `json:"partial,omitempty"`
	// Failures are the reasons it fails, damaged input first.
	Failures []Failure `json:"failures,omitempty"`
	// Gate is the rule it was decided by.
	Gate Gate `json:"gate"`
}

// Has says whether the verdict fails for the reason.
func (v *Verdict) Has(r Reason) bool {
	for _, f := range v.Failures {
		if f.Reason == r {
			return true
		}
	}
	return false
}

// Damaged says whether the verdict fails for the input (and not only for the predictions).
func (v *Verdict) Damaged() bool {
	for _, f := range v.Failures {
		if f.Reason.Damaged() {
			return true
		}
	}
	return false
}

// String is the verdict in one line: PASS, FAIL or INTERRUPTED and the reasons.
func (v *Verdict) String() string {
	head := "PASS"
	switch {
	case v.Partial:
		head = "INTERRUPTED"
	case !v.Pass:
		head = "FAIL"
	}
	if len(v.Failures) == 0 {
		return head
	}
	var parts []string
	for _, f := range v.Failures {
		parts = append(parts, f.Detail)
	}
	return head + ": " + strings.Join(parts, "; ")
}

// Decide computes the replay's verdict under the gate, stores it in the summary (Verdict)
// and returns it. Damaged input always fails: a log that is cut short, cannot be read, holds
// no audit event or more malformed lines than the gate allows.
func (s *Summary) Decide(g Gate) *Verdict {
	s.Verdict = g.verdict(s)
	return s.Verdict
}

// verdictOf is the summary's Verdict, or a zero Gate's when Decide has not run.
func verdictOf(s *Summary) *Verdict {
	if s.Verdict != nil {
		return s.Verdict
	}
	return Gate{}.verdict(s)
}

func (g Gate) verdict(s *Summary) *Verdict {
	v := &Verdict{Gate: g}
	fail := func(r Reason, n int, format string, args ...any) {
		v.Failures = append(v.Failures, Failure{Reason: r, Count: n, Detail: fmt.Sprintf(format, args...)})
	}
	if s.Partial {
		v.Partial = true
		fail(ReasonInterrupted, s.Lines, "interrupted after %d lines: the summary is of what was read", s.Lines)
	}
	converts := 0
	for _, u := range s.Unreadable {
		if u.convert {
			// Of a whole file, which it names: not of a line.
			fail(ReasonUnreadable, 1, "%s", u.Reason)
			converts++
			continue
		}
		fail(ReasonUnreadable, 1, "%s: the log is cut short or damaged: copy it again, or leave it out", u)
	}
	if events := s.IntermediateStages + s.Requests; events == 0 && !s.Partial && converts < len(s.Files) {
		skipped := ""
		if n := total(s.ExportSkipped); n > 0 {
			skipped = fmt.Sprintf(", and %d export %s none (%s)", n, plural(n, "record that holds", "records that hold"), strings.Join(sortedKeys(s.ExportSkipped), "; "))
		}
		fail(ReasonNoEvents, 0, "no audit events in %s (%d %s%s): nothing was replayed: give the files kube-apiserver's --audit-log-path writes, or the export of its audit log from EKS, AKS, GKE or the webhook backend (README: Where your audit log is)", strings.Join(s.Files, ", "), s.Lines, plural(s.Lines, "line", "lines"), skipped)
	}
	if n := s.MalformedCount - len(s.Unreadable); n > g.MaxMalformed {
		first := ""
		for _, m := range s.Malformed {
			if !m.unreadable {
				first = ": the first is " + m.String()
				break
			}
		}
		fail(ReasonMalformed, n, "%d malformed %s, more than --max-malformed %d%s: repair the log, or allow them with --max-malformed", n, plural(n, "line", "lines"), g.MaxMalformed, first)
	}
	if g.CheckRecorded && len(s.Disagreements) > 0 {
		fail(ReasonDisagreement, len(s.Disagreements), "%d %s with the verdicts the log records", len(s.Disagreements), plural(len(s.Disagreements), "disagreement", "disagreements"))
	}
	// A likely decision counts as its decision, or, strict, as indeterminate.
	deny, warn, changed, unreproduced, indeterminate := s.Deny, s.Warn, s.Changed, s.Unreproduced, total(s.Indeterminate)
	likely := ""
	if g.Strict {
		deny, warn, changed = deny-s.Likely.Deny, warn-s.Likely.Warn, changed-s.Likely.Changed
		unreproduced += s.Likely.Recorded
		indeterminate += s.Likely.Count
		likely = ", likely decisions counted as indeterminate (--strict)"
	}
	flag := " (--fail-on " + g.failOnFlag() + likely + ")"
	if (g.Fails(FailOnDeny) || g.Fails(FailOnWarn)) && deny > 0 {
		fail(ReasonDeny, deny, "%d %s be denied%s", deny, plural(deny, "request would", "requests would"), flag)
	}
	if g.Fails(FailOnWarn) && warn > 0 {
		fail(ReasonWarn, warn, "%d %s be warned%s", warn, plural(warn, "request would", "requests would"), flag)
	}
	if g.Fails(FailOnAnyChange) && changed > 0 {
		fail(ReasonChanged, changed, "%d %s be decided otherwise than the log records%s", changed, plural(changed, "request would", "requests would"), flag)
	}
	if g.Fails(FailOnAnyChange) && unreproduced > 0 {
		fail(ReasonUnreproduced, unreproduced, "%d %s the log records for the replayed policies cannot be reproduced: the %s not decided%s", unreproduced, plural(unreproduced, "verdict", "verdicts"), plural(unreproduced, "request is", "requests are"), flag)
	}
	if g.Fails(FailOnIndeterminate) && indeterminate > 0 {
		fail(ReasonIndeterminate, indeterminate, "%d %s be decided%s", indeterminate, plural(indeterminate, "request cannot", "requests cannot"), flag)
	}
	v.Pass = len(v.Failures) == 0
	return v
}

// BindingFails says whether the gate fails the replay for what the binding decided: with
// FailOnDeny, a binding that denied; with FailOnWarn, one that denied or warned (strict, not
// counting its likely decisions). Other reasons are not a binding's (a changed request may be
// decided by several, or by none of them); JUnit reports them as cases of their own.
func (g Gate) BindingFails(b *BindingSummary) bool {
	deny, warn := b.Deny, b.Warn
	if g.Strict {
		deny, warn = deny-b.LikelyDeny, warn-b.LikelyWarn
	}
	return ((g.Fails(FailOnDeny) || g.Fails(FailOnWarn)) && deny > 0) || (g.Fails(FailOnWarn) && warn > 0)
}
