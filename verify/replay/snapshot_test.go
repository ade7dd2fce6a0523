package replay

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/vapc-dev/vapc/internal/auditgen"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// stateDump is every entry of a State, for comparisons.
func stateDump(s *state.State) map[string]string {
	out := map[string]string{}
	for _, gr := range []schema.GroupResource{{Resource: "nodes"}, {Resource: "pods"}, {Resource: "namespaces"}, {Resource: "configmaps"}, {Resource: "limitranges"}, {Resource: "serviceaccounts"}} {
		if s.Complete(gr) {
			out["complete "+gr.String()] = "yes"
		}
	}
	for gr, m := range s.Objects {
		for k, e := range m {
			out[gr.String()+"/"+k.Namespace+"/"+k.Name] = string(e.Raw) + "|" + e.Unknown + "|" + e.Labels.String() + "|" + e.Source
		}
	}
	return out
}

// jsonNode is a Node as kubectl get -o json writes one, with more members after its metadata.
func jsonNode(name, more string) string {
	return `{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + name + `","labels":{"kosmos.io/node":"true"}}` + more + `}`
}

// TestSnapshotFastPath loads snapshots with the item-by-item YAML and JSON paths and with the
// general decoder and wants the same State, the same count and the same error.
func TestSnapshotFastPath(t *testing.T) {
	t.Parallel()
	ps, bs := loadPolicies(t, filepath.Join(auditData, "kosmos-flapping"))
	node := func(name, extra string) string {
		return "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: " + name + "\n    labels:\n      kosmos.io/node: \"true\"\n" + extra
	}
	cases := map[string]string{
		"list":             "apiVersion: v1\nitems:\n" + node("a", "") + node("b", "  spec:\n    podCIDR: 10.0.0.0/24\n") + "kind: List\nmetadata:\n  resourceVersion: \"\"\n",
		"kind-in-items":    "apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {name: a}\n-\n  metadata:\n    name: b\n",
		"block-scalar":     "kind: List\napiVersion: v1\nitems:\n" + node("a", "  metadata2: |\n    x\n\n    - y\n") + "# c\n" + node("b", ""),
		"anchors":          "kind: List\napiVersion: v1\nitems:\n- &n\n  apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n- *n\n",
		"dup-same":         "kind: List\napiVersion: v1\nitems:\n" + node("a", "") + node("a", ""),
		"yaml-numbers":     "kind: List\napiVersion: v1\nitems:\n" + node("a", "  spec:\n    n: 9007199254740993\n    m: 123456789012345\n    f: 1.0\n    e: 1e21\n    z: -0\n    y: -0.0\n    x: 0x1F\n    rv: \"12345678901234567890\"\n"),
		"dup-other":        "kind: List\napiVersion: v1\nitems:\n" + node("a", "") + node("a", "  spec: {unschedulable: true}\n"),
		"dup-nil-empty":    "kind: List\napiVersion: v1\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: a, labels: {}}}\n- {apiVersion: v1, kind: Node, metadata: {name: a, labels: }}\n",
		"not-object":       "kind: List\napiVersion: v1\nitems:\n- 3\n",
		"empty-items":      "kind: List\napiVersion: v1\nitems: []\n",
		"indented-items":   "kind: List\napiVersion: v1\nitems:\n  - {apiVersion: v1, kind: Node, metadata: {name: a}}\n",
		"docs":             "---\napiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n# only a comment\n---\nkind: List\napiVersion: v1\nitems:\n" + node("b", "") + "---\n",
		"no-final-newline": "kind: List\napiVersion: v1\nitems:\n" + node("a", "") + "- {apiVersion: v1, kind: Node, metadata: {name: b}}",
		"empty-docs":       "---\n---\n\n---\nkind: List\napiVersion: v1\nitems:\n" + node("a", "") + "---\n",
		"items-null-after": "kind: NodeList\napiVersion: v1\nitems:\n" + node("a", "") + "items: null\n",
		"document-end":     "apiVersion: v1\nkind: List\n...\nitems:\n" + node("a", ""),
		"crlf":             "kind: List\r\napiVersion: v1\r\nitems:\r\n- apiVersion: v1\r\n  kind: Node\r\n  metadata:\r\n    name: a\r\n",
		"bad-separator":    "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n--- x\n",
		"bad-yaml":         "kind: List\napiVersion: v1\nitems:\n- apiVersion: v1\n  kind: [\n",
		"two-items-keys":   "kind: List\napiVersion: v1\nitems:\n" + node("a", "") + "items:\n" + node("b", ""),
		"no-name":          "kind: List\napiVersion: v1\nitems:\n- {apiVersion: v1, kind: Node, metadata: {labels: {a: b}}}\n",
		// kubectl get -o json, and the JSON the general path decodes whole.
		"json-list":           `{"apiVersion":"v1","items":[` + jsonNode("a", "") + ` , ` + jsonNode("b", `,"spec":{"podCIDR":"10.0.0.0/24","taints":[{"key":"k","effect":"NoSchedule"}]}`) + "\n],\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"}}\n",
		"json-kind-after":     `{"items":[` + jsonNode("a", "") + `],"apiVersion":"v1","kind":"List"}`,
		"json-kind-in-items":  `{"apiVersion":"v1","kind":"NodeList","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}`,
		"json-numbers":        `{"apiVersion":"v1","kind":"List","items":[` + jsonNode("a", `,"spec":{"n":9007199254740993,"f":1.0,"e":1e21,"z":-0}`) + `]}`,
		"json-dup-same":       `{"apiVersion":"v1","kind":"List","items":[` + jsonNode("a", "") + "," + jsonNode("a", "") + `]}`,
		"json-dup-other":      `{"apiVersion":"v1","kind":"List","items":[` + jsonNode("a", "") + "," + jsonNode("a", `,"spec":{"unschedulable":true}`) + `]}`,
		"json-dup-keys":       `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"a","name":"b"}}]}`,
		"json-not-object":     `{"apiVersion":"v1","kind":"List","items":[3]}`,
		"json-null-item":      `{"apiVersion":"v1","kind":"List","items":[null]}`,
		"json-empty-items":    `{"apiVersion":"v1","kind":"List","items":[]}`,
		"json-items-twice":    `{"apiVersion":"v1","kind":"List","items":[` + jsonNode("a", "") + `],"items":[` + jsonNode("b", "") + `]}`,
		"json-items-not-list": `{"apiVersion":"v1","kind":"List","items":{"a":1}}`,
		"json-not-a-list":     `{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"},"items":[{"x":1}]}`,
		"json-docs":           jsonNode("a", "") + "\n" + `{"apiVersion":"v1","kind":"List","items":[` + jsonNode("b", "") + `]}` + "\n",
		"json-null-doc":       "null\n" + jsonNode("a", ""),
		"json-array":          `[` + jsonNode("a", "") + `]`,
		"json-bad":            `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node",]}`,
		"json-cut":            `{"apiVersion":"v1","kind":"List","items":[` + jsonNode("a", ""),
		"json-no-name":        `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"labels":{"a":"b"}}}]}`,
		"json-indented":       "{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n        {\n            \"apiVersion\": \"v1\",\n            \"kind\": \"Node\",\n            \"metadata\": {\n                \"name\": \"web-0\",\n                \"labels\": {\"a\": \"x:-0\"}\n            },\n            \"spec\": {\"z\": -0, \"w\": [ -0 ]}\n        },\n        {\n            \"apiVersion\": \"v1\",\n            \"kind\": \"Node\",\n            \"metadata\": {\"name\": \"b\"}\n        }\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n",
		"json-escapes":        `{"apiVersion":"v1","kind":"List","items":[` + jsonNode("a", `,"spec":{"podCIDR":"\u00e9\"\\/\ud83d\ude00"}`) + `]}`,
	}
	// The JSON the fast path leaves to the general one.
	generalJSON := map[string]bool{"json-items-twice": true, "json-items-not-list": true, "json-null-doc": true, "json-array": true, "json-bad": true, "json-cut": true}
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
			if strings.HasPrefix(name, "json-") {
				r, err := New(ps, bs)
				if err != nil {
					t.Fatal(err)
				}
				_, fast, _ := r.loadJSONListFile(path, map[string]seenObject{})
				if want := !generalJSON[name]; fast != want {
					t.Errorf("the JSON fast path took it: %v, want %v", fast, want)
				}
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

// TestSnapshotFastPathGenerated compares both paths on the generator's snapshot (hack/bench.sh's
// cluster: 400 nodes, their pods, 60 namespaces), as YAML and as JSON.
func TestSnapshotFastPathGenerated(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "snapshot.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auditgen.Generate(io.Discard, auditgen.Config{Seed: 1, Events: 1, SnapshotWriter: f}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
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
	// The same snapshot as kubectl get -o json writes it, through the JSON fast path.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "snapshot.json")
	if err := os.WriteFile(path, js, 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, load(true)); diff != "" {
		t.Errorf("State mismatch, JSON (-want +got):\n%s", diff)
	}
}

// TestSnapshotTypedListComplete: a typed List (the API's answer to a list, as vapc snapshot
// writes one a resource) holds every object of its resource, none when it is empty; an empty
// `kind: List` says nothing. A pod's create reads the LimitRanges of its namespace
// (LimitRanger), which may give its containers limits the policy reads: known to be none, the
// request is decided; not known, it is not.
func TestSnapshotTypedListComplete(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("limits", "pods", admissionregistrationv1.Create, nil,
		"object.spec.containers.all(c, has(c.resources.limits))")
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "ns1"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
	denied := `pods "web" is forbidden: ValidatingAdmissionPolicy 'limits' with binding 'limits' denied request: denied by limits`
	line := timedEvent(t, levelEvent(t, "1", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 422, denied, pod, nil), "03.000000", "03.001000", nil)
	list := func(kind string, items ...any) string {
		if items == nil {
			items = []any{}
		}
		l := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"resourceVersion": ""}, "items": items}
		if kind != "List" {
			l[CompleteListKey] = true // as vapc snapshot writes it
		}
		data, err := yaml.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1"}}
	sa := map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": "ns1", "uid": "u-sa"}}
	cases := []struct {
		name, snapshot string
		want           string
	}{
		{"typed lists", list("NamespaceList", ns) + "---\n" + list("ServiceAccountList", sa) + "---\n" + list("LimitRangeList"), DecisionDeny},
		{"typed lists as JSON", `{"apiVersion":"v1","kind":"LimitRangeList","items":[],"vapc.dev/complete":true}` + "\n" + `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns1"}},{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default","namespace":"ns1","uid":"u-sa"}}]}`, DecisionDeny},
		{"an empty List", list("List", ns, sa) + "---\n" + list("List"), DecisionIndeterminate},
		// The API's list of one namespace's LimitRanges (kubectl get --raw): the same kind,
		// without vapc snapshot's mark, says nothing of ns1's.
		{"a typed List not vapc snapshot's", list("List", ns, sa) + "---\n" + `{"apiVersion":"v1","kind":"LimitRangeList","metadata":{"resourceVersion":"100"},"items":[]}` + "\n", DecisionIndeterminate},
		{"a marked List of another kind's items", list("List", ns, sa) + "---\n" + list("LimitRangeList", ns), DecisionIndeterminate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "snapshot.yaml"), []byte(tc.snapshot), 0o644); err != nil {
				t.Fatal(err)
			}
			_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				[]Option{WithCheckRecorded(true), WithSnapshot(dir)}, Source{Name: "audit.jsonl", Reader: strings.NewReader(line + "\n")})
			if rec := recs["1"]; rec == nil || rec.Decision != tc.want {
				t.Errorf("request 1 = %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}
