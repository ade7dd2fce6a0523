package suite

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vapc-dev/vapc/cel/manifest"
	"github.com/vapc-dev/vapc/verify"
)

// Resolved is a suite resolved to what a real cluster needs to reproduce it: the documents of
// its policies and its cases as admission requests with their cluster objects. The end-to-end
// tests send every case to a real kube-apiserver with it.
type Resolved struct {
	// Policies are the documents of the suite's policy files (policies, bindings, and any
	// other objects in them), vapc.dev documents left out.
	Policies []*unstructured.Unstructured
	// Cases are the suite's cases, in order.
	Cases []ResolvedCase
}

// ResolvedCase is one case as the evaluator runs it.
type ResolvedCase struct {
	Case *Case
	// Request is the admission request the evaluator decides; Err says why it could not be
	// built.
	Request verify.Request
	Err     error
	// Objects are the cluster objects of the case: the suite's objects (its object files and
	// the non-policy documents of its policy files) with the case's objects replacing those of
	// the same kind, namespace and name.
	Objects []*unstructured.Unstructured
}

// Resolve reads the suite's policies and objects and builds the request of every case.
func (s *Suite) Resolve() (*Resolved, error) {
	e, err := s.load()
	if err != nil {
		return nil, &SuiteError{err}
	}
	var paths []string
	for _, p := range s.Policies {
		paths = append(paths, s.path(p))
	}
	docs, err := manifest.ReadPaths(nil, paths...)
	if err != nil {
		return nil, &SuiteError{err}
	}
	out := &Resolved{}
	var base []*unstructured.Unstructured
	for _, d := range docs {
		if d.GroupVersionKind().Group == "vapc.dev" {
			continue
		}
		out.Policies = append(out.Policies, d.Object)
		switch d.Object.GetKind() {
		case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
		default:
			base = append(base, d.Object)
		}
	}
	var objPaths []string
	for _, p := range s.Objects {
		objPaths = append(objPaths, s.path(p))
	}
	if len(objPaths) > 0 {
		docs, err := manifest.ReadPaths(nil, objPaths...)
		if err != nil {
			return nil, &SuiteError{err}
		}
		for _, d := range docs {
			base = append(base, d.Object)
		}
	}
	for i := range s.Cases {
		c := &s.Cases[i]
		rc := ResolvedCase{Case: c}
		var over []*unstructured.Unstructured
		for j, raw := range c.Objects {
			u, err := objectOf(raw)
			if err != nil {
				rc.Err = fmt.Errorf("objects[%d]: %w", j, err)
			}
			over = append(over, u)
		}
		rc.Objects = overlay(base, over)
		if rc.Err == nil {
			rc.Request, rc.Err = e.request(s, c)
		}
		out.Cases = append(out.Cases, rc)
	}
	return out, nil
}

// overlay returns base with the objects of over replacing those of the same kind, namespace
// and name, and a later object of base replacing an earlier one, as the case's store does.
func overlay(base, over []*unstructured.Unstructured) []*unstructured.Unstructured {
	key := func(u *unstructured.Unstructured) string {
		return u.GroupVersionKind().GroupKind().String() + "/" + u.GetNamespace() + "/" + u.GetName()
	}
	// A later object replaces an earlier one of the same key, as in the case's store.
	last := map[string]int{}
	all := append(append([]*unstructured.Unstructured(nil), base...), over...)
	for i, u := range all {
		if u != nil {
			last[key(u)] = i
		}
	}
	var out []*unstructured.Unstructured
	for i, u := range all {
		if u != nil && last[key(u)] == i {
			out = append(out, u.DeepCopy())
		}
	}
	return out
}
