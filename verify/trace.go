package verify

import (
	"context"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
)

// trace records, for one request, what the apiserver's dispatcher did: which policies and
// bindings matched, the params each binding collected, and each evaluation's result. The
// dispatcher calls into the trace's wrappers one hook, binding and param at a time, in order.
type trace struct {
	policies []*policyTrace
	checks   []AuthorizerCheck
	// matched are the results of the param-free matchConditions of a policy for the
	// versioned attributes they read (see recordingMatcher).
	matched map[*recordingMatcher]matchMemo
}

type matchMemo struct {
	attr   *admission.VersionedAttributes
	result matchconditions.MatchResult
}

type policyTrace struct {
	name      string
	err       error // DefinitionMatches error or the hook's configuration error
	matchKind schema.GroupVersionKind
	bindings  []*bindingTrace
}

type bindingTrace struct {
	name      string
	actions   []admissionregistrationv1.ValidationAction
	err       error // BindingMatches or CollectParams error
	params    []runtime.Object
	evals     []*evalTrace
	notParams bool // the policy has no paramKind or the binding no paramRef
}

type evalTrace struct {
	match  *matchconditions.MatchResult
	result validating.ValidateResult
}

type traceKey struct{}

func withTrace(ctx context.Context, t *trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

func traceFrom(ctx context.Context) *trace {
	t, _ := ctx.Value(traceKey{}).(*trace)
	return t
}

func (t *trace) currentBinding() *bindingTrace {
	if len(t.policies) == 0 {
		return nil
	}
	p := t.policies[len(t.policies)-1]
	if len(p.bindings) == 0 {
		return nil
	}
	return p.bindings[len(p.bindings)-1]
}

func (t *trace) beginValidate() {
	if b := t.currentBinding(); b != nil {
		b.evals = append(b.evals, &evalTrace{})
	}
}

func (t *trace) matchConditions(res matchconditions.MatchResult) {
	if b := t.currentBinding(); b != nil && len(b.evals) > 0 {
		b.evals[len(b.evals)-1].match = &res
	}
}

func (t *trace) endValidate(res validating.ValidateResult) {
	if b := t.currentBinding(); b != nil && len(b.evals) > 0 {
		b.evals[len(b.evals)-1].result = res
	}
}

// recordingPolicyMatcher wraps the apiserver's policy matcher: it answers exactly as the
// wrapped matcher does and records each policy and binding that matched. For a matching
// binding it also collects the binding's params with the apiserver's own generic.CollectParams,
// as the dispatcher is about to, to learn the params (or the configuration error) it will see.
type recordingPolicyMatcher struct {
	generic.PolicyMatcher
	t         *trace
	hooks     map[string]*validating.PolicyHook
	namespace string
}

func (m *recordingPolicyMatcher) DefinitionMatches(a admission.Attributes, o admission.ObjectInterfaces, definition generic.PolicyAccessor) (bool, schema.GroupVersionResource, schema.GroupVersionKind, error) {
	matches, gvr, gvk, err := m.PolicyMatcher.DefinitionMatches(a, o, definition)
	if err != nil || matches {
		p := &policyTrace{name: definition.GetName(), err: err, matchKind: gvk}
		if err == nil {
			if h := m.hooks[definition.GetName()]; h != nil && h.ConfigurationError != nil {
				p.err = h.ConfigurationError
			}
		}
		m.t.policies = append(m.t.policies, p)
	}
	return matches, gvr, gvk, err
}

func (m *recordingPolicyMatcher) BindingMatches(a admission.Attributes, o admission.ObjectInterfaces, binding generic.BindingAccessor) (bool, error) {
	matches, err := m.PolicyMatcher.BindingMatches(a, o, binding)
	if len(m.t.policies) == 0 || (!matches && err == nil) {
		return matches, err
	}
	p := m.t.policies[len(m.t.policies)-1]
	b := &bindingTrace{name: binding.GetName(), err: err}
	if h := m.hooks[p.name]; h != nil {
		for _, hb := range h.Bindings {
			if hb.Name == binding.GetName() {
				b.actions = hb.Spec.ValidationActions
			}
		}
		if err == nil {
			b.notParams = h.Policy.Spec.ParamKind == nil || binding.GetParamRef() == nil
			b.params, b.err = generic.CollectParams(h.Policy.Spec.ParamKind, h.ParamInformer, h.ParamScope, binding.GetParamRef(), m.namespace, nil, nil)
		}
	}
	p.bindings = append(p.bindings, b)
	return matches, err
}

func (m *recordingPolicyMatcher) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return m.PolicyMatcher.GetNamespace(ctx, name)
}

// recordingAuthorizer answers as kube-apiserver's authorizer chain does, and records every
// check in checks: the system-privileged-group authorizer first (whatever its configuration,
// the server allows everything to members of system:masters before it asks the authorizers it
// was configured with), then the configured one, inner.
type recordingAuthorizer struct {
	inner  authorizer.UnconditionalAuthorizer
	checks *[]AuthorizerCheck
}

// privilegedGroup is the authorizer kube-apiserver puts first in its chain
// (k8s.io/kubernetes pkg/kubeapiserver/authorizer newForConfig).
var privilegedGroup = authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)

func (r recordingAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	d, reason, err := privilegedGroup.Authorize(ctx, a)
	privileged := d == authorizer.DecisionAllow
	if !privileged {
		d, reason, err = r.inner.Authorize(ctx, a)
	}
	c := checkOf(a)
	c.Decision, c.Reason, c.Privileged = decisionString(d), reason, privileged
	if err != nil {
		c.Error = err.Error()
	}
	*r.checks = append(*r.checks, c)
	return d, reason, err
}

// Asked is the check without its answer: what the policy asked, the same however the
// authorizer answered.
func (c AuthorizerCheck) Asked() AuthorizerCheck {
	c.Decision, c.Reason, c.Error, c.Privileged = "", "", "", false
	return c
}

// checkOf is the check the attributes ask, without its answer (Asked).
func checkOf(a authorizer.Attributes) AuthorizerCheck {
	c := AuthorizerCheck{Verb: a.GetVerb(), Namespace: a.GetNamespace(), Name: a.GetName()}
	if u := a.GetUser(); u != nil {
		c.User = u.GetName()
	}
	if a.IsResourceRequest() {
		c.Group, c.Version, c.Resource, c.Subresource = a.GetAPIGroup(), a.GetAPIVersion(), a.GetResource(), a.GetSubresource()
		c.FieldSelector, c.LabelSelector = selectorsOf(a)
	} else {
		c.Path = a.GetPath()
	}
	return c
}

// selectorsOf are the field and label selectors a check gave, as the authorizer reads them (or
// why they do not parse): two checks that differ in them alone are two questions.
func selectorsOf(a authorizer.Attributes) (field, label string) {
	fr, err := a.GetFieldSelector()
	switch {
	case err != nil:
		field = "invalid: " + err.Error()
	case len(fr) > 0:
		parts := make([]string, len(fr))
		for i, r := range fr {
			parts[i] = r.Field + string(r.Operator) + fields.EscapeValue(r.Value)
		}
		field = strings.Join(parts, ",")
	}
	lr, err := a.GetLabelSelector()
	switch {
	case err != nil:
		label = "invalid: " + err.Error()
	case len(lr) > 0:
		label = lr.String()
	}
	return field, label
}

func decisionString(d authorizer.Decision) string {
	switch d {
	case authorizer.DecisionAllow:
		return "allow"
	case authorizer.DecisionDeny:
		return "deny"
	}
	return "no opinion"
}
