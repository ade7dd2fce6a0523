package manifest

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// node returns the YAML node at the field path, or the deepest node on the way to it.
// For a mapping entry it returns the value node; key is the entry's key node, when found.
func (d *Document) node(path string) (value, key *yaml.Node, exact bool) {
	n := d.root
	if n == nil {
		return nil, nil, false
	}
	for _, step := range splitPath(path) {
		switch {
		case step.index >= 0:
			if n.Kind != yaml.SequenceNode || step.index >= len(n.Content) {
				return n, key, false
			}
			n, key = n.Content[step.index], nil
		default:
			if n.Kind != yaml.MappingNode {
				return n, key, false
			}
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == step.name {
					key, n, found = n.Content[i], n.Content[i+1], true
					break
				}
			}
			if !found {
				return n, key, false
			}
		}
	}
	return n, key, true
}

type pathStep struct {
	name  string
	index int
}

// splitPath splits spec.validations[0].expression (or .spec.x, or a[key]) into steps.
func splitPath(path string) []pathStep {
	var steps []pathStep
	path = strings.TrimPrefix(path, ".")
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return steps
			}
			inner := path[1:end]
			if i, err := strconv.Atoi(inner); err == nil {
				steps = append(steps, pathStep{index: i})
			} else {
				steps = append(steps, pathStep{name: strings.Trim(inner, `"`), index: -1})
			}
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			steps = append(steps, pathStep{name: path[:end], index: -1})
			path = path[end:]
		}
	}
	return steps
}

// FieldPos returns the position of the value of the field path, or of the nearest enclosing
// field the document has when the path does not exist (a missing required field).
func (d *Document) FieldPos(path string) Position {
	n, key, exact := d.node(path)
	if n == nil {
		return Position{File: d.File}
	}
	if !exact && key != nil {
		n = key
	}
	return Position{File: d.File, Line: n.Line, Col: n.Column}
}

// KeyPos returns the position of the key of the field path (for a list item, of the item), or
// that of the nearest enclosing field.
func (d *Document) KeyPos(path string) Position {
	n, key, _ := d.node(path)
	if key != nil {
		n = key
	}
	if n == nil {
		return Position{File: d.File}
	}
	return Position{File: d.File, Line: n.Line, Col: n.Column}
}

// ExprPos returns the position in the file of a character of the string at the field path,
// given as CEL reports it: a 1-based line and 0-based column (in characters) inside the string.
// Block scalars, plain multi-line scalars and quoted strings with escapes are all mapped back
// to the file. When the mapping fails it returns the position of the field.
func (d *Document) ExprPos(path string, line, col int) Position {
	n, _, exact := d.node(path)
	if n == nil || !exact || n.Kind != yaml.ScalarNode {
		return d.FieldPos(path)
	}
	offset, ok := runeOffset(n.Value, line, col)
	if !ok {
		return Position{File: d.File, Line: n.Line, Col: n.Column}
	}
	l, c, ok := d.scalarRunePos(n, offset)
	if !ok {
		return Position{File: d.File, Line: n.Line, Col: n.Column}
	}
	return Position{File: d.File, Line: l, Col: c}
}

// runeOffset converts a (1-based line, 0-based column) inside s into a rune offset.
func runeOffset(s string, line, col int) (int, bool) {
	if line < 1 || col < 0 {
		return 0, false
	}
	offset := 0
	rest := s
	for l := 1; l < line; l++ {
		i := strings.IndexByte(rest, '\n')
		if i < 0 {
			return 0, false
		}
		offset += utf8.RuneCountInString(rest[:i+1])
		rest = rest[i+1:]
	}
	if col > utf8.RuneCountInString(rest) {
		return 0, false
	}
	return offset + col, true
}

// srcRune is one character of a scalar's source text with its 1-based line and column.
type srcRune struct {
	r         rune
	line, col int
}

// scalarRunePos maps the rune offset inside the scalar's value to a 1-based line and column in
// the file. It flattens the scalar's source lines (indentation removed, line breaks dropped)
// and walks them beside the value: characters that match are the same character; a space or
// newline of the value that the source does not have came from a folded line break; a
// backslash in a double-quoted scalar starts an escape that stands for one value character.
func (d *Document) scalarRunePos(n *yaml.Node, offset int) (int, int, bool) {
	value := []rune(n.Value)
	if offset >= len(value) {
		if offset == len(value) && offset > 0 {
			l, c, ok := d.scalarRunePos(n, offset-1)
			return l, c + 1, ok // just past the last character
		}
		return 0, 0, false
	}
	stream := d.scalarSource(n)
	si := 0
	for i := 0; i <= offset; i++ {
		want := value[i]
		for {
			if si >= len(stream) {
				return 0, 0, false
			}
			s := stream[si]
			switch {
			case s.r == want:
				if i == offset {
					return s.line, s.col, true
				}
				si++
				if n.Style == yaml.SingleQuotedStyle && want == '\'' && si < len(stream) && stream[si].r == '\'' {
					si++ // '' stands for '
				}
			case n.Style == yaml.DoubleQuotedStyle && s.r == '\\':
				if i == offset {
					return s.line, s.col, true
				}
				si += escapeLen(stream[si:])
			case want == ' ' || want == '\n':
				// a line break folded into the value
				if i == offset {
					return s.line, s.col, true
				}
			case s.r == ' ' || s.r == '\t':
				si++ // whitespace the value trimmed
				continue
			default:
				return 0, 0, false // lost track; rather no column than a wrong one
			}
			break
		}
	}
	return 0, 0, false
}

// scalarSource returns the source characters of a scalar node, each line without its
// indentation, for block scalars starting on the line after the header and for quoted scalars
// after the opening quote.
func (d *Document) scalarSource(n *yaml.Node) []srcRune {
	var out []srcRune
	li, ci := n.Line-1, n.Column-1
	indent := -1 // strip all leading whitespace of continuation lines
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		ci++
	case yaml.LiteralStyle, yaml.FoldedStyle:
		indent = blockIndent(d.lines, n)
		li, ci = li+1, indent
	}
	for first := true; li < len(d.lines); li++ {
		line := []rune(d.lines[li])
		if !first {
			ci = 0
			for ci < len(line) && (indent < 0 || ci < indent) && (line[ci] == ' ' || line[ci] == '\t') {
				ci++
			}
		}
		first = false
		for ; ci < len(line); ci++ {
			out = append(out, srcRune{r: line[ci], line: li + 1, col: ci + 1})
		}
		if len(out) > 4*len(n.Value)+1024 {
			break // far enough: the value cannot reach further
		}
	}
	return out
}

// blockIndent returns the content indentation of a block scalar: the indentation of its first
// non-empty line.
func blockIndent(lines []string, n *yaml.Node) int {
	for li := n.Line; li < len(lines); li++ {
		l := lines[li]
		t := strings.TrimLeft(l, " ")
		if t == "" {
			continue
		}
		return len(l) - len(t)
	}
	return 0
}

// escapeLen returns the length of the escape sequence at the start of s (which starts with \).
func escapeLen(s []srcRune) int {
	if len(s) < 2 {
		return 1
	}
	switch s[1].r {
	case 'x':
		return min(4, len(s))
	case 'u':
		return min(6, len(s))
	case 'U':
		return min(10, len(s))
	}
	return 2
}
