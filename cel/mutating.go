package cel

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vapc-dev/vapc/cel/defaults"
)

// MutatingAdmissionPolicies are checked with kube-apiserver's own create-time validation
// (k8s.io/kubernetes/pkg/apis/admissionregistration/validation, which also compiles every
// expression in the policy's CEL environment): the errors the server refuses them with, placed
// at their fields and characters. That validation lives in k8s.io/kubernetes, which this
// package does not require of the modules that import it: package cel/mutatingvalidation
// registers it (vapc's CLI imports it). The matchConditions and variables are then
// type-checked against the schemas of the matched kinds, as a validating policy's are; the
// mutations' expressions are compiled by the server's validation, not typed against the kinds.

// MutatingValidation functions default an object as the server stores it and validate it on
// create.
type (
	MutatingPolicyValidation  func(*admissionregistrationv1.MutatingAdmissionPolicy) (*admissionregistrationv1.MutatingAdmissionPolicy, field.ErrorList, error)
	MutatingBindingValidation func(*admissionregistrationv1.MutatingAdmissionPolicyBinding) (*admissionregistrationv1.MutatingAdmissionPolicyBinding, field.ErrorList, error)
)

var mutatingValidation struct {
	policy  MutatingPolicyValidation
	binding MutatingBindingValidation
}

// RegisterMutatingValidation sets the create-time validation of MutatingAdmissionPolicies and
// their bindings (see package cel/mutatingvalidation).
func RegisterMutatingValidation(policy MutatingPolicyValidation, binding MutatingBindingValidation) {
	mutatingValidation.policy, mutatingValidation.binding = policy, binding
}

const noMutatingValidation = "not validated: this program does not link kube-apiserver's validation of MutatingAdmissionPolicies (import github.com/vapc-dev/vapc/cel/mutatingvalidation)"

// CheckMutatingPolicy checks one MutatingAdmissionPolicy as kube-apiserver validates it on
// create: defaulted, converted to the internal version and validated.
func (c *Checker) CheckMutatingPolicy(p *MutatingPolicy) Diagnostics {
	r := &reporter{src: p.Source, object: "MutatingAdmissionPolicy/" + p.Name, place: managedFieldsSource(p.MutatingAdmissionPolicy, p.ManagedFields)}
	if c.notServed(r) {
		return r.diags
	}
	// The matchConditions and variables read the request as a validating policy's do: type
	// them the same way, on a validating policy with the same match and params.
	v := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: *p.ObjectMeta.DeepCopy(),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind:        p.Spec.ParamKind.DeepCopy(),
			MatchConstraints: p.Spec.MatchConstraints.DeepCopy(),
			MatchConditions:  append([]admissionregistrationv1.MatchCondition(nil), p.Spec.MatchConditions...),
			Variables:        append([]admissionregistrationv1.Variable(nil), p.Spec.Variables...),
			FailurePolicy:    p.Spec.FailurePolicy,
		},
	}
	r.hints = c.createHints(v)
	validate := func() map[string]bool {
		return validateMutating(r, p.MutatingAdmissionPolicy, mutatingValidation.policy, true)
	}
	if v.Spec.MatchConstraints == nil {
		validate()
		return r.diags
	}
	defaults.SetPolicyDefaults(v)
	c.validateAndTypeCheck(r, v, validate)
	return r.diags
}

// CheckMutatingBinding checks one MutatingAdmissionPolicyBinding as kube-apiserver validates it
// on create, and says when its policy is not among policies (nil: not checked).
func (c *Checker) CheckMutatingBinding(b *MutatingBinding, policies map[string]bool) Diagnostics {
	r := &reporter{src: b.Source, object: "MutatingAdmissionPolicyBinding/" + b.Name, place: managedFieldsSource(b.MutatingAdmissionPolicyBinding, b.ManagedFields)}
	if c.notServed(r) {
		return r.diags
	}
	validateMutating(r, b.MutatingAdmissionPolicyBinding, mutatingValidation.binding, false)
	if name := b.Spec.PolicyName; name != "" && policies != nil && !policies[name] {
		r.add(Warning, CategoryLint, "spec.policyName", "", fmt.Sprintf("policy %q is not among the checked files; the binding does nothing until it exists", name))
	}
	return r.diags
}

// mutatingServedSince is the first minor that serves MutatingAdmissionPolicies as
// admissionregistration.k8s.io/v1, on by default.
const mutatingServedSince = 36

// notServed reports that the checked Kubernetes version does not serve the v1 mutating kinds,
// and says whether it did. (From 1.36 on, the registered validation is kube-apiserver 1.37's,
// whose CEL environment is 1.36's: a 1.36 server's is 1.35's.)
func (c *Checker) notServed(r *reporter) bool {
	if int(c.version.Binary.Minor()) >= mutatingServedSince {
		return false
	}
	r.add(Error, CategoryInput, "apiVersion", "", fmt.Sprintf("Kubernetes %s does not serve admissionregistration.k8s.io/v1 %s: it is served from 1.%d on", c.version, strings.SplitN(r.object, "/", 2)[0], mutatingServedSince))
	return true
}

// validateMutating reports the errors of the registered validation of obj; expressions says
// whether compile errors are placed at their character in the expression of their field.
// It returns the fields with errors.
func validateMutating[T runtime.Object](r *reporter, obj T, validate func(T) (T, field.ErrorList, error), expressions bool) map[string]bool {
	failed := map[string]bool{}
	if validate == nil {
		r.add(Warning, CategoryInput, "", "", noMutatingValidation)
		return failed
	}
	defaulted, errs, err := validate(obj)
	if err != nil {
		r.add(Error, CategoryInput, "", "", fmt.Sprintf("vapc could not validate it as kube-apiserver does (an error of vapc's, not of the object): %v", err))
		return failed
	}
	for _, e := range errs {
		expr := ""
		if expressions {
			expr = stringAt(defaulted, e.Field)
		}
		r.fieldError(e, CategoryCreate, expr)
		failed[e.Field] = true
	}
	return failed
}

// checkMutating checks the set's MutatingAdmissionPolicies and their bindings.
func (c *Checker) checkMutating(set *Set) Diagnostics {
	var diags Diagnostics
	names := map[string]bool{}
	for _, p := range set.MutatingPolicies {
		diags = append(diags, c.CheckMutatingPolicy(p)...)
		names[p.Name] = true
	}
	for _, b := range set.MutatingBindings {
		diags = append(diags, c.CheckMutatingBinding(b, names)...)
	}
	return append(diags, lintMutating(set)...)
}

// stringAt returns the string at a field path ("spec.mutations[0].jsonPatch.expression") of an
// object, or "".
func stringAt(obj runtime.Object, path string) string {
	raw, err := json.Marshal(obj)
	if err != nil {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return ""
	}
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[name]
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			if !ok {
				return ""
			}
			i, err := strconv.Atoi(idx)
			l, isList := v.([]any)
			if err != nil || !isList || i < 0 || i >= len(l) {
				return ""
			}
			v = l[i]
			rest = strings.TrimPrefix(after, "[")
		}
	}
	s, _ := v.(string)
	return s
}

// lintMutating reports what the set's mutating policies change that its other policies read:
// a validating policy that reads a field a mutation writes decides on the changed object
// (info), and a mutating policy with reinvocationPolicy Never that reads a field another
// mutating policy writes may run before it and not see the change (warning).
func lintMutating(set *Set) Diagnostics {
	if len(set.MutatingPolicies) == 0 {
		return nil
	}
	var vbindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, b := range set.Bindings {
		vbindings = append(vbindings, b.ValidatingAdmissionPolicyBinding)
	}
	var mbindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, b := range set.MutatingBindings {
		mbindings = append(mbindings, b.MutatingAdmissionPolicyBinding)
	}
	// The policies a binding of the set binds (every one, when the set has no bindings of
	// the kind: a file of policies alone), with what they read.
	type reader struct {
		name     string
		match    *admissionregistrationv1.MatchResources
		reads    Reads
		mutating *MutatingPolicy // nil for a validating policy
	}
	bound := func(name string, bindings []string) bool {
		return len(bindings) == 0 || slices.Contains(bindings, name)
	}
	var vnames, mnames []string
	for _, b := range vbindings {
		vnames = append(vnames, b.Spec.PolicyName)
	}
	for _, b := range mbindings {
		mnames = append(mnames, b.Spec.PolicyName)
	}
	var readers []reader
	for _, v := range set.Policies {
		if bound(v.Name, vnames) {
			readers = append(readers, reader{v.Name, v.Spec.MatchConstraints, PolicyReads(v.ValidatingAdmissionPolicy, vbindings), nil})
		}
	}
	for _, o := range set.MutatingPolicies {
		if bound(o.Name, mnames) && o.Spec.ReinvocationPolicy == admissionregistrationv1.NeverReinvocationPolicy {
			readers = append(readers, reader{o.Name, o.Spec.MatchConstraints, MutatingPolicyReads(o.MutatingAdmissionPolicy, mbindings), o})
		}
	}
	var diags Diagnostics
	warned := map[[2]string]bool{} // reader, writer
	for _, m := range set.MutatingPolicies {
		if !bound(m.Name, mnames) {
			continue
		}
		r := &reporter{src: m.Source, object: "MutatingAdmissionPolicy/" + m.Name, place: managedFieldsSource(m.MutatingAdmissionPolicy, m.ManagedFields)}
		for i, mu := range m.Spec.Mutations {
			writes, all := MutationWrites(mu)
			if all != "" || len(writes) == 0 {
				continue
			}
			changed := make([]Unknown, len(writes))
			for j, w := range writes {
				changed[j] = Unknown{Path: w}
			}
			field := fmt.Sprintf("spec.mutations[%d].jsonPatch.expression", i)
			if mu.ApplyConfiguration != nil {
				field = fmt.Sprintf("spec.mutations[%d].applyConfiguration.expression", i)
			}
			for _, o := range readers {
				if o.mutating == m || o.reads.All != "" || !rulesOverlap(m.Spec.MatchConstraints, o.match) {
					continue
				}
				rd, u, ok := o.reads.DependsOn(changed)
				switch {
				case !ok:
				case o.mutating == nil:
					r.add(Info, CategoryLint, field, "", fmt.Sprintf("validating policy %s reads %s, which this mutation changes (%s): kube-apiserver runs mutating policies first, so %s decides on the changed object", o.name, rd.Path, u.Path, o.name))
				case !warned[[2]string{o.name, m.Name}]:
					warned[[2]string{o.name, m.Name}] = true
					or := &reporter{src: o.mutating.Source, object: "MutatingAdmissionPolicy/" + o.name, place: managedFieldsSource(o.mutating.MutatingAdmissionPolicy, o.mutating.ManagedFields)}
					or.add(Warning, CategoryLint, "spec.reinvocationPolicy", "", fmt.Sprintf("mutating policy %s changes %s, which this policy reads (%s): kube-apiserver runs mutating policies in no fixed order, so with reinvocationPolicy Never this policy may run first and never see the change; IfNeeded runs it again after", m.Name, u.Path, rd.Path))
					diags = append(diags, or.diags...)
				}
			}
		}
		diags = append(diags, r.diags...)
	}
	return diags
}

// rulesOverlap says whether two policies' resource rules can match one request: an operation,
// a group and a resource in common (versions aside: matchPolicy Equivalent matches across
// them).
func rulesOverlap(a, b *admissionregistrationv1.MatchResources) bool {
	if a == nil || b == nil {
		return false
	}
	for _, x := range a.ResourceRules {
		for _, y := range b.ResourceRules {
			if intersects(opStrings(x.Operations), opStrings(y.Operations)) && intersects(x.APIGroups, y.APIGroups) && intersects(baseResources(x.Resources), baseResources(y.Resources)) {
				return true
			}
		}
	}
	return false
}

func opStrings(ops []admissionregistrationv1.OperationType) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = string(o)
	}
	return out
}

// baseResources are the resources of rules, subresources aside.
func baseResources(rs []string) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i], _, _ = strings.Cut(r, "/")
	}
	return out
}

// intersects says whether two lists share a value, "*" matching any.
func intersects(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == "*" || y == "*" || x == y {
				return true
			}
		}
	}
	return false
}
