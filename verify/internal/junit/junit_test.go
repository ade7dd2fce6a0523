package junit

import (
	"bytes"
	"encoding/xml"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWrite: a report's counts are those of its cases, and the XML reads back as written.
func TestWrite(t *testing.T) {
	s := &Suite{Name: "s", File: "a.suite.yaml", Time: "0.100"}
	s.Add(&Case{Name: "ok", Classname: "s"})
	s.Add(&Case{Name: "bad", Classname: "s", Line: 3, Failure: &Failure{Message: "m", Type: "deny", Text: "detail"}})
	s.Add(&Case{Name: "cut", Classname: "s", Error: &Failure{Message: "interrupted"}})
	r := &Suites{}
	r.Add(s)
	if r.Tests != 3 || r.Failures != 1 || r.Errors != 1 || s.Tests != 3 || s.Failures != 1 || s.Errors != 1 {
		t.Errorf("counts: report %d/%d/%d, suite %d/%d/%d, want 3/1/1", r.Tests, r.Failures, r.Errors, s.Tests, s.Failures, s.Errors)
	}
	var out bytes.Buffer
	if err := Write(&out, r); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out.Bytes(), []byte(xml.Header)) || !bytes.HasSuffix(out.Bytes(), []byte("</testsuites>\n")) {
		t.Errorf("not a document ending in a newline:\n%s", out.String())
	}
	var back Suites
	if err := xml.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	back.XMLName = r.XMLName
	if diff := cmp.Diff(r, &back); diff != "" {
		t.Errorf("read back (-written +read):\n%s", diff)
	}
}
