package vap

import (
	"k8s.io/utils/ptr"

	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vapc-dev/vapc/cel"
)

// Policy is a ValidatingAdmissionPolicy (NewPolicy) or a MutatingAdmissionPolicy
// (NewMutatingPolicy) built in Go and checked. It cannot be changed once built: Object and
// MutatingObject return copies.
type Policy struct {
	obj      *admissionregistrationv1.ValidatingAdmissionPolicy // nil for a mutating policy
	mobj     *admissionregistrationv1.MutatingAdmissionPolicy   // nil for a validating policy
	paramRef *admissionregistrationv1.ParamRef                  // the paramRef bindings use unless they set one
	paramAt  site                                               // the call that set paramRef
	loc      *locator
	checker  *cel.Checker
	warnings cel.Diagnostics
}

// PolicyOption sets a part of a policy. Each option remembers the Go line that wrote it, to
// place diagnostics.
type PolicyOption func(*policyBuilder)

// policyBuilder is the policy under construction. The fields both kinds have are built in a
// ValidatingAdmissionPolicy; a mutating policy's own fields beside it.
type policyBuilder struct {
	obj      *admissionregistrationv1.ValidatingAdmissionPolicy
	paramRef *admissionregistrationv1.ParamRef
	paramAt  site
	loc      *locator
	checker  *cel.Checker
	diags    cel.Diagnostics

	mutating     bool
	mutations    []admissionregistrationv1.Mutation
	reinvocation *admissionregistrationv1.ReinvocationPolicyType
}

func newPolicyBuilder(name string, at site) *policyBuilder {
	fail := admissionregistrationv1.Fail
	b := &policyBuilder{
		obj: &admissionregistrationv1.ValidatingAdmissionPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail},
		},
		loc: newLocator(at),
	}
	b.loc.set("metadata.name", at)
	return b
}

// checkerOrDefault returns the checker of CheckWith, or the default one.
func (b *policyBuilder) checkerOrDefault() (*cel.Checker, error) {
	if b.checker != nil {
		return b.checker, nil
	}
	return defaultChecker()
}

// errorf records a construction error at the site.
func (b *policyBuilder) errorf(s site, path, format string, args ...any) {
	b.diags = append(b.diags, cel.Diagnostic{
		Pos: s.pos(), Field: path, Severity: cel.Error, Category: cel.CategoryInput,
		Object: b.kind() + "/" + b.obj.Name, Message: fmt.Sprintf(format, args...),
	})
}

func (b *policyBuilder) kind() string {
	if b.mutating {
		return "MutatingAdmissionPolicy"
	}
	return "ValidatingAdmissionPolicy"
}

// NewPolicy builds the ValidatingAdmissionPolicy name from the options and type-checks every
// expression against the schemas of the Kubernetes version of the checker (CheckWith, by
// default cel.DefaultKubernetesVersion). failurePolicy is always set: Fail unless FailurePolicy
// says otherwise. When the policy has errors, NewPolicy returns an *Error with every
// diagnostic, each pointing at the Go line that wrote the field.
func NewPolicy(name string, opts ...PolicyOption) (*Policy, error) {
	at := caller()
	b := newPolicyBuilder(name, at)
	for _, opt := range opts {
		if opt != nil {
			opt(b)
		}
	}
	checker, err := b.checkerOrDefault()
	if err != nil {
		return nil, err
	}
	diags := append(b.diags, checker.CheckPolicy(&cel.Policy{ValidatingAdmissionPolicy: b.obj, Source: b.loc})...)
	diags.Sort()
	if diags.HasErrors() {
		return nil, &Error{Object: "ValidatingAdmissionPolicy/" + name, Diagnostics: diags}
	}
	return &Policy{obj: b.obj, paramRef: b.paramRef, paramAt: b.paramAt, loc: b.loc, checker: checker, warnings: diags}, nil
}

// Name returns the policy's name.
func (p *Policy) Name() string {
	if p.mobj != nil {
		return p.mobj.Name
	}
	return p.obj.Name
}

// Object returns a copy of the ValidatingAdmissionPolicy, or nil for a mutating policy.
func (p *Policy) Object() *admissionregistrationv1.ValidatingAdmissionPolicy { return p.obj.DeepCopy() }

// kind is the policy's kind.
func (p *Policy) kind() string {
	if p.mobj != nil {
		return "MutatingAdmissionPolicy"
	}
	return "ValidatingAdmissionPolicy"
}

// Source returns the Go file that called NewPolicy, relative to its module's root
// (policies/kosmos.go).
func (p *Policy) Source() string { return p.loc.root.file }

// Diagnostics returns what the checker found that does not stop the policy from being built:
// warnings (parts it could not type-check, lints) and infos (estimated costs). Each points at
// the Go line that wrote the field.
func (p *Policy) Diagnostics() cel.Diagnostics { return append(cel.Diagnostics(nil), p.warnings...) }

// CheckWith type-checks the policy with c instead of a checker for
// cel.DefaultKubernetesVersion: another Kubernetes version, or CRDs for custom kinds.
func CheckWith(c *cel.Checker) PolicyOption {
	return func(b *policyBuilder) { b.checker = c }
}

// FailurePolicy sets what the apiserver does when an expression fails to evaluate or the
// policy is misconfigured: Fail (the default vap sets, and the server's) or Ignore.
func FailurePolicy(fp admissionregistrationv1.FailurePolicyType) PolicyOption {
	at := caller()
	return func(b *policyBuilder) {
		b.obj.Spec.FailurePolicy = &fp
		b.loc.set("spec.failurePolicy", at)
	}
}

// Operation is a set of the operations a resource rule matches; combine them with |.
type Operation uint8

// Operations of resource rules.
const (
	Create Operation = 1 << iota
	Update
	Delete
	Connect
	// AnyOperation matches every operation ("*").
	AnyOperation = Create | Update | Delete | Connect
)

// operations returns the admissionregistration/v1 operations in a fixed order.
func (o Operation) operations() []admissionregistrationv1.OperationType {
	if o == AnyOperation {
		return []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	}
	var out []admissionregistrationv1.OperationType
	for _, x := range []struct {
		op Operation
		t  admissionregistrationv1.OperationType
	}{{Create, admissionregistrationv1.Create}, {Update, admissionregistrationv1.Update}, {Delete, admissionregistrationv1.Delete}, {Connect, admissionregistrationv1.Connect}} {
		if o&x.op != 0 {
			out = append(out, x.t)
		}
	}
	return out
}

// Resources matches the operations on resources of the core API group, version v1: "pods",
// "nodes", or a subresource such as "pods/eviction". It adds one entry to
// spec.matchConstraints.resourceRules.
func Resources(ops Operation, resources ...string) PolicyOption {
	at := caller()
	return func(b *policyBuilder) { b.addRule(at, "", "v1", ops, resources) }
}

// ResourcesIn matches the operations on resources of an API group and version, e.g.
// ResourcesIn("apps", "v1", Create|Update, "deployments", "deployments/scale").
func ResourcesIn(group, version string, ops Operation, resources ...string) PolicyOption {
	at := caller()
	return func(b *policyBuilder) { b.addRule(at, group, version, ops, resources) }
}

func (b *policyBuilder) addRule(at site, group, version string, ops Operation, resources []string) {
	if b.obj.Spec.MatchConstraints == nil {
		b.obj.Spec.MatchConstraints = &admissionregistrationv1.MatchResources{}
	}
	mc := b.obj.Spec.MatchConstraints
	path := fmt.Sprintf("spec.matchConstraints.resourceRules[%d]", len(mc.ResourceRules))
	if ops == 0 || ops&^AnyOperation != 0 {
		b.errorf(at, path+".operations", "no valid operation: use Create, Update, Delete, Connect or a combination with |")
	}
	if len(resources) == 0 {
		b.errorf(at, path+".resources", "no resources")
	}
	mc.ResourceRules = append(mc.ResourceRules, admissionregistrationv1.NamedRuleWithOperations{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: ops.operations(),
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{group},
				APIVersions: []string{version},
				Resources:   append([]string(nil), resources...),
				// The server defaults scope to "*". Emitting it keeps `kubectl apply` of an
				// unchanged policy a no-op: the rule list is replaced as a whole on apply.
				Scope: ptr.To(admissionregistrationv1.AllScopes),
			},
		},
	})
	b.loc.set(path, at)
}

// MatchCondition adds a matchCondition: the policy applies only to requests for which every
// matchCondition is true.
func MatchCondition(name, expression string) PolicyOption {
	at := caller()
	return func(b *policyBuilder) { b.addMatchCondition(at, name, expression) }
}

func (b *policyBuilder) addMatchCondition(at site, name, expression string) {
	path := fmt.Sprintf("spec.matchConditions[%d]", len(b.obj.Spec.MatchConditions))
	b.obj.Spec.MatchConditions = append(b.obj.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: name, Expression: expression})
	b.loc.set(path, at)
	b.loc.setExpr(path+".expression", at, expression)
}

// UserIn adds the matchCondition "requesting-user": the policy applies only to requests made by
// one of the users (request.userInfo.username, e.g.
// system:serviceaccount:kube-system:node-controller). For requests made by impersonation, that is
// the impersonated user.
func UserIn(users ...string) PolicyOption {
	at := caller()
	return func(b *policyBuilder) {
		if len(users) == 0 {
			b.errorf(at, fmt.Sprintf("spec.matchConditions[%d]", len(b.obj.Spec.MatchConditions)), "UserIn: no users: the policy would match no request")
		}
		for _, u := range users {
			if strings.TrimSpace(u) == "" {
				b.errorf(at, fmt.Sprintf("spec.matchConditions[%d]", len(b.obj.Spec.MatchConditions)), "UserIn: empty user name")
			}
		}
		expr := "request.userInfo.username in " + StringList(users...)
		if len(users) == 1 {
			expr = "request.userInfo.username == " + Quote(users[0])
		}
		b.addMatchCondition(at, "requesting-user", expr)
	}
}

// Variable adds a variable, available to later variables and to validations, messages and audit
// annotations as variables.<name>.
func Variable(name, expression string) PolicyOption {
	at := caller()
	return func(b *policyBuilder) {
		path := fmt.Sprintf("spec.variables[%d]", len(b.obj.Spec.Variables))
		b.obj.Spec.Variables = append(b.obj.Spec.Variables, admissionregistrationv1.Variable{Name: name, Expression: expression})
		b.loc.set(path, at)
		b.loc.setExpr(path+".expression", at, expression)
	}
}

// ValidationOption sets a part of a validation.
type ValidationOption func(*validationBuilder)

type validationBuilder struct {
	v     *admissionregistrationv1.Validation
	sites []fieldSite // relative to the validation
}

type fieldSite struct {
	field string
	at    site
	expr  *string
}

// Validation adds a validation: a request the policy applies to is admitted only if the
// expression is true.
func Validation(expression string, opts ...ValidationOption) PolicyOption {
	at := caller()
	return func(b *policyBuilder) {
		vb := &validationBuilder{v: &admissionregistrationv1.Validation{Expression: expression}}
		for _, opt := range opts {
			if opt != nil {
				opt(vb)
			}
		}
		path := fmt.Sprintf("spec.validations[%d]", len(b.obj.Spec.Validations))
		b.obj.Spec.Validations = append(b.obj.Spec.Validations, *vb.v)
		b.loc.set(path, at)
		b.loc.setExpr(path+".expression", at, expression)
		for _, fs := range vb.sites {
			if fs.expr != nil {
				b.loc.setExpr(path+"."+fs.field, fs.at, *fs.expr)
			} else {
				b.loc.set(path+"."+fs.field, fs.at)
			}
		}
	}
}

// Message sets the fixed message of a failed validation.
func Message(message string) ValidationOption {
	at := caller()
	return func(vb *validationBuilder) {
		vb.v.Message = message
		vb.sites = append(vb.sites, fieldSite{field: "message", at: at})
	}
}

// MessageExpression sets an expression that computes the message of a failed validation; it
// must evaluate to a string.
func MessageExpression(expression string) ValidationOption {
	at := caller()
	return func(vb *validationBuilder) {
		vb.v.MessageExpression = expression
		vb.sites = append(vb.sites, fieldSite{field: "messageExpression", at: at, expr: &expression})
	}
}

// Reason sets the reason of a failed validation, and with it the HTTP status of the denial:
// metav1.StatusReasonUnauthorized, Forbidden, Invalid (the server's default) or
// RequestEntityTooLarge.
func Reason(reason metav1.StatusReason) ValidationOption {
	at := caller()
	return func(vb *validationBuilder) {
		vb.v.Reason = &reason
		vb.sites = append(vb.sites, fieldSite{field: "reason", at: at})
	}
}

// AuditAnnotation adds an audit annotation: when the expression evaluates to a string, the
// audit event of the request carries it under the key <policy name>/<key>; null leaves it out.
func AuditAnnotation(key, valueExpression string) PolicyOption {
	at := caller()
	return func(b *policyBuilder) {
		path := fmt.Sprintf("spec.auditAnnotations[%d]", len(b.obj.Spec.AuditAnnotations))
		b.obj.Spec.AuditAnnotations = append(b.obj.Spec.AuditAnnotations, admissionregistrationv1.AuditAnnotation{Key: key, ValueExpression: valueExpression})
		b.loc.set(path, at)
		b.loc.setExpr(path+".valueExpression", at, valueExpression)
	}
}

// Params sets the kind of the policy's params (apiVersion "v1", kind "ConfigMap") and the
// paramRef its bindings use unless they set their own (BindingParamRef); ref may be nil.
func Params(apiVersion, kind string, ref *admissionregistrationv1.ParamRef) PolicyOption {
	at := caller()
	return func(b *policyBuilder) { b.setParams(at, apiVersion, kind, ref) }
}

func (b *policyBuilder) setParams(at site, apiVersion, kind string, ref *admissionregistrationv1.ParamRef) {
	if b.obj.Spec.ParamKind != nil {
		b.errorf(at, "spec.paramKind", "params set twice: a policy has one paramKind")
	}
	b.obj.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: apiVersion, Kind: kind}
	b.loc.set("spec.paramKind", at)
	b.paramRef, b.paramAt = ref.DeepCopy(), at
}

// NodeParams makes the nodes that match the selector the policy's params, so that an expression
// can read the node a pod runs on. The apiserver evaluates the policy once per matching node,
// with that node as params, and denies the request if any evaluation fails: a validation must
// pass for the nodes that are not the one it is about (params.metadata.name !=
// oldObject.spec.nodeName || ...). notFound says what happens when no node matches: Allow
// admits the request, Deny refuses it.
func NodeParams(selector *metav1.LabelSelector, notFound admissionregistrationv1.ParameterNotFoundActionType) PolicyOption {
	at := caller()
	return func(b *policyBuilder) {
		if selector == nil {
			b.errorf(at, "spec.paramKind", "NodeParams: nil selector (an empty selector matches every node)")
		}
		b.setParams(at, "v1", "Node", &admissionregistrationv1.ParamRef{Selector: selector.DeepCopy(), ParameterNotFoundAction: &notFound})
	}
}

// ConfigMapParam makes the ConfigMap namespace/name the policy's params, read as params.data.
// notFound says what happens when the ConfigMap does not exist: Allow admits every request (the
// policy is not evaluated), Deny refuses every request it matches.
func ConfigMapParam(namespace, name string, notFound admissionregistrationv1.ParameterNotFoundActionType) PolicyOption {
	at := caller()
	return func(b *policyBuilder) {
		b.setParams(at, "v1", "ConfigMap", &admissionregistrationv1.ParamRef{Name: name, Namespace: namespace, ParameterNotFoundAction: &notFound})
	}
}

// HasLabel returns a selector of the objects that have the label key, whatever its value.
func HasLabel(key string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}}
}

// Quote returns s as a CEL string literal in single quotes.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// StringList returns a CEL list literal of the strings: ['a', 'b'].
func StringList(values ...string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
