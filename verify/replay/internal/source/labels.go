package source

import (
	"bytes"
	"context"
	"os"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// gkeDryRunLabel is GKE's label of a dry run's entry, as its JSON names it.
var gkeDryRunLabel = []byte(`"command.gke.io/dryRun"`)

// LabelsDryRuns says whether a GKE Cloud Logging export among the sources (files) labels dry
// runs: an entry of it carries command.gke.io/dryRun (GKE labels them since 2026; one that
// labels one labels them all). Only GKE's exports are read, their bytes searched for the
// label (decompressed), not decoded.
func LabelsDryRuns(ctx context.Context, sources []Source) bool {
	seen := map[string]bool{}
	for _, src := range sources {
		file := src.File()
		if file == "" || seen[file] || ctx.Err() != nil {
			continue
		}
		seen[file] = true
		if gkeExport(src, file) {
			if found, _ := src.holds(ctx, gkeDryRunLabel); found {
				return true
			}
		}
	}
	return false
}

// gkeExport says whether the file is a GKE Cloud Logging export (the format given, or the one
// its first bytes show).
func gkeExport(src Source, file string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	format, err := export.FormatOf(src.Name, f, export.Format(src.Format))
	return err == nil && format == export.GKE
}

// rarest is where needle's first capital letter is, 0 when it has none: a byte JSON holds
// seldom, which a search skips through the bytes to at IndexByte's speed (containsFrom), ten
// times as fast as to a quote, which JSON is full of.
func rarest(needle []byte) int {
	for i, c := range needle {
		if 'A' <= c && c <= 'Z' {
			return i
		}
	}
	return 0
}

// containsFrom is bytes.Contains(b, needle), searching for needle from its byte at k and
// checking the bytes before it where it is found.
func containsFrom(b, needle []byte, k int) bool {
	tail := needle[k:]
	for off := 0; ; {
		i := bytes.Index(b[off:], tail)
		if i < 0 {
			return false
		}
		if i += off; i >= k && bytes.Equal(b[i-k:i], needle[:k]) {
			return true
		}
		off = i + 1
	}
}
