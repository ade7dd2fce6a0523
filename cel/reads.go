package cel

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/cel/environment"
)

// What a policy's expressions read of the request's objects, found by walking their parsed
// expressions: a replay that does not know some field of an object (the uid the server gave a
// refused create, a field an admission plugin set from an object the log does not hold)
// decides the request only when no expression reads that field.

// ReadKind is how an expression reads a field.
type ReadKind int

const (
	// ReadValue reads the field's whole value.
	ReadValue ReadKind = iota
	// ReadPresence reads whether the field is set (has(), optional selection).
	ReadPresence
	// ReadChildren reads which elements or keys the field has (iterating over it).
	ReadChildren
	// ReadSize reads how many elements or keys the field has, or a string's length (size()).
	ReadSize
	// ReadStartsWith reads whether the field's value begins with the Read's Literal
	// (startsWith with a literal argument).
	ReadStartsWith
	// ReadEquals reads whether the field's value is the Read's Literal (== or != with a
	// literal, or `in` a list of literals: a read of each).
	ReadEquals
)

// AnyStep in a path stands for any element of a list or any key of a map.
const AnyStep = "*"

// FieldPath is a field under one of the request variables an expression reads: "object",
// "oldObject" or "request" (Root), then field names, map keys or AnyStep.
type FieldPath struct {
	Root  string
	Steps []string
}

func (p FieldPath) String() string {
	if len(p.Steps) == 0 {
		return p.Root
	}
	var b strings.Builder
	b.WriteString(p.Root)
	for _, s := range p.Steps {
		if s == AnyStep || isIdent(s) {
			b.WriteString("." + s)
		} else {
			fmt.Fprintf(&b, "[%q]", s)
		}
	}
	return b.String()
}

// isIdent says whether a field's name can follow a dot in CEL (a map key such as a label's
// may not: it is written in brackets).
func isIdent(s string) bool {
	for i, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

func (p FieldPath) with(step string) FieldPath {
	steps := make([]string, len(p.Steps)+1)
	copy(steps, p.Steps)
	steps[len(p.Steps)] = step
	return FieldPath{Root: p.Root, Steps: steps}
}

// Read is one field an expression reads, and how.
type Read struct {
	Path FieldPath
	Kind ReadKind
	// Literal is the string a ReadStartsWith or ReadEquals compares the value with.
	Literal string
}

// Reads is what a set of expressions read.
type Reads struct {
	Reads []Read
	// All is set when an expression could not be analyzed: it may read anything.
	All string
}

// Unknown is a field whose value a replay does not know for sure.
type Unknown struct {
	Path FieldPath
	// ValueOnly says only the field's value is unknown: whether it is set is known, and so
	// are the elements or keys of the fields above it.
	ValueOnly bool
	// Why says what makes it unknown.
	Why string
	// Prefix, when set, is how a ValueOnly string begins: a name the server generated is
	// its base and a random suffix (names.SimpleNameGenerator). A comparison with a literal
	// that the prefix decides (startsWith a literal no longer than it, equality with one that
	// does not begin with it) reads nothing unknown.
	Prefix string
	// Known are fields within Path, by their steps from the root, that are known all the
	// same: a read within one of them reads nothing unknown (a namespace the replay does not
	// know has its name, and its kubernetes.io/metadata.name label is its name).
	Known [][]string
}

// decidedByPrefix says whether a comparison of a string that begins with prefix, the rest
// unknown, with a literal has the same outcome whatever the rest is.
func decidedByPrefix(k ReadKind, literal, prefix string) bool {
	switch k {
	case ReadStartsWith:
		// Within the prefix, the prefix decides; beyond it, a literal that does not begin
		// with the prefix is begun by no such string.
		return len(literal) <= len(prefix) || !strings.HasPrefix(literal, prefix)
	case ReadEquals:
		return !strings.HasPrefix(literal, prefix)
	}
	return false
}

// DependsOn returns the first read of the reads that an unknown field can change, and the
// unknown; ok is false when none can.
func (r Reads) DependsOn(unknowns []Unknown) (read Read, unknown Unknown, ok bool) {
	if len(unknowns) == 0 {
		return Read{}, Unknown{}, false
	}
	if r.All != "" {
		return Read{Path: FieldPath{Root: "any field (" + r.All + ")"}}, unknowns[0], true
	}
	for _, rd := range r.Reads {
		for _, u := range unknowns {
			if overlaps(rd, u) {
				return rd, u, true
			}
		}
	}
	return Read{}, Unknown{}, false
}

// overlaps says whether an unknown field can change what a read reads.
func overlaps(r Read, u Unknown) bool {
	if r.Path.Root != u.Path.Root {
		return false
	}
	for _, k := range u.Known {
		if len(r.Path.Steps) >= len(k) && slices.Equal(r.Path.Steps[:len(k)], k) {
			return false
		}
	}
	a, b := r.Path.Steps, u.Path.Steps
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] && a[i] != AnyStep && b[i] != AnyStep {
			return false
		}
	}
	switch {
	case len(b) < len(a):
		// The unknown field holds what is read.
		return true
	case len(b) == len(a):
		switch r.Kind {
		case ReadStartsWith, ReadEquals:
			return !u.ValueOnly || u.Prefix == "" || !decidedByPrefix(r.Kind, r.Literal, u.Prefix)
		}
		return r.Kind == ReadValue || r.Kind == ReadSize || !u.ValueOnly
	}
	// The read field holds the unknown one.
	switch r.Kind {
	case ReadValue, ReadStartsWith, ReadEquals:
		return true
	case ReadChildren, ReadSize:
		return len(b) == len(a)+1 && !u.ValueOnly
	}
	return false
}

// The variables of an admission policy's expressions whose fields are tracked.
var readRoots = map[string]bool{"object": true, "oldObject": true, "request": true, "params": true, "namespaceObject": true}

// parseEnv is the environment expressions are parsed in: the apiserver's, for its macros.
var parseEnv = sync.OnceValues(func() (*celgo.Env, error) {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Env(environment.StoredExpressions)
})

// PolicyReads returns what a ValidatingAdmissionPolicy reads of object, oldObject, request,
// params and namespaceObject: every expression of it (matchConditions, variables, validations
// and their messages, audit annotations), and the labels its and its bindings' object and
// namespace selectors read.
func PolicyReads(p *admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) Reads {
	return policyReads(p, bindings, true, true)
}

// PolicyReadsButAnnotations is PolicyReads without the auditAnnotations' valueExpressions, and
// without the validations' messageExpressions too unless messages: what the policy's decision
// reads but for the errors an auditAnnotation may have (see AnnotationReads).
func PolicyReadsButAnnotations(p *admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, messages bool) Reads {
	return policyReads(p, bindings, messages, false)
}

// AnnotationReads returns what each auditAnnotation's valueExpression reads, by its index, given
// the policy's variables.
func AnnotationReads(p *admissionregistrationv1.ValidatingAdmissionPolicy) []Reads {
	vars := policyVariables(p.Spec.Variables)
	out := make([]Reads, len(p.Spec.AuditAnnotations))
	for i, a := range p.Spec.AuditAnnotations {
		out[i] = ExpressionReads(vars, a.ValueExpression)
	}
	return out
}

// policyVariables are a policy's variables, as ExpressionReads takes them.
func policyVariables(vs []admissionregistrationv1.Variable) []NamedExpression {
	var vars []NamedExpression
	for _, v := range vs {
		vars = append(vars, NamedExpression{Name: v.Name, Expression: v.Expression})
	}
	return vars
}

// PolicyReadsButMessages is PolicyReads without the validations' messageExpressions: kube-apiserver's
// validator evaluates them all, on the cost budget the validations leave, but uses the message
// of a validation that fails only (see MessageReads).
func PolicyReadsButMessages(p *admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) Reads {
	return policyReads(p, bindings, false, true)
}

// MessageReads returns what each validation's messageExpression reads, by the validation's
// index (none where it has no messageExpression), given the policy's variables.
func MessageReads(p *admissionregistrationv1.ValidatingAdmissionPolicy) []Reads {
	vars := policyVariables(p.Spec.Variables)
	out := make([]Reads, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		if v.MessageExpression != "" {
			out[i] = ExpressionReads(vars, v.MessageExpression)
		}
	}
	return out
}

func policyReads(p *admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, messages, annotations bool) Reads {
	var exprs []string
	for _, c := range p.Spec.MatchConditions {
		exprs = append(exprs, c.Expression)
	}
	for _, v := range p.Spec.Validations {
		exprs = append(exprs, v.Expression)
		if v.MessageExpression != "" && messages {
			exprs = append(exprs, v.MessageExpression)
		}
	}
	for _, a := range p.Spec.AuditAnnotations {
		if annotations {
			exprs = append(exprs, a.ValueExpression)
		}
	}
	out := ExpressionReads(policyVariables(p.Spec.Variables), exprs...)
	out.Reads = append(out.Reads, SelectorReads(p, bindings).Reads...)
	return out
}

// SelectorReads returns what selects a policy's requests besides its rules: the labels of
// object and oldObject its and its bindings' object selectors name, and the labels of the
// namespace (namespaceObject) when one has a namespace selector that selects on some.
func SelectorReads(p *admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) Reads {
	var keys []string   // the object labels the object selectors read
	var nsKeys []string // the namespace labels the namespace selectors read
	add := func(mr *admissionregistrationv1.MatchResources) {
		if mr == nil {
			return
		}
		// An empty selector (the server's default) selects every object whatever its labels;
		// another reads the labels of its keys only.
		if os := mr.ObjectSelector; os != nil {
			for k := range os.MatchLabels {
				keys = append(keys, k)
			}
			for _, e := range os.MatchExpressions {
				keys = append(keys, e.Key)
			}
		}
		// A namespace selector reads the namespace's labels of its keys only, as an object
		// selector reads the object's (labels.Selector.Matches).
		if ns := mr.NamespaceSelector; ns != nil {
			for k := range ns.MatchLabels {
				nsKeys = append(nsKeys, k)
			}
			for _, e := range ns.MatchExpressions {
				nsKeys = append(nsKeys, e.Key)
			}
		}
	}
	add(p.Spec.MatchConstraints)
	for _, b := range bindings {
		if b.Spec.PolicyName == p.Name {
			add(b.Spec.MatchResources)
		}
	}
	var out Reads
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		for _, root := range []string{"object", "oldObject"} {
			out.Reads = append(out.Reads, Read{Path: FieldPath{Root: root, Steps: []string{"metadata", "labels", k}}})
		}
	}
	slices.Sort(nsKeys)
	for _, k := range slices.Compact(nsKeys) {
		out.Reads = append(out.Reads, Read{Path: FieldPath{Root: "namespaceObject", Steps: []string{"metadata", "labels", k}}})
	}
	return out
}

// MutatingPolicyReads returns what a MutatingAdmissionPolicy reads of object, oldObject,
// request, params and namespaceObject: its match conditions, variables and mutation
// expressions, and the labels its and its bindings' selectors read.
func MutatingPolicyReads(p *admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) Reads {
	var exprs []string
	for _, c := range p.Spec.MatchConditions {
		exprs = append(exprs, c.Expression)
	}
	for _, m := range p.Spec.Mutations {
		if m.JSONPatch != nil {
			exprs = append(exprs, m.JSONPatch.Expression)
		}
		if m.ApplyConfiguration != nil {
			exprs = append(exprs, m.ApplyConfiguration.Expression)
		}
	}
	out := ExpressionReads(policyVariables(p.Spec.Variables), exprs...)
	out.Reads = append(out.Reads, MutatingSelectorReads(p, bindings).Reads...)
	return out
}

// MutatingSelectorReads returns what a MutatingAdmissionPolicy's selectors read (its
// matchConstraints' and its bindings' namespace and object selectors), as a validating
// policy's do (SelectorReads).
func MutatingSelectorReads(p *admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) Reads {
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	vap.Name, vap.Spec.MatchConstraints = p.Name, p.Spec.MatchConstraints
	var vbs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, b := range bindings {
		vb := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		vb.Spec.PolicyName, vb.Spec.MatchResources = b.Spec.PolicyName, b.Spec.MatchResources
		vbs = append(vbs, vb)
	}
	return SelectorReads(vap, vbs)
}

// NamedExpression is a variable of a policy.
type NamedExpression struct{ Name, Expression string }

// ExpressionReads returns what the expressions read, given the policy's variables (which an
// expression reads through `variables.NAME`).
func ExpressionReads(variables []NamedExpression, exprs ...string) Reads {
	env, err := parseEnv()
	if err != nil {
		return Reads{All: err.Error()}
	}
	w := &readWalker{vars: map[string]fields{}}
	for _, v := range variables {
		paths, err := w.expression(env, v.Expression)
		if err != nil {
			return Reads{All: fmt.Sprintf("variable %s: %v", v.Name, err)}
		}
		w.vars[v.Name] = paths
	}
	for _, e := range exprs {
		paths, err := w.expression(env, e)
		if err != nil {
			return Reads{All: err.Error()}
		}
		w.read(paths, ReadValue)
	}
	return Reads{Reads: w.reads}
}

// fields are the fields of tracked roots a value may be: one for a selection, two or more for
// a conditional's branches (`c ? object : oldObject`), none for a value no field is.
type fields []FieldPath

// with is each field's step under it.
func (fs fields) with(step string) fields {
	if len(fs) == 0 {
		return nil
	}
	out := make(fields, len(fs))
	for i, p := range fs {
		out[i] = p.with(step)
	}
	return out
}

type readWalker struct {
	reads []Read
	// vars are the variables whose value is a field of a tracked root.
	vars map[string]fields
}

func (w *readWalker) read(fs fields, k ReadKind) {
	w.readLiteral(fs, k, "")
}

// readLiteral records reads of fs that compare them with a literal.
func (w *readWalker) readLiteral(fs fields, k ReadKind, literal string) {
	for _, p := range fs {
		w.reads = append(w.reads, Read{Path: p, Kind: k, Literal: literal})
	}
}

// expression walks one expression and returns the fields its value may be.
func (w *readWalker) expression(env *celgo.Env, src string) (fields, error) {
	ast, iss := env.Parse(src)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	return w.walk(ast.NativeRep().Expr(), map[string]fields{}), nil
}

// walk records what e reads and returns the fields of tracked roots e's value may be; bound
// are the comprehension variables in scope.
func (w *readWalker) walk(e celast.Expr, bound map[string]fields) fields {
	switch e.Kind() {
	case celast.IdentKind:
		name := e.AsIdent()
		if p, ok := bound[name]; ok {
			return p
		}
		if readRoots[name] {
			return fields{{Root: name}}
		}
		return nil
	case celast.SelectKind:
		sel := e.AsSelect()
		op := sel.Operand()
		if op.Kind() == celast.IdentKind && op.AsIdent() == "variables" {
			if _, shadowed := bound["variables"]; !shadowed {
				return w.vars[sel.FieldName()]
			}
		}
		field := w.walk(op, bound).with(sel.FieldName())
		if sel.IsTestOnly() {
			w.read(field, ReadPresence)
			return nil
		}
		return field
	case celast.CallKind:
		return w.call(e.AsCall(), bound)
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		r := w.walk(c.IterRange(), bound)
		inner := make(map[string]fields, len(bound)+3)
		for k, v := range bound {
			inner[k] = v
		}
		w.read(r, ReadChildren)
		elem := r.with(AnyStep)
		// A list's first variable is its index (or, alone, its element), a map's its key; the
		// second is the element or the value. Which one the range is is not known here, but
		// for an object's labels and annotations: the variable stands for the element, and a
		// key is read by reading the map's keys (ReadChildren).
		first := elem
		if objectMetaMaps(r) {
			first = nil
		}
		inner[c.IterVar()] = first
		if c.HasIterVar2() {
			inner[c.IterVar2()] = elem
		}
		// The accumulator starts as its initial value: a literal for the macros Kubernetes
		// has; a field would be one only for cel.bind, which it does not have.
		acc := w.walk(c.AccuInit(), bound)
		inner[c.AccuVar()] = acc
		if cond, ok := filterCondition(c); ok {
			// filter: its value is the elements of its range that pass its condition, each
			// read only as far as what reads them (a map's: its keys, read above).
			w.read(w.walk(c.LoopCondition(), inner), ReadValue)
			w.read(w.walk(cond, inner), ReadValue)
			return r
		}
		w.read(w.walk(c.LoopCondition(), inner), ReadValue)
		if step := c.LoopStep(); step.Kind() != celast.IdentKind || step.AsIdent() != c.AccuVar() {
			w.read(w.walk(step, inner), ReadValue)
		}
		result := make(map[string]fields, len(bound)+1)
		for k, v := range bound {
			result[k] = v
		}
		result[c.AccuVar()] = acc
		return w.walk(c.Result(), result)
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.read(w.walk(el, bound), ReadValue)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			me := en.AsMapEntry()
			w.read(w.walk(me.Key(), bound), ReadValue)
			w.read(w.walk(me.Value(), bound), ReadValue)
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			w.read(w.walk(f.AsStructField().Value(), bound), ReadValue)
		}
	}
	return nil
}

// filterCondition is the condition of the filter macro's comprehension (cel-go's MakeFilter:
// the step `cond ? acc + [x] : acc`, the result acc); false for another comprehension.
func filterCondition(c celast.ComprehensionExpr) (celast.Expr, bool) {
	isAccu := func(e celast.Expr) bool { return e.Kind() == celast.IdentKind && e.AsIdent() == c.AccuVar() }
	step := c.LoopStep()
	if !isAccu(c.Result()) || step.Kind() != celast.CallKind || step.AsCall().FunctionName() != "_?_:_" || len(step.AsCall().Args()) != 3 {
		return nil, false
	}
	args := step.AsCall().Args()
	add := args[1]
	if !isAccu(args[2]) || add.Kind() != celast.CallKind || add.AsCall().FunctionName() != "_+_" || len(add.AsCall().Args()) != 2 {
		return nil, false
	}
	acc, list := add.AsCall().Args()[0], add.AsCall().Args()[1]
	if !isAccu(acc) || list.Kind() != celast.ListKind || len(list.AsList().Elements()) != 1 {
		return nil, false
	}
	el := list.AsList().Elements()[0]
	if el.Kind() != celast.IdentKind || el.AsIdent() != c.IterVar() || c.HasIterVar2() {
		return nil, false
	}
	return args[0], true
}

// objectMetaMaps says whether every field of fs is the labels or annotations of an ObjectMeta,
// maps of strings: an object's own metadata (every kind's, a custom resource's too), or its pod
// template's (spec.template, a CronJob's spec.jobTemplate.spec.template: the built-in kinds'
// PodTemplateSpec). A custom resource's other metadata need not be one: there the variable
// stands for the element.
func objectMetaMaps(fs fields) bool {
	for _, f := range fs {
		n := len(f.Steps)
		if n < 2 || f.Steps[n-1] != "labels" && f.Steps[n-1] != "annotations" {
			return false
		}
		switch meta := f.Steps[:n-1]; {
		case slices.Equal(meta, []string{"metadata"}),
			slices.Equal(meta, []string{"spec", "template", "metadata"}),
			slices.Equal(meta, []string{"spec", "jobTemplate", "spec", "template", "metadata"}):
		default:
			return false
		}
	}
	return len(fs) > 0
}

// call records what a call reads: selection and indexing of a field extend it, optional
// values and a conditional's branches pass it through, anything else reads its arguments'
// whole values.
func (w *readWalker) call(c celast.CallExpr, bound map[string]fields) fields {
	args := c.Args()
	switch fn := c.FunctionName(); {
	case (fn == "_[_]" || fn == "_[?_]") && len(args) == 2:
		p := w.walk(args[0], bound)
		key := args[1]
		w.read(w.walk(key, bound), ReadValue)
		step := AnyStep
		if key.Kind() == celast.LiteralKind {
			if s, ok := key.AsLiteral().(types.String); ok {
				step = string(s)
			}
		}
		if fn == "_[?_]" {
			// An optional index reads whether the key is there and its value: the value is
			// returned for what reads it, the presence is read here.
			w.read(p.with(step), ReadPresence)
		}
		return p.with(step)
	case fn == "_?._" && len(args) == 2:
		p := w.walk(args[0], bound)
		if len(p) == 0 || args[1].Kind() != celast.LiteralKind {
			return nil
		}
		name, ok := args[1].AsLiteral().(types.String)
		if !ok {
			w.read(p, ReadValue)
			return nil
		}
		f := p.with(string(name))
		w.read(f, ReadPresence)
		return f
	case fn == "_?_:_" && len(args) == 3:
		// The condition is read; the value is one branch's or the other's.
		w.read(w.walk(args[0], bound), ReadValue)
		return append(slices.Clip(w.walk(args[1], bound)), w.walk(args[2], bound)...)
	case c.IsMemberFunction() && (fn == "orValue" || fn == "value"):
		p := w.walk(c.Target(), bound)
		for _, a := range args {
			w.read(w.walk(a, bound), ReadValue)
		}
		return p
	case c.IsMemberFunction() && fn == "hasValue" && len(args) == 0:
		w.read(w.walk(c.Target(), bound), ReadPresence)
		return nil
	case fn == "size" && (len(args) == 1 && !c.IsMemberFunction() || len(args) == 0 && c.IsMemberFunction()):
		target := c.Target()
		if !c.IsMemberFunction() {
			target = args[0]
		}
		w.read(w.walk(target, bound), ReadSize)
		return nil
	case (fn == "_==_" || fn == "_!=_") && len(args) == 2 && (isNull(args[0]) || isNull(args[1])):
		// Comparing with null reads whether the field is set (object == null on DELETE).
		for _, a := range args {
			w.read(w.walk(a, bound), ReadPresence)
		}
		return nil
	case (fn == "_==_" || fn == "_!=_") && len(args) == 2 && (isString(args[0]) || isString(args[1])):
		// Comparing with a string reads whether the field is that string.
		for i, a := range args {
			if lit, ok := stringLiteral(args[1-i]); ok {
				w.readLiteral(w.walk(a, bound), ReadEquals, lit)
			}
		}
		return nil
	case fn == "@in" && len(args) == 2 && stringList(args[1]):
		// Membership in a list of strings reads whether the field is each of them.
		f := w.walk(args[0], bound)
		for _, el := range args[1].AsList().Elements() {
			lit, _ := stringLiteral(el)
			w.readLiteral(f, ReadEquals, lit)
		}
		return nil
	case c.IsMemberFunction() && fn == "startsWith" && len(args) == 1 && isString(args[0]):
		lit, _ := stringLiteral(args[0])
		w.readLiteral(w.walk(c.Target(), bound), ReadStartsWith, lit)
		return nil
	case fn == "_+_" && len(args) == 2 && (listValued(args[0]) || listValued(args[1])):
		// A list's concatenation: its elements are either list's, each read only as far as
		// what reads them (`object.spec.containers + object.spec.?initContainers.orValue([])`,
		// the Pod Security and Kyverno policies' idiom, whose containers' images a policy
		// reads, not their volume mounts).
		return append(slices.Clip(w.walk(args[0], bound)), w.walk(args[1], bound)...)
	case fn == "optional.of" || fn == "optional.ofNonZeroValue":
		if len(args) == 1 {
			return w.walk(args[0], bound)
		}
	}
	if c.IsMemberFunction() {
		w.read(w.walk(c.Target(), bound), ReadValue)
	}
	for _, a := range args {
		w.read(w.walk(a, bound), ReadValue)
	}
	return nil
}

// listValued says whether e's value is a list for certain, by its shape alone: a list
// literal, a comprehension that builds one (map, filter), an optional's orValue of one, or a
// concatenation with one.
func listValued(e celast.Expr) bool {
	switch e.Kind() {
	case celast.ListKind:
		return true
	case celast.ComprehensionKind:
		return e.AsComprehension().AccuInit().Kind() == celast.ListKind
	case celast.CallKind:
		c := e.AsCall()
		switch fn := c.FunctionName(); {
		case c.IsMemberFunction() && fn == "orValue" && len(c.Args()) == 1:
			return listValued(c.Args()[0])
		case fn == "_+_" && len(c.Args()) == 2:
			return listValued(c.Args()[0]) || listValued(c.Args()[1])
		}
	}
	return false
}

// stringLiteral is e's value when e is a string literal.
func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

func isString(e celast.Expr) bool {
	_, ok := stringLiteral(e)
	return ok
}

// stringList says whether e is a list literal of string literals.
func stringList(e celast.Expr) bool {
	if e.Kind() != celast.ListKind || len(e.AsList().OptionalIndices()) > 0 {
		return false
	}
	for _, el := range e.AsList().Elements() {
		if !isString(el) {
			return false
		}
	}
	return true
}

func isNull(e celast.Expr) bool {
	if e.Kind() != celast.LiteralKind {
		return false
	}
	_, ok := e.AsLiteral().(types.Null)
	return ok
}
