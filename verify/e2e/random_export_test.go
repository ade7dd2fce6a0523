package e2e

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/vapc-dev/vapc/verify/replay"
	"github.com/vapc-dev/vapc/verify/replay/exporttest"
)

// checkExportReplays replays the server's log again as two managed clusters' logging services
// would hand it over (exporttest: out of order, in their envelopes, GKE's losing what its
// entries do not carry) and holds each replay to the replay of the log (see checkReplayAgain):
// always one of GKE's two (it loses the most), and one of the others (or the log as
// kube-apiserver's container log file holds it, exporttest.Lossless), both chosen by the seed;
// for half the seeds (seed/2 odd), the other export holds the log split between two apiservers
// (splitLog), one export each, as a managed cluster's servers log to streams of their own; for
// a third (seed%3 == 2), CloudWatch's formats cut events at 8 KiB; for a quarter (seed%4 ==
// 3), GKE's entries are stamped with when their requests were received, not completed; for a
// third (seed/3%3 == 1), GKE's entries of dry runs are not labelled (every write may have
// been one); for a fifth (seed/5%5 == 2), GKE's entries over 6 KiB are split in two.
func checkExportReplays(t *testing.T, log string, set policySet, byID map[string]*replay.Record, from int, seed uint64) {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	active := activeIDs(t, data, from)
	var gke, others []string
	formats := append(exporttest.Formats(), exporttest.Lossless()...)
	for _, f := range formats {
		if f == exporttest.GKESink || string(f) == "gke" {
			gke = append(gke, string(f))
		} else {
			others = append(others, string(f))
		}
	}
	chosen := []string{gke[seed%uint64(len(gke))], others[seed%uint64(len(others))]}
	for _, f := range formats {
		if string(f) != chosen[0] && string(f) != chosen[1] {
			continue
		}
		dir := t.TempDir()
		what := "the log as the " + string(f) + " export"
		logs := [][]byte{data}
		if string(f) == chosen[1] && seed/2%2 == 1 {
			// A managed cluster runs two kube-apiservers or more, each logging to its own
			// stream (CloudWatch's kube-apiserver-audit-*, an S3 export's file of each):
			// each server's events wrapped on their own, the replay merging the exports.
			paths := []string{filepath.Join(dir, "apiserver-a.log"), filepath.Join(dir, "apiserver-b.log")}
			splitLog(t, log, paths, from)
			logs = nil
			for _, p := range paths {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				logs = append(logs, b)
			}
			what += " of each of two apiservers"
		}
		// For a third of the seeds, CloudWatch cuts the events longer than 8 KiB, as it cuts
		// those longer than 256 KiB (the scenario's are smaller): each is replayed from the
		// head it kept, at its CloudWatch timestamp, which comes after it completed (not in
		// the messages Firehose extracted, which keep no timestamp: a cut one is malformed).
		limit := exporttest.CloudWatchLimit
		switch string(f) {
		case "eks-cloudwatch", string(exporttest.EKSText), "eks-s3", string(exporttest.EKSTail), "eks-firehose":
			if seed%3 == 2 {
				limit = 8 << 10
				what += ", events over 8 KiB cut"
			}
		}
		// GKE's documentation does not say whether an entry's timestamp is when the request
		// completed or when it was received: for a quarter of the seeds, the latter. For a
		// third (seed/3%3 == 1), its entries of dry runs are not labelled, as before GKE
		// labelled them: no entry says whether its write was one.
		isGKE := f == exporttest.GKESink || string(f) == "gke"
		var gkeOpts exporttest.GKEOptions
		if isGKE && seed%4 == 3 {
			gkeOpts.Stamp = exporttest.StampReceived
			what += ", stamped when received"
		}
		if isGKE && seed/3%3 == 1 {
			gkeOpts.DryRunsUnlabelled = true
			what += ", dry runs not labelled"
		}
		// For a fifth (seed/5%5 == 2), Cloud Logging splits the entries longer than 6 KiB, as
		// it splits those over its size limit (the scenario's are smaller): each is replayed
		// once, without its objects.
		if isGKE && seed/5%5 == 2 {
			gkeOpts.SplitOver = 6 << 10
			what += ", entries over 6 KiB split"
		}
		var sources []replay.Source
		for i, l := range logs {
			wrapped, err := exporttest.WrapCut(f, l, limit)
			if gkeOpts != (exporttest.GKEOptions{}) {
				wrapped, err = exporttest.WrapGKEWith(f, l, gkeOpts)
			}
			if err != nil {
				t.Fatalf("wrapping the log as %s: %v", f, err)
			}
			path := filepath.Join(dir, exporttest.Name(f, i))
			if err := os.WriteFile(path, wrapped, 0o644); err != nil {
				t.Fatal(err)
			}
			sources = append(sources, replay.Source{Name: path})
		}
		exported := set
		if f == exporttest.GKESink || string(f) == "gke" || string(f) == "aks-loganalytics" {
			// The observer reads every field of the user, which a GKE entry does not carry but
			// for the name, and an AKS Log Analytics row carries as who authenticated, not
			// whom admission saw: it would leave every request undecided, and it decides
			// nothing.
			exported = set.without(observerName)
		}
		checkReplayAgain(t, what, sources, active, exported, byID)
	}
}

// activeIDs are the audit IDs of the log's lines from line from on.
func activeIDs(t *testing.T, log []byte, from int) map[string]bool {
	t.Helper()
	active := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(nil, 16<<20)
	for line := 1; sc.Scan(); line++ {
		if m := auditIDOf.FindSubmatch(sc.Bytes()); m != nil && line >= from {
			active[string(m[1])] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return active
}
