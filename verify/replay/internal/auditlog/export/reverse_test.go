package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestAppendCompact holds appendCompact to encoding/json's Compact on random values indented
// every way (strings with escapes, quotes, spaces and bytes beyond ASCII, runs of every length
// around a word's), and finds no value whole in any of their prefixes.
func TestAppendCompact(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(7, 1))
	runes := []string{"a", " ", `"`, `\`, "\n", "\t", "\u00e9", "\u2028", "}", "{", "[", ",", ":", "\x01", "        "}
	str := func() string {
		var b strings.Builder
		for range rnd.IntN(20) {
			b.WriteString(runes[rnd.IntN(len(runes))])
		}
		return b.String()
	}
	var value func(depth int) any
	value = func(depth int) any {
		switch k := rnd.IntN(6); {
		case depth > 3 || k == 0:
			return str()
		case k == 1:
			return rnd.Float64() * 1e6
		case k == 2:
			return rnd.IntN(2) == 0
		case k == 3:
			var a []any
			for range rnd.IntN(4) {
				a = append(a, value(depth+1))
			}
			return a
		default:
			m := map[string]any{}
			for range rnd.IntN(5) {
				m[str()] = value(depth + 1)
			}
			return m
		}
	}
	indents := []string{"", " ", "  ", "\t", "      ", "         "}
	for range 3000 {
		v := map[string]any{"a": value(0), str(): value(0)}
		indent := indents[rnd.IntN(len(indents))]
		in, err := json.MarshalIndent(v, strings.Repeat(" ", rnd.IntN(10)), indent)
		if err != nil {
			t.Fatal(err)
		}
		if rnd.IntN(3) == 0 {
			in = bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n"))
		}
		var want bytes.Buffer
		if err := json.Compact(&want, in); err != nil {
			t.Fatal(err)
		}
		got, whole := appendCompact([]byte("x"), in)
		if !whole || string(got) != "x"+want.String() {
			t.Fatalf("appendCompact(%q) = %q, %v; want %q, true", in, got, whole, "x"+want.String())
		}
		end := len(bytes.TrimRight(in, " \r\n"))
		for _, cut := range []int{1 + rnd.IntN(end-1), end - 1} {
			if got, whole := appendCompact(nil, in[:cut]); whole {
				t.Fatalf("appendCompact(%q) = %q, whole; want not whole", in[:cut], got)
			}
		}
	}
}

// FuzzAppendCompact: appendCompact never panics; of a JSON object or array it writes what
// encoding/json's Compact writes, whole; of anything else what it writes is never longer than
// the input, and not whole where the input is not one JSON value.
func FuzzAppendCompact(f *testing.F) {
	for _, s := range []string{`{"a": "b c",  "d": [1, 2]}`, "[\n  {\n    \"x\": \"\\\"y\"\n  }\n]", `{"a":"\u00e9\\`, `}{`, `"s"`, "{\"a\":\"\x01\"}", `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, whole := appendCompact(nil, in)
		if len(got) > len(in) {
			t.Fatalf("appendCompact(%q) = %q: longer than its input", in, got)
		}
		trimmed := bytes.TrimSpace(in)
		container := len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
		switch {
		case json.Valid(in) && container:
			var want bytes.Buffer
			if err := json.Compact(&want, in); err != nil {
				t.Fatal(err)
			}
			if !whole || !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("appendCompact(%q) = %q, %v; want %q, true", in, got, whole, want.Bytes())
			}
		case !json.Valid(in) && whole:
			// Whole says only that brackets and strings close: a value of wrong grammar
			// inside (a missing colon) is the decoder's to report. It must not say whole of
			// a value cut short or followed by more.
			var v any
			if err := json.Unmarshal(in, &v); err != nil && strings.Contains(err.Error(), "unexpected end") {
				t.Fatalf("appendCompact(%q) whole, but the input ends early: %v", in, err)
			}
		}
	})
}

// TestSpilledLoss: a record the reverser spills to disk comes back with all of its loss: the
// parts lost, the export, and its flags (a GKE entry's objects as Structs, its dry-run label).
func TestSpilledLoss(t *testing.T) {
	t.Parallel()
	for _, loss := range []auditlog.Loss{
		{},
		{Export: ExportLogAnalytics, Lost: auditlog.LostImpersonation},
		{Export: ExportGKE, Lost: auditlog.LostGroups | auditlog.LostStageTime, DryRunLabelled: true, Structs: true},
		{Export: ExportGKE, Lost: auditlog.LostCode, Structs: true},
	} {
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		writeSpilled(w, record{data: []byte(`{}`), line: 7, loss: loss})
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		got, err := readSpilled(bufio.NewReader(&buf), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.loss != loss || got.line != 7 {
			t.Errorf("spilled %+v: read back %+v at line %d", loss, got.loss, got.line)
		}
	}
}
