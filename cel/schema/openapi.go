package schema

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// openapiFS holds openapi/v<major>.<minor>/<document>.json.gz, written by hack/openapi.sh.
//
//go:embed openapi
var openapiFS embed.FS

const (
	openapiRoot    = "openapi"
	documentSuffix = "_openapi.json.gz"
	refPrefix      = "#/components/schemas/"
	extGVK         = "x-kubernetes-group-version-kind"
)

// document is one embedded OpenAPI v3 document: the schemas of one built-in group-version.
// Its component schemas are parsed on first use only, each once, and then shared: a kind's
// resolution parses the schemas it refers to (a Pod's, 139 of the core document's 258), the
// type converter every one.
type document struct {
	file string
	gv   schema.GroupVersion

	rawOnce sync.Once
	raw     map[string]json.RawMessage // each component schema's JSON, by name
	rawErr  error

	mu     sync.Mutex
	parsed map[string]*spec.Schema // the schemas parsed so far, by name

	once    sync.Once
	schemas map[string]*spec.Schema
	err     error
}

// documentGroupVersion returns the group-version a published document name describes:
// api__v1_openapi.json.gz is the core group, apis__<group>__<version>_openapi.json.gz any other.
func documentGroupVersion(name string) (schema.GroupVersion, bool) {
	base, ok := strings.CutSuffix(name, documentSuffix)
	if !ok {
		return schema.GroupVersion{}, false
	}
	parts := strings.Split(base, "__")
	switch {
	case len(parts) == 2 && parts[0] == "api" && parts[1] != "":
		return schema.GroupVersion{Version: parts[1]}, true
	case len(parts) == 3 && parts[0] == "apis" && parts[1] != "" && parts[2] != "":
		return schema.GroupVersion{Group: parts[1], Version: parts[2]}, true
	}
	return schema.GroupVersion{}, false
}

// embeddedVersions lists the Kubernetes minors that have embedded documents, e.g. ["1.37"].
func embeddedVersions() []string {
	entries, err := fs.ReadDir(openapiFS, openapiRoot)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "v") {
			out = append(out, strings.TrimPrefix(e.Name(), "v"))
		}
	}
	sort.Strings(out)
	return out
}

// embeddedDocuments returns the documents of one Kubernetes minor, sorted by file name.
func embeddedDocuments(version string) ([]*document, error) {
	dir := path.Join(openapiRoot, "v"+version)
	entries, err := fs.ReadDir(openapiFS, dir)
	if err != nil {
		return nil, fmt.Errorf("no embedded OpenAPI documents for Kubernetes %s: %w", version, err)
	}
	var docs []*document
	for _, e := range entries {
		gv, ok := documentGroupVersion(e.Name())
		if e.IsDir() || !ok {
			continue
		}
		docs = append(docs, &document{file: path.Join(dir, e.Name()), gv: gv})
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no embedded OpenAPI documents for Kubernetes %s", version)
	}
	return docs, nil
}

// read returns the decompressed JSON of the document.
func (d *document) read() ([]byte, error) {
	f, err := openapiFS.Open(d.file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.file, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.file, err)
	}
	return b, nil
}

// openapiOperation is what the REST mapping reads of an operation.
type openapiOperation struct {
	Action string                   `json:"x-kubernetes-action"`
	GVK    *schema.GroupVersionKind `json:"x-kubernetes-group-version-kind"`
}

// scan reads what the catalog needs of a document up front: its paths (path → HTTP method →
// operation) and the kinds its component schemas declare (kind → schema name), without
// parsing the schemas themselves.
func (d *document) scan() (map[string]map[string]openapiOperation, map[schema.GroupVersionKind]string, error) {
	b, err := d.read()
	if err != nil {
		return nil, nil, err
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				GVKs []schema.GroupVersionKind `json:"x-kubernetes-group-version-kind"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", d.file, err)
	}
	paths := make(map[string]map[string]openapiOperation, len(doc.Paths))
	for p, item := range doc.Paths {
		for method, raw := range item {
			raw = bytes.TrimSpace(raw)
			if method == "parameters" || len(raw) == 0 || raw[0] != '{' {
				continue
			}
			var op openapiOperation
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, nil, fmt.Errorf("%s: paths[%q][%q]: %w", d.file, p, method, err)
			}
			if op.Action == "" {
				continue
			}
			if paths[p] == nil {
				paths[p] = map[string]openapiOperation{}
			}
			paths[p][method] = op
		}
	}
	names := make([]string, 0, len(doc.Components.Schemas))
	for name := range doc.Components.Schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	kinds := map[schema.GroupVersionKind]string{}
	for _, name := range names {
		for _, gvk := range doc.Components.Schemas[name].GVKs {
			if _, ok := kinds[gvk]; !ok {
				kinds[gvk] = name
			}
		}
	}
	return paths, kinds, nil
}

// components parses, once, every component schema of the document.
func (d *document) components() (map[string]*spec.Schema, error) {
	d.once.Do(func() {
		raw, err := d.rawSchemas()
		if err != nil {
			d.err = err
			return
		}
		schemas := make(map[string]*spec.Schema, len(raw))
		for name := range raw {
			s, _, err := d.schema(name)
			if err != nil {
				d.err = err
				return
			}
			schemas[name] = s
		}
		d.schemas = schemas
	})
	return d.schemas, d.err
}

// schema returns the component schema of the name, parsed on its first lookup; ok is false
// when the document has none of the name.
func (d *document) schema(name string) (s *spec.Schema, ok bool, err error) {
	raw, err := d.rawSchemas()
	if err != nil {
		return nil, false, err
	}
	b, ok := raw[name]
	if !ok {
		return nil, false, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.parsed[name]; ok {
		return s, s != nil, nil
	}
	// As encoding/json decodes a map of them: JSON null is a nil schema. The schema's own
	// decoder is called without encoding/json's, which would first check the whole JSON
	// (the schema's decoder does, as it reads it) and then hand it over.
	if string(bytes.TrimSpace(b)) != "null" {
		s = new(spec.Schema)
		if err := s.UnmarshalJSON(b); err != nil {
			return nil, false, fmt.Errorf("%s: components.schemas[%q]: %w", d.file, name, err)
		}
	}
	if d.parsed == nil {
		d.parsed = map[string]*spec.Schema{}
	}
	d.parsed[name] = s
	return s, s != nil, nil
}

// rawSchemas reads, once, the JSON of each component schema of the document, without
// parsing the schemas.
func (d *document) rawSchemas() (map[string]json.RawMessage, error) {
	d.rawOnce.Do(func() {
		b, err := d.read()
		if err != nil {
			d.rawErr = err
			return
		}
		if raw, ok := componentSchemas(b); ok {
			d.raw = raw
			return
		}
		var resp struct {
			Components struct {
				Schemas map[string]json.RawMessage `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			d.rawErr = fmt.Errorf("%s: %w", d.file, err)
			return
		}
		d.raw = resp.Components.Schemas
	})
	return d.raw, d.rawErr
}

// componentSchemas is what decoding doc's components.schemas into a map of json.RawMessage
// gives, found by the structure of the JSON alone (its strings, brackets and braces), several
// times faster than encoding/json, which checks every value: the document is one vapc embeds,
// as kube-apiserver wrote it, which TestComponentSchemas holds to encoding/json's reading, and
// a type check that reads one kind otherwise spent a fourth of its schema resolution here. A
// member named with an escape, a document that is not an object, or one that holds no
// components.schemas object gives false (encoding/json decodes it); so does one cut short.
// JSON that is not valid where the structure holds (a number or literal misspelt, a bracket
// closing a brace, anything outside components.schemas) is not found so: a schema that holds
// it fails as it is parsed, and the rest is never read; no embedded document holds any.
func componentSchemas(doc []byte) (map[string]json.RawMessage, bool) {
	components, ok := member(doc, "components")
	if !ok {
		return nil, false
	}
	schemas, ok := member(components, "schemas")
	if !ok {
		return nil, false
	}
	out := map[string]json.RawMessage{}
	ok = eachMember(schemas, func(name string, value []byte) bool {
		out[name] = value
		return true
	})
	return out, ok
}

// member is the value of the object obj's member of the name; false when there is none, or
// several, or one whose name differs from it in case only (encoding/json merges them, or may
// take that one), or obj is not an object eachMember reads.
func member(obj []byte, name string) (value []byte, found bool) {
	ok := eachMember(obj, func(n string, v []byte) bool {
		switch {
		case n == name && !found:
			value, found = v, true
			return true
		case n == name:
			return false // encoding/json merges the two
		}
		return !strings.EqualFold(n, name) // encoding/json may take it
	})
	return value, ok && found
}

// eachMember calls fn with the name and the value of each member of the object obj (white
// space around it allowed), until fn returns false; false when obj is not an object whose
// member names are plain strings (no escape), or it ends early. Values are obj's bytes.
func eachMember(obj []byte, fn func(name string, value []byte) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return skipSpace(obj, i+1) == len(obj)
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return false
		}
		end := bytes.IndexByte(obj[i+1:], '"')
		if end < 0 {
			return false
		}
		name := obj[i+1 : i+1+end]
		if bytes.IndexByte(name, '\\') >= 0 || !utf8.Valid(name) {
			return false
		}
		i = skipSpace(obj, i+2+end)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		start := skipSpace(obj, i+1)
		stop, ok := valueEnd(obj, start)
		if !ok || !fn(string(name), obj[start:stop]) {
			return false
		}
		i = skipSpace(obj, stop)
		if i >= len(obj) {
			return false
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return skipSpace(obj, i+1) == len(obj)
		default:
			return false
		}
	}
}

// valueEnd is where the JSON value that begins at start ends: after its closing quote,
// bracket or brace, or its last character (a number or literal, whose grammar it does not
// check); false when it does not end in b.
func valueEnd(b []byte, start int) (int, bool) {
	if start >= len(b) {
		return start, false
	}
	depth := 0
	for i := start; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := i + 1
			for {
				k := bytes.IndexAny(b[j:], "\\\"")
				if k < 0 {
					return len(b), false
				}
				j += k
				if b[j] == '\\' {
					if j += 2; j > len(b) {
						return len(b), false
					}
					continue
				}
				break
			}
			i = j
		case '{', '[':
			depth++
			continue
		case '}', ']':
			depth--
			if depth < 0 {
				return i, false
			}
		default:
			if depth == 0 {
				// A number or a literal: up to the next delimiter.
				j := i
				for j < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[j])) {
					j++
				}
				return j, j > i
			}
			continue
		}
		if depth == 0 {
			return i + 1, true
		}
	}
	return len(b), false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// schemaKinds reads the kinds each component schema declares in its
// x-kubernetes-group-version-kind extension, by the schema's name.
func schemaKinds(schemas map[string]*spec.Schema) (map[string][]schema.GroupVersionKind, error) {
	kinds := map[string][]schema.GroupVersionKind{}
	for name, s := range schemas {
		if s == nil {
			continue
		}
		var gvks []schema.GroupVersionKind
		if err := s.Extensions.GetObject(extGVK, &gvks); err != nil {
			return nil, fmt.Errorf("schema %q: %s: %w", name, extGVK, err)
		}
		if len(gvks) > 0 {
			kinds[name] = gvks
		}
	}
	return kinds, nil
}

// kindRefs maps each kind to the name of the component schema that declares it (kinds, by
// schemaKinds), as resolver.ClientDiscoveryResolver looks kinds up. When several do, the first
// name in sorted order wins, so that the answer never depends on map iteration order.
func kindRefs(kinds map[string][]schema.GroupVersionKind) map[schema.GroupVersionKind]string {
	names := make([]string, 0, len(kinds))
	for name := range kinds {
		names = append(names, name)
	}
	sort.Strings(names)
	refs := map[schema.GroupVersionKind]string{}
	for _, name := range names {
		for _, gvk := range kinds[name] {
			if _, ok := refs[gvk]; !ok {
				refs[gvk] = name
			}
		}
	}
	return refs
}
