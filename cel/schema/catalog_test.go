package schema_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vschema "github.com/vapc-dev/vapc/cel/schema"
)

var (
	builtinOnce sync.Once
	builtin137  *vschema.Catalog
	builtinErr  error
)

// builtin returns a shared catalog of Kubernetes 1.37 without CRDs; tests must not add any.
func builtin(t testing.TB) *vschema.Catalog {
	t.Helper()
	builtinOnce.Do(func() { builtin137, builtinErr = vschema.Builtin("1.37") })
	if builtinErr != nil {
		t.Fatalf("Builtin(1.37) = %v", builtinErr)
	}
	return builtin137
}

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

func TestBuiltinVersions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version string
		want    string // the catalog's Version, or an error fragment
		wantErr bool
	}{
		{version: "1.37", want: "1.37"},
		{version: "v1.37", want: "1.37"},
		{version: "1.37.4", want: "1.37"},
		{version: "1.36", want: "supported versions are 1.37", wantErr: true},
		{version: "1.38", want: "supported versions are 1.37", wantErr: true},
		{version: "latest", want: `invalid Kubernetes version "latest"`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			t.Parallel()
			c, err := vschema.Builtin(tt.version)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Builtin(%q) = %v, want an error containing %q", tt.version, err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Builtin(%q) = %v", tt.version, err)
			}
			if got := c.Version(); got != tt.want {
				t.Errorf("Builtin(%q).Version() = %q, want %q", tt.version, got, tt.want)
			}
		})
	}
	if diff := cmp.Diff([]string{"1.37"}, vschema.SupportedVersions()); diff != "" {
		t.Errorf("SupportedVersions() mismatch (-want +got):\n%s", diff)
	}
}

func TestWithGroupVersionsUnknown(t *testing.T) {
	t.Parallel()
	_, err := vschema.Builtin("1.37", vschema.WithGroupVersions(schema.GroupVersion{Group: "apps", Version: "v1beta1"}))
	if err == nil || !strings.Contains(err.Error(), "apps/v1beta1") {
		t.Fatalf("Builtin(1.37, WithGroupVersions(apps/v1beta1)) = %v, want an error naming apps/v1beta1", err)
	}
}

func TestResource(t *testing.T) {
	t.Parallel()
	allVersions, err := vschema.Builtin("1.37", vschema.WithAllVersions())
	if err != nil {
		t.Fatal(err)
	}
	mapEnabled, err := vschema.Builtin("1.37", vschema.WithGroupVersions(schema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1alpha1"}))
	if err != nil {
		t.Fatal(err)
	}
	allVerbs := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	tests := []struct {
		name        string
		catalog     *vschema.Catalog
		gvr         schema.GroupVersionResource
		subresource string
		want        vschema.ResourceInfo
		wantOK      bool
	}{
		{
			name: "pods",
			gvr:  gvr("", "v1", "pods"),
			want: vschema.ResourceInfo{
				Kind: gvk("", "v1", "Pod"), Namespaced: true, Verbs: allVerbs,
				Subresources: []string{"attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "portforward", "proxy", "resize", "status"},
				Served:       true, ServedByDefault: true,
			},
			wantOK: true,
		},
		{
			name: "nodes are cluster-scoped",
			gvr:  gvr("", "v1", "nodes"),
			want: vschema.ResourceInfo{
				Kind: gvk("", "v1", "Node"), Verbs: allVerbs, Subresources: []string{"proxy", "status"},
				Served: true, ServedByDefault: true,
			},
			wantOK: true,
		},
		{
			name: "pods/eviction carries a policy/v1 Eviction", gvr: gvr("", "v1", "pods"), subresource: "eviction",
			want:   vschema.ResourceInfo{Kind: gvk("policy", "v1", "Eviction"), Namespaced: true, Verbs: []string{"create"}, Served: true, ServedByDefault: true},
			wantOK: true,
		},
		{
			name: "pods/status carries a Pod", gvr: gvr("", "v1", "pods"), subresource: "status",
			want:   vschema.ResourceInfo{Kind: gvk("", "v1", "Pod"), Namespaced: true, Verbs: []string{"get", "patch", "update"}, Served: true, ServedByDefault: true},
			wantOK: true,
		},
		{
			name: "pods/exec carries PodExecOptions", gvr: gvr("", "v1", "pods"), subresource: "exec",
			want:   vschema.ResourceInfo{Kind: gvk("", "v1", "PodExecOptions"), Namespaced: true, Verbs: []string{"create", "get"}, Served: true, ServedByDefault: true},
			wantOK: true,
		},
		{
			name: "serviceaccounts/token carries an authentication/v1 TokenRequest", gvr: gvr("", "v1", "serviceaccounts"), subresource: "token",
			want:   vschema.ResourceInfo{Kind: gvk("authentication.k8s.io", "v1", "TokenRequest"), Namespaced: true, Verbs: []string{"create"}, Served: true, ServedByDefault: true},
			wantOK: true,
		},
		{
			name: "deployments/scale carries an autoscaling/v1 Scale", gvr: gvr("apps", "v1", "deployments"), subresource: "scale",
			want:   vschema.ResourceInfo{Kind: gvk("autoscaling", "v1", "Scale"), Namespaced: true, Verbs: []string{"get", "patch", "update"}, Served: true, ServedByDefault: true},
			wantOK: true,
		},
		{
			name: "namespaces/finalize", gvr: gvr("", "v1", "namespaces"), subresource: "finalize",
			want:   vschema.ResourceInfo{Kind: gvk("", "v1", "Namespace"), Verbs: []string{"update"}, Served: true, ServedByDefault: true},
			wantOK: true,
		},
		{
			name:   "tokenreviews are create-only",
			gvr:    gvr("authentication.k8s.io", "v1", "tokenreviews"),
			want:   vschema.ResourceInfo{Kind: gvk("authentication.k8s.io", "v1", "TokenReview"), Verbs: []string{"create"}, Served: true, ServedByDefault: true},
			wantOK: true,
		},
		{
			name:   "an alpha version is not served by default",
			gvr:    gvr("admissionregistration.k8s.io", "v1alpha1", "mutatingadmissionpolicies"),
			want:   vschema.ResourceInfo{Kind: gvk("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicy"), Verbs: allVerbs},
			wantOK: true,
		},
		{
			name:    "an alpha version is served with WithAllVersions",
			catalog: allVersions,
			gvr:     gvr("admissionregistration.k8s.io", "v1alpha1", "mutatingadmissionpolicies"),
			want:    vschema.ResourceInfo{Kind: gvk("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicy"), Verbs: allVerbs, Served: true},
			wantOK:  true,
		},
		{
			name:    "an alpha version is served with WithGroupVersions",
			catalog: mapEnabled,
			gvr:     gvr("admissionregistration.k8s.io", "v1alpha1", "mutatingadmissionpolicybindings"),
			want:    vschema.ResourceInfo{Kind: gvk("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicyBinding"), Verbs: allVerbs, Served: true},
			wantOK:  true,
		},
		{
			name:   "a beta version is not served by default",
			gvr:    gvr("resource.k8s.io", "v1beta2", "deviceclasses"),
			want:   vschema.ResourceInfo{Kind: gvk("resource.k8s.io", "v1beta2", "DeviceClass"), Verbs: allVerbs},
			wantOK: true,
		},
		{name: "unknown resource", gvr: gvr("", "v1", "widgets")},
		{name: "unknown subresource", gvr: gvr("", "v1", "pods"), subresource: "scale"},
		{name: "unknown group-version", gvr: gvr("apps", "v1beta1", "deployments")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.catalog
			if c == nil {
				c = builtin(t)
			}
			got, ok := c.Resource(tt.gvr, tt.subresource)
			if ok != tt.wantOK {
				t.Fatalf("Resource(%v, %q) ok = %v, want %v", tt.gvr, tt.subresource, ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resource(%v, %q) mismatch (-want +got):\n%s", tt.gvr, tt.subresource, diff)
			}
		})
	}
}

func TestEquivalentResources(t *testing.T) {
	t.Parallel()
	allVersions, err := vschema.Builtin("1.37", vschema.WithAllVersions())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		catalog     *vschema.Catalog
		gvr         schema.GroupVersionResource
		subresource string
		want        []schema.GroupVersionResource
	}{
		{
			name: "core events and events.k8s.io events share storage",
			gvr:  gvr("events.k8s.io", "v1", "events"),
			want: []schema.GroupVersionResource{gvr("", "v1", "events"), gvr("events.k8s.io", "v1", "events")},
		},
		{
			name: "horizontalpodautoscalers in priority order",
			gvr:  gvr("autoscaling", "v1", "horizontalpodautoscalers"),
			want: []schema.GroupVersionResource{gvr("autoscaling", "v2", "horizontalpodautoscalers"), gvr("autoscaling", "v1", "horizontalpodautoscalers")},
		},
		{
			name: "horizontalpodautoscalers/status", gvr: gvr("autoscaling", "v2", "horizontalpodautoscalers"), subresource: "status",
			want: []schema.GroupVersionResource{gvr("autoscaling", "v2", "horizontalpodautoscalers"), gvr("autoscaling", "v1", "horizontalpodautoscalers")},
		},
		{
			name: "deployments/scale", gvr: gvr("apps", "v1", "deployments"), subresource: "scale",
			want: []schema.GroupVersionResource{gvr("apps", "v1", "deployments")},
		},
		{
			name: "only served versions by default",
			gvr:  gvr("admissionregistration.k8s.io", "v1alpha1", "mutatingadmissionpolicies"),
			want: []schema.GroupVersionResource{gvr("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies")},
		},
		{
			name:    "every version with WithAllVersions",
			catalog: allVersions,
			gvr:     gvr("admissionregistration.k8s.io", "v1beta1", "mutatingadmissionpolicies"),
			want: []schema.GroupVersionResource{
				gvr("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies"),
				gvr("admissionregistration.k8s.io", "v1beta1", "mutatingadmissionpolicies"),
				gvr("admissionregistration.k8s.io", "v1alpha1", "mutatingadmissionpolicies"),
			},
		},
		{
			name: "a version that is not served still finds the served ones",
			gvr:  gvr("resource.k8s.io", "v1beta1", "resourceclaims"),
			want: []schema.GroupVersionResource{gvr("resource.k8s.io", "v1", "resourceclaims")},
		},
		{name: "unknown resource", gvr: gvr("", "v1", "widgets")},
		{name: "unknown subresource", gvr: gvr("", "v1", "pods"), subresource: "scale"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.catalog
			if c == nil {
				c = builtin(t)
			}
			got := c.EquivalentResources(tt.gvr, tt.subresource)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("EquivalentResources(%v, %q) mismatch (-want +got):\n%s", tt.gvr, tt.subresource, diff)
			}
		})
	}
}

func TestKindFor(t *testing.T) {
	t.Parallel()
	c := builtin(t)
	tests := []struct {
		gvr         schema.GroupVersionResource
		subresource string
		want        schema.GroupVersionKind
	}{
		{gvr: gvr("apps", "v1", "deployments"), want: gvk("apps", "v1", "Deployment")},
		{gvr: gvr("apps", "v1", "deployments"), subresource: "scale", want: gvk("autoscaling", "v1", "Scale")},
		{gvr: gvr("", "v1", "pods"), subresource: "eviction", want: gvk("policy", "v1", "Eviction")},
		{gvr: gvr("admissionregistration.k8s.io", "v1alpha1", "mutatingadmissionpolicies")}, // not served
		{gvr: gvr("", "v1", "widgets")},
	}
	for _, tt := range tests {
		if got := c.KindFor(tt.gvr, tt.subresource); got != tt.want {
			t.Errorf("KindFor(%v, %q) = %v, want %v", tt.gvr, tt.subresource, got, tt.want)
		}
	}
}

func TestRESTMapper(t *testing.T) {
	t.Parallel()
	allVersions, err := vschema.Builtin("1.37", vschema.WithAllVersions())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		catalog *vschema.Catalog
		in      schema.GroupVersionResource
		want    schema.GroupVersionKind
		wantErr bool
	}{
		{name: "plural", in: gvr("", "v1", "pods"), want: gvk("", "v1", "Pod")},
		{name: "singular", in: gvr("apps", "v1", "deployment"), want: gvk("apps", "v1", "Deployment")},
		{name: "no version", in: gvr("apps", "", "deployments"), want: gvk("apps", "v1", "Deployment")},
		{name: "preferred version", in: gvr("autoscaling", "", "horizontalpodautoscalers"), want: gvk("autoscaling", "v2", "HorizontalPodAutoscaler")},
		{name: "resource only prefers core", in: gvr("", "", "events"), want: gvk("", "v1", "Event")},
		{name: "alpha is not served", in: gvr("admissionregistration.k8s.io", "v1alpha1", "mutatingadmissionpolicies"), wantErr: true},
		{
			name: "alpha with WithAllVersions", catalog: allVersions,
			in:   gvr("admissionregistration.k8s.io", "v1alpha1", "mutatingadmissionpolicies"),
			want: gvk("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicy"),
		},
		{name: "subresources are not resources", in: gvr("", "v1", "pods/status"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.catalog
			if c == nil {
				c = builtin(t)
			}
			got, err := c.RESTMapper().KindFor(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("KindFor(%v) = %v, want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("KindFor(%v) = %v, %v, want %v", tt.in, got, err, tt.want)
			}
		})
	}

	scopes := []struct {
		gk   schema.GroupKind
		want meta.RESTScopeName
		gvr  schema.GroupVersionResource
	}{
		{gk: schema.GroupKind{Kind: "Pod"}, want: meta.RESTScopeNameNamespace, gvr: gvr("", "v1", "pods")},
		{gk: schema.GroupKind{Kind: "Node"}, want: meta.RESTScopeNameRoot, gvr: gvr("", "v1", "nodes")},
		{gk: schema.GroupKind{Group: "apps", Kind: "Deployment"}, want: meta.RESTScopeNameNamespace, gvr: gvr("apps", "v1", "deployments")},
		{gk: schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}, want: meta.RESTScopeNameRoot, gvr: gvr("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")},
	}
	for _, tt := range scopes {
		m, err := builtin(t).RESTMapper().RESTMapping(tt.gk)
		if err != nil {
			t.Errorf("RESTMapping(%v) = %v", tt.gk, err)
			continue
		}
		if m.Scope.Name() != tt.want || m.Resource != tt.gvr {
			t.Errorf("RESTMapping(%v) = %v %v, want %v %v", tt.gk, m.Resource, m.Scope.Name(), tt.gvr, tt.want)
		}
	}
}

func TestGroupVersions(t *testing.T) {
	t.Parallel()
	served := map[schema.GroupVersion]bool{}
	var order []schema.GroupVersion
	for _, gv := range builtin(t).GroupVersions() {
		if gv.Served != gv.ServedByDefault || gv.Custom {
			t.Errorf("GroupVersions(): %v Served = %v, ServedByDefault = %v, Custom = %v", gv.GroupVersion, gv.Served, gv.ServedByDefault, gv.Custom)
		}
		served[gv.GroupVersion] = gv.Served
		order = append(order, gv.GroupVersion)
	}
	want := map[schema.GroupVersion]bool{
		{Version: "v1"}:                                              true,
		{Group: "apps", Version: "v1"}:                               true,
		{Group: "autoscaling", Version: "v2"}:                        true,
		{Group: "resource.k8s.io", Version: "v1"}:                    true,
		{Group: "resource.k8s.io", Version: "v1beta2"}:               false,
		{Group: "admissionregistration.k8s.io", Version: "v1alpha1"}: false,
		{Group: "internal.apiserver.k8s.io", Version: "v1alpha1"}:    false,
		{Group: "lifecycle.k8s.io", Version: "v1alpha1"}:             false,
	}
	for gv, w := range want {
		got, ok := served[gv]
		if !ok || got != w {
			t.Errorf("GroupVersions(): %v served = %v (listed %v), want %v", gv, got, ok, w)
		}
	}
	if len(order) < 3 || order[0] != (schema.GroupVersion{Version: "v1"}) || order[1].Group != "apiregistration.k8s.io" || order[2].Group != "apps" {
		t.Errorf("GroupVersions() starts with %v, want v1, apiregistration.k8s.io/v1, apps/v1 (discovery order)", order[:3])
	}
}

func TestResolverNotFound(t *testing.T) {
	t.Parallel()
	for _, k := range []schema.GroupVersionKind{
		gvk("", "v1", "Widget"),
		gvk("example.com", "v1", "Widget"),
		gvk("apps", "v1beta1", "Deployment"),
	} {
		_, err := builtin(t).Resolver().ResolveSchema(k)
		if !errors.Is(err, errSchemaNotFound) {
			t.Errorf("ResolveSchema(%v) = %v, want an error wrapping ErrSchemaNotFound", k, err)
		}
	}
}
