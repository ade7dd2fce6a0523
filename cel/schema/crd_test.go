package schema_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vschema "github.com/vapc-dev/vapc/cel/schema"
)

// withCRDs returns a fresh 1.37 catalog with the CRDs of testdata/crds.
func withCRDs(t *testing.T) *vschema.Catalog {
	t.Helper()
	c, err := vschema.Builtin("1.37")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LoadCRDs(filepath.Join("testdata", "crds")); err != nil {
		t.Fatalf("LoadCRDs(testdata/crds) = %v", err)
	}
	return c
}

func TestCRDResources(t *testing.T) {
	t.Parallel()
	c := withCRDs(t)
	allVerbs := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	tests := []struct {
		gvr         schema.GroupVersionResource
		subresource string
		want        vschema.ResourceInfo
	}{
		{
			gvr: gvr("example.com", "v1", "widgets"),
			want: vschema.ResourceInfo{
				Kind: gvk("example.com", "v1", "Widget"), Namespaced: true, Verbs: allVerbs, Subresources: []string{"scale", "status"},
				Served: true, ServedByDefault: true, CRD: "widgets.example.com",
			},
		},
		{
			gvr: gvr("example.com", "v1", "widgets"), subresource: "scale",
			want: vschema.ResourceInfo{
				Kind: gvk("autoscaling", "v1", "Scale"), Namespaced: true, Verbs: []string{"get", "patch", "update"},
				Served: true, ServedByDefault: true, CRD: "widgets.example.com",
			},
		},
		{
			gvr: gvr("example.com", "v1", "widgets"), subresource: "status",
			want: vschema.ResourceInfo{
				Kind: gvk("example.com", "v1", "Widget"), Namespaced: true, Verbs: []string{"get", "patch", "update"},
				Served: true, ServedByDefault: true, CRD: "widgets.example.com",
			},
		},
		{
			gvr:  gvr("example.com", "v1beta1", "widgets"),
			want: vschema.ResourceInfo{Kind: gvk("example.com", "v1beta1", "Widget"), Namespaced: true, Verbs: allVerbs, CRD: "widgets.example.com"},
		},
		{
			gvr:  gvr("example.com", "v1", "gadgets"),
			want: vschema.ResourceInfo{Kind: gvk("example.com", "v1", "Gadget"), Verbs: allVerbs, Served: true, ServedByDefault: true, CRD: "gadgets.example.com"},
		},
	}
	for _, tt := range tests {
		got, ok := c.Resource(tt.gvr, tt.subresource)
		if !ok {
			t.Errorf("Resource(%v, %q) not found", tt.gvr, tt.subresource)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Resource(%v, %q) mismatch (-want +got):\n%s", tt.gvr, tt.subresource, diff)
		}
	}

	// As in the apiserver, a CRD's equivalents are all its versions, in spec order.
	wantEq := []schema.GroupVersionResource{gvr("example.com", "v1", "widgets"), gvr("example.com", "v1beta1", "widgets")}
	if diff := cmp.Diff(wantEq, c.EquivalentResources(gvr("example.com", "v1", "widgets"), "")); diff != "" {
		t.Errorf("EquivalentResources(widgets) mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantEq[:1], c.EquivalentResources(gvr("example.com", "v1", "widgets"), "scale")); diff != "" {
		t.Errorf("EquivalentResources(widgets/scale) mismatch (-want +got):\n%s", diff)
	}

	mapper := c.RESTMapper()
	// Short names are in APIGroupResources, for a shortcut expander; the mapper, like
	// restmapper.NewDiscoveryRESTMapper, maps plural and singular names.
	for _, in := range []schema.GroupVersionResource{gvr("example.com", "v1", "widgets"), gvr("", "", "widget")} {
		got, err := mapper.KindFor(in)
		if err != nil || got != gvk("example.com", "v1", "Widget") {
			t.Errorf("RESTMapper().KindFor(%v) = %v, %v, want example.com/v1 Widget", in, got, err)
		}
	}
	if got, err := mapper.KindFor(gvr("example.com", "v1beta1", "widgets")); err == nil {
		t.Errorf("RESTMapper().KindFor(example.com/v1beta1 widgets) = %v, want an error: the version is not served", got)
	}
	m, err := mapper.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Gadget"})
	if err != nil || m.Scope.Name() != "root" {
		t.Errorf("RESTMapping(Gadget.example.com) = %v, %v, want cluster scope", m, err)
	}
}

func TestCRDSchema(t *testing.T) {
	t.Parallel()
	r := withCRDs(t).Resolver()
	tests := []struct {
		gvk  schema.GroupVersionKind
		path []string
		want string
	}{
		{gvk: gvk("example.com", "v1", "Widget"), path: []string{"spec", "replicas"}, want: "integer"},
		{gvk: gvk("example.com", "v1", "Widget"), path: []string{"spec", "size"}, want: "string"},
		{gvk: gvk("example.com", "v1", "Widget"), path: []string{"metadata", "name"}, want: "string"},
		{gvk: gvk("example.com", "v1", "Widget"), path: []string{"apiVersion"}, want: "string"},
		// The builder embeds apiVersion, kind and metadata in x-kubernetes-embedded-resource objects.
		{gvk: gvk("example.com", "v1", "Widget"), path: []string{"spec", "template", "metadata", "labels"}, want: "object"},
		{gvk: gvk("example.com", "v1", "WidgetList"), path: []string{"items", "[]", "spec", "size"}, want: "string"},
		{gvk: gvk("example.com", "v1", "Gadget"), path: []string{"spec", "color"}, want: "string"},
	}
	for _, tt := range tests {
		s, err := r.ResolveSchema(tt.gvk)
		if err != nil {
			t.Errorf("ResolveSchema(%v) = %v", tt.gvk, err)
			continue
		}
		if got, ok := field(s, tt.path...); !ok || got != tt.want {
			t.Errorf("ResolveSchema(%v) %v type = %q (found %v), want %q", tt.gvk, tt.path, got, ok, tt.want)
		}
	}
	// A version with served: false publishes no schema.
	if _, err := r.ResolveSchema(gvk("example.com", "v1beta1", "Widget")); !errors.Is(err, errSchemaNotFound) {
		t.Errorf("ResolveSchema(example.com/v1beta1 Widget) = %v, want ErrSchemaNotFound", err)
	}
	if _, err := r.ResolveSchema(gvk("example.com", "v1", "Sprocket")); !errors.Is(err, errSchemaNotFound) {
		t.Errorf("ResolveSchema(example.com/v1 Sprocket) = %v, want ErrSchemaNotFound", err)
	}
}

func TestLoadCRDsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []string
	}{
		{file: "invalid.yaml", want: []string{
			filepath.Join("testdata", "bad", "invalid.yaml") + ":18:1: ",
			`metadata.name: Invalid value: "cogs.example.org": must be spec.names.plural+"."+spec.group`,
			"spec.versions[0].schema.openAPIV3Schema: Required value",
		}},
		{file: "malformed.yaml", want: []string{filepath.Join("testdata", "bad", "malformed.yaml") + ":3:"}},
		{file: "unknownfield.yaml", want: []string{"unknownfield.yaml:9:3: ", `unknown field "spec.versoins"`}},
		{file: "v1beta1.yaml", want: []string{"v1beta1.yaml:1:13: apiVersion: ", "apiextensions.k8s.io/v1beta1"}},
		{file: "empty.yaml", want: []string{"empty.yaml: no apiextensions.k8s.io/v1 CustomResourceDefinition"}},
		{file: "missing.yaml", want: []string{"missing.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			c, err := vschema.Builtin("1.37")
			if err != nil {
				t.Fatal(err)
			}
			err = c.LoadCRDs(filepath.Join("testdata", "bad", tt.file))
			if err == nil {
				t.Fatalf("LoadCRDs(%s) = nil, want an error", tt.file)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("LoadCRDs(%s) = %v\nwant it to contain %q", tt.file, err, w)
				}
			}
		})
	}

	// The valid CRD of a file is added even when another document fails.
	c, err := vschema.Builtin("1.37")
	if err != nil {
		t.Fatal(err)
	}
	_ = c.LoadCRDs(filepath.Join("testdata", "bad", "invalid.yaml"))
	if _, ok := c.Resource(gvr("example.org", "v1", "sprockets"), ""); !ok {
		t.Errorf("after LoadCRDs(invalid.yaml), sprockets.example.org is missing")
	}
}

func TestAddCRDConflicts(t *testing.T) {
	t.Parallel()
	crd := func(name, group, plural, kind string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: group,
				Scope: apiextensionsv1.ClusterScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}},
				}},
			},
		}
	}
	approved := func(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
		crd.Annotations = map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1111"}
		return crd
	}
	tests := []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want string
	}{
		{name: "same CRD twice", crd: crd("widgets.example.com", "example.com", "widgets", "Widget"), want: "already in the catalog"},
		{name: "kind taken", crd: crd("things.example.com", "example.com", "things", "Widget"), want: "kind Widget is already defined by CustomResourceDefinition widgets.example.com"},
		{name: "built-in group", crd: approved(crd("things.events.k8s.io", "events.k8s.io", "things", "Thing")), want: `group "events.k8s.io" is a built-in API group`},
		{name: "nil", want: "nil CustomResourceDefinition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := withCRDs(t)
			err := c.AddCRD(tt.crd)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("AddCRD() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// limitCRD is a namespaced CRD of rules.example.com with the versions given, each with the
// integer field spec.max, served under its spec names once accepted.
func limitCRD(kind string, accepted bool, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "limits.rules.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "rules.example.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "limits", Singular: "limit", Kind: kind, ListKind: kind + "List"},
		},
	}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: i == 0,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"max": {Type: "integer"}},
				}},
			}},
		})
	}
	if accepted {
		crd.Status.AcceptedNames = crd.Spec.Names
	}
	return crd
}

func TestSetCRD(t *testing.T) {
	t.Parallel()
	c := withCRDs(t)
	limits := gvr("rules.example.com", "v1", "limits")
	if err := c.SetCRD(limitCRD("Limit", true, "v1")); err != nil {
		t.Fatalf("SetCRD(limits) = %v", err)
	}
	if got := c.KindFor(limits, ""); got != gvk("rules.example.com", "v1", "Limit") {
		t.Errorf("KindFor(limits) = %v, want rules.example.com/v1 Limit", got)
	}
	m, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: "rules.example.com", Kind: "Limit"}, "v1")
	if err != nil || m.Resource != limits || m.Scope.Name() != "namespace" {
		t.Errorf("RESTMapping(Limit.rules.example.com) = %v, %v, want namespaced limits", m, err)
	}
	// Asked again (the mapper keeps what it gave), the mapping is the same, not the copy a
	// caller changed.
	m.Resource.Resource = "changed"
	if again, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: "rules.example.com", Kind: "Limit"}, "v1"); err != nil || again.Resource != limits {
		t.Errorf("RESTMapping(Limit.rules.example.com) again = %v, %v, want limits", again, err)
	}
	s, err := c.Resolver().ResolveSchema(gvk("rules.example.com", "v1", "Limit"))
	if err != nil {
		t.Fatalf("ResolveSchema(Limit) = %v", err)
	}
	if got, ok := field(s, "spec", "max"); !ok || got != "integer" {
		t.Errorf("ResolveSchema(Limit) spec.max type = %q (found %v), want integer", got, ok)
	}

	// An update replaces it: a new version, a new kind the server accepted.
	if err := c.SetCRD(limitCRD("Quota", true, "v2", "v1")); err != nil {
		t.Fatalf("SetCRD(limits, v2) = %v", err)
	}
	if got := c.KindFor(gvr("rules.example.com", "v2", "limits"), ""); got != gvk("rules.example.com", "v2", "Quota") {
		t.Errorf("after the update, KindFor(limits v2) = %v, want rules.example.com/v2 Quota", got)
	}
	want := []schema.GroupVersionResource{gvr("rules.example.com", "v2", "limits"), limits}
	if diff := cmp.Diff(want, c.EquivalentResources(limits, "")); diff != "" {
		t.Errorf("after the update, EquivalentResources(limits) mismatch (-want +got):\n%s", diff)
	}
	if _, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: "rules.example.com", Kind: "Limit"}, "v1"); err == nil {
		t.Errorf("after the update, RESTMapping(Limit) found the kind the update renamed")
	}

	// Names not accepted yet: the resources keep those the server serves.
	pending := limitCRD("Cap", false, "v1")
	pending.Status.AcceptedNames = limitCRD("Quota", true).Spec.Names
	if err := c.SetCRD(pending); err != nil {
		t.Fatalf("SetCRD(limits, Cap pending) = %v", err)
	}
	if got := c.KindFor(limits, ""); got != gvk("rules.example.com", "v1", "Quota") {
		t.Errorf("with spec.names.kind Cap not accepted, KindFor(limits) = %v, want the accepted Quota", got)
	}

	if !c.RemoveCRD("limits.rules.example.com") {
		t.Fatalf("RemoveCRD(limits.rules.example.com) = false, want true")
	}
	if c.RemoveCRD("limits.rules.example.com") {
		t.Errorf("RemoveCRD twice = true, want false")
	}
	if got := c.KindFor(limits, ""); !got.Empty() {
		t.Errorf("after RemoveCRD, KindFor(limits) = %v, want none", got)
	}
	if _, err := c.Resolver().ResolveSchema(gvk("rules.example.com", "v1", "Quota")); !errors.Is(err, errSchemaNotFound) {
		t.Errorf("after RemoveCRD, ResolveSchema(Quota) = %v, want ErrSchemaNotFound", err)
	}
	// The other CRDs stay.
	if got := c.KindFor(gvr("example.com", "v1", "widgets"), ""); got != gvk("example.com", "v1", "Widget") {
		t.Errorf("after RemoveCRD(limits), KindFor(widgets) = %v, want example.com/v1 Widget", got)
	}
	if _, err := c.Resolver().ResolveSchema(gvk("example.com", "v1", "Widget")); err != nil {
		t.Errorf("after RemoveCRD(limits), ResolveSchema(Widget) = %v", err)
	}
}

func TestSetCRDErrors(t *testing.T) {
	t.Parallel()
	c := withCRDs(t)
	clash := limitCRD("Widget", true, "v1")
	clash.Name, clash.Spec.Group = "limits.example.com", "example.com"
	clash.Status.AcceptedNames.Plural = "limits"
	if err := c.SetCRD(clash); err == nil || !strings.Contains(err.Error(), "kind Widget is already defined by CustomResourceDefinition widgets.example.com") {
		t.Errorf("SetCRD(kind Widget again) = %v, want a conflict", err)
	}
	if _, ok := c.Resource(gvr("example.com", "v1", "limits"), ""); ok {
		t.Errorf("after a refused SetCRD, the catalog has its resource")
	}
	renamed := limitCRD("Limit", true, "v1")
	renamed.Status.AcceptedNames.Plural = "caps"
	if err := c.SetCRD(renamed); err == nil || !strings.Contains(err.Error(), "the name is not caps.rules.example.com") {
		t.Errorf("SetCRD(accepted plural caps) = %v, want a name error", err)
	}
	if err := c.SetCRD(nil); err == nil {
		t.Errorf("SetCRD(nil) = nil, want an error")
	}
}

func TestCatalogClone(t *testing.T) {
	t.Parallel()
	c := withCRDs(t)
	clone := c.Clone()
	if err := clone.SetCRD(limitCRD("Limit", true, "v1")); err != nil {
		t.Fatal(err)
	}
	if !clone.RemoveCRD("widgets.example.com") {
		t.Fatalf("clone.RemoveCRD(widgets.example.com) = false")
	}
	for _, tc := range []struct {
		name string
		c    *vschema.Catalog
		gvr  schema.GroupVersionResource
		want bool
	}{
		{"original keeps widgets", c, gvr("example.com", "v1", "widgets"), true},
		{"original lacks limits", c, gvr("rules.example.com", "v1", "limits"), false},
		{"clone lacks widgets", clone, gvr("example.com", "v1", "widgets"), false},
		{"clone has limits", clone, gvr("rules.example.com", "v1", "limits"), true},
		{"clone keeps gadgets", clone, gvr("example.com", "v1", "gadgets"), true},
	} {
		if got := !tc.c.KindFor(tc.gvr, "").Empty(); got != tc.want {
			t.Errorf("%s: KindFor(%v) found = %v, want %v", tc.name, tc.gvr, got, tc.want)
		}
	}
	if _, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Widget"}); err != nil {
		t.Errorf("original RESTMapping(Widget) = %v after the clone changed", err)
	}
}

// TestCustomResourceConversion: a custom resource stored as v1 and served in v1beta1 by the
// strategy None: its apiVersion changed, what v1beta1's schema does not allow pruned, nothing
// defaulted. One written through v1beta1 and served as v1 is what the server stored, defaulted
// by v1's schema as the server reads it. A CRD that converts by a webhook does not convert.
func TestCustomResourceConversion(t *testing.T) {
	c := withCRDs(t)
	props := func(names ...string) apiextensionsv1.JSONSchemaProps {
		spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
		for _, n := range names {
			spec.Properties[n] = apiextensionsv1.JSONSchemaProps{Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"` + n + `-default"`)}}
		}
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}
	}
	version := func(name string, storage bool, schema apiextensionsv1.JSONSchemaProps) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &schema}}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.conv.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "conv.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", true, props("size", "color")), version("v1beta1", false, props("size"))}},
	}
	if err := c.AddCRD(crd); err != nil {
		t.Fatal(err)
	}
	beta := schema.GroupVersionKind{Group: "conv.example.com", Version: "v1beta1", Kind: "Gizmo"}
	convert, ok := c.CustomResourceConversion(beta)
	if !ok {
		t.Fatal("gizmos convert with the strategy None, and v1beta1 has a schema: want a conversion")
	}
	obj := map[string]any{"apiVersion": "conv.example.com/v1", "kind": "Gizmo", "metadata": map[string]any{"name": "g"},
		"spec": map[string]any{"size": "small", "color": "red"}}
	if err := convert(obj); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"apiVersion": "conv.example.com/v1beta1", "kind": "Gizmo", "metadata": map[string]any{"name": "g"},
		"spec": map[string]any{"size": "small"}}
	if d := cmp.Diff(want, obj); d != "" {
		t.Errorf("converted (-want +got):\n%s", d)
	}
	if err := convert(map[string]any{"apiVersion": "other.example.com/v1", "kind": "Gizmo", "spec": map[string]any{}}); err == nil {
		t.Errorf("an object of another group converted: want an error")
	}
	toV1, ok := c.CustomResourceConversion(schema.GroupVersionKind{Group: "conv.example.com", Version: "v1", Kind: "Gizmo"})
	if !ok {
		t.Fatal("gizmos convert to v1: want a conversion")
	}
	written := map[string]any{"apiVersion": "conv.example.com/v1beta1", "kind": "Gizmo", "metadata": map[string]any{"name": "g"},
		"spec": map[string]any{"size": "small"}}
	if err := toV1(written); err != nil {
		t.Fatal(err)
	}
	want = map[string]any{"apiVersion": "conv.example.com/v1", "kind": "Gizmo", "metadata": map[string]any{"name": "g"},
		"spec": map[string]any{"size": "small", "color": "color-default"}}
	if d := cmp.Diff(want, written); d != "" {
		t.Errorf("written through v1beta1, read as v1 (-want +got):\n%s", d)
	}

	hooked := crd.DeepCopy()
	hooked.Name = "gizmos.hooked.example.com"
	hooked.Spec.Group = "hooked.example.com"
	url := "https://convert.example.com"
	hooked.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &url}, ConversionReviewVersions: []string{"v1"}}}
	if err := c.AddCRD(hooked); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.CustomResourceConversion(schema.GroupVersionKind{Group: "hooked.example.com", Version: "v1beta1", Kind: "Gizmo"}); ok {
		t.Error("a CRD that converts by a webhook: want no conversion")
	}
}
