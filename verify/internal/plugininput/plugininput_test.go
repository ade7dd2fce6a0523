package plugininput

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestRuleMatches: a rule's resources as kube-apiserver's rules.Matcher reads them: "RES/*"
// matches RES itself, "*" no subresource, "*/SUB" that subresource of every resource.
func TestRuleMatches(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	rule := func(resources ...string) admissionregistrationv1.RuleWithOperations {
		scope := admissionregistrationv1.NamespacedScope
		return admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Delete},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"", "apps"}, APIVersions: []string{"v1"}, Resources: resources, Scope: &scope},
		}
	}
	for _, tc := range []struct {
		rule      admissionregistrationv1.RuleWithOperations
		gvr       schema.GroupVersionResource
		sub, op   string
		wantMatch bool
	}{
		{rule("pods/*"), pods, "", "DELETE", true},
		{rule("pods/*"), pods, "eviction", "CREATE", true},
		{rule("pods/*"), deployments, "", "CREATE", false},
		{rule("pods"), pods, "eviction", "CREATE", false},
		{rule("*"), pods, "", "CREATE", true},
		{rule("*"), pods, "status", "CREATE", false},
		{rule("*/status"), deployments, "status", "CREATE", true},
		{rule("*/status"), deployments, "", "CREATE", false},
		{rule("*/*"), deployments, "scale", "CREATE", true},
		{rule("pods/*"), pods, "", "UPDATE", false},
		{rule("deployments/scale"), schema.GroupVersionResource{Group: "apps", Version: "v1beta1", Resource: "deployments"}, "scale", "CREATE", false},
	} {
		if got := RuleMatches(tc.rule, tc.gvr, tc.sub, tc.op); got != tc.wantMatch {
			t.Errorf("RuleMatches(%v, %s, %q, %s) = %v, want %v", tc.rule.Resources, tc.gvr, tc.sub, tc.op, got, tc.wantMatch)
		}
	}
}
