package replay

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuzzInput is the longest input FuzzReplayLines replays: twice its longest line.
const maxFuzzInput = 2 * fuzzMaxLine

// fuzzMaxLine is FuzzReplayLines' WithMaxLineBytes.
const fuzzMaxLine = 64 << 10

// FuzzReplayLines replays arbitrary bytes as an audit log through the Kosmos guard: whatever
// the input (broken JSON, unknown kinds, missing objectRef, duplicated auditIDs, events out of
// order), the replay must not panic, must not fail, and must account for every line. Inputs
// longer than maxFuzzInput are skipped: the mutator grows inputs by copying their lines, which
// adds nothing a line's own shapes don't, and minimizing a large interesting input replays it
// thousands of times, which stalls the fuzzer.
func FuzzReplayLines(f *testing.F) {
	dir := filepath.Join(auditData, "edge-cases")
	seed, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	sc := bufio.NewScanner(bytes.NewReader(seed))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f.Add(append([]byte(nil), sc.Bytes()...))
	}
	f.Add([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"delete"}`))
	f.Add([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v9","auditID":"x","stage":"ResponseComplete","verb":"create","objectRef":{"resource":"widgets","apiGroup":"example.com","apiVersion":"v1"},"requestObject":{"kind":"Widget"}}`))
	f.Add([]byte("{\"stage\":\n"))
	// The lifecycle of a given binding: deleted (a Metadata delete, maybe a dry run), created
	// again, a 404.
	for _, l := range []string{
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"d1","stage":"ResponseComplete","verb":"delete","objectRef":{"resource":"validatingadmissionpolicybindings","name":"edge-guard","apiGroup":"admissionregistration.k8s.io","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-24T00:00:01.000000Z","stageTimestamp":"2026-11-24T00:00:01.001000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"c1","stage":"ResponseComplete","verb":"create","objectRef":{"resource":"validatingadmissionpolicybindings","name":"edge-guard","apiGroup":"admissionregistration.k8s.io","apiVersion":"v1"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-11-24T00:00:02.000000Z","stageTimestamp":"2026-11-24T00:00:02.001000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"g1","stage":"ResponseComplete","verb":"get","objectRef":{"resource":"validatingadmissionpolicies","name":"edge-guard","apiGroup":"admissionregistration.k8s.io","apiVersion":"v1"},"responseStatus":{"code":404,"message":"validatingadmissionpolicies.admissionregistration.k8s.io \"edge-guard\" not found"},"stageTimestamp":"2026-11-24T00:00:03.001000Z"}`,
	} {
		f.Add([]byte(l))
	}
	ps, bs := loadPolicies(f, dir)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip()
		}
		r, err := New(ps, bs, WithCheckRecorded(true), WithMaxLineBytes(fuzzMaxLine))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := r.Run(context.Background(), []Source{{Name: "fuzz.log", Reader: bytes.NewReader(data)}}, func(rec *Record) error {
			if rec.Reason == ReasonInternal {
				t.Errorf("%s: %s", rec, rec.Indeterminate) // a panic, recovered
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		for _, m := range sum.Malformed {
			if strings.Contains(m.Reason, errDecodeInternal.Error()) {
				t.Errorf("line %d: %s", m.Line, m.Reason) // a panic, recovered
			}
		}
		if got := sum.MalformedCount + sum.Blank + sum.Duplicates + sum.IntermediateStages + sum.Requests; got != sum.Lines {
			t.Errorf("lines %d, but malformed %d + blank %d + duplicates %d + intermediate %d + requests %d = %d", sum.Lines, sum.MalformedCount, sum.Blank, sum.Duplicates, sum.IntermediateStages, sum.Requests, got)
		}
		if want := bytes.Count(data, []byte("\n")); sum.Lines < want {
			t.Errorf("%d lines counted, the input has %d newlines", sum.Lines, want)
		}
	})
}
