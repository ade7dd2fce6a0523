package e2e

import (
	"bufio"
	"context"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/vapc-dev/vapc/verify/replay"
)

// checkSplitReplay replays the server's log again as the logs of two kube-apiservers of one
// cluster would hold it (each request's events in the log of the server that served it, chosen
// by its audit ID), which the replay reads as one in the time order of their events, and
// holds it to the replay of the whole log (byID): no decision of a request received once the
// policies were in effect (from) that the two replays both make may differ, and none may differ
// from what the log records.
func checkSplitReplay(t *testing.T, log string, set policySet, byID map[string]*replay.Record, from int) {
	t.Helper()
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "apiserver-a.log"), filepath.Join(dir, "apiserver-b.log")}
	active := splitLog(t, log, paths, from)
	r, err := replay.New(set.policies, set.bindings, replay.WithCheckRecorded(true), replay.WithMutatingPolicies(set.mutating, set.mutatingBindings))
	if err != nil {
		t.Fatal(err)
	}
	split := map[string]*replay.Record{}
	if _, err := r.Run(context.Background(), []replay.Source{{Name: paths[1]}, {Name: paths[0]}}, func(rec *replay.Record) error {
		split[rec.AuditID] = rec
		return nil
	}); err != nil {
		t.Fatalf("replay of the split log: %v", err)
	}
	decided := func(rec *replay.Record) bool {
		return rec != nil && rec.Decision != replay.DecisionIndeterminate
	}
	both, onlyWhole, onlySplit := 0, 0, 0
	for id := range active {
		rec, whole := split[id], byID[id]
		switch {
		case rec == nil:
			if decided(whole) {
				onlyWhole++
			}
		case rec.Changed || len(rec.Disagreements) > 0:
			t.Errorf("split log: %s: recorded %s, predicted %s %v", describeRecord(rec), rec.Recorded, rec.Decision, rec.Disagreements)
		case decided(rec) && decided(whole):
			both++
			if rec.Decision != whole.Decision || rec.Code != whole.Code || rec.Message != whole.Message {
				t.Errorf("split log: %s, the whole log: %s", describeRecord(rec), describeRecord(whole))
			}
		case decided(rec):
			onlySplit++
		case decided(whole):
			onlyWhole++
		}
	}
	t.Logf("the log split between two apiservers: %d decisions as the whole log's, %d decided only there, %d only split", both, onlyWhole, onlySplit)
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
