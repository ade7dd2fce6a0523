package replay

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// TestDuplicates: exports deliver at least once (Firehose, Event Hubs, Cloud Logging sinks,
// webhook receivers), so the same event may be read twice. A final record read again, the
// same line, is counted as a duplicate and not replayed again: the replay decides as on the
// log without it (an AKS export's copy within its reader's window is counted among the
// records the export skipped, as kube-audit-admin's copies are). Another event under an audit
// ID whose final record was read is malformed, as the log is damaged.
func TestDuplicates(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(auditData, "kosmos-basic")
	log := exporttest.ReadLog(t, filepath.Join(dir, "audit.log.gz"))
	lines := strings.SplitAfter(string(log), "\n")
	final := -1 // the first final record of a write
	for i, l := range lines {
		if strings.Contains(l, `"stage":"ResponseComplete"`) && strings.Contains(l, `"verb":"create"`) {
			final = i
			break
		}
	}
	if final < 0 {
		t.Fatal("no final record of a create in the log")
	}
	with := func(i int, extra string) []byte {
		out := strings.Join(lines[:i+1], "") + extra + strings.Join(lines[i+1:], "")
		return []byte(out)
	}
	another := strings.Replace(lines[final], `"userAgent":"`, `"userAgent":"another `, 1)
	if another == lines[final] {
		t.Fatal("the final record has no userAgent to change")
	}
	wrap := func(f export.Format, log []byte) []byte {
		t.Helper()
		data, err := exporttest.Wrap(f, log)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	// An Event Hub message (a batch of records) delivered twice, the second time right after
	// the first: the AKS reader skips an event's copy within its window (of any stage, as it
	// skips kube-audit-admin's copy of a kube-audit event).
	hub := strings.SplitAfter(string(wrap(export.AzureEventHub, log)), "\n")
	hubTwice := []byte(hub[0] + strings.Join(hub, ""))
	// And again at the end of the file, later than the window in which the reader puts
	// events back in order (the log spans 16 minutes): every event of it, whatever its stage,
	// is found handed over already.
	hubLate := []byte(strings.Join(hub, "") + hub[0])
	hubAll := strings.Count(hub[0], `\"stage\":\"`)
	// A Firehose delivery retried: its object's events are in a second object, with the
	// events delivered after them.
	half := len(lines) / 2
	firstHalf := []byte(strings.Join(lines[:half], ""))
	halfFinals := strings.Count(string(firstHalf), `"stage":"ResponseComplete"`) + strings.Count(string(firstHalf), `"stage":"Panic"`)

	// A Cloud Logging sink's entry delivered twice: its audit ID is its operation's (else its
	// insertId), the same in both.
	sink := strings.SplitAfter(string(wrap(exporttest.GKESink, log)), "\n")
	entry := -1
	for i, l := range sink {
		if strings.Contains(l, `.create"`) {
			entry = i
			break
		}
	}
	if entry < 0 {
		t.Fatal("no create in the sink")
	}
	sinkTwice := []byte(strings.Join(sink[:entry+1], "") + sink[entry] + strings.Join(sink[entry+1:], ""))
	_, sinkRecs := replayDuplicates(t, dir, []Source{{Name: "gke.json", Reader: strings.NewReader(strings.Join(sink, ""))}})

	type counts struct {
		Duplicates, ExportSkipped, Malformed, Requests int
		Reasons                                        []string
	}
	plainSum, plainRecs := replayDuplicates(t, dir, []Source{{Name: "audit.log", Reader: bytes.NewReader(log)}})
	tests := []struct {
		name    string
		sources []Source
		want    counts
		// like are the records of the replay without the duplicates: the plain log's when nil.
		like map[string]string
	}{{
		name:    "a final record read twice",
		sources: []Source{{Name: "audit.log", Reader: bytes.NewReader(with(final, lines[final]))}},
		want:    counts{Duplicates: 1, Requests: plainSum.Requests},
	}, {
		name:    "with another line ending",
		sources: []Source{{Name: "audit.log", Reader: bytes.NewReader(with(final, strings.TrimSuffix(lines[final], "\n")+"\r\n"))}},
		want:    counts{Duplicates: 1, Requests: plainSum.Requests},
	}, {
		name:    "another event under the audit ID",
		sources: []Source{{Name: "audit.log", Reader: bytes.NewReader(with(final, another))}},
		want: counts{Malformed: 1, Requests: plainSum.Requests,
			Reasons: []string{"duplicate: the final record of audit ID " + auditIDOf(t, lines[final]) + " was read at audit.log:" + itoa(final+1) + " already, another event"}},
	}, {
		name:    "an Event Hub message delivered twice",
		sources: []Source{{Name: "aks.jsonl", Reader: bytes.NewReader(hubTwice)}},
		want:    counts{ExportSkipped: hubAll, Requests: plainSum.Requests},
	}, {
		name:    "an Event Hub message delivered again later than the window",
		sources: []Source{{Name: "aks.jsonl", Reader: bytes.NewReader(hubLate)}},
		want:    counts{Duplicates: hubAll, Requests: plainSum.Requests},
	}, {
		name: "a Firehose object delivered again in the next",
		sources: []Source{
			{Name: "firehose-1", Reader: bytes.NewReader(wrap(export.Firehose, firstHalf))},
			{Name: "firehose-2", Reader: bytes.NewReader(wrap(export.Firehose, log))},
		},
		want: counts{Duplicates: halfFinals, Requests: plainSum.Requests},
	}, {
		name:    "a Cloud Logging sink's entry delivered twice",
		sources: []Source{{Name: "gke.json", Reader: bytes.NewReader(sinkTwice)}},
		want:    counts{Duplicates: 1, Requests: plainSum.Requests},
		like:    sinkRecs,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.want.Duplicates == 0 && tc.want.ExportSkipped == 0 && tc.want.Malformed == 0 {
				t.Fatal("the case duplicates nothing")
			}
			sum, recs := replayDuplicates(t, dir, tc.sources)
			got := counts{Duplicates: sum.Duplicates, ExportSkipped: total(sum.ExportSkipped), Malformed: sum.MalformedCount, Requests: sum.Requests}
			for _, m := range sum.Malformed {
				got.Reasons = append(got.Reasons, m.Reason)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("counts mismatch (-want +got):\n%s", diff)
			}
			if n := sum.MalformedCount + sum.Blank + sum.Duplicates + sum.IntermediateStages + sum.Requests; n != sum.Lines {
				t.Errorf("lines %d, accounted for %d", sum.Lines, n)
			}
			like := tc.like
			if like == nil {
				like = plainRecs
			}
			if diff := cmp.Diff(like, recs); diff != "" {
				t.Errorf("records mismatch with the replay without duplicates (-without +got):\n%s", diff)
			}
			var text bytes.Buffer
			if err := WriteText(&text, sum); err != nil {
				t.Fatal(err)
			}
			if want := "  duplicates:          " + itoa(tc.want.Duplicates) + " (events read again"; (tc.want.Duplicates > 0) != strings.Contains(text.String(), want) {
				t.Errorf("the text summary does not say %q where it should:\n%s", want, text.String())
			}
		})
	}
}

// replayDuplicates replays logs with the policies of dir, and returns its summary and its
// records as comparable (without file and line), by audit ID.
func replayDuplicates(t *testing.T, dir string, sources []Source) (*Summary, map[string]string) {
	t.Helper()
	ps, bs := loadPolicies(t, dir)
	r, err := New(ps, bs, WithCheckRecorded(true))
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]string{}
	sum, err := r.Run(context.Background(), sources, func(rec *Record) error {
		recs[rec.AuditID] = comparable(rec)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum, recs
}

func auditIDOf(t *testing.T, line string) string {
	t.Helper()
	_, rest, ok := strings.Cut(line, `"auditID":"`)
	id, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 {
		t.Fatalf("no auditID in %s", line)
	}
	return id
}
