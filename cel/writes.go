package cel

import (
	"strconv"
	"strings"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// What a MutatingAdmissionPolicy's mutations write of the object, found by walking their
// parsed expressions: the fields an apply configuration's Object literals set (a map literal's
// constant keys, or any key), and the paths of JSON patch operations (their constant part).

// MutationWrites returns the fields of object the mutation may write; all says why they
// cannot be told (a JSON patch path that is not a constant), or is empty.
func MutationWrites(m admissionregistrationv1.Mutation) (writes []FieldPath, all string) {
	var expr string
	switch {
	case m.ApplyConfiguration != nil:
		expr = m.ApplyConfiguration.Expression
	case m.JSONPatch != nil:
		expr = m.JSONPatch.Expression
	default:
		return nil, ""
	}
	env, err := parseEnv()
	if err != nil {
		return nil, err.Error()
	}
	a, iss := env.Parse(expr)
	if iss.Err() != nil {
		return nil, iss.Err().Error()
	}
	w := &writeWalker{}
	w.walk(a.NativeRep().Expr())
	return w.writes, w.all
}

type writeWalker struct {
	writes []FieldPath
	all    string
}

// walk finds the Object and JSONPatch literals of an expression.
func (w *writeWalker) walk(e celast.Expr) {
	switch e.Kind() {
	case celast.StructKind:
		s := e.AsStruct()
		switch name := s.TypeName(); {
		case name == "Object":
			w.object(FieldPath{Root: "object"}, s)
			return
		case name == "JSONPatch":
			w.patch(s)
			return
		}
		for _, f := range s.Fields() {
			w.walk(f.AsStructField().Value())
		}
	case celast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() {
			w.walk(c.Target())
		}
		for _, a := range c.Args() {
			w.walk(a)
		}
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.walk(el)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			w.walk(en.AsMapEntry().Value())
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		w.walk(c.IterRange())
		w.walk(c.LoopStep())
		w.walk(c.Result())
	case celast.SelectKind:
		w.walk(e.AsSelect().Operand())
	}
}

// object records the fields an apply configuration's Object literal (at path) sets.
func (w *writeWalker) object(path FieldPath, s celast.StructExpr) {
	for _, f := range s.Fields() {
		sf := f.AsStructField()
		p := path.with(sf.Name())
		v := sf.Value()
		switch v.Kind() {
		case celast.StructKind:
			w.object(p, v.AsStruct())
		case celast.MapKind:
			// A map merges key by key (labels, annotations): it writes its keys.
			for _, en := range v.AsMap().Entries() {
				key := AnyStep
				if k := en.AsMapEntry().Key(); k.Kind() == celast.LiteralKind {
					if str, ok := k.AsLiteral().(types.String); ok {
						key = string(str)
					}
				}
				w.writes = append(w.writes, p.with(key))
			}
			if len(v.AsMap().Entries()) == 0 {
				w.writes = append(w.writes, p)
			}
		default:
			w.writes = append(w.writes, p)
		}
	}
}

// patch records the paths a JSON patch operation writes, their constant part: its path, and
// its from (a move removes it; a copy only reads it, which counts the same here).
func (w *writeWalker) patch(s celast.StructExpr) {
	for _, f := range s.Fields() {
		sf := f.AsStructField()
		if sf.Name() != "path" && sf.Name() != "from" {
			continue
		}
		prefix, whole := constantPrefix(sf.Value())
		if prefix == "" && !whole {
			w.all = "a JSON patch path that is not a constant"
			return
		}
		if !whole {
			// The rest of the path is computed: anything under the last whole step.
			if i := strings.LastIndex(prefix, "/"); i >= 0 {
				prefix = prefix[:i]
			}
		}
		p := FieldPath{Root: "object"}
		for _, seg := range strings.Split(strings.TrimPrefix(prefix, "/"), "/") {
			if seg == "" {
				continue
			}
			if _, err := strconv.Atoi(seg); err == nil || seg == "-" {
				seg = AnyStep
			}
			p.Steps = append(p.Steps, strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~"))
		}
		w.writes = append(w.writes, p)
	}
}

// constantPrefix returns the constant start of a string expression, and whether that is the
// whole of it: 'a' + 'b' + x gives "ab", false.
func constantPrefix(e celast.Expr) (string, bool) {
	switch e.Kind() {
	case celast.LiteralKind:
		if s, ok := e.AsLiteral().(types.String); ok {
			return string(s), true
		}
	case celast.CallKind:
		c := e.AsCall()
		if c.FunctionName() == operators.Add && len(c.Args()) == 2 {
			left, whole := constantPrefix(c.Args()[0])
			if !whole {
				return left, false
			}
			right, whole := constantPrefix(c.Args()[1])
			return left + right, whole
		}
	}
	return "", false
}
