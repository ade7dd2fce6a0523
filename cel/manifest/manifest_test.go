package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExprPos checks that a character of an expression maps back to its line and column in the
// file, for every YAML scalar style.
func TestExprPos(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		line, col int    // inside the expression (1-based line, 0-based col)
		want      string // the file's text from the reported position
		wantLine  int
	}{
		{
			name: "plain",
			yaml: "kind: X\napiVersion: v1\nspec:\n  expression: object.spec.nodeNmae == 1\n",
			line: 1, col: 12,
			want: "nodeNmae == 1", wantLine: 4,
		},
		{
			name: "double quoted",
			yaml: "kind: X\napiVersion: v1\nspec:\n  expression: \"a == 'x' && object.foo\"\n",
			line: 1, col: 19,
			want: "foo\"", wantLine: 4,
		},
		{
			name: "double quoted with escapes",
			yaml: "kind: X\napiVersion: v1\nspec:\n  expression: \"a == \\\"x\\\" && object.foo\"\n",
			line: 1, col: 19,
			want: "foo\"", wantLine: 4,
		},
		{
			name: "single quoted with doubled quote",
			yaml: "kind: X\napiVersion: v1\nspec:\n  expression: 'a == ''x'' && object.foo'\n",
			line: 1, col: 19,
			want: "foo'", wantLine: 4,
		},
		{
			name: "literal block",
			yaml: "kind: X\napiVersion: v1\nspec:\n  expression: |\n    a == 1 &&\n      object.foo\n",
			line: 2, col: 9,
			want: "foo", wantLine: 6,
		},
		{
			name: "folded block",
			yaml: "kind: X\napiVersion: v1\nspec:\n  expression: >\n    a == 1 &&\n    object.foo\n",
			line: 1, col: 17,
			want: "foo", wantLine: 6,
		},
		{
			name: "plain multi-line",
			yaml: "kind: X\napiVersion: v1\nspec:\n  expression: a == 1 &&\n    object.foo\n",
			line: 1, col: 17,
			want: "foo", wantLine: 5,
		},
		{
			name: "double quoted multi-line",
			yaml: "kind: X\napiVersion: v1\nspec:\n  expression: \"a == 1 &&\n    object.foo\"\n",
			line: 1, col: 17,
			want: "foo\"", wantLine: 5,
		},
		{
			name: "in a sequence",
			yaml: "kind: X\napiVersion: v1\nspec:\n  validations:\n  - expression: x\n  - message: m\n    expression: \"y.bad\"\n",
			line: 1, col: 2,
			want: "bad\"", wantLine: 7,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse("f.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			path := "spec.expression"
			if strings.Contains(tc.yaml, "validations") {
				path = "spec.validations[1].expression"
			}
			pos := docs[0].ExprPos(path, tc.line, tc.col)
			lines := strings.Split(tc.yaml, "\n")
			if pos.Line != tc.wantLine {
				t.Fatalf("ExprPos(%q, %d, %d) = %v, want line %d", path, tc.line, tc.col, pos, tc.wantLine)
			}
			got := string([]rune(lines[pos.Line-1])[pos.Col-1:])
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("text at %v mismatch (-want +got):\n%s", pos, diff)
			}
		})
	}
}

// TestParseErrors: every input error is FILE:LINE:COL: what is wrong, and what to do.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"malformed", "kind: X\napiVersion: v1\nspec: [\n", "f.yaml:3:1: invalid YAML: did not find expected node content: a value is missing or a bracket is not closed: complete it"},
		{"empty", "", "f.yaml: no YAML or JSON document in the file: it is empty, or holds only comments and --- separators"},
		{"not a mapping", "- a\n- b\n", "f.yaml:1:1: document is not a mapping"},
		{"no kind", "apiVersion: v1\nmetadata: {}\n", "f.yaml:1:1: document has no kind"},
		{"bad key", "kind: X\napiVersion: v1\n? [a]\n: b\n", "map key"},
		{"alias bomb", "kind: X\napiVersion: v1\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n", "invalid YAML"},
		{"tab", "kind: X\napiVersion: v1\nmetadata:\n  \tname: x\n", "f.yaml:4:3: invalid YAML: a tab character in the indentation: YAML indents with spaces only; replace the tab with spaces"},
		{"binary", "kind: X\napiVersion: v1\ndata: a\x00b\n", "f.yaml:3:8: not YAML or JSON: control character U+0000: is it a binary file? give the manifest's text"},
		{"colon in a value", "kind: X\napiVersion: v1\nmetadata:\n  name: a: b\n", "f.yaml:4:3: invalid YAML: mapping values are not allowed in this context: a plain value holds \": \" or a line is indented too far: quote the value, or align the line with its siblings"},
		{"unclosed flow", "kind: X\napiVersion: v1\nmetadata: {name: [x\n", ": invalid YAML: did not find expected ',' or ']': a flow sequence [ ... ] is not closed: close it, or write the items as a block list"},
		{"duplicate key", "kind: X\napiVersion: v1\nmetadata:\n  name: a\n  name: b\n", `f.yaml:5:3: invalid YAML: key "name" already set in map: a key appears twice in one mapping: keep one of them`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse() error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestExpand: the one rule of every flag and verb for files and folders.
func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.yaml", "a.JSON", "sub/c.yml", "sub/d.txt", "testdata/e.yaml", ".git/f.yaml", "_x/g.yaml", "empty/h.txt"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rel := func(files []string) []string {
		var out []string
		for _, f := range files {
			if f == "-" {
				out = append(out, f)
				continue
			}
			r, _ := filepath.Rel(dir, f)
			out = append(out, filepath.ToSlash(r))
		}
		return out
	}
	files, err := Expand(dir, "-", filepath.Join(dir, "sub", "d.txt"), filepath.Join(dir, "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a.JSON", "b.yaml", "sub/c.yml", "-", "sub/d.txt", "testdata/e.yaml"}, rel(files)); diff != "" {
		t.Errorf("Expand mismatch (-want +got):\n%s", diff)
	}
	files, err = Expand(filepath.Join(dir, "empty"), filepath.Join(dir, "b.yaml"), filepath.Join(dir, "nope"))
	if diff := cmp.Diff([]string{"b.yaml"}, rel(files)); diff != "" {
		t.Errorf("Expand keeps the files of the other paths (-want +got):\n%s", diff)
	}
	want := filepath.Join(dir, "empty") + ": no .yaml, .yml or .json files in this folder (testdata and hidden folders below it are not read)\n" +
		"stat " + filepath.Join(dir, "nope") + ": no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("Expand error = %v, want %q", err, want)
	}
}

func TestDecodeStrict(t *testing.T) {
	docs, err := Parse("f.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\nbogus: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   map[string]any    `json:"metadata"`
		Data       map[string]string `json:"data"`
	}
	err = docs[0].Decode(&v)
	if err == nil || !strings.Contains(err.Error(), `f.yaml:7:1: unknown field "bogus"`) {
		t.Errorf("Decode() error = %v, want unknown field at 7:1", err)
	}
}

func TestReadPathsSkipsTestdata(t *testing.T) {
	dir := t.TempDir()
	write := func(name string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+strings.ReplaceAll(filepath.Base(name), ".", "-")+"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml")
	write("sub/b.yml")
	write("testdata/c.yaml")
	write(".hidden/d.yaml")
	write("e.txt")
	docs, err := ReadPaths(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.Object.GetName())
	}
	if diff := cmp.Diff([]string{"a-yaml", "b-yml"}, got); diff != "" {
		t.Errorf("ReadPaths(%s) mismatch (-want +got):\n%s", dir, diff)
	}
	// A testdata folder asked for by name is read.
	docs, err = ReadPaths(nil, filepath.Join(dir, "testdata"))
	if err != nil || len(docs) != 1 {
		t.Errorf("ReadPaths(testdata) = %d docs, %v; want 1", len(docs), err)
	}
}

// TestYAML11Scalars: kubectl and kube-apiserver read YAML with sigs.k8s.io/yaml, where a plain
// on, yes or y is a boolean; vapc must read them the same way.
func TestYAML11Scalars(t *testing.T) {
	docs, err := Parse("f.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {enabled: on}\ndata:\n  a: 'on'\n"))
	if err != nil {
		t.Fatal(err)
	}
	labels, _, _ := unstructuredNested(docs[0], "metadata", "labels", "enabled")
	if labels != true {
		t.Errorf("metadata.labels.enabled = %#v, want the boolean true", labels)
	}
	quoted, _, _ := unstructuredNested(docs[0], "data", "a")
	if quoted != "on" {
		t.Errorf("data.a = %#v, want the string on", quoted)
	}
}

// TestBlockScalarAtDocumentEnd: a block scalar that ends a document before a separator keeps
// its final line break (clip chomping), as kubectl's YAML reader hands the document over with
// its last line's: the server's policy holds it, and its messages quote it (helper exQ); the
// last document of a file without a final line break has none.
func TestBlockScalarAtDocumentEnd(t *testing.T) {
	data := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  e: >\n    x + 1\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n  e: |\n    y"
	docs, err := Parse("f.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"x + 1\n", "y"} {
		if got, _, _ := unstructuredNested(docs[i], "data", "e"); got != want {
			t.Errorf("document %d: data.e = %q, want %q", i, got, want)
		}
	}
}

func unstructuredNested(d *Document, fields ...string) (any, bool, error) {
	var v any = d.Object.Object
	for _, f := range fields {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		v = m[f]
	}
	return v, true, nil
}

func TestParseDocumentPositions(t *testing.T) {
	data := "# comment\n---\napiVersion: v1\nkind: A\nmetadata: {name: a}\n--- # second\n\napiVersion: v1\nkind: B\nmetadata:\n  name: b\n---\n"
	docs, err := Parse("f.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.Object.GetKind()+"@"+d.FieldPos("metadata.name").String())
	}
	want := []string{"A@f.yaml:5:18", "B@f.yaml:11:9"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("positions mismatch (-want +got):\n%s", diff)
	}
}

// TestItems: a List (kubectl get -o yaml of several objects) stands for its items, each placed
// at its item in the file, its fields too; an item that is not an object is an error at its
// place; a document that is not a List has no items.
func TestItems(t *testing.T) {
	data := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n- 42\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: b\n"
	docs, err := Parse("l.yaml", []byte(data))
	if err != nil || len(docs) != 1 {
		t.Fatalf("Parse = %d documents, %v", len(docs), err)
	}
	items, ok, err := docs[0].Items()
	if !ok {
		t.Fatal("Items of a List: not a List")
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Object.GetKind()+" "+it.Pos().String()+" "+it.FieldPos("metadata.name").String())
	}
	want := []string{"ConfigMap l.yaml:4:3 l.yaml:6:20", "Secret l.yaml:8:3 l.yaml:11:11"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Items mismatch (-want +got):\n%s", diff)
	}
	if err == nil || err.Error() != "l.yaml:7:3: items[1]: a List's item is not an object" {
		t.Errorf("Items error = %v, want the item that is not an object at its place", err)
	}
	single, _ := Parse("c.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"))
	if _, ok, _ := single[0].Items(); ok {
		t.Error("Items of a ConfigMap: a List")
	}
}
