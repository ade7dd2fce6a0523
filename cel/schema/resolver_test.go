package schema_test

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

var errSchemaNotFound = resolver.ErrSchemaNotFound

// field follows a dotted path of properties (and "[]" for array items) through a schema and
// returns the type of what it reaches.
func field(s *spec.Schema, path ...string) (string, bool) {
	for _, p := range path {
		if s == nil {
			return "", false
		}
		if p == "[]" {
			if s.Items == nil || s.Items.Schema == nil {
				return "", false
			}
			s = s.Items.Schema
			continue
		}
		prop, ok := s.Properties[p]
		if !ok {
			return "", false
		}
		s = &prop
	}
	if s == nil || len(s.Type) == 0 {
		return "", s != nil
	}
	return s.Type[0], true
}

func TestResolveSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		gvk  schema.GroupVersionKind
		path []string
		want string
	}{
		{name: "Pod spec.nodeName", gvk: gvk("", "v1", "Pod"), path: []string{"spec", "nodeName"}, want: "string"},
		{name: "Pod spec.containers[].image", gvk: gvk("", "v1", "Pod"), path: []string{"spec", "containers", "[]", "image"}, want: "string"},
		{name: "Pod metadata.labels", gvk: gvk("", "v1", "Pod"), path: []string{"metadata", "labels"}, want: "object"},
		{name: "Node status.conditions", gvk: gvk("", "v1", "Node"), path: []string{"status", "conditions"}, want: "array"},
		{name: "Node status.conditions[].type", gvk: gvk("", "v1", "Node"), path: []string{"status", "conditions", "[]", "type"}, want: "string"},
		{name: "Deployment spec.replicas", gvk: gvk("apps", "v1", "Deployment"), path: []string{"spec", "replicas"}, want: "integer"},
		{name: "Scale spec.replicas", gvk: gvk("autoscaling", "v1", "Scale"), path: []string{"spec", "replicas"}, want: "integer"},
		{name: "Eviction deleteOptions", gvk: gvk("policy", "v1", "Eviction"), path: []string{"deleteOptions", "gracePeriodSeconds"}, want: "integer"},
		{
			name: "an alpha kind resolves too", gvk: gvk("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicy"),
			path: []string{"spec", "mutations"}, want: "array",
		},
	}
	r := builtin(t).Resolver()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := r.ResolveSchema(tt.gvk)
			if err != nil {
				t.Fatalf("ResolveSchema(%v) = %v", tt.gvk, err)
			}
			got, ok := field(s, tt.path...)
			if !ok {
				t.Fatalf("ResolveSchema(%v) has no %v", tt.gvk, tt.path)
			}
			if got != tt.want {
				t.Errorf("ResolveSchema(%v) %v type = %q, want %q", tt.gvk, tt.path, got, tt.want)
			}
		})
	}
}

func TestResolveSchemaConcurrent(t *testing.T) {
	t.Parallel()
	r := builtin(t).Resolver()
	const n = 8
	results := make([]*spec.Schema, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = r.ResolveSchema(gvk("batch", "v1", "Job"))
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("ResolveSchema(batch/v1 Job) = %v", errs[i])
		}
		if diff := cmp.Diff(results[0].Properties["spec"].Type, results[i].Properties["spec"].Type); diff != "" {
			t.Errorf("concurrent ResolveSchema mismatch (-want +got):\n%s", diff)
		}
	}
}
