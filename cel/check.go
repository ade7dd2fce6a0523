package cel

import (
	"fmt"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apischema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"

	"github.com/vapc-dev/vapc/cel/defaults"
	"github.com/vapc-dev/vapc/cel/internal/parallel"
	"github.com/vapc-dev/vapc/cel/internal/validation"
	"github.com/vapc-dev/vapc/cel/schema"
)

// Checker checks policies and bindings as kube-apiserver of one version would: the errors it
// returns on create, the type checking warnings of status.typeChecking, static cost, and lints.
type Checker struct {
	version Version
	catalog *schema.Catalog
	tc      *validating.TypeChecker
	// mayOrder are the expressions, by policy name and field, whose values may follow the
	// order CEL iterates a map in as a replay takes them (iteratesMapInOrder with dyn ranges),
	// which checking a policy notes for MapOrderOf.
	orderMu  sync.Mutex
	mayOrder map[string]map[string]bool
	// declTypes are the CEL types declTypeFor built, by kind (a declType), shared by the
	// checks of every policy of the kind or with it as paramKind.
	declTypes sync.Map
	// typedEnvSets are the typed environments newTypedEnv extends, by the types of object
	// and params (a typedEnvKey): a func() (typedEnvSet, error) that builds one once.
	typedEnvSets sync.Map
}

// Option configures a Checker.
type Option func(*checkerOptions) error

type checkerOptions struct {
	version  string
	crdPaths []string
	catalog  *schema.Catalog
}

// WithKubernetesVersion sets the Kubernetes minor to check against (default
// DefaultKubernetesVersion).
func WithKubernetesVersion(v string) Option {
	return func(o *checkerOptions) error { o.version = v; return nil }
}

// WithCRDs adds the schemas of the CustomResourceDefinitions in the given files, so that
// policies on custom resources, or with a custom paramKind, are type-checked.
func WithCRDs(paths ...string) Option {
	return func(o *checkerOptions) error { o.crdPaths = append(o.crdPaths, paths...); return nil }
}

// WithCatalog uses a catalog of schemas and resources built elsewhere.
func WithCatalog(c *schema.Catalog) Option {
	return func(o *checkerOptions) error { o.catalog = c; return nil }
}

// NewChecker returns a Checker.
func NewChecker(opts ...Option) (*Checker, error) {
	o := checkerOptions{version: DefaultKubernetesVersion}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	v, err := ParseVersion(o.version)
	if err != nil {
		return nil, err
	}
	cat := o.catalog
	if cat == nil {
		cat, err = schema.Builtin(DefaultKubernetesVersion)
		if err != nil {
			return nil, err
		}
	}
	if len(o.crdPaths) > 0 {
		if err := cat.LoadCRDs(o.crdPaths...); err != nil {
			return nil, err
		}
	}
	return &Checker{
		version: v,
		catalog: cat,
		tc:      &validating.TypeChecker{SchemaResolver: cat.Resolver(), RestMapper: cat.RESTMapper()},
	}, nil
}

// Version returns the Kubernetes version the checker checks against.
func (c *Checker) Version() Version { return c.version }

// Catalog returns the schemas and resources the checker types expressions with.
func (c *Checker) Catalog() *schema.Catalog { return c.catalog }

// Check checks every policy and binding of the set, and how the bindings refer to the policies.
func (c *Checker) Check(set *Set) Diagnostics {
	var diags Diagnostics
	policies := map[string]*Policy{}
	// Each policy is checked on its own, on every core: the type checks (the schemas of their
	// kinds, the CEL environments of their expressions) are most of a replay's start-up.
	checked := make([]Diagnostics, len(set.Policies))
	parallel.Each(len(set.Policies), func(i int) { checked[i] = c.CheckPolicy(set.Policies[i]) })
	for i, p := range set.Policies {
		diags = append(diags, checked[i]...)
		policies[p.Name] = p
	}
	for _, b := range set.Bindings {
		diags = append(diags, c.CheckBinding(b, policies)...)
	}
	diags = append(diags, c.checkMutating(set)...)
	diags.Sort()
	return diags
}

// CheckPolicy checks one policy: create-time validation, type checking, cost and lints.
func (c *Checker) CheckPolicy(p *Policy) Diagnostics {
	obj := p.DeepCopy()
	defaults.SetPolicyDefaults(obj)
	r := &reporter{src: p.Source, object: "ValidatingAdmissionPolicy/" + obj.Name, place: managedFieldsSource(obj, obj.ManagedFields), hints: c.createHints(obj)}

	c.validateAndTypeCheck(r, obj, func() map[string]bool {
		failed := map[string]bool{} // expressions that did not compile: not type-checked again
		for _, e := range validation.ValidatePolicy(obj, validation.Options{CompatibilityVersion: c.version.Compatibility}) {
			r.fieldError(e, CategoryCreate, expressionAt(obj, e.Field))
			failed[e.Field] = true
		}
		return failed
	})
	lintPolicy(r, obj, c.catalog)
	return r.diags
}

// validateAndTypeCheck runs validate, create-time validation, which returns the expressions that
// did not compile, and type checks the others. The schemas of the kinds the policy matches
// (coverage) resolve meanwhile, on another core: the two are most of a policy's check. The
// diagnostics come in the same order as one after the other.
func (c *Checker) validateAndTypeCheck(r *reporter, p *admissionregistrationv1.ValidatingAdmissionPolicy, validate func() map[string]bool) {
	cov := &reporter{src: r.src, object: r.object, place: r.place}
	var gvks []apischema.GroupVersionKind
	covered := make(chan struct{})
	go func() {
		defer close(covered)
		gvks = c.coverage(cov, p)
	}()
	failed := validate()
	<-covered
	r.diags = append(r.diags, cov.diags...)
	c.typeCheck(r, p, gvks, failed)
}

// CheckBinding checks one binding, and how it refers to its policy when the policy is known.
func (c *Checker) CheckBinding(b *Binding, policies map[string]*Policy) Diagnostics {
	obj := b.DeepCopy()
	defaults.SetBindingDefaults(obj)
	r := &reporter{src: b.Source, object: "ValidatingAdmissionPolicyBinding/" + obj.Name, place: managedFieldsSource(obj, obj.ManagedFields)}
	for _, e := range validation.ValidateBinding(obj) {
		r.fieldError(e, CategoryCreate, "")
	}
	if obj.Spec.PolicyName != "" && policies != nil {
		if p, ok := policies[obj.Spec.PolicyName]; !ok {
			r.add(Warning, CategoryLint, "spec.policyName", "", fmt.Sprintf("policy %q is not among the checked files; the binding does nothing until it exists", obj.Spec.PolicyName))
		} else {
			lintBinding(r, obj, p.ValidatingAdmissionPolicy)
		}
	}
	return r.diags
}

// reporter collects the diagnostics of one object, placing them with its Locator.
type reporter struct {
	src    Locator
	object string
	diags  Diagnostics
	// place, when set, maps the field path of a diagnostic to the path that places it in
	// the source, where the two differ.
	place func(path string) string
	// hints, when set, returns the hinter of the expressions' compile errors.
	hints func() hinter
}

// placeOf returns the path that places a diagnostic about the field path in the source.
func (r *reporter) placeOf(path string) string {
	if r.place == nil {
		return path
	}
	return r.place(path)
}

func (r *reporter) add(sev Severity, cat Category, path, kind, msg string) {
	r.diags = append(r.diags, Diagnostic{
		Pos: r.src.FieldPos(r.placeOf(path)), Field: path, Severity: sev, Category: cat,
		Object: r.object, Kind: kind, Message: msg,
	})
}

// addExpr reports issues found in the expression at path, each at its character.
func (r *reporter) addExpr(sev Severity, cat Category, path, expr, kind, text string) {
	for _, is := range parseIssues(text) {
		hint := ""
		if r.hints != nil && is.line > 0 {
			hint = joinHints(r.hints().hint(expr, is))
		}
		r.addIssue(sev, cat, path, expr, kind, hint, is)
	}
}

// addIssue reports one issue of the expression at path, at its character.
func (r *reporter) addIssue(sev Severity, cat Category, path, expr, kind, hint string, is celIssue) {
	d := Diagnostic{
		Pos: r.src.FieldPos(path), Field: path, Severity: sev, Category: cat,
		Object: r.object, Kind: kind, Message: is.msg, Hint: hint,
	}
	if is.line > 0 {
		d.Pos = r.src.ExprPos(path, is.line, is.col)
		d.Expression = exprLine(expr, is.line)
		d.Column = is.col + 1
	}
	r.diags = append(r.diags, d)
}

// fieldError reports a field.Error from the apiserver's validation; when it is about an
// expression (expr is its text), compile errors are placed at their character.
func (r *reporter) fieldError(e *field.Error, cat Category, expr string) {
	if expr != "" && strings.Contains(e.Detail, "ERROR: <input>:") {
		prefix := ""
		if i := strings.Index(e.Detail, "ERROR: <input>:"); i > 0 {
			prefix = strings.TrimSpace(e.Detail[:i])
			for strings.Count(prefix, "compilation failed:") > 1 {
				prefix = strings.Replace(prefix, "compilation failed: ", "", 1)
			}
		}
		n := len(r.diags)
		r.addExpr(Error, cat, e.Field, expr, "", e.Detail)
		if prefix != "" {
			for i := n; i < len(r.diags); i++ {
				r.diags[i].Message = prefix + " " + r.diags[i].Message
			}
		}
		return
	}
	msg := e.ErrorBody()
	r.add(Error, cat, e.Field, "", msg)
}

// expressionAt returns the expression string at a field path of the policy, or "".
func expressionAt(p *admissionregistrationv1.ValidatingAdmissionPolicy, path string) string {
	for _, e := range policyExpressions(p) {
		if e.path == path {
			return e.expr
		}
	}
	return ""
}

// policyExpression is one CEL expression of a policy with its field path.
type policyExpression struct {
	path string
	expr string
	kind exprKind
}

type exprKind int

const (
	exprValidation exprKind = iota
	exprMessage
	exprMatchCondition
	exprVariable
	exprAuditAnnotation
)

// policyExpressions lists every CEL expression of a policy in field order.
func policyExpressions(p *admissionregistrationv1.ValidatingAdmissionPolicy) []policyExpression {
	var out []policyExpression
	for i, m := range p.Spec.MatchConditions {
		out = append(out, policyExpression{fmt.Sprintf("spec.matchConditions[%d].expression", i), m.Expression, exprMatchCondition})
	}
	for i, v := range p.Spec.Variables {
		out = append(out, policyExpression{fmt.Sprintf("spec.variables[%d].expression", i), v.Expression, exprVariable})
	}
	for i, v := range p.Spec.Validations {
		out = append(out, policyExpression{fmt.Sprintf("spec.validations[%d].expression", i), v.Expression, exprValidation})
		if v.MessageExpression != "" {
			out = append(out, policyExpression{fmt.Sprintf("spec.validations[%d].messageExpression", i), v.MessageExpression, exprMessage})
		}
	}
	for i, a := range p.Spec.AuditAnnotations {
		out = append(out, policyExpression{fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i), a.ValueExpression, exprAuditAnnotation})
	}
	return out
}
