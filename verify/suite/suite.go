// Package suite reads and runs vapc test suites: declarative admission requests against
// ValidatingAdmissionPolicies and the decisions kube-apiserver must make for them, checked with
// the evaluator of package verify. A suite is a YAML document of kind TestSuite
// (apiVersion vapc.dev/v1alpha1); see Suite.
package suite

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vapc-dev/vapc/cel/manifest"
	"github.com/vapc-dev/vapc/verify"
)

// APIVersion and Kind of a suite document.
const (
	APIVersion = "vapc.dev/v1alpha1"
	Kind       = "TestSuite"
)

// Suite is a TestSuite document.
//
//	apiVersion: vapc.dev/v1alpha1
//	kind: TestSuite
//	metadata: {name: kosmos}
//	policies: [policy.yaml]        # files or folders, relative to the suite file
//	objects: [objects.yaml]        # cluster objects: namespaces, params
//	cases:
//	- name: node-controller may not delete a pod on a NotReady Kosmos node
//	  operation: DELETE
//	  resource: pods
//	  user: {username: "system:serviceaccount:kube-system:node-controller"}
//	  oldObject: pods/web-a.yaml   # or the object inline
//	  expect:
//	    decision: deny
//	    message: 'pods "web-a" is forbidden: ...'
type Suite struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	// Policies are files or folders of ValidatingAdmissionPolicies, MutatingAdmissionPolicies
	// and their bindings. A case runs the MutatingAdmissionPolicies first, with kube-apiserver's
	// mutating dispatcher, and the validating policies on the object they made.
	Policies []string `json:"policies"`
	// Objects are files or folders of cluster objects: namespaces and params.
	Objects []string `json:"objects,omitempty"`
	// CRDs are files of CustomResourceDefinitions for custom resources and paramKinds.
	CRDs []string `json:"crds,omitempty"`
	// Authorizer answers the policies' `authorizer` checks; default: no opinion on anything.
	Authorizer *Authorizer `json:"authorizer,omitempty"`
	// Pipeline sends every case as a request through kube-apiserver's own request pipeline
	// (decoding, defaulting, the registry strategy, the built-in admission plugins) before the
	// policies see it; a case's own pipeline overrides it. See pipeline.go.
	Pipeline bool `json:"pipeline,omitempty"`
	// Cases are the requests and their expected decisions.
	Cases []Case `json:"cases"`

	// File is the path the suite was read from.
	File string `json:"-"`
	doc  *manifest.Document
}

// Metadata names a suite.
type Metadata struct {
	Name string `json:"name"`
}

// Authorizer configures what `authorizer` checks answer: Mode AllowAll, DenyAll, or Rules
// (the rules here or in RulesFile, first match wins).
type Authorizer struct {
	Mode      string                  `json:"mode,omitempty"`
	Rules     []verify.AuthorizerRule `json:"rules,omitempty"`
	Default   string                  `json:"default,omitempty"`
	RulesFile string                  `json:"rulesFile,omitempty"`
}

// Case is one admission request and what kube-apiserver must decide.
type Case struct {
	Name string `json:"name"`
	// Operation is CREATE, UPDATE, DELETE or CONNECT.
	Operation string `json:"operation,omitempty"`
	// Resource is "pods", "pods/eviction", "deployments.apps" or "deployments.apps/scale";
	// when empty it is the resource of the object's kind.
	Resource string `json:"resource,omitempty"`
	// APIVersion pins the resource's version (default: the preferred one).
	APIVersion string `json:"apiVersion,omitempty"`
	// Namespace and ResourceName (the name in the request's path) default to the object's.
	Namespace    string `json:"namespace,omitempty"`
	ResourceName string `json:"resourceName,omitempty"`
	// User is the requesting user.
	User verify.UserInfo `json:"user,omitempty"`
	// Object and OldObject are inline objects, or paths (relative to the suite file) of files
	// holding one object.
	Object    json.RawMessage `json:"object,omitempty"`
	OldObject json.RawMessage `json:"oldObject,omitempty"`
	// Options are the operation's options (CreateOptions, UpdateOptions, DeleteOptions).
	Options json.RawMessage `json:"options,omitempty"`
	DryRun  bool            `json:"dryRun,omitempty"`
	// AdmissionReview is a whole admission.k8s.io/v1 AdmissionReview (inline or a path), in
	// place of the fields above.
	AdmissionReview json.RawMessage `json:"admissionReview,omitempty"`
	// Objects are cluster objects for this case only, inline; they replace the suite's
	// objects of the same kind, namespace and name.
	Objects []json.RawMessage `json:"objects,omitempty"`
	// Authorizer replaces the suite's for this case.
	Authorizer *Authorizer `json:"authorizer,omitempty"`
	// Pipeline, when set, says whether the case is sent through kube-apiserver's request
	// pipeline (see Suite.Pipeline): the object is then the request body, and oldObject the
	// stored object.
	Pipeline *bool `json:"pipeline,omitempty"`
	// Expect is what kube-apiserver decides. Required.
	Expect *Expect `json:"expect"`
}

// Expect is the expected decision. Decision is required; every other field is compared only
// when given.
type Expect struct {
	// Decision is admit or deny.
	Decision string `json:"decision"`
	Code     int32  `json:"code,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Message is the whole status message of a denial.
	Message string `json:"message,omitempty"`
	// Warnings are the response's warnings, in order; [] expects none.
	Warnings *[]string `json:"warnings,omitempty"`
	// AuditAnnotations are the request's audit annotations, all of them; {} expects none.
	AuditAnnotations *map[string]string `json:"auditAnnotations,omitempty"`
	// Results are results of policy, binding and param that must be among the decision's.
	Results []ExpectResult `json:"results,omitempty"`
	// Object is the object validating admission decides on, after every mutation (inline, or
	// a path relative to the suite file). It is compared in full after kube-apiserver's
	// defaulting of both (an expectation need not spell out defaults), except the metadata
	// the server sets (uid, resourceVersion, generation, creationTimestamp, managedFields)
	// when it leaves them out.
	Object json.RawMessage `json:"object,omitempty"`
	// Patch is a JSON patch (RFC 6902; inline, or a path) that, applied to the object the
	// MutatingAdmissionPolicies received, gives the object they made. They receive the case's
	// object, or, with pipeline, the request body after decoding, defaulting, the registry
	// strategy and the built-in admission plugins. [] expects no change.
	Patch json.RawMessage `json:"patch,omitempty"`
	// Mutations are the invocations of MutatingAdmissionPolicies that changed the object,
	// all of them, in any order (kube-apiserver's order is its informer caches'); [] expects
	// none.
	Mutations *[]ExpectMutation `json:"mutations,omitempty"`
}

// ExpectMutation is an invocation of a MutatingAdmissionPolicy that changed the object: its
// policy, and its binding and param when given.
type ExpectMutation struct {
	Policy  string `json:"policy"`
	Binding string `json:"binding,omitempty"`
	Param   string `json:"param,omitempty"`
}

// ExpectResult is an expected result of one policy, binding and param; fields left empty are
// not compared.
type ExpectResult struct {
	Policy          string   `json:"policy"`
	Binding         string   `json:"binding,omitempty"`
	Param           string   `json:"param,omitempty"`
	Result          string   `json:"result"`
	Actions         []string `json:"actions,omitempty"`
	ExpressionIndex *int     `json:"expressionIndex,omitempty"`
	Message         string   `json:"message,omitempty"`
	Reason          string   `json:"reason,omitempty"`
	MatchCondition  string   `json:"matchCondition,omitempty"`
}

// Load reads the suites in a file (one or more TestSuite documents). Every problem is
// returned, each pointing at its file, line and field.
func Load(path string) ([]*Suite, error) {
	// A document that does not parse does not keep the others from being looked at.
	docs, err := manifest.ReadPaths(nil, path)
	var suites []*Suite
	errs := []error{err}
	for _, d := range docs {
		s, err := decode(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		suites = append(suites, s)
	}
	return suites, errors.Join(errs...)
}

func decode(d *manifest.Document) (*Suite, error) {
	if gvk := d.GroupVersionKind(); gvk.GroupVersion().String() != APIVersion || gvk.Kind != Kind {
		return nil, d.Errorf("kind", "want apiVersion %s, kind %s; not %s %s", APIVersion, Kind, d.Object.GetAPIVersion(), d.Object.GetKind())
	}
	s := &Suite{File: d.File, doc: d}
	decodeErr := d.Decode(s)
	if decodeErr != nil && !manifest.IsStrict(decodeErr) && fieldOf(decodeErr) == "" {
		return nil, decodeErr // not known which part of the suite is missing
	}
	// An unknown field is ignored, a value of the wrong type left empty: the rest of the
	// suite is checked all the same, to report every problem at once.
	errs := s.validate(d)
	if decodeErr != nil && !manifest.IsStrict(decodeErr) {
		errs = unrelated(errs, fieldOf(decodeErr))
	}
	if j, ok := decodeErr.(interface{ Unwrap() []error }); ok {
		errs = append(j.Unwrap(), errs...)
	} else if decodeErr != nil {
		errs = append([]error{decodeErr}, errs...)
	}
	// in the order of the file
	slices.SortStableFunc(errs, func(a, b error) int {
		pa, pb := posOf(a), posOf(b)
		return cmp.Or(cmp.Compare(pa.Line, pb.Line), cmp.Compare(pa.Col, pb.Col))
	})
	return s, errors.Join(errs...)
}

// posOf returns the position of a problem of a suite.
func posOf(err error) manifest.Position {
	var me *manifest.Error
	if errors.As(err, &me) {
		return me.Pos
	}
	return manifest.Position{}
}

// fieldOf returns the field path of a decoding error of a value of the wrong type.
func fieldOf(err error) string {
	var me *manifest.Error
	if errors.As(err, &me) {
		return me.Field
	}
	return ""
}

// unrelated returns the errors that are not about the field, a field inside it or a field
// that holds it: the decoder left that field empty, so what they say is its consequence.
func unrelated(errs []error, field string) []error {
	var out []error
	for _, e := range errs {
		f := fieldOf(e)
		if f != "" && (within(f, field) || within(field, f)) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// within reports whether the field path f is inside the field path outer, or is outer.
func within(f, outer string) bool {
	return f == outer || strings.HasPrefix(f, outer+".") || strings.HasPrefix(f, outer+"[")
}

// validate checks what the suite's decoding does not: required fields, values, and that the
// files it names are there.
func (s *Suite) validate(d *manifest.Document) []error {
	var errs []error
	if len(s.Policies) == 0 {
		errs = append(errs, d.Errorf("policies", "a suite needs policies (files or folders)"))
	}
	if len(s.Cases) == 0 {
		errs = append(errs, d.Errorf("cases", "a suite needs cases"))
	}
	for i, p := range s.Policies {
		if err := exists(s.path(p)); err != nil {
			errs = append(errs, d.Errorf(fmt.Sprintf("policies[%d]", i), "%v", err))
		}
	}
	for i, p := range s.Objects {
		if err := exists(s.path(p)); err != nil {
			errs = append(errs, d.Errorf(fmt.Sprintf("objects[%d]", i), "%v", err))
		}
	}
	for i, p := range s.CRDs {
		if err := exists(s.path(p)); err != nil {
			errs = append(errs, d.Errorf(fmt.Sprintf("crds[%d]", i), "%v", err))
		}
	}
	errs = append(errs, s.Authorizer.validate(d, "authorizer", s)...)
	names := map[string]int{}
	for i := range s.Cases {
		c := &s.Cases[i]
		field := fmt.Sprintf("cases[%d]", i)
		if c.Name == "" {
			errs = append(errs, d.Errorf(field, "a case needs a name"))
		} else if j, dup := names[c.Name]; dup {
			errs = append(errs, d.Errorf(field+".name", "case name %q is already used by cases[%d]", c.Name, j))
		}
		names[c.Name] = i
		errs = append(errs, c.Authorizer.validate(d, field+".authorizer", s)...)
		switch {
		case c.Expect == nil:
			errs = append(errs, d.Errorf(field, "case %q has no expectation: add expect.decision (admit or deny)", c.Name))
		case c.Expect.Decision != "admit" && c.Expect.Decision != "deny":
			errs = append(errs, d.Errorf(field+".expect.decision", "decision must be admit or deny, not %q", c.Expect.Decision))
		}
		if len(c.AdmissionReview) == 0 {
			switch strings.ToUpper(c.Operation) {
			case "CREATE", "UPDATE", "DELETE", "CONNECT":
			case "":
				errs = append(errs, d.Errorf(field, "case %q needs an operation (CREATE, UPDATE, DELETE or CONNECT) or an admissionReview", c.Name))
			default:
				errs = append(errs, d.Errorf(field+".operation", "operation must be CREATE, UPDATE, DELETE or CONNECT, not %q", c.Operation))
			}
		}
		if c.Expect != nil {
			for j, r := range c.Expect.Results {
				rf := fmt.Sprintf("%s.expect.results[%d]", field, j)
				if r.Policy == "" {
					errs = append(errs, d.Errorf(rf, "an expected result needs a policy"))
				}
				switch r.Result {
				case verify.ResultAdmit, verify.ResultDeny, verify.ResultError:
				default:
					errs = append(errs, d.Errorf(rf+".result", "result must be admit, deny or error, not %q", r.Result))
				}
			}
		}
		files := []fileField{{"object", c.Object}, {"oldObject", c.OldObject}, {"admissionReview", c.AdmissionReview}}
		if c.Expect != nil {
			files = append(files, fileField{"expect.object", c.Expect.Object}, fileField{"expect.patch", c.Expect.Patch})
			if c.Expect.Mutations != nil {
				for j, m := range *c.Expect.Mutations {
					if m.Policy == "" {
						errs = append(errs, d.Errorf(fmt.Sprintf("%s.expect.mutations[%d]", field, j), "an expected mutation needs a policy"))
					}
				}
			}
		}
		for _, f := range files {
			if p, ok := pathOf(f.raw); ok {
				if err := exists(s.path(p)); err != nil {
					errs = append(errs, d.Errorf(field+"."+f.name, "%v", err))
				}
			}
		}
	}
	return errs
}

// fileField is a field of a case that holds an inline value or the path of a file.
type fileField struct {
	name string
	raw  json.RawMessage
}

func (a *Authorizer) validate(d *manifest.Document, field string, s *Suite) []error {
	if a == nil {
		return nil
	}
	var errs []error
	switch a.Mode {
	case "", "Rules":
	case "AllowAll", "DenyAll":
		if len(a.Rules) > 0 || a.RulesFile != "" {
			errs = append(errs, d.Errorf(field+".mode", "mode %s takes no rules", a.Mode))
		}
	default:
		errs = append(errs, d.Errorf(field+".mode", "mode must be AllowAll, DenyAll or Rules, not %q", a.Mode))
	}
	if a.RulesFile != "" {
		if err := exists(s.path(a.RulesFile)); err != nil {
			errs = append(errs, d.Errorf(field+".rulesFile", "%v", err))
		}
	}
	ra := verify.RulesAuthorizer{Rules: a.Rules, Default: a.Default}
	if err := ra.Validate(); err != nil {
		errs = append(errs, d.Errorf(field, "%v", err))
	}
	return errs
}

// path resolves a path of the suite relative to the suite file.
func (s *Suite) path(p string) string {
	if filepath.IsAbs(p) || s.File == "" || s.File == "<stdin>" {
		return p
	}
	return filepath.Join(filepath.Dir(s.File), p)
}

// pathOf reports whether raw is a JSON string, the path of a file.
func pathOf(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var p string
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", false
	}
	return p, true
}

func exists(p string) error {
	_, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: no such file or folder", p)
	}
	return err
}

// Pos returns the position of a field of the suite, such as cases[2].
func (s *Suite) Pos(field string) manifest.Position {
	if s.doc == nil {
		return manifest.Position{File: s.File}
	}
	return s.doc.KeyPos(field)
}
