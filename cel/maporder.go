package cel

import (
	"fmt"
	"slices"
	"strings"

	celgo "github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// MapOrderMessage is the lint of an expression whose value may depend on the order CEL
// iterates a map in: kube-apiserver's CEL iterates the maps of an object (typed, through
// reflect's MapKeys) and of a param or an unstructured object (Go's map range) in Go's map
// order, which changes from one evaluation to the next, so the value differs from request to
// request for the same object. A replay cannot tell which order the server took: an audit
// annotation with such a value is not known, nor a failure's message the log does not hold
// (replay.WithMapOrder).
const MapOrderMessage = "its value may list a map's keys in the order CEL iterates the map, which in kube-apiserver is Go's map order and changes from one request to the next (a map() or filter() over a map whose list is not only counted or tested)"

// mapOrderHint is what to do about it.
const mapOrderHint = "iterate a sorted list of the keys instead, or count or test the list (size(), all(), exists(), in)"

// iteratesMapInOrder says whether the checked expression's value may depend on the order a
// map's keys are iterated in: a comprehension over a map that builds a list (the map() and
// filter() macros, and their two-variable forms), unless that list is only counted (size()),
// tested (all, exists, exists_one over it, membership with in) or sorted. dynMayBeMap counts
// a comprehension over a dyn range too (an object CEL does not type), which may be a map.
func iteratesMapInOrder(ast *celgo.Ast, dynMayBeMap bool) bool {
	native := ast.NativeRep()
	if native == nil {
		return false
	}
	typeOf := func(e celast.Expr) *types.Type { return native.GetType(e.ID()) }
	var walk func(e celast.Expr, orderFree bool) bool
	walk = func(e celast.Expr, orderFree bool) bool {
		switch e.Kind() {
		case celast.ComprehensionKind:
			c := e.AsComprehension()
			// A dyn range may be a map, unless its elements' fields are read (a map's keys are
			// strings, which have none): a list of objects.
			dynMap := func() bool { return dynMayBeMap && !selectsFieldsOf(c.LoopStep(), c.IterVar()) }
			if t := typeOf(c.IterRange()); !orderFree && t != nil && (t.Kind() == types.MapKind || (t.Kind() == types.DynKind || t.Kind() == types.AnyKind) && dynMap()) {
				// A list, or, unchecked (dynMayBeMap on a parsed expression: dyn), a macro that
				// accumulates one (map(), filter()).
				if rt := typeOf(e); rt != nil && (rt.Kind() == types.ListKind || dynMayBeMap && rt.Kind() == types.DynKind && c.AccuInit().Kind() == celast.ListKind) {
					return true
				}
			}
			// A comprehension whose result is a bool (all, exists, exists_one) reads its range
			// in any order alike.
			rangeFree := false
			if rt := typeOf(e); rt != nil && rt.Kind() == types.BoolKind {
				rangeFree = true
			}
			return walk(c.IterRange(), rangeFree) || walk(c.AccuInit(), false) || walk(c.LoopCondition(), false) ||
				walk(c.LoopStep(), false) || walk(c.Result(), false)
		case celast.CallKind:
			call := e.AsCall()
			free := false
			switch call.FunctionName() {
			case "size", "sort", "@in", "isSorted", "sum", "min", "max":
				free = true
			}
			if call.IsMemberFunction() && walk(call.Target(), free) {
				return true
			}
			for i, a := range call.Args() {
				// `x in list`: the list is the second argument.
				argFree := free && (call.FunctionName() != "@in" || i == 1)
				if walk(a, argFree) {
					return true
				}
			}
		case celast.SelectKind:
			return walk(e.AsSelect().Operand(), false)
		case celast.ListKind:
			for _, el := range e.AsList().Elements() {
				if walk(el, false) {
					return true
				}
			}
		case celast.MapKind:
			for _, en := range e.AsMap().Entries() {
				me := en.AsMapEntry()
				if walk(me.Key(), false) || walk(me.Value(), false) {
					return true
				}
			}
		case celast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				if walk(f.AsStructField().Value(), false) {
					return true
				}
			}
		}
		return false
	}
	return walk(native.Expr(), false)
}

// selectsFieldsOf says whether the expression reads a field of the variable named (v.f, or a
// presence test has(v.f)).
func selectsFieldsOf(e celast.Expr, name string) bool {
	found := false
	var walk func(e celast.Expr)
	walk = func(e celast.Expr) {
		if found {
			return
		}
		switch e.Kind() {
		case celast.SelectKind:
			if op := e.AsSelect().Operand(); op.Kind() == celast.IdentKind && op.AsIdent() == name {
				found = true
				return
			}
			walk(e.AsSelect().Operand())
		case celast.CallKind:
			call := e.AsCall()
			if call.IsMemberFunction() {
				walk(call.Target())
			}
			for _, a := range call.Args() {
				walk(a)
			}
		case celast.ComprehensionKind:
			c := e.AsComprehension()
			for _, x := range []celast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
				walk(x)
			}
		case celast.ListKind:
			for _, x := range e.AsList().Elements() {
				walk(x)
			}
		case celast.MapKind:
			for _, en := range e.AsMap().Entries() {
				walk(en.AsMapEntry().Key())
				walk(en.AsMapEntry().Value())
			}
		case celast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				walk(f.AsStructField().Value())
			}
		}
	}
	walk(e)
	return found
}

// MapOrder names the expressions of a set's ValidatingAdmissionPolicies whose values may
// follow the order CEL iterates a map in (MapOrderMessage): kube-apiserver's value is one of
// the orders, by chance.
type MapOrder struct {
	// Annotations are the audit annotation keys, by policy name.
	Annotations map[string][]string
	// Messages are the indexes of spec.validations, by policy name, whose messageExpression
	// words the failure.
	Messages map[string][]int
	// Outcomes are the policies a validation's expression or a matchCondition of which may
	// follow it: whether the policy admits.
	Outcomes map[string]bool
}

// Empty says whether no expression is named.
func (m MapOrder) Empty() bool {
	return len(m.Annotations) == 0 && len(m.Messages) == 0 && len(m.Outcomes) == 0
}

// MapOrderOf names the expressions of the set that follow map iteration, by the diagnostics of
// the set's check (MapOrderMessage): an expression the lint names, or one that reads a variable
// it names. It also names, for a replay to settle, what the lint cannot type, as checking the
// set with this Checker noted it: an expression that iterates a dyn value (a variable, an
// untyped field, the object of a wildcard rule) whose elements' fields it does not read, which
// may be a map, or one the type checker refuses for every kind (a field of another kind, read
// with ?.) that does so untyped, as kube-apiserver evaluates it. The set must have been checked
// with c (Check, CheckPolicy).
func (c *Checker) MapOrderOf(set *Set, diags Diagnostics) MapOrder {
	flagged := map[string]map[string]bool{} // policy: field
	mark := func(m map[string]map[string]bool, policy, field string) {
		if m[policy] == nil {
			m[policy] = map[string]bool{}
		}
		m[policy][field] = true
	}
	for _, d := range diags {
		if name, ok := strings.CutPrefix(d.Object, "ValidatingAdmissionPolicy/"); ok && d.Message == MapOrderMessage {
			mark(flagged, name, d.Field)
		}
	}
	// What checking the policies noted, as a replay takes it (estimate): dyn ranges too.
	c.orderMu.Lock()
	for policy, fields := range c.mayOrder {
		for field := range fields {
			mark(flagged, policy, field)
		}
	}
	c.orderMu.Unlock()
	return mapOrderOf(set, flagged)
}

// buildsList says whether the expression's text may hold a comprehension that builds a list
// (the map() and filter() macros, their two-variable forms): those alone can follow map order.
func buildsList(expr string) bool {
	return strings.Contains(expr, "map(") || strings.Contains(expr, "filter(") || strings.Contains(expr, "transformList(")
}

// mapOrderOf is MapOrderOf of the fields flagged, by policy.
func mapOrderOf(set *Set, flagged map[string]map[string]bool) MapOrder {
	out := MapOrder{Annotations: map[string][]string{}, Messages: map[string][]int{}, Outcomes: map[string]bool{}}
	for _, p := range set.Policies {
		fields := flagged[p.Name]
		if len(fields) == 0 {
			continue
		}
		var vars []string
		for i, v := range p.Spec.Variables {
			if fields[fmt.Sprintf("spec.variables[%d].expression", i)] {
				vars = append(vars, "variables."+v.Name)
			}
		}
		readsFlagged := func(field, expr string) bool {
			return fields[field] || slices.ContainsFunc(vars, func(v string) bool { return strings.Contains(expr, v) })
		}
		for i, a := range p.Spec.AuditAnnotations {
			if readsFlagged(fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i), a.ValueExpression) {
				out.Annotations[p.Name] = append(out.Annotations[p.Name], a.Key)
			}
		}
		for i, v := range p.Spec.Validations {
			if v.MessageExpression != "" && readsFlagged(fmt.Sprintf("spec.validations[%d].messageExpression", i), v.MessageExpression) {
				out.Messages[p.Name] = append(out.Messages[p.Name], i)
			}
			if readsFlagged(fmt.Sprintf("spec.validations[%d].expression", i), v.Expression) {
				out.Outcomes[p.Name] = true
			}
		}
		for i, c := range p.Spec.MatchConditions {
			if readsFlagged(fmt.Sprintf("spec.matchConditions[%d].expression", i), c.Expression) {
				out.Outcomes[p.Name] = true
			}
		}
	}
	return out
}
