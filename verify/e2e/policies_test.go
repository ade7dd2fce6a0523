package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/manifest"
)

// policySet is what a test installs on the server and gives the replay: the same objects.
type policySet struct {
	policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// mutating and mutatingBindings are MutatingAdmissionPolicies the replay runs itself.
	mutating         []*admissionregistrationv1.MutatingAdmissionPolicy
	mutatingBindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
}

// without is the set without the policy named, nor its bindings.
func (s policySet) without(name string) policySet {
	out := policySet{mutating: s.mutating, mutatingBindings: s.mutatingBindings}
	for _, p := range s.policies {
		if p.Name != name {
			out.policies = append(out.policies, p)
		}
	}
	for _, b := range s.bindings {
		if b.Spec.PolicyName != name {
			out.bindings = append(out.bindings, b)
		}
	}
	return out
}

// inTreeGuards reads the emitted guards of policies/ (every *.yaml directly in it; vapc.dev
// documents such as the settings are not for the server) and binds each guard twice: its
// binding re-bound with [Deny, Audit], and a copy named <binding>-audit with [Audit].
func inTreeGuards(t *testing.T) policySet {
	t.Helper()
	files, err := filepath.Glob("../../policies/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	set := readPolicies(t, files...)
	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, b := range set.bindings {
		deny := b.DeepCopy()
		deny.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}
		audit := b.DeepCopy()
		audit.Name += "-audit"
		audit.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
		bindings = append(bindings, deny, audit)
	}
	set.bindings = bindings
	return set
}

// readPolicies reads the policies and bindings of files; other documents fail the test.
func readPolicies(t *testing.T, files ...string) policySet {
	t.Helper()
	if len(files) == 0 {
		return policySet{}
	}
	docs, err := manifest.ReadPaths(nil, files...)
	if err != nil {
		t.Fatal(err)
	}
	var set policySet
	for _, d := range docs {
		if d.GroupVersionKind().Group == "vapc.dev" {
			continue
		}
		switch d.Object.GetKind() {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			fromUnstructured(t, d.Object, p)
			set.policies = append(set.policies, p)
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			fromUnstructured(t, d.Object, b)
			set.bindings = append(set.bindings, b)
		default:
			t.Fatalf("%s: a %s among the policies", d.Describe(), d.Object.GetKind())
		}
	}
	return set
}

func fromUnstructured(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func (p policySet) add(q policySet) policySet {
	return policySet{policies: append(append([]*admissionregistrationv1.ValidatingAdmissionPolicy(nil), p.policies...), q.policies...),
		bindings: append(append([]*admissionregistrationv1.ValidatingAdmissionPolicyBinding(nil), p.bindings...), q.bindings...)}
}

// install writes the policies, then the bindings, on the server.
func (c *cluster) install(ctx context.Context, set policySet) {
	c.t.Helper()
	for _, p := range set.policies {
		p = p.DeepCopy()
		p.TypeMeta.APIVersion, p.TypeMeta.Kind = "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"
		c.put(ctx, toUnstructured(c.t, p))
	}
	for _, b := range set.bindings {
		b = b.DeepCopy()
		b.TypeMeta.APIVersion, b.TypeMeta.Kind = "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"
		c.put(ctx, toUnstructured(c.t, b))
	}
}

// uninstall deletes the bindings, then the policies.
func (c *cluster) uninstall(ctx context.Context, set policySet) {
	c.t.Helper()
	for _, b := range set.bindings {
		c.remove(ctx, toUnstructured(c.t, withKind(b.DeepCopy())))
	}
	for _, p := range set.policies {
		p = p.DeepCopy()
		p.TypeMeta.APIVersion, p.TypeMeta.Kind = "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"
		c.remove(ctx, toUnstructured(c.t, p))
	}
}

// yamlDocs are the YAML documents of the set's policies and bindings, kinds set, as vapc
// --policies reads them.
func (set policySet) yamlDocs(t *testing.T) []string {
	t.Helper()
	typed := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: kind}
	}
	var docs []string
	for _, p := range set.policies {
		p = p.DeepCopy()
		p.TypeMeta = typed("ValidatingAdmissionPolicy")
		docs = append(docs, yamlOf(t, p))
	}
	for _, b := range set.bindings {
		docs = append(docs, yamlOf(t, withKind(b.DeepCopy())))
	}
	for _, p := range set.mutating {
		p = p.DeepCopy()
		p.TypeMeta = typed("MutatingAdmissionPolicy")
		docs = append(docs, yamlOf(t, p))
	}
	for _, b := range set.mutatingBindings {
		b = b.DeepCopy()
		b.TypeMeta = typed("MutatingAdmissionPolicyBinding")
		docs = append(docs, yamlOf(t, b))
	}
	return docs
}

// mapOrder is what cmd/vapc gives the replay of the set's policies: the expressions whose
// values vapc check's lint says may follow map order (cel.Checker.MapOrderOf).
func (set policySet) mapOrder(t *testing.T) cel.MapOrder {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policies.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(set.yamlDocs(t), "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	read, diags := cel.ReadPaths(nil, path)
	checker, err := cel.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	return checker.MapOrderOf(read, append(diags, checker.Check(read)...))
}

func withKind(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b.TypeMeta.APIVersion, b.TypeMeta.Kind = "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"
	return b
}
