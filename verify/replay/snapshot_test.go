package replay

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// stateDump is every entry of a State, for comparisons.
func stateDump(s *state.State) map[string]string {
	out := map[string]string{}
	for gr, m := range s.Objects {
		for k, e := range m {
			out[gr.String()+"/"+k.Namespace+"/"+k.Name] = string(e.Raw) + "|" + e.Unknown + "|" + e.Labels.String() + "|" + e.Source
		}
	}
	return out
}

// TestSnapshotFastPath loads snapshots with the item-by-item YAML path and with the general
// decoder and wants the same State, the same count and the same error.
func TestSnapshotFastPath(t *testing.T) {
	t.Parallel()
	ps, bs := loadPolicies(t, filepath.Join(auditData, "kosmos-flapping"))
	node := func(name, extra string) string {
		return "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: " + name + "\n    labels:\n      kosmos.io/node: \"true\"\n" + extra
	}
	cases := map[string]string{
		"list":           "apiVersion: v1\nitems:\n" + node("a", "") + node("b", "  spec:\n    podCIDR: 10.0.0.0/24\n") + "kind: List\nmetadata:\n  resourceVersion: \"\"\n",
		"kind-in-items":  "apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {name: a}\n-\n  metadata:\n    name: b\n",
		"block-scalar":   "kind: List\napiVersion: v1\nitems:\n" + node("a", "  metadata2: |\n    x\n\n    - y\n") + "# c\n" + node("b", ""),
		"anchors":        "kind: List\napiVersion: v1\nitems:\n- &n\n  apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n- *n\n",
		"dup-same":       "kind: List\napiVersion: v1\nitems:\n" + node("a", "") + node("a", ""),
		"dup-other":      "kind: List\napiVersion: v1\nitems:\n" + node("a", "") + node("a", "  spec: {unschedulable: true}\n"),
		"dup-nil-empty":  "kind: List\napiVersion: v1\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: a, labels: {}}}\n- {apiVersion: v1, kind: Node, metadata: {name: a, labels: }}\n",
		"not-object":     "kind: List\napiVersion: v1\nitems:\n- 3\n",
		"empty-items":    "kind: List\napiVersion: v1\nitems: []\n",
		"indented-items": "kind: List\napiVersion: v1\nitems:\n  - {apiVersion: v1, kind: Node, metadata: {name: a}}\n",
		"docs":           "---\napiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n# only a comment\n---\nkind: List\napiVersion: v1\nitems:\n" + node("b", "") + "---\n",
		"crlf":           "kind: List\r\napiVersion: v1\r\nitems:\r\n- apiVersion: v1\r\n  kind: Node\r\n  metadata:\r\n    name: a\r\n",
		"bad-separator":  "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n--- x\n",
		"bad-yaml":       "kind: List\napiVersion: v1\nitems:\n- apiVersion: v1\n  kind: [\n",
		"two-items-keys": "kind: List\napiVersion: v1\nitems:\n" + node("a", "") + "items:\n" + node("b", ""),
		"no-name":        "kind: List\napiVersion: v1\nitems:\n- {apiVersion: v1, kind: Node, metadata: {labels: {a: b}}}\n",
	}
	dir := t.TempDir()
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			load := func(fast bool) (map[string]string, int, string) {
				var opts []Option
				if !fast {
					opts = append(opts, withoutSnapshotFastPath())
				}
				r, err := New(ps, bs, opts...)
				if err != nil {
					t.Fatal(err)
				}
				n, err := r.loadSnapshot([]string{path})
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				return stateDump(r.state), n, msg
			}
			wantState, wantN, wantErr := load(false)
			gotState, gotN, gotErr := load(true)
			if gotN != wantN || gotErr != wantErr {
				t.Errorf("fast path: %d objects, error %q; want %d, %q", gotN, gotErr, wantN, wantErr)
			}
			if diff := cmp.Diff(wantState, gotState); diff != "" {
				t.Errorf("State mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSnapshotFastPathGenerated compares both paths on the generator's snapshot.
func TestSnapshotFastPathGenerated(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", ".cache", "bench", "snapshot-seed1-100000.yaml")
	if testing.Short() {
		t.Skip("short")
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%v (run BENCH_EVENTS=100000 hack/bench.sh)", err)
	}
	ps, bs := inTreePolicies(t)
	load := func(fast bool) map[string]string {
		opts := []Option{WithSnapshot(path)}
		if !fast {
			opts = append(opts, withoutSnapshotFastPath())
		}
		r, err := New(ps, bs, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return stateDump(r.state)
	}
	want, got := load(false), load(true)
	if len(want) == 0 {
		t.Fatal("nothing loaded")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("State mismatch (-want +got):\n%s", diff)
	}
}
