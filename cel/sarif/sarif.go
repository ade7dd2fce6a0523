// Package sarif writes the diagnostics of vapc check as a SARIF 2.1.0 log, the format code
// scanning services (GitHub's upload-sarif among them) read: one rule per category of
// diagnostic, with its help text, and one result per diagnostic at its file, line and column.
package sarif

import (
	"encoding/json"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/vapc-dev/vapc/cel"
)

// Version is the SARIF version written; Schema the URI of its JSON schema.
const (
	Version = "2.1.0"
	Schema  = "https://json.schemastore.org/sarif-2.1.0.json"
)

// Tool names the program that found the diagnostics.
type Tool struct {
	Name, Version, InformationURI string
}

// Rule is what one category of diagnostic checks, as SARIF's reportingDescriptor.
type Rule struct {
	ID               string      `json:"id"`
	Name             string      `json:"name"`
	ShortDescription Message     `json:"shortDescription"`
	FullDescription  Message     `json:"fullDescription"`
	Help             Message     `json:"help"`
	HelpURI          string      `json:"helpUri,omitempty"`
	Default          Config      `json:"defaultConfiguration"`
	Properties       RulePropBag `json:"properties"`
}

// Message is a SARIF message: text, and markdown where it differs.
type Message struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

// Config is a rule's default configuration: its level.
type Config struct {
	Level string `json:"level"`
}

// RulePropBag holds a rule's tags.
type RulePropBag struct {
	Tags []string `json:"tags"`
}

// rules are vapc check's rules, by the category of their diagnostics.
var rules = []struct {
	cat                  cel.Category
	id, name, short, doc string
	level                string
}{
	{cel.CategoryInput, "VAPC001", "InputError", "A file that cannot be read as a policy or binding",
		"The file is not YAML or JSON, a document is not an object with apiVersion and kind, or a field is unknown, duplicated or of the wrong type. kubectl apply would refuse it too. Fix the file at the position given.", "error"},
	{cel.CategoryCreate, "VAPC002", "CreateError", "kube-apiserver refuses to create the policy or binding",
		"kube-apiserver's create-time validation of admissionregistration.k8s.io/v1 refuses the object: a required field is missing, a value is invalid, or an expression does not compile in the CEL environment of the server's compatibility version (one minor behind it). kubectl apply fails with this error.", "error"},
	{cel.CategoryType, "VAPC003", "TypeError", "An expression does not type-check against the kinds the policy matches",
		"The apiserver's type checker, as kube-controller-manager runs it into status.typeChecking, types object and oldObject by each matched kind and params by paramKind. An expression that fails at the same place for every matched kind can never work (an error); one that fails for some kinds only is a warning that names them: make sure that part is not evaluated for them.", "error"},
	{cel.CategoryCost, "VAPC004", "CostLimit", "An expression's estimated cost can exceed the apiserver's limits",
		"The static cost estimate of the expression, with lists, maps and strings of realistic sizes, exceeds the per-expression limit, or the policy's expressions together exceed the per-request budget: the apiserver stops such an evaluation with a cost error, which the failurePolicy then decides.", "warning"},
	{cel.CategoryCoverage, "VAPC005", "NotTypeChecked", "Part of the policy cannot be type-checked",
		"Wildcard rules, subresources, kinds without a schema (give their CRD with --crd) and policies of more than ten kinds are not type-checked by the apiserver, nor by vapc: mistakes there show only when a request is evaluated.", "warning"},
	{cel.CategoryLint, "VAPC006", "Lint", "A mistake the apiserver accepts",
		"The apiserver accepts the policy, but it does not do what it seems to: reading object in a DELETE-only policy, reading spec.replicas without the scale subresource, a binding whose policy is not among the files.", "warning"},
}

// ruleFor returns the index of the rule of a category.
func ruleFor(c cel.Category) int {
	for i, r := range rules {
		if r.cat == c {
			return i
		}
	}
	return 0
}

// Log is a SARIF log of one run.
type Log struct {
	Schema  string `json:"$schema"`
	Version string `json:"version"`
	Runs    []Run  `json:"runs"`
}

// Run is one run of a tool.
type Run struct {
	Tool RunTool `json:"tool"`
	// ColumnKind says that columns count characters, as vapc's positions do.
	ColumnKind string   `json:"columnKind"`
	Results    []Result `json:"results"`
}

// RunTool is SARIF's tool object of a run.
type RunTool struct {
	Driver Driver `json:"driver"`
}

// Driver is the tool's component that ran.
type Driver struct {
	Name           string `json:"name"`
	Version        string `json:"version,omitempty"`
	InformationURI string `json:"informationUri,omitempty"`
	Rules          []Rule `json:"rules"`
}

// Result is one diagnostic.
type Result struct {
	RuleID    string     `json:"ruleId"`
	RuleIndex int        `json:"ruleIndex"`
	Level     string     `json:"level"`
	Message   Message    `json:"message"`
	Locations []Location `json:"locations,omitempty"`
}

// Location is where a result is.
type Location struct {
	PhysicalLocation PhysicalLocation `json:"physicalLocation"`
}

// PhysicalLocation is a file and a region of it.
type PhysicalLocation struct {
	ArtifactLocation ArtifactLocation `json:"artifactLocation"`
	Region           *Region          `json:"region,omitempty"`
}

// ArtifactLocation is a file, as a URI reference relative to where vapc ran.
type ArtifactLocation struct {
	URI string `json:"uri"`
}

// Region is a line and column (1-based, in characters).
type Region struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

// New returns the SARIF log of the diagnostics.
func New(tool Tool, diags cel.Diagnostics) *Log {
	d := Driver{Name: tool.Name, Version: tool.Version, InformationURI: tool.InformationURI}
	for _, r := range rules {
		d.Rules = append(d.Rules, Rule{
			ID: r.id, Name: r.name,
			ShortDescription: Message{Text: r.short},
			FullDescription:  Message{Text: r.doc},
			Help:             Message{Text: r.doc, Markdown: "**" + r.short + "**\n\n" + r.doc + "\n\nRun `vapc check` on the file for the same message with the expression and a caret under its column."},
			Default:          Config{Level: r.level},
			Properties:       RulePropBag{Tags: []string{"kubernetes", "validating-admission-policy", string(r.cat)}},
		})
	}
	run := Run{Tool: RunTool{Driver: d}, ColumnKind: "unicodeCodePoints", Results: []Result{}}
	for _, diag := range diags {
		i := ruleFor(diag.Category)
		res := Result{RuleID: rules[i].id, RuleIndex: i, Level: level(diag.Severity), Message: Message{Text: text(diag)}}
		if diag.Pos.File != "" {
			loc := PhysicalLocation{ArtifactLocation: ArtifactLocation{URI: uri(diag.Pos.File)}}
			if diag.Pos.Line > 0 {
				loc.Region = &Region{StartLine: diag.Pos.Line, StartColumn: diag.Pos.Col}
			}
			res.Locations = []Location{{PhysicalLocation: loc}}
		}
		run.Results = append(run.Results, res)
	}
	return &Log{Schema: Schema, Version: Version, Runs: []Run{run}}
}

// Write writes the SARIF log of the diagnostics.
func Write(w io.Writer, tool Tool, diags cel.Diagnostics) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(New(tool, diags))
}

func level(s cel.Severity) string {
	switch s {
	case cel.Error:
		return "error"
	case cel.Warning:
		return "warning"
	}
	return "note"
}

// text is the message of a result: the field, the message, the kind and the hint, as vapc
// check writes them.
func text(d cel.Diagnostic) string {
	var b strings.Builder
	if d.Field != "" {
		b.WriteString(d.Field + ": ")
	}
	b.WriteString(d.Message)
	if d.Kind != "" {
		b.WriteString(" (checked as " + d.Kind + ")")
	}
	if d.Hint != "" {
		b.WriteString(": " + d.Hint)
	}
	return b.String()
}

// uri makes a path a URI reference: a relative path stays relative (to the repository a code
// scanning upload is of), with forward slashes; an absolute path is a file URI.
func uri(path string) string {
	if path == "<stdin>" {
		return "stdin"
	}
	p := filepath.ToSlash(path)
	if filepath.IsAbs(path) {
		return (&url.URL{Scheme: "file", Path: p}).String()
	}
	return (&url.URL{Path: strings.TrimPrefix(p, "./")}).String()
}
