package suite

import (
	"fmt"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify"
)

// compare returns how the decision differs from the expectation.
func compare(want *Expect, got *verify.Decision) []string {
	var out []string
	gotDecision := "admit"
	if !got.Allowed {
		gotDecision = "deny"
	}
	if want.Decision != gotDecision {
		out = append(out, fmt.Sprintf("decision: want %s, got %s", want.Decision, got.Summary()))
	}
	if want.Code != 0 && want.Code != got.Code {
		out = append(out, fmt.Sprintf("code: want %d, got %d", want.Code, got.Code))
	}
	if want.Reason != "" && want.Reason != string(got.Reason) {
		out = append(out, fmt.Sprintf("reason: want %s, got %s", want.Reason, got.Reason))
	}
	if want.Message != "" && want.Message != got.Message {
		out = append(out, fmt.Sprintf("message mismatch (-want +got):\n%s", cmp.Diff(want.Message, got.Message)))
	}
	if want.Warnings != nil {
		if d := cmp.Diff(*want.Warnings, got.Warnings, emptyIsNil()); d != "" {
			out = append(out, fmt.Sprintf("warnings mismatch (-want +got):\n%s", d))
		}
	}
	if want.AuditAnnotations != nil {
		if d := cmp.Diff(*want.AuditAnnotations, got.AuditAnnotations, emptyIsNil()); d != "" {
			out = append(out, fmt.Sprintf("auditAnnotations mismatch (-want +got):\n%s", d))
		}
	}
	for _, w := range want.Results {
		if !hasResult(w, got.Results) {
			out = append(out, fmt.Sprintf("no result %s; got:\n%s", describeExpected(w), describeResults(got.Results)))
		}
	}
	return out
}

func emptyIsNil() cmp.Option {
	return cmp.FilterValues(func(a, b any) bool { return isEmpty(a) && isEmpty(b) }, cmp.Ignore())
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case []string:
		return len(t) == 0
	case map[string]string:
		return len(t) == 0
	}
	return false
}

func hasResult(w ExpectResult, got []verify.Result) bool {
	for _, r := range got {
		if r.Policy != w.Policy || r.Result != w.Result ||
			(w.Binding != "" && r.Binding != w.Binding) ||
			(w.Param != "" && r.Param.String() != w.Param) ||
			(w.Message != "" && r.Message != w.Message) ||
			(w.Reason != "" && string(r.Reason) != w.Reason) ||
			(w.MatchCondition != "" && r.MatchCondition != w.MatchCondition) ||
			(w.ExpressionIndex != nil && (r.ExpressionIndex == nil || *r.ExpressionIndex != *w.ExpressionIndex)) {
			continue
		}
		if w.Actions != nil {
			var acts []string
			for _, a := range r.Actions {
				acts = append(acts, string(a))
			}
			if !cmp.Equal(w.Actions, acts, emptyIsNil()) {
				continue
			}
		}
		return true
	}
	return false
}

func describeExpected(w ExpectResult) string {
	s := fmt.Sprintf("%s policy=%s", w.Result, w.Policy)
	if w.Binding != "" {
		s += " binding=" + w.Binding
	}
	if w.Param != "" {
		s += " param=" + w.Param
	}
	if w.ExpressionIndex != nil {
		s += fmt.Sprintf(" expressionIndex=%d", *w.ExpressionIndex)
	}
	if w.Actions != nil {
		s += fmt.Sprintf(" actions=%v", w.Actions)
	}
	if w.Message != "" {
		s += fmt.Sprintf(" message=%q", w.Message)
	}
	return s
}

func describeResults(rs []verify.Result) string {
	if len(rs) == 0 {
		return "  (no policy applied)"
	}
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %s\n", describeResult(r))
	}
	return strings.TrimRight(b.String(), "\n")
}

func describeResult(r verify.Result) string {
	s := fmt.Sprintf("%s policy=%s", r.Result, r.Policy)
	if r.Binding != "" {
		s += " binding=" + r.Binding
	}
	if r.Param != nil {
		s += " param=" + r.Param.String()
	}
	if r.ExpressionIndex != nil {
		s += fmt.Sprintf(" expressionIndex=%d", *r.ExpressionIndex)
	}
	if len(r.Actions) > 0 {
		s += fmt.Sprintf(" actions=%v", r.Actions)
	}
	if r.Message != "" {
		s += fmt.Sprintf(" message=%q", r.Message)
	}
	return s
}
