package e2e

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vapc-dev/vapc/verify/replay"
	"github.com/vapc-dev/vapc/verify/snapshot"
)

// A replay seldom has the log from the cluster's start: a user takes a snapshot of the cluster
// (`vapc snapshot`) and replays the log written after it. Random parity takes one halfway
// through its requests, while the controllers go on writing, and replays the log's tail from
// it (checkSnapshotReplay).

// snapshotStyle is how a random test writes its snapshot: as vapc snapshot writes it (YAML, or
// JSON for -o FILE.json), or as kubectl get -o yaml writes one List of every item.
type snapshotStyle int

const (
	snapshotYAML snapshotStyle = iota
	snapshotKubectl
	snapshotJSON
)

// snapshotStyleOf is the style of a seed's snapshot: as kubectl writes it for an odd seed
// (make test's default, 1521), vapc snapshot's JSON for 2 modulo 4 (the controllers' default,
// 2), its YAML for the others.
func snapshotStyleOf(seed uint64) snapshotStyle {
	switch {
	case seed%2 == 1:
		return snapshotKubectl
	case seed%4 == 2:
		return snapshotJSON
	}
	return snapshotYAML
}

func (s snapshotStyle) String() string {
	return [...]string{"vapc snapshot's YAML", "as kubectl get -o yaml writes it", "vapc snapshot's JSON"}[s]
}

// takeSnapshot takes what `vapc snapshot` takes of the cluster for the policies of set, now,
// into a file of the test's, and returns it with the audit ID of the last request the test
// sent before it, written in style: snapshotKubectl writes it as `kubectl get -A -o yaml`
// does, one List of every item, which says nothing of the resources that have none.
func (w *randomWorld) takeSnapshot(set policySet, style snapshotStyle) (file, cut string) {
	t := w.t
	t.Helper()
	cut = w.lastAuditID()
	c, err := snapshot.NewClient(w.s.RESTConfig())
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	resources, _ := snapshot.Resources(set.policies, c.Mapper, c.Subresources)
	snap, err := c.Take(w.ctx, resources)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	var out bytes.Buffer
	write, name := snap.Write, "snapshot.yaml"
	if style == snapshotJSON {
		write, name = snap.WriteJSON, "snapshot.json" // vapc snapshot -o FILE.json
	}
	if err := write(&out); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if style == snapshotKubectl {
		items := make([]any, len(snap.Items))
		for i := range snap.Items {
			items[i] = snap.Items[i].Object
		}
		data, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items})
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		out.Reset()
		out.Write(data)
	}
	file = filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot at step %d, after request %s: %d objects (%s)", w.step, cut, len(snap.Items), style)
	return file, cut
}

// checkSnapshotReplay replays the lines of the log after the request cut from the snapshot
// taken after it, and holds the requests among them received once the policies were in
// effect (from the line from on) to the replay of the whole log (checkReplayAgain): what the
// snapshot and the tail leave unknown may leave a request undecided, never decided otherwise.
func checkSnapshotReplay(t *testing.T, log string, set policySet, byID map[string]*replay.Record, from int, snapFile, cut string) {
	t.Helper()
	if snapFile == "" || cut == "" {
		return
	}
	cutLine := 0
	forEachFinalEventLine(t, log, func(line int, e *auditEvent) {
		if string(e.AuditID) == cut {
			cutLine = line
		}
	})
	if cutLine == 0 {
		t.Fatalf("snapshot: no event of the audit ID %s, the last request before it", cut)
	}
	active := map[string]bool{}
	forEachFinalEventLine(t, log, func(line int, e *auditEvent) {
		if line > cutLine && line >= from {
			active[string(e.AuditID)] = true
		}
	})
	tail := filepath.Join(t.TempDir(), "tail.log")
	in, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out bytes.Buffer
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 16<<20)
	for line := 1; sc.Scan(); line++ {
		if line > cutLine {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tail, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if dst := os.Getenv("VAPC_KEEP_AUDIT"); dst != "" {
		// Kept with the log (random_test.go), to replay the tail again by hand.
		snap, err := os.ReadFile(snapFile)
		if err == nil {
			err = os.WriteFile(dst+".snapshot"+filepath.Ext(snapFile), snap, 0o644)
		}
		if err == nil {
			err = os.WriteFile(dst+".tail", out.Bytes(), 0o644)
		}
		if err != nil {
			errorf(t, "VAPC_KEEP_AUDIT: %v", err)
		}
	}
	checkReplayAgain(t, "the log's tail from a snapshot", []replay.Source{{Name: tail}}, active, set, byID, replay.WithSnapshot(snapFile))
}
