// Package manifest reads Kubernetes manifests (multi-document YAML or JSON files and folders)
// and keeps, for every document, the source position of each field, so that a finding about a
// field path such as spec.validations[0].expression can point at the file, line and column that
// wrote it, down to a character inside a CEL expression.
package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// MaxFileSize is the largest manifest file read, to keep a hostile input from exhausting memory.
const MaxFileSize = 64 << 20

// Position is a place in a source file. Line and Col are 1-based; Col counts characters.
type Position struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

// String formats the position as FILE:LINE:COL, leaving out what is unknown.
func (p Position) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is a problem with a manifest at a position.
type Error struct {
	Pos   Position
	Field string // the field path, when known
	Msg   string

	strict bool // an unknown or duplicate field: the document decoded all the same
}

// IsStrict reports whether err holds only errors of strict decoding (unknown and duplicate
// fields): Decode decoded the rest of the document all the same, so its other problems can
// still be looked for.
func IsStrict(err error) bool {
	if err == nil {
		return false
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var me *Error
		if !errors.As(e, &me) || !me.strict {
			return false
		}
	}
	return true
}

// Error implements error.
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Pos, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Pos, e.Msg)
}

// Document is one YAML or JSON document of a file.
type Document struct {
	// File is the path the document was read from.
	File string
	// Index is the 0-based position of the document in its file.
	Index int
	// Object is the document's content.
	Object *unstructured.Unstructured
	// JSON is the document's content as JSON.
	JSON []byte

	root  *yaml.Node
	lines []string // the file's lines, shared by the documents of one file
}

// GroupVersionKind returns the apiVersion and kind of the document.
func (d *Document) GroupVersionKind() schema.GroupVersionKind {
	return d.Object.GroupVersionKind()
}

// Pos returns the position of the document's start.
func (d *Document) Pos() Position {
	if d.root == nil {
		return Position{File: d.File}
	}
	return Position{File: d.File, Line: d.root.Line, Col: d.root.Column}
}

// Describe names the document for messages: FILE:LINE (Kind name).
func (d *Document) Describe() string {
	name := d.Object.GetName()
	if ns := d.Object.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%s (%s %s)", d.Pos(), d.Object.GetKind(), name)
}

// Errorf returns an Error at the position of the field path (spec.validations[0].expression),
// or at the nearest enclosing field that the document has.
func (d *Document) Errorf(path string, format string, args ...any) *Error {
	return &Error{Pos: d.FieldPos(path), Field: path, Msg: fmt.Sprintf(format, args...)}
}

// Decode decodes the document strictly into v: unknown and duplicate fields, and a value of
// the wrong type, are errors that point at the field.
func (d *Document) Decode(v any) error {
	strict, err := sigsjson.UnmarshalStrict(d.JSON, v)
	if err != nil {
		return d.decodeError(err)
	}
	var errs []error
	for _, s := range strict {
		path := ""
		var fe sigsjson.FieldError
		if errors.As(s, &fe) {
			path = fe.FieldPath()
		}
		msg := s.Error()
		msg = strings.TrimPrefix(msg, "json: ")
		errs = append(errs, &Error{Pos: d.KeyPos(path), Msg: msg, strict: true})
	}
	return errors.Join(errs...)
}

// ReadPaths reads every manifest in the given files and folders. Folders are walked for files
// ending in .yaml, .yml or .json, in lexical order, skipping testdata and hidden folders below
// them as the go tool does; "-" reads standard input from stdin. Every
// problem is returned, joined, alongside the documents that could be read.
func ReadPaths(stdin io.Reader, paths ...string) ([]*Document, error) {
	var docs []*Document
	var errs []error
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range files {
			var data []byte
			if f == "-" {
				data, err = io.ReadAll(io.LimitReader(stdin, MaxFileSize+1))
			} else {
				data, err = readFile(f)
			}
			if err == nil && len(data) > MaxFileSize {
				err = fmt.Errorf("%s: file larger than %d bytes", f, MaxFileSize)
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			name := f
			if f == "-" {
				name = "<stdin>"
			}
			d, err := Parse(name, data)
			docs = append(docs, d...)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return docs, errors.Join(errs...)
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, nil
}

func expand(p string) ([]string, error) {
	if p == "-" {
		return []string{p}, nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Like the go tool, skip testdata and hidden folders below the one asked for.
			if path != p && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// Parse splits data into its documents. Empty documents are skipped; a document that is not a
// mapping, or has no apiVersion or kind, is an error naming its line.
//
// Documents are split on "---" lines and converted to JSON with sigs.k8s.io/yaml, as kubectl
// and kube-apiserver read YAML (YAML 1.1 scalars: a plain on, yes or y is a boolean there);
// go-yaml's node tree of the same text gives the positions.
func Parse(file string, data []byte) ([]*Document, error) {
	lines := strings.Split(string(data), "\n")
	var docs []*Document
	var errs []error
	for i, chunk := range splitDocuments(lines) {
		d, err := parseDocument(file, lines, chunk)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if d != nil {
			d.Index = i
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 && len(errs) == 0 {
		errs = append(errs, &Error{Pos: Position{File: file}, Msg: "no documents"})
	}
	return docs, errors.Join(errs...)
}

// chunk is one document of a file: lines [start, end) (0-based).
type chunk struct{ start, end int }

// splitDocuments splits lines on document separators the way kubectl's YAML reader does
// (k8s.io/apimachinery/pkg/util/yaml): a line starting with "---" followed by nothing but
// spaces or a comment.
func splitDocuments(lines []string) []chunk {
	var out []chunk
	start := 0
	for i, l := range lines {
		if !strings.HasPrefix(l, "---") {
			continue
		}
		rest := strings.TrimSpace(l[3:])
		if rest != "" && !strings.HasPrefix(rest, "#") {
			continue
		}
		out = append(out, chunk{start, i})
		start = i + 1
	}
	return append(out, chunk{start, len(lines)})
}

// parseDocument parses the lines of one document; it returns nil for an empty document.
func parseDocument(file string, lines []string, c chunk) (*Document, error) {
	text := strings.Join(lines[c.start:c.end], "\n")
	// Pad with the lines before the document so that go-yaml's positions are the file's.
	padded := strings.Repeat("\n", c.start) + text
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(padded), &n); err != nil {
		return nil, yamlError(file, err)
	}
	root := &n
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, nil
		}
		root = root.Content[0]
	}
	if root.Kind == 0 || (root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
		return nil, nil // an empty document, such as a trailing ---
	}
	pos := Position{File: file, Line: root.Line, Col: root.Column}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{Pos: pos, Msg: "document is not a mapping (an object with apiVersion and kind)"}
	}
	js, err := sigsyaml.YAMLToJSONStrict([]byte(padded)) // duplicate keys are errors, as on the server
	if err != nil {
		return nil, yamlError(file, err)
	}
	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil {
		return nil, &Error{Pos: pos, Msg: "document is not a mapping: " + err.Error()}
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, &Error{Pos: pos, Msg: describeMissing(obj, err)}
	}
	return &Document{File: file, Object: u, JSON: js, root: root, lines: lines}, nil
}

func describeMissing(obj map[string]any, err error) string {
	if _, ok := obj["kind"]; !ok {
		return "document has no kind"
	}
	if _, ok := obj["apiVersion"]; !ok {
		return "document has no apiVersion"
	}
	return err.Error()
}

// yamlLineRE finds go-yaml's "line N: msg" in its errors.
var yamlLineRE = regexp.MustCompile(`line (\d+): (.*)`)

// yamlError turns go-yaml's "yaml: line N: msg" (or "unmarshal errors:\n  line N: msg") into an
// Error at that line.
func yamlError(file string, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{Pos: Position{File: file, Line: line}, Msg: "invalid YAML: " + m[2]}
	}
	return &Error{Pos: Position{File: file}, Msg: "invalid YAML: " + msg}
}
