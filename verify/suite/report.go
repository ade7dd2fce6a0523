package suite

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/vapc-dev/vapc/verify"
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

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	File     string      `xml:"file,attr,omitempty"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the reports as JUnit XML for CI systems.
func WriteJUnit(w io.Writer, reports []*SuiteReport) error {
	out := junitSuites{}
	for _, r := range reports {
		js := junitSuite{Name: r.Name, File: r.File, Tests: len(r.Cases), Failures: r.Failed(), Time: fmt.Sprintf("%.3f", r.Duration.Seconds())}
		for _, c := range r.Cases {
			jc := junitCase{Name: c.Name, Classname: r.Name, File: c.Pos.File, Line: c.Pos.Line}
			if c.Decision != nil {
				jc.SystemOut = c.Decision.Summary()
			}
			if !c.Passed {
				msg := "case failed"
				if len(c.Failures) > 0 {
					msg = strings.SplitN(c.Failures[0], "\n", 2)[0]
				}
				jc.Failure = &junitFailure{Message: msg, Text: c.Pos.String() + "\n" + strings.Join(c.Failures, "\n")}
			}
			js.Cases = append(js.Cases, jc)
		}
		out.Tests += js.Tests
		out.Failures += js.Failures
		out.Suites = append(out.Suites, js)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
