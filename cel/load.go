package cel

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/cel/manifest"
)

// Locator maps a field path of a policy or binding, and a character inside an expression, to
// the source that wrote it: a YAML file, or the Go code of a policy authored with vapc.
type Locator interface {
	// FieldPos returns the position of the field, or of its nearest existing parent.
	FieldPos(path string) manifest.Position
	// ExprPos returns the position of the character at (line 1-based, col 0-based, in
	// characters) of the string at the field path.
	ExprPos(path string, line, col int) manifest.Position
}

// Policy is a ValidatingAdmissionPolicy with where it came from.
type Policy struct {
	*admissionregistrationv1.ValidatingAdmissionPolicy
	Source Locator
}

// Binding is a ValidatingAdmissionPolicyBinding with where it came from.
type Binding struct {
	*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	Source Locator
}

// MutatingPolicy is a MutatingAdmissionPolicy with where it came from.
type MutatingPolicy struct {
	*admissionregistrationv1.MutatingAdmissionPolicy
	Source Locator
}

// MutatingBinding is a MutatingAdmissionPolicyBinding with where it came from.
type MutatingBinding struct {
	*admissionregistrationv1.MutatingAdmissionPolicyBinding
	Source Locator
}

// GroupVersion of the objects vapc checks and evaluates.
var (
	policyGVK          = admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy")
	bindingGVK         = admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding")
	mutatingPolicyGVK  = admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy")
	mutatingBindingGVK = admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding")
)

// Set is what a group of manifests holds: policies, bindings and any other objects.
type Set struct {
	Policies []*Policy
	Bindings []*Binding
	// MutatingPolicies and MutatingBindings are the MutatingAdmissionPolicies and their
	// bindings.
	MutatingPolicies []*MutatingPolicy
	MutatingBindings []*MutatingBinding
	// Others are documents that are neither policies nor bindings (cluster objects, CRDs).
	Others []*manifest.Document
}

// OrphanBindings returns the bindings of the set whose policy is not in the set. The server
// accepts them: such a binding does nothing until its policy exists.
func (s *Set) OrphanBindings() []*Binding {
	names := map[string]bool{}
	for _, p := range s.Policies {
		names[p.Name] = true
	}
	var out []*Binding
	for _, b := range s.Bindings {
		if b.Spec.PolicyName != "" && !names[b.Spec.PolicyName] {
			out = append(out, b)
		}
	}
	return out
}

// MutatingPolicyList returns the MutatingAdmissionPolicies of the set, without their sources.
func (s *Set) MutatingPolicyList() []*admissionregistrationv1.MutatingAdmissionPolicy {
	out := make([]*admissionregistrationv1.MutatingAdmissionPolicy, len(s.MutatingPolicies))
	for i, p := range s.MutatingPolicies {
		out[i] = p.MutatingAdmissionPolicy
	}
	return out
}

// MutatingBindingList returns the MutatingAdmissionPolicyBindings of the set, without their
// sources.
func (s *Set) MutatingBindingList() []*admissionregistrationv1.MutatingAdmissionPolicyBinding {
	out := make([]*admissionregistrationv1.MutatingAdmissionPolicyBinding, len(s.MutatingBindings))
	for i, b := range s.MutatingBindings {
		out[i] = b.MutatingAdmissionPolicyBinding
	}
	return out
}

// UnboundPolicies returns the policies of the set that no binding of the set binds. Such a
// policy decides nothing.
func (s *Set) UnboundPolicies() []*Policy {
	bound := map[string]bool{}
	for _, b := range s.Bindings {
		bound[b.Spec.PolicyName] = true
	}
	var out []*Policy
	for _, p := range s.Policies {
		if !bound[p.Name] {
			out = append(out, p)
		}
	}
	return out
}

// Decode sorts documents into policies, bindings and other objects, the items of a List as
// documents of their own. Documents of the
// admissionregistration group that are not v1 policies or bindings, and policies or bindings
// that do not decode strictly, are reported as diagnostics.
func Decode(docs []*manifest.Document) (*Set, Diagnostics) {
	set := &Set{}
	var diags Diagnostics
	for len(docs) > 0 {
		d := docs[0]
		docs = docs[1:]
		// A List (kubectl get -o yaml of several objects) stands for its items.
		if items, ok, err := d.Items(); ok {
			diags = append(diags, inputDiagnostics(err, d)...)
			docs = append(items, docs...)
			continue
		}
		gvk := d.GroupVersionKind()
		switch {
		case gvk == policyGVK:
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			if err := d.Decode(p); err != nil {
				diags = append(diags, inputDiagnostics(err, d)...)
				continue
			}
			set.Policies = append(set.Policies, &Policy{ValidatingAdmissionPolicy: p, Source: d})
		case gvk == bindingGVK:
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			if err := d.Decode(b); err != nil {
				diags = append(diags, inputDiagnostics(err, d)...)
				continue
			}
			set.Bindings = append(set.Bindings, &Binding{ValidatingAdmissionPolicyBinding: b, Source: d})
		case gvk == mutatingPolicyGVK:
			p := &admissionregistrationv1.MutatingAdmissionPolicy{}
			if err := d.Decode(p); err != nil {
				diags = append(diags, inputDiagnostics(err, d)...)
				continue
			}
			set.MutatingPolicies = append(set.MutatingPolicies, &MutatingPolicy{MutatingAdmissionPolicy: p, Source: d})
		case gvk == mutatingBindingGVK:
			b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
			if err := d.Decode(b); err != nil {
				diags = append(diags, inputDiagnostics(err, d)...)
				continue
			}
			set.MutatingBindings = append(set.MutatingBindings, &MutatingBinding{MutatingAdmissionPolicyBinding: b, Source: d})
		case gvk.Group == admissionregistrationv1.GroupName && (gvk.Kind == policyGVK.Kind || gvk.Kind == bindingGVK.Kind || gvk.Kind == mutatingPolicyGVK.Kind || gvk.Kind == mutatingBindingGVK.Kind):
			diags = append(diags, Diagnostic{
				Pos: d.FieldPos("apiVersion"), Field: "apiVersion", Severity: Error, Category: CategoryInput,
				Message: fmt.Sprintf("unsupported apiVersion %q for %s: vapc checks %s", gvk.GroupVersion(), gvk.Kind, admissionregistrationv1.SchemeGroupVersion),
			})
		default:
			set.Others = append(set.Others, d)
		}
	}
	return set, diags
}

// PolicyKinds says what a policy file holds and where to find them, for the hints of inputs
// that hold none.
const PolicyKinds = "ValidatingAdmissionPolicies, MutatingAdmissionPolicies and their bindings (admissionregistration.k8s.io/v1); kubectl get validatingadmissionpolicies,validatingadmissionpolicybindings,mutatingadmissionpolicies,mutatingadmissionpolicybindings -o yaml writes those of a cluster, vapc emit those of Go code"

// ReadPaths reads and decodes the manifests in files and folders ("-" is stdin). An empty file
// is an error whose hint says what a policy file holds.
func ReadPaths(stdin io.Reader, paths ...string) (*Set, Diagnostics) {
	docs, err := manifest.ReadPaths(stdin, paths...)
	set, diags := Decode(docs)
	in := inputDiagnostics(err, nil)
	for i, e := range joined(err) {
		if manifest.IsEmpty(e) {
			in[i].Hint = "a policy file holds " + PolicyKinds
		}
	}
	return set, append(in, diags...)
}

// joined returns the errors of err, one for each of errors.Join's.
func joined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// InputDiagnostics turns the errors of reading inputs (manifest files, CRD files: errors
// joined, each a *manifest.Error at its position or a path that cannot be read) into error
// diagnostics of the category input.
func InputDiagnostics(err error) Diagnostics { return inputDiagnostics(err, nil) }

// inputDiagnostics turns errors from reading manifests into diagnostics.
func inputDiagnostics(err error, doc *manifest.Document) Diagnostics {
	if err == nil {
		return nil
	}
	var out Diagnostics
	for _, e := range joined(err) {
		d := Diagnostic{Severity: Error, Category: CategoryInput, Message: e.Error()}
		var me *manifest.Error
		var pe *fs.PathError
		switch {
		case errors.As(e, &me):
			d.Pos, d.Field, d.Message = me.Pos, me.Field, me.Msg
		case errors.As(e, &pe):
			// a file or folder that cannot be read: name it, not the system call
			d.Pos, d.Message = manifest.Position{File: pe.Path}, pe.Err.Error()
		case doc != nil:
			d.Pos = doc.Pos()
		}
		out = append(out, d)
	}
	return out
}

// gvkOf parses a paramKind into a GroupVersionKind; ok is false when it cannot be parsed.
func gvkOf(pk *admissionregistrationv1.ParamKind) (schema.GroupVersionKind, bool) {
	if pk == nil {
		return schema.GroupVersionKind{}, false
	}
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil || pk.Kind == "" {
		return schema.GroupVersionKind{}, false
	}
	return gv.WithKind(pk.Kind), true
}
