// Package junit writes JUnit XML, the test report CI systems read (GitLab's `artifacts:
// reports: junit`, GitHub's test reporters): the one writer of `vapc test --output junit` and
// `vapc replay --output junit`.
package junit

import (
	"encoding/xml"
	"io"
)

// Suites is a report: its suites, and the counts of their cases.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr,omitempty"`
	Failures int      `xml:"failures,attr,omitempty"`
	Errors   int      `xml:"errors,attr,omitempty"`
	Suites   []*Suite `xml:"testsuite"`
}

// Suite is a suite of cases; Add keeps its counts.
type Suite struct {
	Name     string  `xml:"name,attr"`
	File     string  `xml:"file,attr,omitempty"`
	Tests    int     `xml:"tests,attr"`
	Failures int     `xml:"failures,attr"`
	Errors   int     `xml:"errors,attr"`
	Time     string  `xml:"time,attr,omitempty"`
	Cases    []*Case `xml:"testcase"`
}

// Case is one test case: it passed, or has a failure (a finding) or an error (it could not
// run to its end).
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	File      string   `xml:"file,attr,omitempty"`
	Line      int      `xml:"line,attr,omitempty"`
	Failure   *Failure `xml:"failure,omitempty"`
	Error     *Failure `xml:"error,omitempty"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Failure is a failure or an error of a case: a one-line message, a type, and the detail.
type Failure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// Add appends the case to the suite and counts it.
func (s *Suite) Add(c *Case) {
	s.Tests++
	if c.Failure != nil {
		s.Failures++
	}
	if c.Error != nil {
		s.Errors++
	}
	s.Cases = append(s.Cases, c)
}

// Add appends the suite to the report and counts its cases.
func (r *Suites) Add(s *Suite) {
	r.Tests += s.Tests
	r.Failures += s.Failures
	r.Errors += s.Errors
	r.Suites = append(r.Suites, s)
}

// Write writes the report as an XML document, indented, ending with a newline.
func Write(w io.Writer, r *Suites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
