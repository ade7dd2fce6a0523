package source

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
)

// TestLabelsDryRuns finds GKE's dry-run label in a GKE export, plain or compressed, wherever
// it is (across the reads of the file), and in no other log.
func TestLabelsDryRuns(t *testing.T) {
	entry := func(labels string) string {
		return `{"insertId":"a","logName":"projects/p/logs/cloudaudit.googleapis.com%2Factivity","labels":{` + labels + `},"protoPayload":{"serviceName":"k8s.io","methodName":"io.k8s.core.v1.configmaps.create"},"timestamp":"2026-11-22T10:00:00Z"}` + "\n"
	}
	// far puts the label past the first megabyte.
	far := strings.Repeat(entry(`"authorization.k8s.io/decision":"allow"`), (2<<20)/250) + entry(`"command.gke.io/dryRun":"true"`)
	for _, tc := range []struct {
		name, data string
		want       bool
	}{
		{"a GKE sink with a dry run", entry(`"authorization.k8s.io/decision":"allow"`) + entry(`"command.gke.io/dryRun":"true"`), true},
		{"a GKE sink without", entry(`"authorization.k8s.io/decision":"allow"`), false},
		{"far in", far, true},
		{"far in, compressed", gzipped(far), true},
		{"the log backend's lines naming it", event("a", 1)[:len(event("a", 1))-1] + `,"annotations":{"command.gke.io/dryRun":"true"}}` + "\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := LabelsDryRuns(context.Background(), []Source{{Name: path}}); got != tc.want {
				t.Errorf("LabelsDryRuns = %v, want %v", got, tc.want)
			}
		})
	}
}

// gzipped is s gzip-compressed.
func gzipped(s string) string { return string(exporttest.Gzip([]byte(s))) }

// TestContainsFrom holds containsFrom to bytes.Contains: the needle searched from its capital
// letter is found where it is whole, not where only its part from there is.
func TestContainsFrom(t *testing.T) {
	needle := []byte(`"command.gke.io/dryRun"`)
	for _, b := range []string{
		``,
		`"command.gke.io/dryRun"`,
		`{"labels":{"command.gke.io/dryRun":"true"}}`,
		`{"x":"dryRun","y":"io/dryRun"}`,
		`.gke.io/dryRun" "command.gke.io/dryRun`,
		`Run" "command.gke.io/dryRun"`,
		`"command.gke.io/dryRun`,
	} {
		if got, want := containsFrom([]byte(b), needle, rarest(needle)), bytes.Contains([]byte(b), needle); got != want {
			t.Errorf("containsFrom(%q) = %v, want %v", b, got, want)
		}
	}
	if got := rarest(needle); got != strings.IndexByte(string(needle), 'R') {
		t.Errorf("rarest = %d, want the R's", got)
	}
	if got := rarest([]byte("missionpolic")); got != 0 {
		t.Errorf("rarest without a capital = %d, want 0", got)
	}
}

// TestSharedSearches: the sources of one replay (Shared) search a file for every needle of the
// replay's at once, and answer as bytes.Contains does over its decompressed bytes, wherever
// the needles are (across the reads of the file); a second search of the file reads it no
// more (its bytes changed, its size and time kept, it answers as before), and a file changed
// since is searched again.
func TestSharedSearches(t *testing.T) {
	needle := []byte("missionpolic")
	label := gkeDryRunLabel
	filler := strings.Repeat(`{"x":"abcdefghij klmnopqrstuvwxyz 0123456789"}`+"\n", (1<<20)/46)
	for _, tc := range []struct {
		name string
		data string
	}{
		{"neither", filler + filler},
		{"both, the label first", string(label) + filler + string(needle)},
		{"the needle only, across a read", filler[:1<<20-5] + string(needle) + filler},
		{"the label only, far in", filler + filler + filler + string(label)},
	} {
		for _, compressed := range []bool{false, true} {
			name, data := tc.name, tc.data
			if compressed {
				name, data = name+", compressed", gzipped(data)
			}
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "log")
				if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
				srcs, release := Shared([]Source{{Name: path}}, needle)
				defer release()
				src := srcs[0]
				for _, n := range [][]byte{label, needle} {
					got, err := src.holds(context.Background(), n)
					if want := strings.Contains(tc.data, string(n)); err != nil || got != want {
						t.Errorf("holds(%q) = %v, %v; want %v", n, got, err, want)
					}
					if n[0] == label[0] && !strings.Contains(tc.data, string(label)) {
						// Read to its end for the label: not read again for the needle
						// (the file's bytes changed, its size and time kept).
						fi, _ := os.Stat(path)
						os.WriteFile(path, make([]byte, len(data)), 0o644)
						os.Chtimes(path, fi.ModTime(), fi.ModTime())
					}
				}
				// A file changed since (or, where the label was found, a search that stopped
				// there): searched again.
				os.WriteFile(path, []byte(string(needle)+string(label)+"x"), 0o644)
				for _, n := range [][]byte{label, needle} {
					if got, err := src.holds(context.Background(), n); err != nil || !got {
						t.Errorf("holds(%q) of the changed file = %v, %v; want true", n, got, err)
					}
				}
			})
		}
	}
}

// TestSharedSearchStops: a search stops at the needle it was asked for, before the rest of the
// file; a later search for a needle it did not find reads the file again (here the label
// written into the file's rest since, its size and time kept: found), and does not take it for
// absent.
func TestSharedSearchStops(t *testing.T) {
	needle := []byte("missionpolic")
	filler := strings.Repeat(`{"x":"abcdefghij klmnopqrstuvwxyz 0123456789"}`+"\n", (4<<20)/46)
	data := string(needle) + filler
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	srcs, release := Shared([]Source{{Name: path}}, needle)
	defer release()
	if got, err := srcs[0].holds(context.Background(), needle); err != nil || !got {
		t.Fatalf("holds(the needle at the start) = %v, %v; want true, nil", got, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	far := len(data) - 1000
	labelled := data[:far] + string(gkeDryRunLabel) + data[far+len(gkeDryRunLabel):]
	if err := os.WriteFile(path, []byte(labelled), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got, err := srcs[0].holds(context.Background(), gkeDryRunLabel); err != nil || !got {
		t.Errorf("holds(the label, past where the first search stopped) = %v, %v; want true, nil", got, err)
	}
}

// TestSearchHalves holds the search of a file in two halves at once (searchHalves, which
// holdsAny makes of a large file not compressed) to the search of it as one stream: which
// needles it holds where the one asked for is not there, that one found where it is, on
// random files with the needles anywhere, across the middle too, and none at all.
func TestSearchHalves(t *testing.T) {
	t.Parallel()
	needles := [][]byte{[]byte(`"command.gke.io/dryRun"`), []byte("missionpolic"), []byte("ab")}
	dir := t.TempDir()
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 3))
		data := bytes.Repeat([]byte("x"), 40+rng.IntN(4000))
		for range rng.IntN(4) {
			n := needles[rng.IntN(len(needles))]
			at := rng.IntN(len(data) - len(n) + 1)
			if rng.IntN(3) == 0 {
				// Across the middle, which the first half reads past.
				at = max(0, min(len(data)-len(n), len(data)/2-rng.IntN(len(n)+1)))
			}
			copy(data[at:], n)
		}
		path := filepath.Join(dir, fmt.Sprintf("log-%d", seed))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for stop := range needles {
			want, wantEnded, err1 := search(context.Background(), bytes.NewReader(data), needles, stop, nil)
			got, gotEnded, err2 := searchHalves(context.Background(), f, int64(len(data)), needles, stop)
			if err1 != nil || err2 != nil {
				t.Fatalf("seed %d: errors %v, %v", seed, err1, err2)
			}
			if want[stop] != got[stop] || bytes.Contains(data, needles[stop]) != got[stop] {
				t.Errorf("seed %d, needle %q: found %v in halves, %v in one stream", seed, needles[stop], got[stop], want[stop])
			}
			if !want[stop] && (!cmp.Equal(want, got) || wantEnded != gotEnded || !gotEnded) {
				t.Errorf("seed %d, needle %q absent: halves found %v (read to the end %v), one stream %v (%v)", seed, needles[stop], got, gotEnded, want, wantEnded)
			}
			// Read to the end, a needle not found is not there (what the searches keep by file
			// answers later searches so).
			for i, n := range needles {
				if gotEnded && got[i] != bytes.Contains(data, n) {
					t.Errorf("seed %d, asked for %q: read to the end, found %q %v", seed, needles[stop], n, got[i])
				}
			}
		}
		f.Close()
	}
}
