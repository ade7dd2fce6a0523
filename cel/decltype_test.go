package cel

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apischema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/cel/schema"
)

// TestDeclTypeForShared holds declTypeFor's types: a kind's built once for every policy that
// asks, a CRD's again when the catalog's CRD changes.
func TestDeclTypeForShared(t *testing.T) {
	t.Parallel()
	builtin, err := schema.Builtin(DefaultKubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	cat := builtin.Clone()
	c, err := NewChecker(WithCatalog(cat))
	if err != nil {
		t.Fatal(err)
	}
	pod := apischema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	if a, b := c.declTypeFor(pod), c.declTypeFor(pod); a == nil || a != b {
		t.Errorf("declTypeFor(Pod) twice = %p, %p, want one type, built once", a, b)
	}
	widget := apischema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	for _, field := range []string{"max", "min"} {
		if err := cat.SetCRD(widgetCRD(field)); err != nil {
			t.Fatal(err)
		}
		dt := c.declTypeFor(widget)
		if dt == nil {
			t.Fatalf("declTypeFor(Widget) with spec.%s = nil", field)
		}
		if again := c.declTypeFor(widget); again != dt {
			t.Errorf("declTypeFor(Widget) twice, the CRD unchanged = %p, %p, want one type, built once", dt, again)
		}
		spec, ok := dt.Fields["spec"]
		if !ok {
			t.Fatalf("declTypeFor(Widget) has no spec: %v", dt.Fields)
		}
		for _, f := range []string{"max", "min"} {
			if _, ok := spec.Type.Fields[f]; ok != (f == field) {
				t.Errorf("with the CRD's spec.%s, declTypeFor(Widget) has spec.%s: %v, want %v", field, f, ok, f == field)
			}
		}
	}
}

// widgetCRD is a CRD of example.com/v1 Widget whose spec has one integer field.
func widgetCRD(field string) *apiextensionsv1.CustomResourceDefinition {
	names := apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped, Names: names,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {
						Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{field: {Type: "integer"}},
					}},
				}},
			}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: names},
	}
}
