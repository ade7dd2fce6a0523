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

// TestGrepLines holds the lines a grepReader hands over to those of the log's line reader that
// hold the needle and are not too long, numbered alike: on random logs of lines of every
// length about the buffer's and the longest line's, the needle anywhere in them, with and
// without a last newline, with carriage returns and blank lines, plain, gzip-compressed and
// compressed but cut short.
func TestGrepLines(t *testing.T) {
	t.Parallel()
	needle := []byte("missionpolic")
	dir := t.TempDir()
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		maxLine := 40 + rng.IntN(200)
		chunk := 16 + rng.IntN(300)
		var b strings.Builder
		for i := range rng.IntN(60) {
			n := rng.IntN(2 * maxLine)
			if rng.IntN(4) == 0 {
				n = rng.IntN(8)
			}
			line := []byte(strings.Repeat(string(rune('a'+i%26)), n))
			if rng.IntN(3) == 0 && n >= len(needle) {
				copy(line[rng.IntN(n-len(needle)+1):], needle)
			}
			b.Write(line)
			switch rng.IntN(6) {
			case 0:
				b.WriteString("\r\n")
			default:
				b.WriteString("\n")
			}
		}
		text := b.String()
		if rng.IntN(3) == 0 {
			text = strings.TrimSuffix(text, "\n")
		}
		data := []byte(text)
		switch seed % 4 {
		case 1:
			data = exporttest.Gzip(data)
		case 3:
			// Cut short: the line the cut ends in is not handed over, those before it are.
			data = exporttest.Gzip(data)
			data = data[:len(data)*2/3]
		}
		path := filepath.Join(dir, fmt.Sprintf("audit-%d.log", seed))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		src := Source{Name: path, filter: needle}
		want := readFiltered(t, src, maxLine, needle)
		g, closeGrep, ok := openGrep(context.Background(), src, maxLine)
		if !ok {
			t.Fatalf("seed %d: openGrep refused a log backend's file", seed)
		}
		g.buf = make([]byte, chunk) // lines about the buffer's length, which grows
		var got []grepped
		for l, ok := g.Next(); ok; l, ok = g.Next() {
			got = append(got, grepped{l.Num, string(l.Data), l.Size})
		}
		closeGrep()
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(grepped{})); diff != "" {
			t.Errorf("seed %d (longest line %d, buffer %d): lines holding the needle (-line reader +grep):\n%s", seed, maxLine, chunk, diff)
		}
	}
}

// grepped is what a test compares of a line handed over.
type grepped struct {
	num  int
	data string
	size int
}

// readFiltered are the lines of the source's line reader that hold the needle and that the
// reader hands over whole.
func readFiltered(t *testing.T, src Source, maxLine int, needle []byte) []grepped {
	t.Helper()
	next, closeSource := openSource(context.Background(), src, maxLine)
	defer closeSource()
	var out []grepped
	for l, ok := next(); ok; l, ok = next() {
		if l.Err == nil && bytes.Contains(l.Data, needle) {
			out = append(out, grepped{l.Num, string(l.Data), l.Size})
		}
	}
	return out
}
