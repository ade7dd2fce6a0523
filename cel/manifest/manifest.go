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
	"unicode/utf8"

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
	empty  bool // a file without a document
}

// IsEmpty reports whether err is the error of a file that holds no document.
func IsEmpty(err error) bool {
	var me *Error
	return errors.As(err, &me) && me.empty
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

// Items returns the documents of the items of a List (kind List or FooList with items, as
// kubectl get -o yaml|json writes several objects), each placed at its item in the file; ok
// is false for a document that is not a List. An item that is not an object is an error at
// its place.
func (d *Document) Items() (items []*Document, ok bool, err error) {
	raw, found := d.Object.Object["items"].([]any)
	if !found || !strings.HasSuffix(d.Object.GetKind(), "List") {
		return nil, false, nil
	}
	var errs []error
	for i, it := range raw {
		path := fmt.Sprintf("items[%d]", i)
		m, isMap := it.(map[string]any)
		if !isMap {
			errs = append(errs, d.Errorf(path, "a List's item is not an object"))
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		js, err := u.MarshalJSON()
		if err != nil {
			errs = append(errs, d.Errorf(path, "%v", err))
			continue
		}
		item := &Document{File: d.File, Index: d.Index, Object: u, JSON: js, lines: d.lines}
		if n, _, exact := d.node(path); exact {
			item.root = n
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			errs = append(errs, &Error{Pos: item.Pos(), Field: path, Msg: describeMissing(m, errors.New("no apiVersion or kind"))})
			continue
		}
		items = append(items, item)
	}
	return items, true, errors.Join(errs...)
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

// ReadPaths reads every manifest in the given files and folders, expanded by Expand; "-"
// reads standard input from stdin. Every problem is returned, joined, alongside the documents
// that could be read.
func ReadPaths(stdin io.Reader, paths ...string) ([]*Document, error) {
	var docs []*Document
	files, err := Expand(paths...)
	errs := []error{err}
	for _, f := range files {
		var data []byte
		if f == "-" {
			data, err = io.ReadAll(io.LimitReader(stdin, MaxFileSize+1))
			if err == nil && len(data) > MaxFileSize {
				err = &Error{Pos: Position{File: "<stdin>"}, Msg: fmt.Sprintf("larger than %d bytes", MaxFileSize)}
			}
		} else {
			data, err = ReadFile(f)
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
	return docs, errors.Join(errs...)
}

// ReadFile reads a manifest file of at most MaxFileSize bytes.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &Error{Pos: Position{File: path}, Msg: "cannot be read: " + err.Error()}
	}
	if len(data) > MaxFileSize {
		return nil, &Error{Pos: Position{File: path}, Msg: fmt.Sprintf("larger than %d bytes: not read", MaxFileSize)}
	}
	return data, nil
}

// Expand is vapc's one rule for the file and folder arguments of every verb and flag: a file
// is read as given, whatever its name; "-" (standard input) is kept; a folder stands for the
// files under it, at any depth, whose names end in .yaml, .yml or .json (in any case), in
// lexical order, except those in folders named testdata or whose names begin with "." or "_"
// below it, as the go tool skips them. A folder without such files, and a path that cannot be
// read, are errors (a *Error, or an *fs.PathError for a path that is not there); the files of
// the other paths are returned with them.
func Expand(paths ...string) ([]string, error) {
	var files []string
	var errs []error
	for _, p := range paths {
		fs, err := expand(p)
		files = append(files, fs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return files, errors.Join(errs...)
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
		if IsManifestName(path) {
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	if err != nil {
		return files, err
	}
	if len(files) == 0 {
		return nil, &Error{Pos: Position{File: p}, Msg: "no .yaml, .yml or .json files in this folder (testdata and hidden folders below it are not read)"}
	}
	return files, nil
}

// IsManifestName says whether a file of a folder is read as a manifest: its name ends in
// .yaml, .yml or .json.
func IsManifestName(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
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
	chunks := splitDocuments(lines)
	for i, chunk := range chunks {
		// A document before a separator ends with its last line's line break, as kubectl's
		// YAML reader hands it over: a block scalar at its end keeps its final newline (clip).
		chunk.newline = i < len(chunks)-1 && chunk.end > chunk.start
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
		errs = append(errs, &Error{Pos: Position{File: file}, Msg: "no YAML or JSON document in the file: it is empty, or holds only comments and --- separators", empty: true})
	}
	return docs, errors.Join(errs...)
}

// chunk is one document of a file: lines [start, end) (0-based); newline says the last line
// ends with a line break (a document before a separator).
type chunk struct {
	start, end int
	newline    bool
}

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
		out = append(out, chunk{start: start, end: i})
		start = i + 1
	}
	return append(out, chunk{start: start, end: len(lines)})
}

// parseDocument parses the lines of one document; it returns nil for an empty document.
func parseDocument(file string, lines []string, c chunk) (*Document, error) {
	text := strings.Join(lines[c.start:c.end], "\n")
	if c.newline {
		text += "\n"
	}
	// Pad with the lines before the document so that go-yaml's positions are the file's.
	padded := strings.Repeat("\n", c.start) + text
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(padded), &n); err != nil {
		return nil, yamlError(file, lines, err)
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
		return nil, yamlError(file, lines, err)
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

// yamlHints say what to do about go-yaml's errors, by the words of their messages.
var yamlHints = []struct{ says, hint string }{
	{"mapping values are not allowed", "a plain value holds \": \" or a line is indented too far: quote the value, or align the line with its siblings"},
	{"did not find expected key", "a line is indented differently from the keys of its mapping: align it with its siblings"},
	{"did not find expected ',' or ']'", "a flow sequence [ ... ] is not closed: close it, or write the items as a block list"},
	{"did not find expected ',' or '}'", "a flow mapping { ... } is not closed: close it, or write the keys as a block mapping"},
	{"did not find expected node content", "a value is missing or a bracket is not closed: complete it"},
	{"did not find expected '-' indicator", "an item of a block list is indented differently from the others: align it"},
	{"found unexpected end of stream", "a quoted string or a bracket is not closed: close it"},
	{"found character that cannot start any token", "a plain value starts with a character YAML reserves (` @ or a tab): quote the value"},
	{"already set in map", "a key appears twice in one mapping: keep one of them"},
	{"already defined", "a key appears twice in one mapping: keep one of them"},
	{"could not find expected ':'", "a key has no colon, or a multi-line value is not indented: add the colon, or quote the value"},
}

// yamlError turns go-yaml's "yaml: line N: msg" (or "unmarshal errors:\n  line N: msg") into an
// Error at that line of the file, at its first character (go-yaml gives no column), and says
// what to do: a tab in an indentation or a control character is placed at its column.
func yamlError(file string, lines []string, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	if strings.Contains(msg, "control characters are not allowed") {
		// A binary file: go-yaml says neither where nor what.
		for i, l := range lines {
			for j, r := range []rune(l) {
				if r != '\t' && r != '\r' && (r < 0x20 || r == 0x7f || r == utf8.RuneError) {
					return &Error{Pos: Position{File: file, Line: i + 1, Col: j + 1}, Msg: fmt.Sprintf("not YAML or JSON: control character %U: is it a binary file? give the manifest's text", r)}
				}
			}
		}
		return &Error{Pos: Position{File: file, Line: 1, Col: 1}, Msg: "not YAML or JSON: it holds control characters: is it a binary file? give the manifest's text"}
	}
	line := 0
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	pos := Position{File: file}
	if line >= 1 && line <= len(lines) {
		text := lines[line-1]
		pos.Line, pos.Col = line, 1
		indent := len(text) - len(strings.TrimLeft(text, " \t"))
		if i := strings.IndexByte(text[:indent], '\t'); i >= 0 {
			pos.Col = utf8.RuneCountInString(text[:i]) + 1
			return &Error{Pos: pos, Msg: "invalid YAML: a tab character in the indentation: YAML indents with spaces only; replace the tab with spaces"}
		}
		if indent < len(text) {
			pos.Col = utf8.RuneCountInString(text[:indent]) + 1
		}
	} else if line > 0 {
		pos.Line = line
	}
	for _, h := range yamlHints {
		if strings.Contains(msg, h.says) {
			return &Error{Pos: pos, Msg: "invalid YAML: " + msg + ": " + h.hint}
		}
	}
	return &Error{Pos: pos, Msg: "invalid YAML: " + msg}
}
