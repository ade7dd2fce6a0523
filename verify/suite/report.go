package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/vapc-dev/vapc/verify"

	"github.com/vapc-dev/vapc/verify/internal/junit"
)

// WriteText writes the reports for people: each case PASS or FAIL with its decision, and for
// failures what differs.
func WriteText(w io.Writer, reports []*SuiteReport, verbose bool) error {
	total, failed := 0, 0
	for _, r := range reports {
		fmt.Fprintf(w, "%s (%s)\n", r.File, r.Name)
		for _, c := range r.Cases {
			total++
			status := "PASS"
			if !c.Passed {
				status = "FAIL"
				failed++
			}
			summary := ""
			if c.Decision != nil {
				summary = ": " + c.Decision.Summary()
			}
			fmt.Fprintf(w, "  %s %s%s\n", status, c.Name, summary)
			if c.Decision != nil && c.Decision.Mutation != nil {
				// What the MutatingAdmissionPolicies changed is the case's outcome too.
				for _, ch := range c.Decision.Mutation.Changes {
					fmt.Fprintf(w, "       mutation: %s\n", describeChange(ch))
				}
			}
			if c.Passed && !verbose {
				continue
			}
			if !c.Passed {
				fmt.Fprintf(w, "       at %s\n", c.Pos)
			}
			for _, f := range c.Failures {
				fmt.Fprintf(w, "%s\n", indent(f, "       "))
			}
			if c.Decision != nil {
				for _, res := range c.Decision.Results {
					fmt.Fprintf(w, "       result: %s\n", describeResult(res))
				}
				checks := c.Decision.Authorizer
				if m := c.Decision.Mutation; m != nil {
					checks = append(append([]verify.AuthorizerCheck(nil), m.Authorizer...), checks...)
				}
				for _, ch := range checks {
					fmt.Fprintf(w, "       authorizer: %s\n", ch)
				}
				for _, n := range c.Decision.Notes {
					fmt.Fprintf(w, "       note: %s\n", n)
				}
			}
		}
	}
	_, err := fmt.Fprintf(w, "%d cases: %d passed, %d failed\n", total, total-failed, failed)
	return err
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// WriteJSON writes the reports as one JSON document: {"suites": [...]}.
func WriteJSON(w io.Writer, reports []*SuiteReport) error {
	if reports == nil {
		reports = []*SuiteReport{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Suites []*SuiteReport `json:"suites"`
	}{reports})
}

// CaseLine is one line of WriteJSONL: a case's report with the suite it belongs to.
type CaseLine struct {
	Suite string `json:"suite"`
	File  string `json:"file"`
	CaseReport
}

// WriteJSONL writes the reports one case a line (CaseLine), in the order of the suites and
// their cases.
func WriteJSONL(w io.Writer, reports []*SuiteReport) error {
	enc := json.NewEncoder(w)
	for _, r := range reports {
		for _, c := range r.Cases {
			if err := enc.Encode(CaseLine{Suite: r.Name, File: r.File, CaseReport: c}); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteJUnit writes the reports as JUnit XML for CI systems.
func WriteJUnit(w io.Writer, reports []*SuiteReport) error {
	out := &junit.Suites{}
	for _, r := range reports {
		js := &junit.Suite{Name: r.Name, File: r.File, Time: fmt.Sprintf("%.3f", r.Duration.Seconds())}
		for _, c := range r.Cases {
			jc := &junit.Case{Name: c.Name, Classname: r.Name, File: c.Pos.File, Line: c.Pos.Line}
			if c.Decision != nil {
				jc.SystemOut = c.Decision.Summary()
			}
			if !c.Passed {
				msg := "case failed"
				if len(c.Failures) > 0 {
					msg = strings.SplitN(c.Failures[0], "\n", 2)[0]
				}
				jc.Failure = &junit.Failure{Message: msg, Text: c.Pos.String() + "\n" + strings.Join(c.Failures, "\n")}
			}
			js.Add(jc)
		}
		out.Add(js)
	}
	return junit.Write(w, out)
}
