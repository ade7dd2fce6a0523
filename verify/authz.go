package verify

import (
	"context"
	"fmt"
	"path"
	"strings"

	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// AuthorizerCheck is one question a policy's `authorizer` asked during a decision, and the
// answer it got. A decision with checks depended on the configured authorizer, not only on the
// request and the cluster objects.
type AuthorizerCheck struct {
	User        string `json:"user"`
	Verb        string `json:"verb"`
	Group       string `json:"group,omitempty"`
	Version     string `json:"version,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	Path        string `json:"path,omitempty"`
	// FieldSelector and LabelSelector are the selectors the check gave (fieldSelector(),
	// labelSelector()), as the authorizer reads them, or why they do not parse: RBAC ignores
	// them, a webhook authorizer may answer by them.
	FieldSelector string `json:"fieldSelector,omitempty"`
	LabelSelector string `json:"labelSelector,omitempty"`
	// Decision is allow, deny or "no opinion".
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	Error    string `json:"error,omitempty"`
	// Privileged says that the user is in system:masters, which kube-apiserver allows
	// everything before it asks the authorizers it was configured with: the answer is the
	// server's whatever its authorization.
	Privileged bool `json:"privileged,omitempty"`
}

// Configured returns the checks the configured authorizer answered: those whose answer
// depends on the cluster's authorization (every check but the privileged ones).
func Configured(checks []AuthorizerCheck) []AuthorizerCheck {
	var out []AuthorizerCheck
	for _, c := range checks {
		if !c.Privileged {
			out = append(out, c)
		}
	}
	return out
}

// String describes the check in a line: "user alice create pods/status in ns1: allow".
func (c AuthorizerCheck) String() string {
	what := c.Path
	if what == "" {
		what = c.Resource
		if c.Group != "" {
			what += "." + c.Group
		}
		if c.Subresource != "" {
			what += "/" + c.Subresource
		}
		if c.Name != "" {
			what += " " + c.Name
		}
		if c.Namespace != "" {
			what += " in " + c.Namespace
		}
	}
	if c.Privileged {
		return fmt.Sprintf("user %q %s %s: %s (system:masters)", c.User, c.Verb, what, c.Decision)
	}
	return fmt.Sprintf("user %q %s %s: %s", c.User, c.Verb, what, c.Decision)
}

// AllowAll is an authorizer that allows every request.
func AllowAll() authorizer.UnconditionalAuthorizer {
	return fixedAuthorizer{authorizer.DecisionAllow, "vapc: allow all"}
}

// DenyAll is an authorizer that allows nothing: it has no opinion on any request, which is what
// kube-apiserver's authorizer chain answers when no authorizer allows (RBAC never denies).
func DenyAll() authorizer.UnconditionalAuthorizer {
	return fixedAuthorizer{authorizer.DecisionNoOpinion, ""}
}

type fixedAuthorizer struct {
	d      authorizer.Decision
	reason string
}

func (f fixedAuthorizer) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return f.d, f.reason, nil
}

// AuthorizerRule allows or denies the requests it matches. Empty lists match everything, "*"
// matches everything, and a trailing "*" in a path or name matches a prefix.
type AuthorizerRule struct {
	// Users and Groups select the requesting user (any of them); both empty match every user.
	Users  []string `json:"users,omitempty"`
	Groups []string `json:"groups,omitempty"`
	// Verbs, APIGroups, Resources (with subresources as "pods/status"), Namespaces and Names
	// select resource requests.
	Verbs      []string `json:"verbs,omitempty"`
	APIGroups  []string `json:"apiGroups,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"`
	Names      []string `json:"names,omitempty"`
	// NonResourceURLs selects non-resource requests (paths); a rule with it matches no
	// resource request, and a rule without it no path.
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
	// Decision is Allow (default) or Deny.
	Decision string `json:"decision,omitempty"`
}

// RulesAuthorizer answers with the first rule that matches a check, and "no opinion" when none
// does, unless Default is Allow.
type RulesAuthorizer struct {
	Rules []AuthorizerRule `json:"rules"`
	// Default is the answer when no rule matches: Allow, or NoOpinion (default).
	Default string `json:"default,omitempty"`
}

// Validate reports rules with an unknown decision.
func (r *RulesAuthorizer) Validate() error {
	for i, rule := range r.Rules {
		switch rule.Decision {
		case "", "Allow", "Deny":
		default:
			return fmt.Errorf("rules[%d].decision: %q is not Allow or Deny", i, rule.Decision)
		}
	}
	switch r.Default {
	case "", "NoOpinion", "Allow", "Deny":
	default:
		return fmt.Errorf("default: %q is not Allow, Deny or NoOpinion", r.Default)
	}
	return nil
}

// Authorize implements authorizer.UnconditionalAuthorizer.
func (r *RulesAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	for i, rule := range r.Rules {
		if !rule.matches(a) {
			continue
		}
		if rule.Decision == "Deny" {
			return authorizer.DecisionDeny, fmt.Sprintf("vapc: denied by rule %d", i), nil
		}
		return authorizer.DecisionAllow, fmt.Sprintf("vapc: allowed by rule %d", i), nil
	}
	switch r.Default {
	case "Allow":
		return authorizer.DecisionAllow, "vapc: allowed by default", nil
	case "Deny":
		return authorizer.DecisionDeny, "vapc: denied by default", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (rule AuthorizerRule) matches(a authorizer.Attributes) bool {
	if len(rule.Users) > 0 || len(rule.Groups) > 0 {
		u := a.GetUser()
		if u == nil {
			return false
		}
		ok := matchAny(rule.Users, u.GetName())
		for _, g := range u.GetGroups() {
			ok = ok || matchAny(rule.Groups, g)
		}
		if !ok {
			return false
		}
	}
	if !matchesOrEmpty(rule.Verbs, a.GetVerb()) {
		return false
	}
	if !a.IsResourceRequest() {
		return len(rule.NonResourceURLs) > 0 && matchAny(rule.NonResourceURLs, a.GetPath())
	}
	if len(rule.NonResourceURLs) > 0 {
		return false
	}
	res := a.GetResource()
	if a.GetSubresource() != "" {
		res += "/" + a.GetSubresource()
	}
	return matchesOrEmpty(rule.APIGroups, a.GetAPIGroup()) &&
		matchesOrEmpty(rule.Resources, res) &&
		matchesOrEmpty(rule.Namespaces, a.GetNamespace()) &&
		matchesOrEmpty(rule.Names, a.GetName())
}

func matchesOrEmpty(patterns []string, s string) bool {
	return len(patterns) == 0 || matchAny(patterns, s)
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if p == "*" || p == s {
			return true
		}
		if strings.HasSuffix(p, "*") && strings.HasPrefix(s, strings.TrimSuffix(p, "*")) {
			return true
		}
		if strings.Contains(p, "/*") {
			if ok, _ := path.Match(p, s); ok {
				return true
			}
		}
	}
	return false
}
