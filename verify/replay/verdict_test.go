package replay

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/internal/junit"
)

// errAfter is a log that fails with err once its data is read.
type errAfter struct {
	r   io.Reader
	err error
}

func (e *errAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, e.err
	}
	return n, err
}

// TestVerdict: damaged input always fails a replay, whatever the gate, and the gate's
// predictions fail it when they are not met; the JUnit report and the final JSON line state
// the same verdict.
func TestVerdict(t *testing.T) {
	t.Parallel()
	basicLines := gunzipLines(t, filepath.Join(auditData, "kosmos-basic", "audit.log.gz"))
	basic := strings.Join(basicLines, "")
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	whole := gz(basic)
	truncated := whole[:len(whole)/2]
	corrupt := append([]byte(nil), whole...)
	for i := len(corrupt) / 2; i < len(corrupt)/2+64; i++ {
		corrupt[i] ^= 0x55
	}
	flapping := filepath.Join(auditData, "kosmos-flapping")

	tests := []struct {
		name    string
		dir     string // the scenario of the policies
		sources []Source
		gate    Gate
		want    []Reason // nil: pass
	}{
		{"clean", "kosmos-basic", []Source{{Name: "basic.log", Reader: strings.NewReader(basic)}}, Gate{CheckRecorded: true, FailOn: []FailOn{FailOnAnyChange}}, nil},
		{"clean gzip", "kosmos-basic", []Source{{Name: "basic.log.gz", Reader: bytes.NewReader(whole)}}, Gate{}, nil},
		{"truncated gzip", "kosmos-basic", []Source{{Name: "cut.log.gz", Reader: bytes.NewReader(truncated)}}, Gate{MaxMalformed: 1000}, []Reason{ReasonUnreadable}},
		{"corrupt gzip", "kosmos-basic", []Source{{Name: "bad.log.gz", Reader: bytes.NewReader(corrupt)}}, Gate{}, []Reason{ReasonUnreadable, ReasonMalformed}},
		{"read error", "kosmos-basic", []Source{{Name: "-", Reader: &errAfter{strings.NewReader(basic), errors.New("input/output error")}}}, Gate{}, []Reason{ReasonUnreadable}},
		{"missing file", "kosmos-basic", []Source{{Name: filepath.Join(t.TempDir(), "gone.log")}}, Gate{}, []Reason{ReasonUnreadable, ReasonNoEvents}},
		{"empty", "kosmos-basic", []Source{{Name: "empty.log", Reader: strings.NewReader("")}}, Gate{}, []Reason{ReasonNoEvents}},
		{"no audit events", "kosmos-basic", []Source{{Name: "blank.log", Reader: strings.NewReader("\n\n")}}, Gate{}, []Reason{ReasonNoEvents}},
		{"not a log", "kosmos-basic", []Source{{Name: "x.log", Reader: strings.NewReader("hello\nworld\n")}}, Gate{MaxMalformed: 5}, []Reason{ReasonNoEvents}},
		{"one malformed line", "kosmos-basic", []Source{{Name: "m.log", Reader: strings.NewReader(basic + "{oops\n")}}, Gate{}, []Reason{ReasonMalformed}},
		{"one malformed line tolerated", "kosmos-basic", []Source{{Name: "m.log", Reader: strings.NewReader(basic + "{oops\n")}}, Gate{MaxMalformed: 1}, nil},
		{"a cut last line", "kosmos-basic", []Source{{Name: "-", Reader: strings.NewReader(basic[:len(basic)/2])}}, Gate{}, []Reason{ReasonMalformed}},
		{"disagreements", "kosmos-denied-variants", []Source{{Name: filepath.Join(auditData, "kosmos-denied-variants", "audit.jsonl")}}, Gate{CheckRecorded: true}, []Reason{ReasonDisagreement}},
		// The policy is not installed in the cluster that wrote the log: nothing to contradict.
		{"no disagreement with a policy not installed", "kosmos-flapping", []Source{{Name: filepath.Join(flapping, "audit.jsonl")}}, Gate{CheckRecorded: true}, nil},
		{"disagreements unchecked", "kosmos-flapping", []Source{{Name: filepath.Join(flapping, "audit.jsonl")}}, Gate{}, nil},
		{"fail on deny", "kosmos-flapping", []Source{{Name: filepath.Join(flapping, "audit.jsonl")}}, Gate{FailOn: []FailOn{FailOnDeny}}, []Reason{ReasonDeny}},
		{"fail on warn", "kosmos-flapping", []Source{{Name: filepath.Join(flapping, "audit.jsonl")}}, Gate{FailOn: []FailOn{FailOnWarn}}, []Reason{ReasonDeny}},
		{"fail on any change", "kosmos-flapping", []Source{{Name: filepath.Join(flapping, "audit.jsonl")}}, Gate{FailOn: []FailOn{FailOnAnyChange}, CheckRecorded: true}, []Reason{ReasonChanged}},
		{"damage and a change", "kosmos-flapping", []Source{{Name: filepath.Join(flapping, "audit.jsonl")}, {Name: "cut.log.gz", Reader: bytes.NewReader(truncated)}}, Gate{FailOn: []FailOn{FailOnAnyChange}}, []Reason{ReasonUnreadable, ReasonChanged}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(auditData, tc.dir)
			ps, bs := loadPolicies(t, dir)
			opts := []Option{WithCheckRecorded(tc.gate.CheckRecorded)}
			if tc.dir == "kosmos-flapping" || tc.dir == "kosmos-denied-variants" {
				opts = append(opts, WithSnapshot(filepath.Join(dir, "snapshot.yaml")))
			}
			r, err := New(ps, bs, opts...)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := r.Run(context.Background(), tc.sources, nil)
			if err != nil {
				t.Fatal(err)
			}
			v := sum.Decide(tc.gate)
			var got []Reason
			for _, f := range v.Failures {
				got = append(got, f.Reason)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("failures mismatch (-want +got):\n%s\n%s", diff, v)
			}
			if v.Pass != (len(tc.want) == 0) || v.Partial {
				t.Errorf("verdict %s: pass %v, partial %v", v, v.Pass, v.Partial)
			}
			if sum.Verdict != v {
				t.Error("Decide did not store the verdict in the summary")
			}
			checkOutputsAgree(t, sum)
		})
	}
}

// checkOutputsAgree holds the text summary, JUnit and the final JSON line to the summary's
// verdict: the text says it first, JUnit has failures or errors exactly when it fails, the
// final JSON line carries it.
func checkOutputsAgree(t *testing.T, sum *Summary) {
	t.Helper()
	v := sum.Verdict
	var text bytes.Buffer
	if err := WriteText(&text, sum); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(text.String(), "\n")
	wantHead := "PASS: "
	switch {
	case v.Partial:
		wantHead = "INTERRUPTED: "
	case !v.Pass:
		wantHead = "FAIL: "
	}
	if !strings.HasPrefix(first, wantHead) {
		t.Errorf("text summary begins %q, want %q", first, wantHead)
	}
	for _, f := range v.Failures {
		if !strings.Contains(text.String(), "  "+string(f.Reason)+": "+f.Detail+"\n") {
			t.Errorf("text summary does not state %s: %s\n%s", f.Reason, f.Detail, text.String())
		}
	}

	var out bytes.Buffer
	if err := WriteJUnit(&out, sum); err != nil {
		t.Fatal(err)
	}
	var suites junit.Suites
	if err := xml.Unmarshal(out.Bytes(), &suites); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, out.String())
	}
	s := suites.Suites[0]
	failures, errs := 0, 0
	for _, c := range s.Cases {
		if c.Failure != nil {
			failures++
		}
		if c.Error != nil {
			errs++
		}
	}
	if failures != s.Failures || errs != s.Errors || len(s.Cases) != s.Tests {
		t.Errorf("JUnit counts failures=%d errors=%d tests=%d, its cases %d, %d, %d", s.Failures, s.Errors, s.Tests, failures, errs, len(s.Cases))
	}
	if fails := s.Failures+s.Errors > 0; fails == v.Pass {
		t.Errorf("JUnit has %d failures and %d errors, the verdict is %s\n%s", s.Failures, s.Errors, v, out.String())
	}
	if v.Partial != (s.Errors > 0) {
		t.Errorf("JUnit has %d errors, the verdict is partial: %v", s.Errors, v.Partial)
	}

	var end bytes.Buffer
	if err := WriteJSONLEnd(&end, sum); err != nil {
		t.Fatal(err)
	}
	if strings.Count(end.String(), "\n") != 1 {
		t.Errorf("final JSON line is not one line: %q", end.String())
	}
	var got End
	if err := json.Unmarshal(end.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*v, *got.Verdict); diff != "" || got.Partial != v.Partial || got.Totals.Lines != sum.Lines {
		t.Errorf("final JSON line mismatch (-verdict +line):\n%s\n%s", diff, end.String())
	}
}

// cancelAfter is a log on a reader that may block, like standard input: once its first part
// is read, the next read cancels the replay and blocks until the context says so.
type cancelAfter struct {
	ctx    context.Context
	first  []byte
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	c.cancel()
	<-c.ctx.Done()
	select {} // blocked, as standard input with no more data: the replay must not wait for it
}

// TestInterrupted: a replay whose context is canceled while it waits for more of its log stops
// reading at once, replays and decides every line read, says it is partial, and every output
// says so.
func TestInterrupted(t *testing.T) {
	t.Parallel()
	lines := gunzipLines(t, filepath.Join(auditData, "kosmos-basic", "audit.log.gz"))
	const read = 600
	ps, bs := loadPolicies(t, filepath.Join(auditData, "kosmos-basic"))
	r, err := New(ps, bs, WithCheckRecorded(true))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &cancelAfter{ctx: ctx, first: []byte(strings.Join(lines[:read], "")), cancel: cancel}
	var recs int
	sum, err := r.Run(ctx, []Source{{Name: "-", Reader: log}}, func(*Record) error { recs++; return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if !sum.Partial {
		t.Error("the summary is not Partial")
	}
	if sum.Lines != read {
		t.Errorf("lines = %d, want the %d read before the interrupt", sum.Lines, read)
	}
	if accounted := sum.MalformedCount + sum.Blank + sum.Duplicates + sum.IntermediateStages + sum.Requests; accounted != sum.Lines {
		t.Errorf("lines %d, accounted for %d", sum.Lines, accounted)
	}
	if sum.Evaluated != recs || total(sum.Indeterminate) != 0 {
		t.Errorf("evaluated %d, records %d, indeterminate %v: every request read must be decided", sum.Evaluated, recs, sum.Indeterminate)
	}
	v := sum.Decide(Gate{CheckRecorded: true})
	if v.Pass || !v.Partial || len(v.Failures) != 1 || v.Failures[0].Reason != ReasonInterrupted {
		t.Errorf("verdict = %s, want interrupted only", v)
	}
	checkOutputsAgree(t, sum)
}

func TestParseFailOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []FailOn
	}{
		{"", nil},
		{"deny", []FailOn{FailOnDeny}},
		{"warn", []FailOn{FailOnWarn}},
		{"any-change", []FailOn{FailOnAnyChange}},
		{"indeterminate", []FailOn{FailOnIndeterminate}},
		{"deny,indeterminate", []FailOn{FailOnDeny, FailOnIndeterminate}},
		{"any-change, indeterminate,any-change", []FailOn{FailOnAnyChange, FailOnIndeterminate}},
	} {
		got, err := ParseFailOn(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseFailOn(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"maybe", "deny,", "deny,maybe"} {
		if got, err := ParseFailOn(bad); err == nil {
			t.Errorf("ParseFailOn(%q) = %q, want an error", bad, got)
		}
	}
}

// TestGateFailOn decides --fail-on over the counts of a summary: each value fails on what it
// names and nothing else, --strict counts likely decisions as indeterminate, and every output
// agrees with the verdict (for any-change, JUnit's "fail-on" case fails exactly when the exit
// code is 1, though no binding's case does).
func TestGateFailOn(t *testing.T) {
	t.Parallel()
	type counts struct {
		deny, warn, changed, indeterminate, unreproduced int
		likely                                           LikelyCounts
	}
	tests := []struct {
		failOn []FailOn
		strict bool
		counts counts
		want   []Reason
	}{
		{nil, false, counts{deny: 2, warn: 1, changed: 3, indeterminate: 1}, nil},
		{[]FailOn{FailOnDeny}, false, counts{}, nil},
		{[]FailOn{FailOnDeny}, false, counts{deny: 2}, []Reason{ReasonDeny}},
		{[]FailOn{FailOnDeny}, false, counts{warn: 1, changed: 3}, nil},
		{[]FailOn{FailOnWarn}, false, counts{warn: 1}, []Reason{ReasonWarn}},
		{[]FailOn{FailOnWarn}, false, counts{deny: 2, warn: 1}, []Reason{ReasonDeny, ReasonWarn}},
		{[]FailOn{FailOnWarn}, false, counts{changed: 3}, nil},
		{[]FailOn{FailOnAnyChange}, false, counts{deny: 2, warn: 1}, nil},
		{[]FailOn{FailOnAnyChange}, false, counts{changed: 3}, []Reason{ReasonChanged}},
		// A recorded verdict the replay cannot reproduce is a change the gate cannot pass.
		{[]FailOn{FailOnAnyChange}, false, counts{indeterminate: 1, unreproduced: 1}, []Reason{ReasonUnreproduced}},
		{[]FailOn{FailOnAnyChange}, false, counts{indeterminate: 1}, nil},
		{[]FailOn{FailOnIndeterminate}, false, counts{deny: 1, indeterminate: 2}, []Reason{ReasonIndeterminate}},
		{[]FailOn{FailOnDeny, FailOnIndeterminate}, false, counts{deny: 1, indeterminate: 2}, []Reason{ReasonDeny, ReasonIndeterminate}},
		// A likely decision counts as its decision, or, strict, as indeterminate.
		{[]FailOn{FailOnDeny}, false, counts{deny: 1, likely: LikelyCounts{Count: 1, Deny: 1}}, []Reason{ReasonDeny}},
		{[]FailOn{FailOnDeny}, true, counts{deny: 1, likely: LikelyCounts{Count: 1, Deny: 1}}, nil},
		{[]FailOn{FailOnIndeterminate}, false, counts{deny: 1, likely: LikelyCounts{Count: 1, Deny: 1}}, nil},
		{[]FailOn{FailOnIndeterminate}, true, counts{deny: 1, likely: LikelyCounts{Count: 1, Deny: 1}}, []Reason{ReasonIndeterminate}},
		{[]FailOn{FailOnAnyChange}, true, counts{changed: 1, likely: LikelyCounts{Count: 1, Changed: 1, Recorded: 1}}, []Reason{ReasonUnreproduced}},
		{[]FailOn{FailOnAnyChange}, false, counts{changed: 1, likely: LikelyCounts{Count: 1, Changed: 1, Recorded: 1}}, []Reason{ReasonChanged}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s strict %v %+v", orNothing(tt.failOn), tt.strict, tt.counts), func(t *testing.T) {
			t.Parallel()
			sum := &Summary{Read: Read{Files: []string{"a.log"}, Lines: 10, Requests: 10},
				Decided:  Decided{Evaluated: 10, Deny: tt.counts.deny, Warn: tt.counts.warn, Changed: tt.counts.changed, Unreproduced: tt.counts.unreproduced, Likely: tt.counts.likely},
				Bindings: []*BindingSummary{{Policy: "p", Binding: "b", Deny: tt.counts.deny, Warn: tt.counts.warn, Likely: tt.counts.likely.Count, LikelyDeny: tt.counts.likely.Deny}}}
			if tt.counts.indeterminate > 0 {
				sum.Indeterminate = map[Reason]int{ReasonParamUnknown: tt.counts.indeterminate}
			}
			v := sum.Decide(Gate{FailOn: tt.failOn, Strict: tt.strict})
			var got []Reason
			for _, f := range v.Failures {
				got = append(got, f.Reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide(--fail-on %s) failures mismatch (-want +got):\n%s", orNothing(tt.failOn), diff)
			}
			if v.Pass != (len(tt.want) == 0) {
				t.Errorf("Decide(--fail-on %s).Pass = %v, want %v", orNothing(tt.failOn), v.Pass, len(tt.want) == 0)
			}
			checkOutputsAgree(t, sum)
		})
	}
}

func orNothing(f []FailOn) string {
	if len(f) == 0 {
		return "nothing"
	}
	return Gate{FailOn: f}.failOnFlag()
}
