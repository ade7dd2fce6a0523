package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/manifest"
	_ "github.com/vapc-dev/vapc/cel/mutatingvalidation" // kube-apiserver's validation of MutatingAdmissionPolicies
	"github.com/vapc-dev/vapc/cel/sarif"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
)

func init() {
	register("check", verb{summary: "type-check policies and bindings offline, as kube-apiserver would", run: runCheck, flags: func() *flagSet { return new(checkFlags).flagSet(io.Discard, io.Discard) }})
}

type checkFlags struct {
	version  string
	crds     stringList
	output   string
	warnings bool
	cost     bool
}

func runCheck(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f checkFlags
	fs := f.flagSet(stdout, stderr)
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		fs.Usage()
		return usagef("check: no files given")
	}
	if err := checkOutputs.check(f.output); err != nil {
		return err
	}
	if _, err := cel.ParseVersion(f.version); err != nil {
		return usagef("check: --kubernetes-version: %v", err)
	}
	if err := statInputs("check: --crd", f.crds...); err != nil {
		return err
	}
	if err := statInputs("check", paths...); err != nil {
		return err
	}
	cat, err := vapcschema.Builtin(cel.DefaultKubernetesVersion)
	if err != nil {
		return &internalError{err}
	}
	// A CRD that cannot be read is an input error like a policy's: reported with the others.
	diags := cel.InputDiagnostics(cat.LoadCRDs(f.crds...))
	checker, err := cel.NewChecker(cel.WithKubernetesVersion(f.version), cel.WithCatalog(cat))
	if err != nil {
		return &internalError{err}
	}
	set, readDiags := cel.ReadPaths(stdin, paths...)
	diags = append(diags, readDiags...)
	for _, d := range set.Others {
		if d.GroupVersionKind().Group == "vapc.dev" {
			continue // vapc's own configuration (policies/settings.yaml), not for the apiserver
		}
		diags = append(diags, cel.Diagnostic{
			Pos: d.Pos(), Severity: cel.Error, Category: cel.CategoryInput,
			Message: fmt.Sprintf("%s %s is not an admission policy or binding", d.GroupVersionKind().GroupVersion(), d.Object.GetKind()),
			Hint:    "vapc check reads " + cel.PolicyKinds + "; cluster objects go to vapc replay --snapshot",
		})
	}
	diags = append(diags, checker.Check(set)...)
	if len(set.Policies)+len(set.Bindings)+len(set.MutatingPolicies)+len(set.MutatingBindings) == 0 && !diags.HasErrors() {
		// Nothing checked is not a clean check: a gate must not pass on a wrong folder.
		diags = append(diags, cel.Diagnostic{
			Pos: manifest.Position{File: strings.Join(paths, ", ")}, Severity: cel.Error, Category: cel.CategoryInput,
			Message: "no admission policy or binding found: nothing was checked",
			Hint:    "vapc check reads " + cel.PolicyKinds,
		})
	}
	if !f.cost {
		diags = diags.WithoutCostInfo()
	}
	diags.Sort()
	if err := writeDiagnostics(stdout, f.output, diags); err != nil {
		return err
	}
	errs, warns := count(diags)
	if f.output == "text" {
		mutating := ""
		if n := len(set.MutatingPolicies) + len(set.MutatingBindings); n > 0 {
			mutating = fmt.Sprintf(" (and %d mutating policies, %d mutating bindings)", len(set.MutatingPolicies), len(set.MutatingBindings))
		}
		fmt.Fprintf(stdout, "%d policies, %d bindings%s checked against Kubernetes %s: %d errors, %d warnings\n",
			len(set.Policies), len(set.Bindings), mutating, checker.Version(), errs, warns)
	}
	if errs > 0 || (f.warnings && warns > 0) {
		return &findingsError{fmt.Sprintf("check: %d errors, %d warnings", errs, warns)}
	}
	return nil
}

func count(diags cel.Diagnostics) (errs, warns int) {
	for _, d := range diags {
		switch d.Severity {
		case cel.Error:
			errs++
		case cel.Warning:
			warns++
		}
	}
	return errs, warns
}

func writeDiagnostics(w io.Writer, format string, diags cel.Diagnostics) error {
	if format == "sarif" {
		return sarif.Write(w, sarif.Tool{Name: "vapc", Version: buildVersions().Vapc, InformationURI: "https://github.com/vapc-dev/vapc"}, diags)
	}
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if diags == nil {
			diags = cel.Diagnostics{}
		}
		return enc.Encode(diags)
	case "jsonl":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, d := range diags {
			if err := enc.Encode(d); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range diags {
		fmt.Fprintln(w, d.String())
	}
	return nil
}

// flagSet defines the flags of vapc check into f.
func (f *checkFlags) flagSet(stdout, stderr io.Writer) *flagSet {
	fs := newFlagSet("check", stdout, stderr, help{
		usage: "vapc check [flags] FILE|DIR|- ...",
		about: `Checks ValidatingAdmissionPolicies, MutatingAdmissionPolicies and their bindings
(admissionregistration.k8s.io/v1) offline, before kubectl apply, as kube-apiserver would: the
errors the server returns when they are created, the type errors of every expression against
the schemas of the kinds it matches (built-in kinds of Kubernetes 1.37; --crd for custom
kinds), the static cost of every expression, and lints. Each finding points at
FILE:LINE:COL and the field, with a caret under the character of the expression, and says what
to do where the message alone does not (did you mean 'labels'?).

An expression that fails type checking for every kind the policy matches can never work: an
error. One that fails for some of the kinds only is a warning. A file is read whatever its
name; a folder stands for its *.yaml, *.yml and *.json files at any depth (not those under
testdata or hidden folders); - is standard input.`,
		outcomes: []outcome{
			{exitOK, "no error: the policies are what kube-apiserver accepts and can run (warnings are printed and do not fail, unless --warnings-as-errors)"},
			{exitFindings, "errors: a policy or binding kube-apiserver would refuse to create, an expression that cannot work for any kind it matches, a file that is not a policy or binding, or nothing to check (warnings too, with --warnings-as-errors)"},
		},
		examples: []example{
			{"check the policies of a folder", "vapc check policies/"},
			{"in CI: the findings as SARIF, for GitHub code scanning", "vapc check --output sarif policies/ > vapc-check.sarif"},
			{"the policies of a cluster, their custom kinds typed by their CRDs", "kubectl get validatingadmissionpolicies,validatingadmissionpolicybindings -o yaml | vapc check --crd crds/ -"},
		},
	})
	fs.StringVar(&f.version, "kubernetes-version", cel.DefaultKubernetesVersion, "Kubernetes minor to check against: "+strings.Join(cel.SupportedVersions(), ", "))
	fs.choices("kubernetes-version", cel.SupportedVersions()...)
	fs.Var(&f.crds, "crd", "CustomResourceDefinition file or folder for custom kinds (repeatable)")
	fs.meta("crd", "FILE|DIR")
	outputFlag(fs, &f.output, checkOutputs)
	fs.BoolVar(&f.warnings, "warnings-as-errors", false, "exit 1 on warnings too")
	fs.BoolVar(&f.cost, "cost", false, "also print the estimated cost of every expression")
	return fs
}
