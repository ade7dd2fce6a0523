package vap

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/vapc-dev/vapc/cel/manifest"
)

// site is the Go source line that called one of the package's constructors.
type site struct {
	path string // the file as the runtime reports it, to read it
	file string // the file relative to its module root, to report it
	line int
}

// caller returns the site of the caller of the exported function that calls caller.
func caller() site {
	_, path, line, ok := runtime.Caller(2)
	if !ok {
		return site{file: "<unknown>"}
	}
	return site{path: path, file: relToModule(path), line: line}
}

// pos returns the site as a position without column.
func (s site) pos() manifest.Position { return manifest.Position{File: s.file, Line: s.line} }

var moduleRoots sync.Map // directory → module root ("" when none)

// relToModule returns path relative to the root of the Go module that holds it, with forward
// slashes, so that emitted files and messages do not depend on where the module is checked out.
// Paths that are not absolute (built with -trimpath) are returned as they are.
func relToModule(path string) string {
	if !filepath.IsAbs(path) {
		return filepath.ToSlash(path)
	}
	dir := filepath.Dir(path)
	root := moduleRoot(dir)
	if root == "" {
		return filepath.ToSlash(path)
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(rel)
}

func moduleRoot(dir string) string {
	if r, ok := moduleRoots.Load(dir); ok {
		return r.(string)
	}
	root := ""
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			root = d
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	moduleRoots.Store(dir, root)
	return root
}

// locator maps the field paths of one policy or binding to the Go lines that wrote them. It
// implements cel.Locator.
type locator struct {
	root  site              // NewPolicy or NewBinding
	sites map[string]site   // field path → the call that wrote it
	exprs map[string]string // field path → the expression written there
}

func newLocator(root site) *locator {
	return &locator{root: root, sites: map[string]site{}, exprs: map[string]string{}}
}

// set records that s wrote the field at path.
func (l *locator) set(path string, s site) { l.sites[path] = s }

// setExpr records that s wrote the expression at path.
func (l *locator) setExpr(path string, s site, expr string) {
	l.sites[path] = s
	l.exprs[path] = expr
}

// site returns the call that wrote the field, or the nearest enclosing field that has one.
func (l *locator) site(path string) site {
	for p := path; p != ""; p = parentPath(p) {
		if s, ok := l.sites[p]; ok {
			return s
		}
	}
	return l.root
}

// parentPath strips the last step of a field path: a.b[0].c → a.b[0] → a.b → a → "".
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// FieldPos returns the Go line that wrote the field at path.
func (l *locator) FieldPos(path string) manifest.Position { return l.site(path).pos() }

// ExprPos returns the Go position of a character of the expression at path (line 1-based, col
// 0-based, in characters). The column is found when the expression is a string literal in the
// Go source near the line that wrote it; otherwise the position has the line only.
func (l *locator) ExprPos(path string, line, col int) manifest.Position {
	s := l.site(path)
	expr, ok := l.exprs[path]
	if !ok {
		return s.pos()
	}
	if p, ok := literalPos(s, expr, line, col); ok {
		return p
	}
	return s.pos()
}

var sources sync.Map // path → []string, the lines of a Go file

// maxSourceSize bounds the Go files read to place columns.
const maxSourceSize = 4 << 20

func sourceLines(path string) []string {
	if v, ok := sources.Load(path); ok {
		return v.([]string)
	}
	var lines []string
	if info, err := os.Stat(path); err == nil && info.Size() <= maxSourceSize {
		if data, err := os.ReadFile(path); err == nil {
			lines = strings.Split(string(data), "\n")
		}
	}
	sources.Store(path, lines)
	return lines
}

// literalWindow is how many lines after the call the expression's literal may start.
const literalWindow = 30

// literalPos finds the Go string literal that holds expr at or after the call's line, and returns
// the position in the Go file of the character at (line, col) of the expression.
func literalPos(s site, expr string, line, col int) (manifest.Position, bool) {
	if s.path == "" || line < 1 || col < 0 || expr == "" {
		return manifest.Position{}, false
	}
	src := sourceLines(s.path)
	exprLines := strings.Split(expr, "\n")
	if line > len(exprLines) || col > utf8.RuneCountInString(exprLines[line-1]) {
		return manifest.Position{}, false
	}
	// The literal as it may appear: a raw string whose first line is the expression's first line,
	// or an interpreted string of a one-line expression.
	raw := "`" + exprLines[0]
	if len(exprLines) == 1 {
		raw += "`"
	}
	quoted := strconv.Quote(expr)
	for i := s.line - 1; i >= 0 && i < len(src) && i < s.line-1+literalWindow; i++ {
		text := src[i]
		if j := strings.Index(text, raw); j >= 0 && !strings.ContainsRune(exprLines[0], '`') {
			if line == 1 {
				return position(s.file, i+1, utf8.RuneCountInString(text[:j])+1+col+1), true
			}
			at := i + line - 1
			if at < len(src) && strings.HasPrefix(src[at], exprLines[line-1]) {
				return position(s.file, at+1, col+1), true
			}
			return position(s.file, at+1, 0), true
		}
		if len(exprLines) == 1 {
			if j := strings.Index(text, quoted); j >= 0 {
				prefix := strconv.Quote(string([]rune(expr)[:col]))
				return position(s.file, i+1, utf8.RuneCountInString(text[:j])+utf8.RuneCountInString(prefix)-1+1), true
			}
		}
	}
	return manifest.Position{}, false
}

func position(file string, line, col int) manifest.Position {
	return manifest.Position{File: file, Line: line, Col: col}
}
