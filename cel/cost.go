package cel

import (
	"fmt"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
	"k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Cost limits of the apiserver for admission policies (k8s.io/apiserver/pkg/apis/cel).
const (
	// PerCallLimit is the runtime cost one expression may spend.
	PerCallLimit = celconfig.PerCallLimit
	// RuntimeCELCostBudget is the runtime cost all expressions of one policy binding may
	// spend on one request.
	RuntimeCELCostBudget = celconfig.RuntimeCELCostBudget
)

// typedEnv is a CEL environment in which object, oldObject and params have the types of their
// schemas, as the apiserver's TypeChecker builds it.
type typedEnv struct {
	compiler *plugincel.CompositedCompiler
	opts     plugincel.OptionalVariableDeclarations
	roots    map[string]*apiservercel.DeclType
	// types finds the object types of the schemas by name, their fields listed.
	types *apiservercel.DeclTypeProvider
}

// newTypedEnv mirrors buildEnvSet and TypeChecker.compiler of
// k8s.io/apiserver/pkg/admission/plugin/policy/validating/typechecking.go, which are not
// exported: the base environment, request and namespaceObject types, object/oldObject and
// params typed by their schemas (dyn without one), and authorizer. The environment of the
// types is built once for every policy of them (typedEnvSet); the compiler, which holds a
// policy's variables, is the policy's own.
func (c *Checker) newTypedEnv(object, params *apiservercel.DeclType, hasParams bool) (*typedEnv, error) {
	key := typedEnvKey{object: object, params: params, hasParams: hasParams}
	build, _ := c.typedEnvSets.LoadOrStore(key, sync.OnceValues(func() (typedEnvSet, error) {
		return newTypedEnvSet(object, params, hasParams)
	}))
	set, err := build.(func() (typedEnvSet, error))()
	if err != nil {
		return nil, err
	}
	cc, err := plugincel.NewCompositedCompilerForTypeChecking(set.envSet)
	if err != nil {
		return nil, err
	}
	cc.Compiler = &astCompiler{cc: cc}
	roots := map[string]*apiservercel.DeclType{plugincel.ObjectVarName: object, plugincel.OldObjectVarName: object}
	if hasParams {
		roots[plugincel.ParamsVarName] = params
	}
	return &typedEnv{
		compiler: cc,
		opts:     plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true},
		roots:    roots,
		types:    set.types,
	}, nil
}

// typedEnvKey is what a typed environment is built of: the types of object and params.
type typedEnvKey struct {
	object, params *apiservercel.DeclType
	hasParams      bool
}

// typedEnvSet is the environment newTypedEnv's compilers extend, and the provider of its
// types: neither changes once built.
type typedEnvSet struct {
	envSet *environment.EnvSet
	types  *apiservercel.DeclTypeProvider
}

func newTypedEnvSet(object, params *apiservercel.DeclType, hasParams bool) (typedEnvSet, error) {
	requestType := plugincel.BuildRequestType()
	namespaceType := plugincel.BuildNamespaceType()
	declTypes := []*apiservercel.DeclType{namespaceType, requestType}
	varOpts := []celgo.EnvOption{
		celgo.Variable(plugincel.NamespaceVarName, namespaceType.CelType()),
		celgo.Variable(plugincel.RequestVarName, requestType.CelType()),
	}
	objType := celgo.DynType
	if object != nil {
		declTypes = append(declTypes, object)
		objType = object.CelType()
	}
	varOpts = append(varOpts, celgo.Variable(plugincel.ObjectVarName, objType), celgo.Variable(plugincel.OldObjectVarName, objType))
	if hasParams {
		pType := celgo.DynType
		if params != nil {
			declTypes = append(declTypes, params)
			pType = params.CelType()
		}
		varOpts = append(varOpts, celgo.Variable(plugincel.ParamsVarName, pType))
	}
	varOpts = append(varOpts, celgo.Variable(plugincel.AuthorizerVarName, library.AuthorizerType))
	envSet, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        varOpts,
		DeclTypes:         declTypes,
	})
	if err != nil {
		return typedEnvSet{}, err
	}
	return typedEnvSet{envSet: envSet, types: apiservercel.NewDeclTypeProvider(declTypes...)}, nil
}

// astCompiler compiles in the composited environment without building a program, like the
// TypeChecker's typeCheckingCompiler.
type astCompiler struct{ cc *plugincel.CompositedCompiler }

func (a *astCompiler) CompileCELExpression(e plugincel.ExpressionAccessor, _ plugincel.OptionalVariableDeclarations, mode environment.Type) plugincel.CompilationResult {
	env, err := a.cc.Env(mode)
	if err != nil {
		return plugincel.CompilationResult{Error: &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: err.Error()}, ExpressionAccessor: e}
	}
	ast, issues := env.Compile(e.GetExpression())
	if issues != nil {
		return plugincel.CompilationResult{Error: &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: issues.String()}, ExpressionAccessor: e}
	}
	return plugincel.CompilationResult{OutputType: ast.OutputType(), ExpressionAccessor: e}
}

// declTypeFor returns the CEL type the apiserver builds from a kind's schema, or nil.
func (c *Checker) declTypeFor(gvk schema.GroupVersionKind) *apiservercel.DeclType {
	if gvk.Empty() {
		return nil
	}
	s, err := c.catalog.Resolver().ResolveSchema(gvk)
	if err != nil {
		return nil
	}
	// A kind's schema is resolved once (a CRD's once until the catalog's CRDs change), and
	// its type built once of it.
	if e, ok := c.declTypes.Load(gvk); ok && e.(declType).schema == s {
		return e.(declType).t
	}
	dt := common.SchemaDeclType(&openapi.Schema{Schema: s}, true)
	if dt != nil {
		dt = dt.MaybeAssignTypeName(fmt.Sprintf("vapc.%s.%s.%s", gvk.Group, gvk.Version, gvk.Kind))
	}
	c.declTypes.Store(gvk, declType{schema: s, t: dt})
	return dt
}

// declType is the CEL type declTypeFor built of a kind, and the schema it built it from. A
// DeclType is not changed once built: the checks of several policies share it.
type declType struct {
	schema *spec.Schema
	t      *apiservercel.DeclType
}

// kindEnv returns the typed environment of the policy's expressions for a kind (object dyn
// for the empty kind), its variables stored, and the CEL environment of stored expressions
// the type checker checks them in.
func (c *Checker) kindEnv(p *admissionregistrationv1.ValidatingAdmissionPolicy, gvk schema.GroupVersionKind) (*typedEnv, *celgo.Env, error) {
	paramGVK, hasParams := gvkOf(p.Spec.ParamKind)
	env, err := c.newTypedEnv(c.declTypeFor(gvk), c.declTypeFor(paramGVK), hasParams || p.Spec.ParamKind != nil)
	if err != nil {
		return nil, nil, err
	}
	var vars []plugincel.NamedExpressionAccessor
	for _, v := range p.Spec.Variables {
		vars = append(vars, namedExpr{name: v.Name, expr: v.Expression})
	}
	env.compiler.CompileAndStoreVariables(vars, env.opts, environment.StoredExpressions)
	celEnv, err := env.compiler.Env(environment.StoredExpressions)
	if err != nil {
		return nil, nil, err
	}
	return env, celEnv, nil
}

// estimate reports, per kind the policy is checked against, expressions whose worst-case cost
// exceeds the per-expression limit, policies whose expressions together can exceed the
// per-request budget, and expressions whose typed result cannot be what the field requires;
// kindEnv gives the typed environment of a kind, as Checker.kindEnv does.
func (c *Checker) estimate(r *reporter, p *admissionregistrationv1.ValidatingAdmissionPolicy, gvks []schema.GroupVersionKind, exprs []policyExpression, skip map[string]bool, kindEnv func(schema.GroupVersionKind) (*typedEnv, *celgo.Env, error)) {
	if len(gvks) == 0 {
		gvks = []schema.GroupVersionKind{{}} // object is dyn
	}
	reported := map[string]bool{}
	compiled := map[string]bool{} // for the replay's map order: an expression some kind checks
	c.orderMu.Lock()
	delete(c.mayOrder, p.Name) // what an earlier check of a policy of the name noted
	c.orderMu.Unlock()
	var parser *celgo.Env // any of the kinds' environments, to parse with
	for _, gvk := range gvks {
		env, celEnv, err := kindEnv(gvk)
		if err != nil {
			r.add(Warning, CategoryCost, "spec", "", "cannot build the typed CEL environment: "+err.Error())
			return
		}
		parser = celEnv
		kind := ""
		if !gvk.Empty() {
			kind = gvkString(gvk)
		}
		var total uint64
		for _, e := range exprs {
			if !reported["dyn:"+e.path] && r.hintDynResult(celEnv, e, kind) {
				reported["dyn:"+e.path] = true
			}
			if skip[e.path] || e.expr == "" {
				continue
			}
			ast, issues := celEnv.Compile(e.expr)
			if issues != nil {
				continue // reported by the type checker
			}
			compiled[e.path] = true
			if buildsList(e.expr) && iteratesMapInOrder(ast, true) {
				c.noteOrder(p.Name, e.path)
			}
			if !reported["order:"+e.path] && iteratesMapInOrder(ast, false) {
				reported["order:"+e.path] = true
				r.add(Warning, CategoryLint, e.path, kind, MapOrderMessage)
				r.diags[len(r.diags)-1].Hint = mapOrderHint
			}
			if msg := resultTypeProblem(e.kind, ast.OutputType()); msg != "" && !reported["type:"+e.path] {
				reported["type:"+e.path] = true
				r.add(Error, CategoryType, e.path, kind, msg)
			}
			worst, err := celEnv.EstimateCost(ast, &library.CostEstimator{SizeEstimator: &sizeEstimator{roots: env.roots}})
			if err != nil {
				continue
			}
			typical, err := celEnv.EstimateCost(ast, &library.CostEstimator{SizeEstimator: &sizeEstimator{roots: env.roots, limit: typicalSize}})
			if err != nil {
				continue
			}
			total = addSat(total, typical.Max)
			if reported["cost:"+e.path] {
				continue
			}
			reported["cost:"+e.path] = true
			switch {
			case typical.Max > PerCallLimit:
				r.add(Warning, CategoryCost, e.path, kind, fmt.Sprintf("estimated cost %s exceeds the per-expression limit %d even on objects whose lists, maps and strings hold at most %d items; the apiserver stops it with a cost error", costString(typical.Max), PerCallLimit, typicalSize))
			default:
				r.add(Info, CategoryCost, e.path, kind, fmt.Sprintf("estimated cost %s with lists, maps and strings of at most %d items, %s in the worst case the schema allows; the per-expression limit is %d", costString(typical.Max), typicalSize, costString(worst.Max), PerCallLimit))
			}
		}
		if total > RuntimeCELCostBudget && !reported["budget"] {
			reported["budget"] = true
			r.add(Warning, CategoryCost, "spec", kind, fmt.Sprintf("estimated cost of all expressions %s (lists, maps and strings of at most %d items) exceeds the per-request runtime budget %d", costString(total), typicalSize, RuntimeCELCostBudget))
		}
	}
	// An expression no kind checks (a field of another kind, read with ?.): kube-apiserver
	// evaluates it all the same, on the object untyped; the replay's map order takes it so,
	// parsed (every value dyn), without building an untyped environment.
	for _, e := range exprs {
		if compiled[e.path] || !buildsList(e.expr) || parser == nil {
			continue
		}
		if ast, issues := parser.Parse(e.expr); issues == nil && iteratesMapInOrder(ast, true) {
			c.noteOrder(p.Name, e.path)
		}
	}
}

// noteOrder notes that the policy's expression at path may follow map order, as a replay
// takes it (MapOrderOf).
func (c *Checker) noteOrder(policy, path string) {
	c.orderMu.Lock()
	defer c.orderMu.Unlock()
	if c.mayOrder == nil {
		c.mayOrder = map[string]map[string]bool{}
	}
	if c.mayOrder[policy] == nil {
		c.mayOrder[policy] = map[string]bool{}
	}
	c.mayOrder[policy][path] = true
}

// resultTypeProblem says why an expression's type cannot be what its field requires, or "".
// The apiserver accepts dyn results on create and fails such expressions only when evaluated.
func resultTypeProblem(k exprKind, t *celgo.Type) string {
	if t == nil || t.IsExactType(celgo.DynType) || t.Kind() == celgo.DynKind || t.Kind() == celgo.AnyKind {
		return ""
	}
	switch k {
	case exprValidation, exprMatchCondition:
		if !t.IsExactType(celgo.BoolType) {
			return fmt.Sprintf("must evaluate to bool, but evaluates to %s", typeName(t))
		}
	case exprMessage:
		if !t.IsExactType(celgo.StringType) {
			return fmt.Sprintf("must evaluate to string, but evaluates to %s", typeName(t))
		}
	case exprAuditAnnotation:
		if !t.IsExactType(celgo.StringType) && !t.IsExactType(celgo.NullType) {
			return fmt.Sprintf("must evaluate to string or null, but evaluates to %s", typeName(t))
		}
	}
	return ""
}

func typeName(t *celgo.Type) string {
	if s := t.String(); s != "" {
		return s
	}
	return t.TypeName()
}

func costString(c uint64) string {
	if c >= 1<<60 {
		return "unbounded"
	}
	return fmt.Sprintf("%d", c)
}

func addSat(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

type namedExpr struct{ name, expr string }

func (n namedExpr) GetName() string            { return n.name }
func (n namedExpr) GetExpression() string      { return n.expr }
func (n namedExpr) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.AnyType} }

// sizeEstimator gives the cost estimator the maximum sizes of lists, maps and strings read from
// object, oldObject and params, from their schemas, as the CRD validation cost estimator does
// (k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/compilation.go).
type sizeEstimator struct {
	roots map[string]*apiservercel.DeclType
	// limit, when set, caps every size at a figure real objects stay under (typicalSize), and
	// sizes what the schema cannot (computed strings and lists) at it too.
	limit uint64
}

// typicalSize is the size of lists, maps and strings for the typical estimate: schemas bound
// most of them only by the 3 MiB request limit, which makes every comprehension look unbounded.
const typicalSize = 100

func (s *sizeEstimator) size(max int64) *checker.SizeEstimate {
	m := uint64(max)
	if s.limit > 0 && m > s.limit {
		m = s.limit
	}
	return &checker.SizeEstimate{Min: 0, Max: m}
}

func (s *sizeEstimator) unknown() *checker.SizeEstimate {
	if s.limit > 0 {
		return &checker.SizeEstimate{Min: 0, Max: s.limit}
	}
	return nil
}

func (s *sizeEstimator) EstimateSize(element checker.AstNode) *checker.SizeEstimate {
	path := element.Path()
	if len(path) == 0 {
		return s.unknown()
	}
	node := s.roots[path[0]]
	if node == nil {
		return s.unknown()
	}
	for _, name := range path[1:] {
		switch name {
		case "@items", "@values":
			if node.ElemType == nil {
				return s.unknown()
			}
			node = node.ElemType
		case "@keys":
			if node.KeyType == nil {
				return s.unknown()
			}
			node = node.KeyType
		default:
			f, ok := node.Fields[name]
			if !ok || f.Type == nil {
				return s.unknown()
			}
			node = f.Type
		}
	}
	return s.size(node.MaxElements)
}

func (s *sizeEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return nil
}

// hintDynResult says what to do about the create error "must evaluate to T but got dyn" of
// the expression, when the type checker types its result for the kind: the server validates
// result types with object, oldObject and params as dyn, before it knows their schemas, so a
// field it knows as an int there is dyn. It sets the error's hint and reports whether it did.
func (r *reporter) hintDynResult(env *celgo.Env, e policyExpression, kind string) bool {
	var d *Diagnostic
	for i := range r.diags {
		if r.diags[i].Field == e.path && r.diags[i].Category == CategoryCreate && strings.HasSuffix(r.diags[i].Message, "but got dyn") {
			d = &r.diags[i]
		}
	}
	if d == nil {
		return false
	}
	ast, issues := env.Compile(e.expr)
	if issues != nil {
		return false
	}
	t := ast.OutputType()
	if t == nil || t.Kind() == celgo.DynKind || t.Kind() == celgo.AnyKind {
		return false
	}
	as := ""
	if kind != "" {
		as = " for " + kind
	}
	got := typeNames(typeName(t))
	why := fmt.Sprintf("the type checker types it%s as %s, but the server checks result types before it knows the schemas, with object, oldObject and params as dyn", as, got)
	wantBool := e.kind == exprValidation || e.kind == exprMatchCondition
	switch {
	case wantBool && t.IsExactType(celgo.BoolType):
		d.Hint = why + ": state the type, as in (" + e.expr + ") == true"
	case wantBool:
		d.Hint = why + ": it must evaluate to bool: compare it with a value of type " + got
	case t.IsExactType(celgo.StringType):
		d.Hint = why + ": state the type, as in string(" + e.expr + ")"
	default:
		d.Hint = why + ": convert it, as in string(" + e.expr + ")"
	}
	return true
}
