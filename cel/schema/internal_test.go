package schema

import (
	"encoding/json"
	"flag"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestReleaseTables checks that the hand-kept tables of each release cover its embedded
// documents, so that regenerating the data for a new release cannot silently leave a
// group-version unclassified.
func TestReleaseTables(t *testing.T) {
	t.Parallel()
	for _, v := range embeddedVersions() {
		rel := releases[v]
		if rel == nil {
			t.Errorf("embedded documents for %s but no release table", v)
			continue
		}
		docs, err := embeddedDocuments(v)
		if err != nil {
			t.Fatal(err)
		}
		published := map[schema.GroupVersion]bool{}
		for _, d := range docs {
			published[d.gv] = true
		}
		classified := map[schema.GroupVersion]bool{}
		for _, list := range [][]schema.GroupVersion{rel.servedByDefault, rel.notServedByDefault} {
			for _, gv := range list {
				if classified[gv] {
					t.Errorf("%s: %v is classified twice", v, gv)
				}
				classified[gv] = true
				if !published[gv] {
					t.Errorf("%s: %v is classified but has no document", v, gv)
				}
			}
		}
		for gv := range published {
			if !classified[gv] {
				t.Errorf("%s: %v has a document but is not classified as served or not served by default", v, gv)
			}
			if !contains(rel.installOrder, gv.Group) {
				t.Errorf("%s: group %q is missing from installOrder", v, gv.Group)
			}
			if !contains(rel.discoveryOrder, gv.Group) {
				t.Errorf("%s: group %q is missing from discoveryOrder", v, gv.Group)
			}
		}
	}
}

func TestParsePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		want parsedPath
		ok   bool
	}{
		{path: "/api/v1/pods", want: parsedPath{gv: schema.GroupVersion{Version: "v1"}, resource: "pods"}, ok: true},
		{path: "/api/v1/namespaces/{namespace}/pods/{name}/eviction", want: parsedPath{gv: schema.GroupVersion{Version: "v1"}, namespaced: true, resource: "pods", named: true, subresource: "eviction"}, ok: true},
		{path: "/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}", want: parsedPath{gv: schema.GroupVersion{Version: "v1"}, namespaced: true, resource: "pods", named: true, subresource: "proxy"}, ok: true},
		{path: "/api/v1/namespaces/{name}/finalize", want: parsedPath{gv: schema.GroupVersion{Version: "v1"}, resource: "namespaces", named: true, subresource: "finalize"}, ok: true},
		{path: "/apis/apps/v1/watch/namespaces/{namespace}/deployments/{name}", want: parsedPath{gv: schema.GroupVersion{Group: "apps", Version: "v1"}, watch: true, namespaced: true, resource: "deployments", named: true}, ok: true},
		{path: "/apis/apps/v1/"},
		{path: "/version/"},
	}
	for _, tt := range tests {
		got, ok := parsePath(tt.path)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parsePath(%q) = %+v, %v, want %+v, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}

// BenchmarkResolvePodCold resolves v1 Pod from a document that has not been parsed yet:
// decompression, the core document's schemas split, those a Pod refers to parsed, and
// reference inlining.
func BenchmarkResolvePodCold(b *testing.B) {
	c, err := Builtin("1.37")
	if err != nil {
		b.Fatal(err)
	}
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	loc := c.builtin.kinds[pod]
	b.ReportAllocs()
	for b.Loop() {
		doc := &document{file: loc.doc.file, gv: loc.doc.gv}
		if _, err := populateFrom(doc, loc.name); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolvePodWarm resolves v1 Pod from the parsed, cached document: reference inlining
// only.
func BenchmarkResolvePodWarm(b *testing.B) {
	c, err := Builtin("1.37")
	if err != nil {
		b.Fatal(err)
	}
	r := c.Resolver()
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	if _, err := r.ResolveSchema(pod); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ResolveSchema(pod); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuiltin measures the first Builtin call of a version: reading the paths of every
// embedded document.
func BenchmarkBuiltin(b *testing.B) {
	rel := releases["1.37"]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := loadBuiltin("1.37", rel); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDocumentIndex holds each release's index (indexFile) to the scans of its documents, the
// index to holding every embedded document as it is, and the scans the catalog loads with it
// to the scans without it. go test ./cel/schema -update
// rewrites the index (after hack/openapi.sh).
func TestDocumentIndex(t *testing.T) {
	for _, v := range embeddedVersions() {
		docs, err := embeddedDocuments(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := buildIndex(docs)
		if err != nil {
			t.Fatal(err)
		}
		dir := path.Join(openapiRoot, "v"+v)
		// The update flag is golden_test.go's, of the same test binary.
		if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
			b, err := json.MarshalIndent(want, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.FromSlash(path.Join(dir, indexFile)), append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got := readIndex(dir)
		if got == nil {
			t.Errorf("%s: no %s: run go test ./cel/schema -update", dir, indexFile)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: %s is not the documents' scan (run go test ./cel/schema -update); mismatch (-want +got):\n%s", dir, indexFile, diff)
		}
		for _, doc := range docs {
			if _, ok := got.scan(doc); !ok {
				t.Errorf("%s: the index does not hold the embedded document %s as it is (its gzip trailer)", dir, doc.file)
			}
		}
		scans, indexed := scanDocuments(docs), scanWithIndex(dir, docs)
		if diff := cmp.Diff(scans, indexed, cmp.AllowUnexported(documentScan{})); diff != "" {
			t.Errorf("%s: scans with the index mismatch (-without +with):\n%s", dir, diff)
		}
	}
}

// TestResolveParsesReferredOnly holds a kind's resolution, which parses only the component
// schemas the kind refers to, to the resolution over every schema of its document parsed.
func TestResolveParsesReferredOnly(t *testing.T) {
	t.Parallel()
	c, err := Builtin("1.37")
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Pod"},
		{Version: "v1", Kind: "ConfigMap"},
		{Group: "policy", Version: "v1", Kind: "Eviction"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"},
	} {
		loc, ok := c.builtin.kinds[gvk]
		if !ok {
			t.Fatalf("%s: not a built-in kind", gvk)
		}
		lazy := &document{file: loc.doc.file, gv: loc.doc.gv}
		got, err := populateFrom(lazy, loc.name)
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		whole := &document{file: loc.doc.file, gv: loc.doc.gv}
		schemas, err := whole.components()
		if err != nil {
			t.Fatal(err)
		}
		want, err := populate(schemas, loc.name)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		gotJSON, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(wantJSON), string(gotJSON)); diff != "" {
			t.Errorf("%s: resolved from the schemas it refers to (-all parsed +referred parsed):\n%s", gvk, diff)
		}
		if parsed := len(lazy.parsed); parsed == 0 || parsed >= len(schemas) {
			t.Errorf("%s: parsed %d of the document's %d schemas, want some and fewer than all", gvk, parsed, len(schemas))
		}
		// Every schema once: components shares those parsed already.
		all, err := lazy.components()
		if err != nil {
			t.Fatal(err)
		}
		for name, s := range lazy.parsed {
			if all[name] != s {
				t.Errorf("%s: components()[%q] is not the schema parsed on its lookup", gvk, name)
			}
		}
		if len(all) != len(schemas) {
			t.Errorf("%s: components() has %d schemas, want %d", gvk, len(all), len(schemas))
		}
	}
}

// TestComponentSchemas holds componentSchemas to encoding/json's decoding of every embedded
// document's components.schemas, and to giving way to it where it cannot read a document.
func TestComponentSchemas(t *testing.T) {
	t.Parallel()
	decode := func(doc []byte) (map[string]json.RawMessage, error) {
		var resp struct {
			Components struct {
				Schemas map[string]json.RawMessage `json:"schemas"`
			} `json:"components"`
		}
		err := json.Unmarshal(doc, &resp)
		return resp.Components.Schemas, err
	}
	for _, v := range embeddedVersions() {
		docs, err := embeddedDocuments(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			b, err := d.read()
			if err != nil {
				t.Fatal(err)
			}
			want, err := decode(b)
			if err != nil {
				t.Fatalf("%s: %v", d.file, err)
			}
			got, ok := componentSchemas(b)
			if !ok {
				t.Errorf("%s: componentSchemas cannot read it", d.file)
				continue
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: componentSchemas (-encoding/json +got):\n%s", d.file, diff)
			}
		}
	}
	for _, tc := range []struct {
		doc  string
		want map[string]json.RawMessage // nil: not read
	}{
		{doc: ` {"openapi":"3.0.0","components" : { "schemas" : {"a": {"type":"string","x":[1, {"}":"\"{"}]}, "b":null ,"c":-1.5e3,"d":true} } } `,
			want: map[string]json.RawMessage{"a": json.RawMessage(`{"type":"string","x":[1, {"}":"\"{"}]}`), "b": json.RawMessage(`null`), "c": json.RawMessage(`-1.5e3`), "d": json.RawMessage(`true`)}},
		{doc: `{"components":{"schemas":{"a":{"v":1},"a":{}}}}`, want: map[string]json.RawMessage{"a": json.RawMessage(`{}`)}},
		{doc: `{"components":{"schemas":{"a":{"v":1}}},"components":{"schemas":{"b":{}}}}`}, // encoding/json merges them
		{doc: `{"components":{"schemas":{}}}`, want: map[string]json.RawMessage{}},
		{doc: `{"Components":{"schemas":{"a":{}}}}`},      // encoding/json matches names case-insensitively
		{doc: `{"components":{"sch\u0065mas":{}}}`},       // an escape in a name
		{doc: `{"components":{"schemas":{"a":{"b":"c}}}`}, // cut short
		{doc: `{"components":{"schemas":{"a":{}} `},
		{doc: `{"components":{"schemas":{"a":"\`},
		{doc: `{"paths":{}}`},
		{doc: `[]`},
		{doc: ``},
	} {
		got, ok := componentSchemas([]byte(tc.doc))
		if ok != (tc.want != nil) {
			t.Errorf("componentSchemas(%s): read %v, want %v", tc.doc, ok, tc.want != nil)
			continue
		}
		if want, err := decode([]byte(tc.doc)); ok && (err != nil || !cmp.Equal(want, got)) {
			t.Errorf("componentSchemas(%s) = %s, encoding/json %s (%v)", tc.doc, got, want, err)
		}
		if diff := cmp.Diff(tc.want, got); ok && diff != "" {
			t.Errorf("componentSchemas(%s) (-want +got):\n%s", tc.doc, diff)
		}
	}
}

// FuzzComponentSchemas holds componentSchemas, on any input, to what encoding/json decodes
// wherever it reads it, and to no panic.
func FuzzComponentSchemas(f *testing.F) {
	f.Add([]byte(`{"components":{"schemas":{"a":{"type":"string","x":[1,{"}":"\"{"}]},"b":null}}}`))
	f.Add([]byte(`{"components":{"schemas":{"a":"\`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, ok := componentSchemas(doc)
		if !ok {
			return
		}
		var resp struct {
			Components struct {
				Schemas map[string]json.RawMessage `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(doc, &resp); err == nil && !cmp.Equal(resp.Components.Schemas, got) {
			t.Errorf("componentSchemas(%q) = %s, encoding/json %s", doc, got, resp.Components.Schemas)
		}
	})
}
