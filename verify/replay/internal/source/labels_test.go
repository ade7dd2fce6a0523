package source

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestLabelsDryRuns finds GKE's dry-run label in a GKE export, plain or compressed, wherever
// it is (across the reads of the file), and in no other log.
func TestLabelsDryRuns(t *testing.T) {
	entry := func(labels string) string {
		return `{"insertId":"a","logName":"projects/p/logs/cloudaudit.googleapis.com%2Factivity","labels":{` + labels + `},"protoPayload":{"serviceName":"k8s.io","methodName":"io.k8s.core.v1.configmaps.create"},"timestamp":"2026-11-22T10:00:00Z"}` + "\n"
	}
	// far puts the label past the first megabyte.
	far := strings.Repeat(entry(`"authorization.k8s.io/decision":"allow"`), (2<<20)/250) + entry(`"command.gke.io/dryRun":"true"`)
	gz := func(s string) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.String()
	}
	for _, tc := range []struct {
		name, data string
		want       bool
	}{
		{"a GKE sink with a dry run", entry(`"authorization.k8s.io/decision":"allow"`) + entry(`"command.gke.io/dryRun":"true"`), true},
		{"a GKE sink without", entry(`"authorization.k8s.io/decision":"allow"`), false},
		{"far in", far, true},
		{"far in, compressed", gz(far), true},
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
