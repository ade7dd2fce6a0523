package cel

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/vapc-dev/vapc/cel/manifest"
)

// Severity says whether a diagnostic makes the policy unusable.
type Severity string

// Severities.
const (
	// Error: the apiserver refuses the object, the expression cannot work, or the input is bad.
	Error Severity = "error"
	// Warning: the policy is accepted but something deserves a look.
	Warning Severity = "warning"
	// Info: a figure worth knowing, such as an expression's worst-case cost; shown on request.
	Info Severity = "info"
)

// Category says which stage of the apiserver's life of a policy a diagnostic comes from.
type Category string

// Categories.
const (
	// CategoryInput is a file that cannot be read as a policy or binding.
	CategoryInput Category = "input"
	// CategoryCreate is an error kube-apiserver returns when the object is created.
	CategoryCreate Category = "create"
	// CategoryType is a type-checking warning that kube-controller-manager writes into
	// status.typeChecking.expressionWarnings once the policy is live.
	CategoryType Category = "type"
	// CategoryCost is a static cost estimate that can exceed the apiserver's limits.
	CategoryCost Category = "cost"
	// CategoryCoverage says what could not be checked (no schema, wildcard, subresource).
	CategoryCoverage Category = "coverage"
	// CategoryLint is a mistake users hit in practice that the apiserver accepts.
	CategoryLint Category = "lint"
)

// Diagnostic is one finding about a policy or binding.
type Diagnostic struct {
	Pos      manifest.Position `json:"pos"`
	Field    string            `json:"field,omitempty"`
	Severity Severity          `json:"severity"`
	Category Category          `json:"category"`
	// Object names the policy or binding, as Kind/name.
	Object string `json:"object,omitempty"`
	// Kind is the group/version/kind an expression was checked against, for type errors
	// (kinds, comma-separated, when it fails the same way for several).
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message"`
	// Hint says what to do, where the message alone does not.
	Hint string `json:"hint,omitempty"`
	// Expression is the line of the expression the diagnostic points into. Column is the
	// 1-based character column of the offending character in that line, for the caret of
	// String: JSON has one column, Pos.Col, the character column in the file.
	Expression string `json:"expression,omitempty"`
	Column     int    `json:"-"`
}

// String formats the diagnostic as FILE:LINE:COL: FIELD: [warning: ]MESSAGE[ (checked as
// KIND)][: HINT], followed by the expression line and a caret under the column when it points
// into an expression.
func (d Diagnostic) String() string {
	var b strings.Builder
	if pos := d.Pos.String(); pos != "" {
		b.WriteString(pos)
		b.WriteString(": ")
	}
	if d.Field != "" {
		b.WriteString(d.Field)
		b.WriteString(": ")
	}
	if d.Severity != Error {
		b.WriteString(string(d.Severity))
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	if d.Kind != "" {
		fmt.Fprintf(&b, " (checked as %s)", d.Kind)
	}
	if d.Hint != "" {
		b.WriteString(": ")
		b.WriteString(d.Hint)
	}
	if d.Expression != "" && d.Column > 0 {
		fmt.Fprintf(&b, "\n | %s\n | %s^", d.Expression, caretPad(d.Expression, d.Column-1))
	}
	return b.String()
}

// caretPad returns the padding that puts a caret under character n of line, keeping tabs.
func caretPad(line string, n int) string {
	var b strings.Builder
	for i, r := range []rune(line) {
		if i >= n {
			break
		}
		if r == '\t' {
			b.WriteRune('\t')
		} else {
			b.WriteRune('.')
		}
	}
	return b.String()
}

// Fatal says whether the diagnostic makes the policy unfit to run, as vapc replay and vapc test
// run policies: every error of vapc check (what kube-apiserver refuses to create, an expression
// that fails type checking for every kind the policy matches, an input that is not a policy),
// but a messageExpression's type error: kube-apiserver words a denial with the static message
// when the messageExpression fails, and the decision stands.
func (d Diagnostic) Fatal() bool {
	return d.Severity == Error && !(d.Category == CategoryType && strings.HasSuffix(d.Field, ".messageExpression"))
}

// Diagnostics is a list of findings.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Without returns the diagnostics that do not have the severity.
func (ds Diagnostics) Without(s Severity) Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity != s {
			out = append(out, d)
		}
	}
	return out
}

// WithoutCostInfo returns the diagnostics but the estimated costs (infos of CategoryCost).
func (ds Diagnostics) WithoutCostInfo() Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity != Info || d.Category != CategoryCost {
			out = append(out, d)
		}
	}
	return out
}

// Sort orders diagnostics by file, line, column, then field and message.
func (ds Diagnostics) Sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		return a.Message < b.Message
	})
}

// Error makes a list with errors usable as an error.
func (ds Diagnostics) Error() string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, "\n")
}

// declTypeNameRE matches the names the apiserver's type checker gives the object types of a
// schema: the kind, a random number, and the path of the field (Deployment812458616.spec).
var declTypeNameRE = regexp.MustCompile(`\b([A-Z][A-Za-z0-9]*?)\d{6,}((?:\.[A-Za-z0-9_]+)*)\b`)

// typeNames writes the types of a type checker's message as the schema names them: the kind
// and the path of the field (Deployment.spec.template), without the random number.
func typeNames(msg string) string { return declTypeNameRE.ReplaceAllString(msg, "$1$2") }

// celIssue is one error of a cel-go issues string.
type celIssue struct {
	line, col int // line 1-based, col 0-based, as cel-go's common.Location
	msg       string
	// hint is what it may have meant and fields the fields where one is undefined, when they
	// are few (hinter.hint).
	hint, fields string
	// untyped, when set, says why the undefined field is one the object holds at runtime: it
	// is in the kind's schema in a form the apiserver's type checker does not type, or in an
	// embedded object whose schema declares no fields (see Checker.untypedField).
	untyped string
}

// issueRE matches the head line of each error in cel-go's Issues.String():
// "ERROR: <input>:1:19: undefined field 'nodeNmae'".
var issueRE = regexp.MustCompile(`(?m)(?:^|\s)ERROR: <input>:(-?\d+):(-?\d+): (.*)$`)

// parseIssues extracts the errors from the text the apiserver's compiler returns (cel-go's
// Issues.String(), possibly behind a prefix). Text without positions yields one issue with line 0.
func parseIssues(text string) []celIssue {
	ms := issueRE.FindAllStringSubmatch(text, -1)
	if len(ms) == 0 {
		return []celIssue{{msg: strings.TrimSpace(text)}}
	}
	var out []celIssue
	for _, m := range ms {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		if line < 1 || col < 1 {
			line, col = 0, 1 // no position, e.g. the expression size limit
		}
		out = append(out, celIssue{line: line, col: col - 1, msg: m[3]})
	}
	return out
}

// exprLine returns line n (1-based) of the expression.
func exprLine(expr string, n int) string {
	lines := strings.Split(expr, "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}
