package replay

import (
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/plugininput"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// scope answers, before any object is decoded, whether any loaded policy can match a request
// and which resources a policy can read, so that a replay decodes and keeps only what matters.
// It over-approximates the apiserver's matching (it ignores selectors, excludes and bindings'
// matchResources): the evaluator decides exactly.
type scope struct {
	policies  []*admissionregistrationv1.ValidatingAdmissionPolicy
	resources verify.Resources

	// params are the resources of paramKinds; readsNamespaces says whether some policy
	// selects or reads namespaces.
	params          map[schema.GroupResource]bool
	readsNamespaces bool
	// paramSelectors are the selectors of the bindings' paramRefs, by param resource: the
	// State indexes their members.
	paramSelectors map[schema.GroupResource][]labels.Selector
	// nsReaders are the policies that select (theirs or a binding's namespaceSelector) or
	// read (namespaceObject) the request's namespace.
	nsReaders map[string]bool
	// paramOf is the resource of each policy's paramKind.
	paramOf map[string]schema.GroupResource
	// publishers are the policies that can publish audit annotations or warnings: with
	// auditAnnotations, or bound with the Audit or Warn action; warners those bound with Warn.
	publishers, warners map[string]bool

	// pluginInputs are the resources kube-apiserver's built-in admission plugins read for a
	// request some policy can match (the ServiceAccount plugin reads serviceaccounts for a
	// pod create): the State keeps them, and the plugins read them from Views.
	pluginInputs map[schema.GroupResource]bool

	mu      sync.Mutex
	matches map[matchKey]bool
	names   map[matchKey][]string
	kept    map[schema.GroupResource]bool
}

type matchKey struct {
	gvr schema.GroupVersionResource
	sub string
	op  admission.Operation
}

// newScope takes the policies that have bindings.
func newScope(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, res verify.Resources, plugins []string) *scope {
	bound := map[string]bool{}
	nsBinding := false
	s := &scope{resources: res, params: map[schema.GroupResource]bool{}, paramSelectors: map[schema.GroupResource][]labels.Selector{}, nsReaders: map[string]bool{}, paramOf: map[string]schema.GroupResource{}, matches: map[matchKey]bool{}, names: map[matchKey][]string{}, kept: map[schema.GroupResource]bool{}}
	selectors := map[string][]*metav1.LabelSelector{} // by policy
	s.publishers, s.warners = map[string]bool{}, map[string]bool{}
	for _, b := range bindings {
		bound[b.Spec.PolicyName] = true
		if slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Warn) {
			s.warners[b.Spec.PolicyName] = true
		}
		if s.warners[b.Spec.PolicyName] || slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Audit) {
			s.publishers[b.Spec.PolicyName] = true
		}
		if pr := b.Spec.ParamRef; pr != nil && pr.Selector != nil {
			selectors[b.Spec.PolicyName] = append(selectors[b.Spec.PolicyName], pr.Selector)
		}
		if mr := b.Spec.MatchResources; mr != nil && mr.NamespaceSelector != nil && !emptySelector(mr.NamespaceSelector.MatchLabels, len(mr.NamespaceSelector.MatchExpressions)) {
			nsBinding = true
			s.nsReaders[b.Spec.PolicyName] = true
		}
	}
	for _, p := range policies {
		if !bound[p.Name] {
			continue
		}
		s.policies = append(s.policies, p)
		if len(p.Spec.AuditAnnotations) > 0 {
			s.publishers[p.Name] = true
		}
		if pk := p.Spec.ParamKind; pk != nil {
			if gv, err := schema.ParseGroupVersion(pk.APIVersion); err == nil {
				if m, err := res.RESTMapper().RESTMapping(gv.WithKind(pk.Kind).GroupKind(), gv.Version); err == nil {
					gr := m.Resource.GroupResource()
					s.params[gr] = true
					s.paramOf[p.Name] = gr
					if gr == state.NamespacesGR {
						// Namespaces as params: a namespace the State does not know may be
						// one, and listing them must say so (random parity seed r:906,
						// "no params found", certain, where the server found one).
						s.readsNamespaces = true
						s.nsReaders[p.Name] = true
					}
					for _, ls := range selectors[p.Name] {
						if sel, err := metav1.LabelSelectorAsSelector(ls); err == nil {
							s.paramSelectors[gr] = append(s.paramSelectors[gr], sel)
						}
					}
				}
			}
		}
		if mc := p.Spec.MatchConstraints; mc != nil && mc.NamespaceSelector != nil && !emptySelector(mc.NamespaceSelector.MatchLabels, len(mc.NamespaceSelector.MatchExpressions)) {
			s.readsNamespaces = true
			s.nsReaders[p.Name] = true
		}
		if policyMentions(p, "namespaceObject") {
			s.readsNamespaces = true
			s.nsReaders[p.Name] = true
		}
	}
	s.readsNamespaces = s.readsNamespaces || nsBinding
	s.pluginInputs = map[schema.GroupResource]bool{}
	for _, in := range plugininput.ForPlugins(plugins) {
		if slices.ContainsFunc(in.Ops(), func(op admission.Operation) bool { return s.anyMatch(in.Resource, in.Subresource, op) }) {
			for _, gr := range in.Reads {
				s.pluginInputs[gr] = true
			}
		}
	}
	if s.keeps(schema.GroupResource{Resource: "pods"}) {
		// The ordered stage replays a binding over the pods it keeps (replayWrite), and
		// PodTopologyLabels reads the binding's node.
		s.pluginInputs[schema.GroupResource{Resource: "nodes"}] = true
	}
	return s
}

// readNamespaces says whether a decision of the policies can depend on the request's
// namespace. The apiserver reads the namespace for a non-empty namespaceSelector only
// (matching.Matcher.MatchNamespaceSelector returns early for an empty one), and hands it to
// every policy as namespaceObject, which only an expression that names it can read: a policy
// that does neither decides the same whatever the namespace's labels are.
func (s *scope) readNamespaces(policies []string) bool {
	for _, p := range policies {
		if s.nsReaders[p] {
			return true
		}
	}
	return false
}

func emptySelector(labels map[string]string, exprs int) bool { return len(labels) == 0 && exprs == 0 }

// policyMentions says whether any expression of the policy contains the word.
func policyMentions(p *admissionregistrationv1.ValidatingAdmissionPolicy, word string) bool {
	for _, v := range p.Spec.Validations {
		if strings.Contains(v.Expression, word) || strings.Contains(v.MessageExpression, word) {
			return true
		}
	}
	for _, v := range p.Spec.Variables {
		if strings.Contains(v.Expression, word) {
			return true
		}
	}
	for _, m := range p.Spec.MatchConditions {
		if strings.Contains(m.Expression, word) {
			return true
		}
	}
	for _, a := range p.Spec.AuditAnnotations {
		if strings.Contains(a.ValueExpression, word) {
			return true
		}
	}
	return false
}

// publishes says whether any of the policies can publish audit annotations or warnings.
func (s *scope) publishes(names []string) bool { return anyOf(s.publishers, names) }

// warns says whether any of the policies can warn.
func (s *scope) warns(names []string) bool { return anyOf(s.warners, names) }

func anyOf(set map[string]bool, names []string) bool {
	for _, n := range names {
		if set[n] {
			return true
		}
	}
	return false
}

// match returns the policies whose rules can match a request for the resource, subresource
// and operation, through any equivalent resource. The slice is shared: callers must not change
// it.
func (s *scope) match(gvr schema.GroupVersionResource, sub string, op admission.Operation) []string {
	k := matchKey{gvr, sub, op}
	s.mu.Lock()
	names, ok := s.names[k]
	s.mu.Unlock()
	if ok {
		return names
	}
	names = s.matchUncached(gvr, sub, op)
	s.mu.Lock()
	s.names[k] = names
	s.mu.Unlock()
	return names
}

func (s *scope) matchUncached(gvr schema.GroupVersionResource, sub string, op admission.Operation) []string {
	if verify.Excluded(gvr.GroupResource()) {
		return nil // reviews, and the policies' own resources
	}
	var names []string
	gvrs := s.equivalents(gvr, sub)
	for _, p := range s.policies {
		if policyRulesMatch(p, gvrs, sub, op) {
			names = append(names, p.Name)
		}
	}
	return names
}

// anyMatch is match without the names, cached.
func (s *scope) anyMatch(gvr schema.GroupVersionResource, sub string, op admission.Operation) bool {
	k := matchKey{gvr, sub, op}
	s.mu.Lock()
	v, ok := s.matches[k]
	s.mu.Unlock()
	if ok {
		return v
	}
	v = len(s.match(gvr, sub, op)) > 0
	s.mu.Lock()
	s.matches[k] = v
	s.mu.Unlock()
	return v
}

func (s *scope) equivalents(gvr schema.GroupVersionResource, sub string) []schema.GroupVersionResource {
	out := []schema.GroupVersionResource{gvr}
	if s.resources != nil {
		for _, e := range s.resources.EquivalentResources(gvr, sub) {
			if e != gvr {
				out = append(out, e)
			}
		}
	}
	return out
}

func policyRulesMatch(p *admissionregistrationv1.ValidatingAdmissionPolicy, gvrs []schema.GroupVersionResource, sub string, op admission.Operation) bool {
	mc := p.Spec.MatchConstraints
	if mc == nil {
		return false
	}
	exact := mc.MatchPolicy != nil && *mc.MatchPolicy == admissionregistrationv1.Exact
	if len(gvrs) > 0 && excludedWhatever(mc.ExcludeResourceRules, gvrs[0], sub, op) {
		return false
	}
	for _, r := range mc.ResourceRules {
		for i, gvr := range gvrs {
			if exact && i > 0 {
				break
			}
			if ruleMatches(r.RuleWithOperations, gvr, sub, op) {
				return true
			}
		}
	}
	return false
}

// excludedWhatever says whether one of a policy's excludeResourceRules excludes every request for
// the resource, subresource and operation, whatever its name, namespace and objects: a rule
// without resourceNames that matches the requested resource itself, in any scope. The
// apiserver's matcher checks the excludes before the rules and regardless of the selectors
// (matching.Matcher.Matches: a policy a selector cannot be decided on is excluded all the
// same). Excludes through an equivalent resource, or by name or scope, are left to the
// evaluator.
func excludedWhatever(excludes []admissionregistrationv1.NamedRuleWithOperations, gvr schema.GroupVersionResource, sub string, op admission.Operation) bool {
	for _, r := range excludes {
		if len(r.ResourceNames) == 0 && (r.Scope == nil || *r.Scope == admissionregistrationv1.AllScopes) && ruleMatches(r.RuleWithOperations, gvr, sub, op) {
			return true
		}
	}
	return false
}

// ruleMatches is plugininput.RuleMatches of an admission operation.
func ruleMatches(r admissionregistrationv1.RuleWithOperations, gvr schema.GroupVersionResource, sub string, op admission.Operation) bool {
	return plugininput.RuleMatches(r, gvr, sub, string(op))
}

// keeps says whether the State keeps objects of the resource: params, namespaces, the inputs
// of the admission plugins, the resources some policy can see in an UPDATE or DELETE (their
// oldObject), and service accounts when a policy sees their TokenRequests.
func (s *scope) keeps(gr schema.GroupResource) bool {
	if gr == (schema.GroupResource{Resource: "namespaces"}) || s.params[gr] || s.pluginInputs[gr] {
		return true
	}
	s.mu.Lock()
	v, ok := s.kept[gr]
	s.mu.Unlock()
	if ok {
		return v
	}
	v = false
	for _, p := range s.policies {
		mc := p.Spec.MatchConstraints
		if mc == nil {
			continue
		}
		for _, r := range mc.ResourceRules {
			if !plugininput.Contains(r.APIGroups, gr.Group) {
				continue
			}
			readsOld, readsToken := ruleReadsOld(r.RuleWithOperations), gr == serviceAccountsGR && ruleCreates(r.RuleWithOperations)
			for _, res := range r.Resources {
				base, sub, _ := strings.Cut(res, "/")
				if (readsOld && (base == "*" || base == gr.Resource)) ||
					// A TokenRequest has its service account's uid (TokenREST.Create).
					(readsToken && (base == "*" || base == gr.Resource) && (sub == "*" || sub == "token")) {
					v = true
				}
			}
		}
	}
	// matchPolicy Equivalent: a rule for an equivalent group (apps and extensions) reads the
	// same objects.
	if !v && s.resources != nil {
		for _, gv := range []string{"v1", "v1beta1", "v1beta2", "v2"} {
			for _, e := range s.resources.EquivalentResources(schema.GroupVersionResource{Group: gr.Group, Version: gv, Resource: gr.Resource}, "") {
				if e.GroupResource() != gr && s.anyMatch(e, "", admission.Update) || s.anyMatch(e, "", admission.Delete) {
					v = true
				}
			}
		}
	}
	s.mu.Lock()
	s.kept[gr] = v
	s.mu.Unlock()
	return v
}

func ruleCreates(r admissionregistrationv1.RuleWithOperations) bool {
	return slices.ContainsFunc(r.Operations, func(o admissionregistrationv1.OperationType) bool {
		return o == admissionregistrationv1.OperationAll || o == admissionregistrationv1.Create
	})
}

func ruleReadsOld(r admissionregistrationv1.RuleWithOperations) bool {
	for _, o := range r.Operations {
		switch o {
		case admissionregistrationv1.OperationAll, admissionregistrationv1.Update, admissionregistrationv1.Delete:
			return true
		}
	}
	return false
}
