package e2e

import (
	"bufio"
	"context"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vapc-dev/vapc/verify/replay"
)

// checkSplitReplay replays the server's log again as the logs of two kube-apiservers of one
// cluster would hold it (each request's events in the log of the server that served it, chosen
// by its audit ID), which the replay reads as one in the time order of their events, and
// holds it to the replay of the whole log (byID): see checkReplayAgain.
func checkSplitReplay(t *testing.T, log string, set policySet, byID map[string]*replay.Record, from int) {
	t.Helper()
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "apiserver-a.log"), filepath.Join(dir, "apiserver-b.log")}
	active := splitLog(t, log, paths, from)
	checkReplayAgain(t, "the log split between two apiservers", []replay.Source{{Name: paths[1]}, {Name: paths[0]}}, active, set, byID)
}

// checkReplayAgain replays the server's log again as other sources hold it (with the options
// opts besides), and holds it to
// the replay of the whole log (byID): no decision of a request among active (those received
// once the policies were in effect) that the two replays both make may differ, and none may
// differ from what the log records.
func checkReplayAgain(t *testing.T, what string, sources []replay.Source, active map[string]bool, set policySet, byID map[string]*replay.Record, opts ...replay.Option) {
	t.Helper()
	opts = append([]replay.Option{replay.WithCheckRecorded(true), replay.WithMutatingPolicies(set.mutating, set.mutatingBindings), replay.WithMapOrder(set.mapOrder(t))}, opts...)
	r, err := replay.New(set.policies, set.bindings, opts...)
	if err != nil {
		t.Fatal(err)
	}
	again := map[string]*replay.Record{}
	sum, err := r.Run(context.Background(), sources, func(rec *replay.Record) error {
		again[rec.AuditID] = rec
		return nil
	})
	if err != nil {
		t.Fatalf("%s: replay: %v", what, err)
	}
	if sum.MalformedCount > 0 {
		errorf(t, "%s: %d malformed lines: %v", what, sum.MalformedCount, sum.Malformed)
	}
	decided := func(rec *replay.Record) bool {
		return rec != nil && rec.Decision != replay.DecisionIndeterminate
	}
	both, onlyWhole, onlyAgain := 0, 0, 0
	whyNot := map[string]int{} // why a request decided in the whole log is not here, by reason
	whyNotFirst := map[string]string{}
	for id := range active {
		rec, whole := again[id], byID[id]
		if rec != nil && !decided(rec) && decided(whole) {
			why := string(rec.Reason)
			whyNot[why]++
			if whyNotFirst[why] == "" {
				whyNotFirst[why] = rec.Indeterminate
			}
		}
		switch {
		case rec == nil:
			if decided(whole) {
				onlyWhole++
			}
		case rec.Changed || len(rec.Disagreements) > 0:
			errorf(t, "%s: %s: recorded %s, predicted %s %v", what, describeRecord(rec), rec.Recorded, rec.Decision, rec.Disagreements)
		case decided(rec) && decided(whole):
			both++
			if rec.Decision != whole.Decision || rec.Code != whole.Code || (!sameMessage(rec.Message, whole.Message) && !chanceRefusal(rec, whole)) {
				errorf(t, "%s: %s, the whole log: %s", what, describeRecord(rec), describeRecord(whole))
			}
		case decided(rec):
			onlyAgain++
		case decided(whole):
			onlyWhole++
		}
	}
	if len(active) > 0 && len(again) == 0 {
		errorf(t, "%s: no record, the whole log %d requests", what, len(byID))
	}
	t.Logf("%s: %d decisions as the whole log's, %d decided only in the whole log, %d only here", what, both, onlyWhole, onlyAgain)
	for why, n := range whyNot {
		t.Logf("  undecided here: %d %s, first: %s", n, why, whyNotFirst[why])
	}
}

// chanceRefusal says whether the whole log's refusal is one the record gives as an alternative
// of its own, when the record does not know what the log recorded (an export that lost the
// failure's message): several bindings refuse, and kube-apiserver reports the first its
// informers list, by chance, which only the log's message tells.
func chanceRefusal(rec, whole *replay.Record) bool {
	if rec.Recorded != replay.RecordedUnknown {
		return false
	}
	for _, a := range rec.Alternatives {
		if a.Decision == replay.DecisionDeny && a.Code == whole.Code && sameMessage(a.Message, whole.Message) {
			return true
		}
	}
	return false
}

// sameMessage says whether a replay's message is the whole log's: the same, or the same but
// for the name kube-apiserver generated for an object created with generateName, which the
// replay gives as generateName and "?????" where the log does not hold it (an export that
// lost the refusal's details: settleGeneratedName).
func sameMessage(msg, whole string) bool {
	const standIn = `?????"`
	if msg == whole || !strings.Contains(msg, standIn) {
		return msg == whole
	}
	pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(msg), regexp.QuoteMeta(standIn), `[a-z0-9]{5}"`) + "$"
	return regexp.MustCompile(pattern).MatchString(whole)
}

// auditIDOf finds a line's audit ID.
var auditIDOf = regexp.MustCompile(`"auditID":"([^"]+)"`)

// splitLog writes the lines of log into the files of paths, each request's in one chosen by its
// audit ID, and returns the audit IDs of the lines from line from on.
func splitLog(t *testing.T, log string, paths []string, from int) map[string]bool {
	t.Helper()
	in, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var outs []*bufio.Writer
	for _, p := range paths {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		defer func() {
			if err := w.Flush(); err != nil {
				t.Error(err)
			}
		}()
		outs = append(outs, w)
	}
	active := map[string]bool{}
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 16<<20)
	for line := 1; sc.Scan(); line++ {
		i := 0
		if m := auditIDOf.FindSubmatch(sc.Bytes()); m != nil {
			h := fnv.New32a()
			h.Write(m[1])
			i = int(h.Sum32() % uint32(len(outs)))
			if line >= from {
				active[string(m[1])] = true
			}
		}
		outs[i].Write(sc.Bytes())
		outs[i].WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return active
}

// checkStdinReplay replays the server's log again as standard input (copied to a file first,
// and read again as the file is: source.Spool), and holds it to the replay of the whole log
// (byID): every request decided alike, with the same certainty and reason.
func checkStdinReplay(t *testing.T, log string, set policySet, byID map[string]*replay.Record) {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := replay.New(set.policies, set.bindings, replay.WithCheckRecorded(true), replay.WithMutatingPolicies(set.mutating, set.mutatingBindings), replay.WithMapOrder(set.mapOrder(t)))
	if err != nil {
		t.Fatal(err)
	}
	outcome := func(rec *replay.Record) string {
		if rec == nil {
			return "none"
		}
		return string(rec.Decision) + " " + string(rec.Certainty) + " " + string(rec.Reason)
	}
	seen := 0
	if _, err := r.Run(context.Background(), []replay.Source{{Name: "-", Reader: bufio.NewReader(f)}}, func(rec *replay.Record) error {
		seen++
		if got, want := outcome(rec), outcome(byID[rec.AuditID]); got != want {
			errorf(t, "standard input: %s: %s, the file's %s", rec, got, want)
		}
		return nil
	}); err != nil {
		t.Fatalf("standard input: replay: %v", err)
	}
	if seen != len(byID) {
		errorf(t, "standard input: %d records, the file's %d", seen, len(byID))
	}
}

// TestSameMessage: a message with the stand-in for a generated name is the whole log's where
// only that name differs, and not where anything else does.
func TestSameMessage(t *testing.T) {
	whole := `configmaps "gen-xsv5g" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: refuses`
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{whole, true},
		{`configmaps "gen-?????" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: refuses`, true},
		{`configmaps "gen-?????" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'c' denied request: refuses`, false},
		{`configmaps "gan-?????" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: refuses`, false},
		{`configmaps "gen-xsv5h" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: refuses`, false},
		{`configmaps "gen-?????" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: refuses.`, false},
	} {
		if got := sameMessage(tc.msg, whole); got != tc.want {
			errorf(t, "sameMessage(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}
