package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/manifest"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
)

// SuiteError is a suite that cannot run: its policies or objects do not load. It is a problem
// of the suite, not a failed case.
type SuiteError struct{ Err error }

func (e *SuiteError) Error() string { return e.Err.Error() }
func (e *SuiteError) Unwrap() error { return e.Err }

// SuiteReport is the outcome of a suite's cases.
type SuiteReport struct {
	Name  string       `json:"name"`
	File  string       `json:"file"`
	Cases []CaseReport `json:"cases"`
	// Duration is how long the suite took, policies compiled included.
	Duration time.Duration `json:"durationNanos"`
}

// CaseReport is the outcome of one case.
type CaseReport struct {
	Name string `json:"name"`
	// Pos is where the case is written.
	Pos    manifest.Position `json:"pos"`
	Passed bool              `json:"passed"`
	// Failures say how the decision differs from the expectation, or why the request could
	// not be evaluated.
	Failures []string         `json:"failures,omitempty"`
	Decision *verify.Decision `json:"decision,omitempty"`
	// Object is the object validating admission decided on (JSON, in the request's version),
	// when the suite has MutatingAdmissionPolicies or the case expects an object or a patch.
	Object json.RawMessage `json:"object,omitempty"`
}

// Failed returns the number of failed cases.
func (r *SuiteReport) Failed() int {
	n := 0
	for _, c := range r.Cases {
		if !c.Passed {
			n++
		}
	}
	return n
}

// Run loads the suite's policies and objects and runs its cases in order.
func Run(ctx context.Context, s *Suite) (*SuiteReport, error) {
	start := time.Now()
	env, err := s.load()
	if err != nil {
		return nil, &SuiteError{err}
	}
	rep := &SuiteReport{Name: s.Metadata.Name, File: s.File}
	for i := range s.Cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rep.Cases = append(rep.Cases, env.run(ctx, s, i))
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// env is a loaded suite.
type env struct {
	catalog *vapcschema.Catalog
	store   *overlayStore
	authz   *switchAuthorizer
	eval    *verify.Evaluator
}

func (s *Suite) load() (*env, error) {
	cat, err := vapcschema.Builtin(verify.KubernetesVersion)
	if err != nil {
		return nil, err
	}
	if len(s.CRDs) > 0 {
		var paths []string
		for _, p := range s.CRDs {
			paths = append(paths, s.path(p))
		}
		if err := cat.LoadCRDs(paths...); err != nil {
			return nil, err
		}
	}
	var paths []string
	for _, p := range s.Policies {
		paths = append(paths, s.path(p))
	}
	set, diags := cel.ReadPaths(nil, paths...)
	checker, err := cel.NewChecker(cel.WithCatalog(cat))
	if err != nil {
		return nil, err
	}
	diags = append(diags, checker.Check(set)...)
	diags = append(diags, orphanBindings(set)...)
	var errs []error
	for _, d := range diags {
		// What vapc check rejects stops the suite: a policy kube-apiserver would not store, or
		// an expression that fails type checking for every kind its policy matches (every
		// request it sees would be an error), cannot be tested; a messageExpression's type
		// error does not (the server answers with the message instead, which a case can
		// expect).
		if d.Fatal() {
			errs = append(errs, errors.New(d.String()))
		}
	}
	base := verify.NewMemoryStore(cat.RESTMapper())
	for _, d := range set.Others {
		if d.GroupVersionKind().Group == "vapc.dev" {
			continue
		}
		if err := base.Put(d.Object); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", d.Describe(), err))
		}
	}
	var objPaths []string
	for _, p := range s.Objects {
		objPaths = append(objPaths, s.path(p))
	}
	if len(objPaths) > 0 {
		docs, err := manifest.ReadPaths(nil, objPaths...)
		if err != nil {
			errs = append(errs, err)
		}
		for _, d := range docs {
			if err := base.Put(d.Object); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", d.Describe(), err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	e := &env{catalog: cat, store: &overlayStore{base: base}, authz: &switchAuthorizer{}}
	var policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	for _, p := range set.Policies {
		policies = append(policies, p.ValidatingAdmissionPolicy)
	}
	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, b := range set.Bindings {
		bindings = append(bindings, b.ValidatingAdmissionPolicyBinding)
	}
	e.eval, err = verify.New(policies, bindings, verify.WithResources(cat), verify.WithStore(e.store), verify.WithAuthorizer(e.authz),
		verify.WithMutatingPolicies(set.MutatingPolicyList(), set.MutatingBindingList()))
	if err != nil {
		return nil, err
	}
	return e, nil
}

// orphanBindings reports the bindings whose policy is not among the suite's policies. The
// server accepts such a binding, and vapc check only warns of it, since the policy may come
// later; but a suite is all there is: the binding would decide nothing, and a case expecting
// an admission would pass because of a typo in a policy name.
func orphanBindings(set *cel.Set) cel.Diagnostics {
	var diags cel.Diagnostics
	orphan := func(src cel.Locator, kind, name, policy, does string) {
		diags = append(diags, cel.Diagnostic{
			Pos: src.FieldPos("spec.policyName"), Field: "spec.policyName",
			Severity: cel.Error, Category: cel.CategoryInput,
			Object:  kind + "/" + name,
			Message: fmt.Sprintf("binding %q: policy %q is not among the suite's policies: the binding would %s nothing", name, policy, does),
		})
	}
	for _, b := range set.OrphanBindings() {
		orphan(b.Source, "ValidatingAdmissionPolicyBinding", b.Name, b.Spec.PolicyName, "decide")
	}
	mutating := map[string]bool{}
	for _, p := range set.MutatingPolicies {
		mutating[p.Name] = true
	}
	for _, b := range set.MutatingBindings {
		if name := b.Spec.PolicyName; name != "" && !mutating[name] {
			orphan(b.Source, "MutatingAdmissionPolicyBinding", b.Name, name, "change")
		}
	}
	return diags
}

// run runs one case. Problems with the case's request are failures of the case, at its
// position.
func (e *env) run(ctx context.Context, s *Suite, i int) CaseReport {
	c := &s.Cases[i]
	field := fmt.Sprintf("cases[%d]", i)
	rep := CaseReport{Name: c.Name, Pos: s.Pos(field)}
	fail := func(format string, args ...any) CaseReport {
		rep.Failures = append(rep.Failures, fmt.Sprintf(format, args...))
		return rep
	}

	overlay := verify.NewMemoryStore(e.catalog.RESTMapper())
	for j, raw := range c.Objects {
		u, err := objectOf(raw)
		if err == nil {
			err = overlay.Put(u)
		}
		if err != nil {
			return fail("%s: objects[%d]: %v", s.Pos(fmt.Sprintf("%s.objects[%d]", field, j)), j, err)
		}
	}
	e.store.overlay = overlay
	authz, err := s.authorizer(c.Authorizer)
	if err != nil {
		return fail("%s: authorizer: %v", s.Pos(field+".authorizer"), err)
	}
	e.authz.current = authz

	req, err := e.request(s, c)
	if err != nil {
		return fail("%s: %v", rep.Pos, err)
	}
	var dec *verify.Decision
	var objs objectPair
	if s.pipelineOf(c) && len(c.AdmissionReview) == 0 {
		dec, objs, err = e.servePipeline(ctx, req)
	} else {
		dec, objs, err = e.evaluate(ctx, req)
	}
	if err != nil {
		return fail("%s: %v", rep.Pos, err)
	}
	rep.Decision = dec
	if dec.Mutation != nil || len(c.Expect.Object) > 0 || len(c.Expect.Patch) > 0 {
		rep.Object = objs.validated
	}
	if why := uncheckable(c.Expect, dec.Mutation); why != "" {
		return fail("%s: %s", rep.Pos, why)
	}
	rep.Failures = compare(c.Expect, dec)
	rep.Failures = append(rep.Failures, s.compareObjects(c.Expect, dec, objs)...)
	rep.Passed = len(rep.Failures) == 0
	return rep
}

// uncheckable says why what the MutatingAdmissionPolicies did cannot be held to the
// expectation, or "": a policy could not run as kube-apiserver would, or the object or the
// refusal the case expects depends on the order the server runs the policies in.
func uncheckable(want *Expect, m *verify.Mutation) string {
	switch {
	case m == nil:
		return ""
	case m.Unknown != "":
		return "a MutatingAdmissionPolicy cannot run here as kube-apiserver would: " + m.Unknown
	case m.OrderDependent != "" && (!m.Allowed || len(want.Object) > 0 || len(want.Patch) > 0 || want.Mutations != nil):
		return "cannot be checked: what the mutating policies make depends on the order kube-apiserver runs them in: " + m.OrderDependent
	}
	return ""
}

// objectPair is the object of a request before and after the MutatingAdmissionPolicies, as
// JSON in the request's version: input is what they received, mutated what they made, and
// validated what validating admission decided on (with the pipeline, after the registry
// strategy prepared it too).
type objectPair struct{ input, mutated, validated []byte }

// evaluate decides a case's request with the evaluator.
func (e *env) evaluate(ctx context.Context, req verify.Request) (*verify.Decision, objectPair, error) {
	dec, err := e.eval.Evaluate(ctx, req)
	if err != nil {
		return nil, objectPair{}, err
	}
	var objs objectPair
	if req.Object != nil {
		if objs.input, err = req.Object.MarshalJSON(); err != nil {
			return nil, objs, err
		}
	}
	objs.mutated = objs.input
	if dec.Object != nil {
		objs.mutated = dec.Object
	}
	objs.validated = objs.mutated
	return dec, objs, nil
}

// authorizer returns the authorizer of a case: its own, else the suite's, else DenyAll.
func (s *Suite) authorizer(a *Authorizer) (authorizer.UnconditionalAuthorizer, error) {
	if a == nil {
		a = s.Authorizer
	}
	if a == nil {
		return verify.DenyAll(), nil
	}
	switch a.Mode {
	case "AllowAll":
		return verify.AllowAll(), nil
	case "DenyAll":
		return verify.DenyAll(), nil
	}
	ra := &verify.RulesAuthorizer{Rules: a.Rules, Default: a.Default}
	if a.RulesFile != "" {
		docs, err := manifest.ReadPaths(nil, s.path(a.RulesFile))
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			var f struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				verify.RulesAuthorizer
			}
			if err := d.Decode(&f); err != nil {
				return nil, err
			}
			if f.APIVersion != APIVersion || f.Kind != "AuthorizerRules" {
				return nil, d.Errorf("kind", "want apiVersion %s, kind AuthorizerRules", APIVersion)
			}
			ra.Rules = append(ra.Rules, f.Rules...)
			if f.Default != "" && ra.Default == "" {
				ra.Default = f.Default
			}
		}
		if err := ra.Validate(); err != nil {
			return nil, err
		}
	}
	return ra, nil
}

// request builds the case's admission request.
func (e *env) request(s *Suite, c *Case) (verify.Request, error) {
	if len(c.AdmissionReview) > 0 {
		return e.reviewRequest(s, c.AdmissionReview)
	}
	req := verify.Request{
		Operation:   admission.Operation(strings.ToUpper(c.Operation)),
		Namespace:   c.Namespace,
		Name:        c.ResourceName,
		DryRun:      c.DryRun,
		UserInfo:    c.User,
		SubResource: "",
	}
	var err error
	if req.Object, err = s.loadObject(c.Object); err != nil {
		return req, fmt.Errorf("object: %w", err)
	}
	if req.OldObject, err = s.loadObject(c.OldObject); err != nil {
		return req, fmt.Errorf("oldObject: %w", err)
	}
	if len(c.Options) > 0 {
		if req.Options, err = objectOf(c.Options); err != nil {
			return req, fmt.Errorf("options: %w", err)
		}
	}
	req.Resource, req.SubResource, err = e.resource(c, req.Object, req.OldObject)
	return req, err
}

// resource resolves "pods", "pods/eviction", "deployments.apps/scale" (and apiVersion) to a
// resource and subresource; without one, the resource of the object's kind.
func (e *env) resource(c *Case, objs ...*unstructured.Unstructured) (schema.GroupVersionResource, string, error) {
	mapper := e.catalog.RESTMapper()
	if c.Resource == "" {
		for _, o := range objs {
			if o == nil || o.GetKind() == "" {
				continue
			}
			gvk := o.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return schema.GroupVersionResource{}, "", fmt.Errorf("resource: %w", err)
			}
			return m.Resource, "", nil
		}
		return schema.GroupVersionResource{}, "", fmt.Errorf("resource: give the resource, or an object with apiVersion and kind")
	}
	res, sub, _ := strings.Cut(c.Resource, "/")
	gr := schema.ParseGroupResource(res)
	partial := gr.WithVersion("")
	if c.APIVersion != "" {
		gv, err := schema.ParseGroupVersion(c.APIVersion)
		if err != nil {
			return schema.GroupVersionResource{}, "", fmt.Errorf("apiVersion: %w", err)
		}
		if gr.Group != "" && gr.Group != gv.Group {
			return schema.GroupVersionResource{}, "", fmt.Errorf("resource %s is not in apiVersion %s", c.Resource, c.APIVersion)
		}
		partial = gv.WithResource(gr.Resource)
	}
	gvr, err := mapper.ResourceFor(partial)
	if err != nil {
		return schema.GroupVersionResource{}, "", fmt.Errorf("resource %q: %w", c.Resource, err)
	}
	return gvr, sub, nil
}

// reviewRequest turns an AdmissionReview's request into a Request: the request's own
// resource and kind (requestResource, requestKind), not those a webhook matched.
func (e *env) reviewRequest(s *Suite, raw json.RawMessage) (verify.Request, error) {
	data := []byte(raw)
	if p, ok := pathOf(raw); ok {
		docs, err := manifest.ReadPaths(nil, s.path(p))
		if err != nil {
			return verify.Request{}, err
		}
		if len(docs) != 1 {
			return verify.Request{}, fmt.Errorf("admissionReview: %s holds %d documents, want 1", p, len(docs))
		}
		data = docs[0].JSON
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &review); err != nil {
		return verify.Request{}, fmt.Errorf("admissionReview: %w", err)
	}
	r := review.Request
	if r == nil {
		return verify.Request{}, fmt.Errorf("admissionReview: no request")
	}
	req := verify.Request{
		Operation:   admission.Operation(r.Operation),
		Resource:    schema.GroupVersionResource(r.Resource),
		SubResource: r.SubResource,
		Kind:        schema.GroupVersionKind(r.Kind),
		Namespace:   r.Namespace,
		Name:        r.Name,
		UserInfo:    verify.UserInfo{Username: r.UserInfo.Username, UID: r.UserInfo.UID, Groups: r.UserInfo.Groups},
	}
	if r.RequestResource != nil {
		req.Resource = schema.GroupVersionResource(*r.RequestResource)
		req.SubResource = r.RequestSubResource
	}
	if r.RequestKind != nil {
		req.Kind = schema.GroupVersionKind(*r.RequestKind)
	}
	if len(r.UserInfo.Extra) > 0 {
		req.UserInfo.Extra = map[string][]string{}
		for k, v := range r.UserInfo.Extra {
			req.UserInfo.Extra[k] = v
		}
	}
	if r.DryRun != nil {
		req.DryRun = *r.DryRun
	}
	var err error
	for _, f := range []struct {
		name string
		raw  []byte
		dst  **unstructured.Unstructured
	}{{"object", r.Object.Raw, &req.Object}, {"oldObject", r.OldObject.Raw, &req.OldObject}, {"options", r.Options.Raw, &req.Options}} {
		if len(f.raw) == 0 || string(f.raw) == "null" {
			continue
		}
		if *f.dst, err = objectOf(f.raw); err != nil {
			return req, fmt.Errorf("admissionReview: request.%s: %w", f.name, err)
		}
	}
	return req, nil
}

// loadObject returns the inline object, or the one object of the file raw names.
func (s *Suite) loadObject(raw json.RawMessage) (*unstructured.Unstructured, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	p, ok := pathOf(raw)
	if !ok {
		return objectOf(raw)
	}
	docs, err := manifest.ReadPaths(nil, s.path(p))
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s holds %d documents, want 1", p, len(docs))
	}
	return docs[0].Object, nil
}

func objectOf(raw []byte) (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("want an object or a file path: %w", err)
	}
	u := &unstructured.Unstructured{Object: m}
	return u, nil
}
