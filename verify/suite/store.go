package suite

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/vapc-dev/vapc/verify"
)

// overlayStore is the suite's objects with a case's objects on top. Cases run one at a time;
// overlay is set before each.
type overlayStore struct {
	base    *verify.MemoryStore
	overlay *verify.MemoryStore
}

func (s *overlayStore) Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	if s.overlay != nil {
		if o, err := s.overlay.Get(gvr, namespace, name); err == nil {
			return o, nil
		}
	}
	return s.base.Get(gvr, namespace, name)
}

func (s *overlayStore) List(gvr schema.GroupVersionResource, namespace string, selector labels.Selector) ([]runtime.Object, error) {
	base, err := s.base.List(gvr, namespace, selector)
	if err != nil || s.overlay == nil {
		return base, err
	}
	over, err := s.overlay.List(gvr, namespace, selector)
	if err != nil {
		return nil, err
	}
	replaced := map[[2]string]bool{}
	// An object the case replaces may no longer match the selector: hide the suite's copy
	// whatever its labels.
	all, err := s.overlay.List(gvr, namespace, labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, o := range all {
		if m, err := meta.Accessor(o); err == nil {
			replaced[[2]string{m.GetNamespace(), m.GetName()}] = true
		}
	}
	var out []runtime.Object
	for _, o := range base {
		if m, err := meta.Accessor(o); err == nil && replaced[[2]string{m.GetNamespace(), m.GetName()}] {
			continue
		}
		out = append(out, o)
	}
	out = append(out, over...)
	sortByKey(out)
	return out, nil
}

func sortByKey(objs []runtime.Object) {
	key := func(o runtime.Object) string {
		m, err := meta.Accessor(o)
		if err != nil {
			return ""
		}
		return m.GetNamespace() + "/" + m.GetName()
	}
	for i := 1; i < len(objs); i++ {
		for j := i; j > 0 && key(objs[j]) < key(objs[j-1]); j-- {
			objs[j], objs[j-1] = objs[j-1], objs[j]
		}
	}
}

// switchAuthorizer answers with the current case's authorizer.
type switchAuthorizer struct {
	current authorizer.UnconditionalAuthorizer
}

func (s *switchAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	return s.current.Authorize(ctx, a)
}
