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
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
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
		g.(*grepReader).buf = make([]byte, chunk) // lines about the buffer's length, which grows
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

// TestSplitGrep holds the lines a splitGrep hands over, the file searched in two halves at
// once, to those of the log's line reader that hold the needle and are not too long, numbered
// alike: random logs as TestGrepLines', the needle often on the lines about the middle and
// lines too long across it, with and without a last newline; a consumer that stops early
// stops the second half (more lines ahead of it than it holds).
func TestSplitGrep(t *testing.T) {
	t.Parallel()
	needle := []byte("missionpolic")
	dir := t.TempDir()
	split := 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 11))
		maxLine := 40 + rng.IntN(200)
		var b strings.Builder
		lines := 1 + rng.IntN(80)
		if seed%50 == 0 {
			lines = 3 * grepAhead / grepToken // more than the second half holds ahead
		}
		for i := range lines {
			n := rng.IntN(2 * maxLine)
			if rng.IntN(4) == 0 {
				n = rng.IntN(8)
			}
			line := []byte(strings.Repeat(string(rune('a'+i%26)), n))
			middle := i >= lines/2-2 && i <= lines/2+2
			if (rng.IntN(3) == 0 || middle || lines > grepAhead/grepToken) && n >= len(needle) {
				copy(line[rng.IntN(n-len(needle)+1):], needle)
			}
			b.Write(line)
			if rng.IntN(6) == 0 {
				b.WriteString("\r\n")
			} else {
				b.WriteString("\n")
			}
		}
		text := b.String()
		if rng.IntN(3) == 0 {
			text = strings.TrimSuffix(text, "\n")
		}
		path := filepath.Join(dir, fmt.Sprintf("audit-%d.log", seed))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		src := Source{Name: path, filter: needle}
		want := readFiltered(t, src, maxLine, needle)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sg := newSplitGrep(context.Background(), src, f, maxLine, 1)
		if sg == nil {
			// No newline after the middle: read as one.
			if strings.Contains(strings.TrimSuffix(text[len(text)/2:], "\n"), "\n") {
				t.Errorf("seed %d: not split, with a newline after the middle", seed)
			}
			f.Close()
			continue
		}
		split++
		stop := len(want) + 1
		if seed%3 == 0 && len(want) > 0 {
			stop = rng.IntN(len(want)) // stops early: close must not wait for the rest
		}
		var got []grepped
		for l, ok := sg.Next(); ok && len(got) < stop; l, ok = sg.Next() {
			got = append(got, grepped{l.Num, string(l.Data), l.Size})
		}
		sg.close()
		f.Close()
		if stop <= len(want) {
			want = want[:stop]
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(grepped{}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("seed %d (longest line %d): lines holding the needle (-line reader +split grep):\n%s", seed, maxLine, diff)
		}
	}
	if split < 250 {
		t.Errorf("%d of 300 logs split, want most", split)
	}
}

// TestSplitGrepLines: a filtered pass over one log backend's file larger than grepSplitAt
// (split in two) hands over the lines its line reader holds with the needle, numbered alike,
// and a search of its bytes (in two halves too) finds what they hold.
func TestSplitGrepLines(t *testing.T) {
	t.Parallel()
	needle := []byte("missionpolic")
	var b bytes.Buffer
	line := bytes.Repeat([]byte("x"), 1000)
	for i := 0; b.Len() <= grepSplitAt+grepSplitAt/8; i++ {
		if i%997 == 0 {
			fmt.Fprintf(&b, "%d %s %s\n", i, needle, line[:i%50])
			continue
		}
		b.Write(line[:100+i%900])
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	src := Source{Name: path}
	want := readFiltered(t, src, 1<<20, needle)
	var got []grepped
	if err := Lines(context.Background(), Filtered([]Source{src}, needle), 1<<20, func(l auditlog.Line) bool {
		got = append(got, grepped{l.Num, string(l.Data), l.Size})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(want) < 60 {
		t.Fatalf("%d lines hold the needle, want more", len(want))
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(grepped{})); diff != "" {
		t.Errorf("lines holding the needle (-line reader +filtered pass):\n%s", diff)
	}
	// Its search for a needle it does not hold, in halves (searchHalves), finds the one it
	// holds and reads to the end.
	found, ended, err := holdsAny(context.Background(), path, [][]byte{needle, []byte("absent")}, 1, nil)
	if err != nil || !found[0] || found[1] || !ended {
		t.Errorf("holdsAny = %v, read to the end %v, %v; want [true false], true", found, ended, err)
	}
}

// TestSplitGrepHolds: the second half's goroutine holds grepAhead bytes of its lines ahead of
// Next, not a number of lines whatever their length: long lines that all hold the needle (a
// list response logged whole each), the first half handed over, the goroutine waits.
func TestSplitGrepHolds(t *testing.T) {
	t.Parallel()
	needle := []byte("missionpolic")
	const long = 200 << 10
	line := append(bytes.Repeat([]byte("x"), long), '\n')
	copy(line, needle)
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, bytes.Repeat(line, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sg := newSplitGrep(context.Background(), Source{Name: path, filter: needle}, f, 1<<20, 1)
	if sg == nil {
		t.Fatal("not split")
	}
	defer sg.close()
	n := 0
	for ; n < 500; n++ { // the first half
		if _, ok := sg.Next(); !ok {
			t.Fatalf("%d lines", n)
		}
	}
	time.Sleep(200 * time.Millisecond) // the goroutine reads ahead as far as it may
	if held, most := len(sg.second)*len(line), grepAhead+len(line); held > most {
		t.Errorf("%d bytes of lines held ahead, want at most %d", held, most)
	}
	for _, ok := sg.Next(); ok; _, ok = sg.Next() {
		n++
	}
	if n != 1000 {
		t.Errorf("%d lines, want 1000", n)
	}
}
