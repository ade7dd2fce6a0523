package replay

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify"
)

// A request the State cannot rebuild in full (its oldObject is not known: a pod deleted by
// the kubelet after an eviction) or whose params it does not all know (no snapshot) can still
// be decided for sure when the policies leave it alone for a reason that does not depend on
// what is missing: a matchCondition on the requesting user, say, is false whatever the old
// object and the params are. The apiserver's matcher skips a policy on the first false
// matchCondition even when others fail to evaluate, so a decision made with a stand-in for the
// missing object holds when every policy, binding and param was skipped by a condition that
// reads neither the object nor what else is missing.

// requestOnly knows which matchConditions of the policies read only the request.
type requestOnly struct {
	// conditions are the matchConditions that read neither object nor oldObject (nor
	// namespaceObject, variables, params or request.options), by policy and name.
	conditions map[string]map[string]bool
	// selectsObjects are the policies that a binding or the policy itself matches by
	// objectSelector: the labels of the object decide whether they apply at all.
	selectsObjects map[string]bool
}

// readsMissing are the words of an expression that may read what a stand-in or an incomplete
// State gets wrong. Checking the text is conservative: a string literal that holds one of them
// only makes vapc say indeterminate.
var readsMissing = []string{"object", "Object", "variables", "params", "options"}

func newRequestOnly(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) *requestOnly {
	ro := &requestOnly{conditions: map[string]map[string]bool{}, selectsObjects: map[string]bool{}}
	for _, p := range policies {
		m := map[string]bool{}
		for _, c := range p.Spec.MatchConditions {
			m[c.Name] = !containsAny(c.Expression, readsMissing)
		}
		ro.conditions[p.Name] = m
		if mc := p.Spec.MatchConstraints; mc != nil && mc.ObjectSelector != nil && !emptySelector(mc.ObjectSelector.MatchLabels, len(mc.ObjectSelector.MatchExpressions)) {
			ro.selectsObjects[p.Name] = true
		}
	}
	for _, b := range bindings {
		if mr := b.Spec.MatchResources; mr != nil && mr.ObjectSelector != nil && !emptySelector(mr.ObjectSelector.MatchLabels, len(mr.ObjectSelector.MatchExpressions)) {
			ro.selectsObjects[b.Spec.PolicyName] = true
		}
	}
	return ro
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// decides says whether the decision, made with a stand-in oldObject (oldUnknown) or with
// params the State may not all know (paramsIncomplete), holds whatever is missing: the
// policies the request can match do not select objects by label, no authorizer was asked,
// and every evaluation was skipped by a matchCondition that reads only the request. With
// incomplete params every binding must have had a param (another param would be skipped by
// the same condition; none at all would be parameterNotFoundAction's to decide).
//
// unaffected, when given, names the policies whose results stand whatever is missing (their
// params are not of a resource the State missed): any result of theirs does.
func (ro *requestOnly) decides(dec *verify.Decision, policies []string, paramsIncomplete bool, unaffected func(policy string) bool) bool {
	for _, p := range policies {
		if ro.selectsObjects[p] || strings.HasPrefix(p, mutatingPrefix) {
			// A mutating policy's change may rest on what is missing (its results are
			// not among the decision's).
			return false
		}
	}
	if len(verify.Configured(dec.Authorizer)) > 0 {
		return false
	}
	for _, r := range dec.Results {
		switch {
		case unaffected != nil && unaffected(r.Policy):
		case r.Result == verify.ResultAdmit && r.MatchCondition != "" && ro.conditions[r.Policy][r.MatchCondition]:
		case r.Result == verify.ResultAdmit && r.ParamNotFound && !paramsIncomplete:
		default:
			return false
		}
	}
	return true
}
