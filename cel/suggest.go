package cel

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// The type errors of cel-go's checker a hint is found for (checker/errors.go).
var (
	undefinedFieldRE = regexp.MustCompile(`^undefined field '([^']+)'$`)
	undeclaredRE     = regexp.MustCompile(`^undeclared reference to '([^']+)'`)
	noOverloadRE     = regexp.MustCompile(`^found no matching overload for '([^']+)' applied to`)
	identifierRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// admissionVariables are the variables of every admission policy expression.
var admissionVariables = []string{"object", "oldObject", "params", "request", "namespaceObject", "authorizer", "variables"}

// maxFieldsListed is how many fields a hint lists when no name is close to a mistyped one.
const maxFieldsListed = 12

// maxOverloadsListed is how many overloads of a function a hint lists.
const maxOverloadsListed = 6

// hinter finds hints in the environment an expression was checked in.
type hinter struct {
	env *celgo.Env
	// types are the object types of the schemas the environment types object, oldObject,
	// params, request and namespaceObject with, by name.
	types *apiservercel.DeclTypeProvider
}

// createHints returns the hinter of the compile errors kube-apiserver returns on create, built
// on first use: the policy's environment with object and oldObject untyped, as the server
// compiles new expressions before it knows their kinds.
func (c *Checker) createHints(p *admissionregistrationv1.ValidatingAdmissionPolicy) func() hinter {
	var h *hinter
	return func() hinter {
		if h == nil {
			h = &hinter{}
			if typed, env, err := c.kindEnv(p, schema.GroupVersionKind{}); err == nil {
				h.env, h.types = env, typed.types
			}
		}
		return *h
	}
}

// hint says what an issue of the expression may have meant, as cel-go and kubectl suggest,
// from the CEL environment the expression was checked in: for an undefined field, the
// fields of the operand's type (from the OpenAPI schema the type checker built it from)
// closest to the name, and the fields when they are few; for an undeclared reference, the
// functions (or the variables) of the environment closest to it; for a function without an
// overload for the arguments, its overloads. It returns "" when it has nothing to offer.
func (h hinter) hint(expr string, is celIssue) (hint, fields string) {
	hint, fields, _ = h.hintOf(expr, is)
	return hint, fields
}

// hintOf is hint, and for an undefined field the name of the object type it is not a field of
// (the apiserver's type name of a schema, which names its kind and path).
func (h hinter) hintOf(expr string, is celIssue) (hint, fields, typeName string) {
	env := h.env
	if env == nil {
		return "", "", ""
	}
	switch {
	case undefinedFieldRE.MatchString(is.msg):
		name := undefinedFieldRE.FindStringSubmatch(is.msg)[1]
		operand, all, typeName := h.fieldsAt(expr, is, name)
		if operand == plugincel.VariableVarName && slices.Contains(all, name) {
			return "a variable reads only the variables declared before it", "", typeName
		}
		if hint = didYouMean(Closest(name, all)); hint == "" && len(all) > 0 && len(all) <= maxFieldsListed {
			sort.Strings(all)
			fields = "the fields here are " + strings.Join(all, ", ")
		}
		return hint, fields, typeName
	case undeclaredRE.MatchString(is.msg):
		name := undeclaredRE.FindStringSubmatch(is.msg)[1]
		// A name followed by an argument list is a function's; else a variable's (or a
		// library's namespace, math of math.greatest, which no variable is close to).
		if regexp.MustCompile(regexp.QuoteMeta(name) + `\s*\(`).MatchString(expr) {
			return didYouMean(Closest(name, functionNames(env))), "", ""
		}
		return didYouMean(Closest(name, variableNames(env))), "", ""
	case noOverloadRE.MatchString(is.msg):
		return overloadsOf(env, noOverloadRE.FindStringSubmatch(is.msg)[1]), "", ""
	}
	return "", "", ""
}

// functionNames are the names of the functions of the environment, but operators.
func functionNames(env *celgo.Env) []string {
	var names []string
	for name := range env.Functions() {
		if identifierRE.MatchString(name) {
			names = append(names, name)
		}
	}
	return names
}

// variableNames are the names of the variables of the environment, the admission variables
// included.
func variableNames(env *celgo.Env) []string {
	names := append([]string{}, admissionVariables...)
	for _, v := range env.Variables() {
		names = append(names, v.Name())
	}
	return names
}

// overloadsOf lists the overloads of a function, as "name takes string.startsWith(string) ->
// bool, ...".
func overloadsOf(env *celgo.Env, name string) string {
	fn, ok := env.Functions()[name]
	if !ok || !identifierRE.MatchString(name) {
		return ""
	}
	var sigs []string
	for _, o := range fn.OverloadDecls() {
		var args []string
		for _, a := range o.ArgTypes() {
			args = append(args, typeNames(a.String()))
		}
		sig := name + "(" + strings.Join(args, ", ") + ")"
		if o.IsMemberFunction() && len(args) > 0 {
			sig = args[0] + "." + name + "(" + strings.Join(args[1:], ", ") + ")"
		}
		sigs = append(sigs, sig+" -> "+typeNames(o.ResultType().String()))
	}
	sort.Strings(sigs)
	if len(sigs) == 0 {
		return ""
	}
	more := ""
	if len(sigs) > maxOverloadsListed {
		more = fmt.Sprintf(" and %d more", len(sigs)-maxOverloadsListed)
		sigs = sigs[:maxOverloadsListed]
	}
	return name + " takes " + strings.Join(sigs, ", ") + more
}

// fieldsAt returns the fields of the type of the operand of the selection of name at the
// issue's place in the expression: the expression is parsed again, the operand written back
// as text and type-checked in env, with the variables of the comprehensions (macros: all,
// exists, map, filter, cel.bind) around it declared with the types of their ranges.
func (h hinter) fieldsAt(expr string, is celIssue, name string) (operandText string, fields []string, typeName string) {
	env := h.env
	penv, err := env.Extend(celgo.EnableMacroCallTracking())
	if err != nil {
		return "", nil, ""
	}
	parsed, iss := penv.Parse(expr)
	if iss.Err() != nil {
		return "", nil, ""
	}
	native := parsed.NativeRep()
	info := native.SourceInfo()
	// The selection of name at the issue's place, or else the nearest one (has() reports at
	// the macro's place).
	var operand ast.Expr
	var scopes []ast.ComprehensionExpr
	best := -1
	var find func(e ast.Expr, in []ast.ComprehensionExpr) bool
	find = func(e ast.Expr, in []ast.ComprehensionExpr) bool {
		switch e.Kind() {
		case ast.SelectKind:
			s := e.AsSelect()
			if s.FieldName() == name {
				loc := info.GetStartLocation(e.ID())
				d := abs(loc.Line()-is.line)*1000 + abs(loc.Column()-is.col)
				if best < 0 || d < best {
					best, operand, scopes = d, s.Operand(), in
				}
				if d == 0 {
					return true
				}
			}
			return find(s.Operand(), in)
		case ast.CallKind:
			c := e.AsCall()
			if c.IsMemberFunction() && find(c.Target(), in) {
				return true
			}
			for _, a := range c.Args() {
				if find(a, in) {
					return true
				}
			}
		case ast.ComprehensionKind:
			c := e.AsComprehension()
			if find(c.IterRange(), in) || find(c.AccuInit(), in) {
				return true
			}
			inner := append(append([]ast.ComprehensionExpr{}, in...), c)
			return find(c.LoopCondition(), inner) || find(c.LoopStep(), inner) || find(c.Result(), inner)
		case ast.ListKind:
			for _, el := range e.AsList().Elements() {
				if find(el, in) {
					return true
				}
			}
		case ast.MapKind:
			for _, en := range e.AsMap().Entries() {
				m := en.AsMapEntry()
				if find(m.Key(), in) || find(m.Value(), in) {
					return true
				}
			}
		case ast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				if find(f.AsStructField().Value(), in) {
					return true
				}
			}
		}
		return false
	}
	if find(native.Expr(), nil); operand == nil {
		return "", nil, ""
	}
	operandText, _ = parser.Unparse(operand, info)
	// Declare the comprehensions' variables, outermost first, by the types of their ranges.
	for _, c := range scopes {
		var decls []celgo.EnvOption
		elem, key := celgo.DynType, celgo.DynType
		if t := typeOf(env, c.IterRange(), info); t != nil {
			switch t.Kind() {
			case types.ListKind:
				key, elem = celgo.IntType, t.Parameters()[0]
			case types.MapKind:
				key, elem = t.Parameters()[0], t.Parameters()[1]
			}
		}
		if c.HasIterVar2() {
			decls = append(decls, celgo.Variable(c.IterVar(), key), celgo.Variable(c.IterVar2(), elem))
		} else if t := typeOf(env, c.IterRange(), info); t != nil && t.Kind() == types.MapKind {
			decls = append(decls, celgo.Variable(c.IterVar(), key))
		} else {
			decls = append(decls, celgo.Variable(c.IterVar(), elem))
		}
		if identifierRE.MatchString(c.AccuVar()) {
			accu := celgo.DynType
			if t := typeOf(env, c.AccuInit(), info); t != nil {
				accu = t
			}
			decls = append(decls, celgo.Variable(c.AccuVar(), accu))
		}
		if env, err = env.Extend(decls...); err != nil {
			return operandText, nil, ""
		}
	}
	t := typeOf(env, operand, info)
	if t == nil {
		return operandText, nil, ""
	}
	if t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type" && len(t.Parameters()) == 1 {
		t = t.Parameters()[0]
	}
	if t.Kind() != types.StructKind {
		return operandText, nil, ""
	}
	return operandText, h.structFields(env, t.TypeName()), t.TypeName()
}

// structFields returns the fields of an object type: of the types the apiserver builds from
// OpenAPI schemas, which its providers find but do not list (FindStructFieldNames), the
// variables' included; or else of those cel-go's provider lists.
func (h hinter) structFields(env *celgo.Env, typeName string) []string {
	dt, found := h.types.FindDeclType(typeName)
	if !found {
		if dp, ok := env.CELTypeProvider().(*apiservercel.DeclTypeProvider); ok {
			dt, found = dp.FindDeclType(typeName)
		}
	}
	if !found {
		fields, _ := env.CELTypeProvider().FindStructFieldNames(typeName)
		return fields
	}
	var fields []string
	for name := range dt.Fields {
		// the apiserver escapes field names that are CEL keywords: __namespace__
		fields = append(fields, strings.TrimSuffix(strings.TrimPrefix(name, "__"), "__"))
	}
	return fields
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// typeOf type-checks a part of a parsed expression in env, written back as text, and returns
// its type, or nil.
func typeOf(env *celgo.Env, e ast.Expr, info *ast.SourceInfo) *celgo.Type {
	text, err := parser.Unparse(e, info)
	if err != nil {
		return nil
	}
	checked, iss := env.Compile(text)
	if iss.Err() != nil {
		return nil
	}
	return checked.OutputType()
}
