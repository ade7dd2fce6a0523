package verify

import (
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// TestCheckOfSelectors: checks that differ in their field selectors alone are two checks, and so
// are one requirement whose value holds an escaped comma and two requirements that read alike
// unescaped (a webhook authorizer is sent each as it parsed).
func TestCheckOfSelectors(t *testing.T) {
	of := func(selector string) AuthorizerCheck {
		t.Helper()
		sel, err := fields.ParseSelector(selector)
		if err != nil {
			t.Fatal(err)
		}
		return checkOf(authorizer.AttributesRecord{Verb: "list", Resource: "pods", ResourceRequest: true, FieldSelectorRequirements: sel.Requirements()})
	}
	one, two := of(`metadata.name=x\,spec.nodeName\=y`), of(`metadata.name=x,spec.nodeName=y`)
	if one == two {
		t.Errorf("one requirement and two keyed alike: %+v", one)
	}
	if a, b := of("spec.nodeName=a"), of("spec.nodeName=b"); a == b || a.FieldSelector != "spec.nodeName=a" {
		t.Errorf("checks of two selectors: %+v, %+v", a, b)
	}
}
