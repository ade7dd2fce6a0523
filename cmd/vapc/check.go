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
	switch f.output {
	case "text", "json", "sarif":
	default:
		return usagef("check: --output must be text, json or sarif, not %q", f.output)
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
			Message: fmt.Sprintf("%s %s is not an admission policy or binding (ValidatingAdmissionPolicy, MutatingAdmissionPolicy and their bindings)", d.GroupVersionKind().GroupVersion(), d.Object.GetKind()),
		})
	}
	diags = append(diags, checker.Check(set)...)
	if len(set.Policies)+len(set.Bindings)+len(set.MutatingPolicies)+len(set.MutatingBindings) == 0 && !diags.HasErrors() {
		// Nothing checked is not a clean check: a gate must not pass on a wrong folder.
		diags = append(diags, cel.Diagnostic{
			Pos: manifest.Position{File: strings.Join(paths, ", ")}, Severity: cel.Error, Category: cel.CategoryInput,
			Message: "no admission policy or binding (ValidatingAdmissionPolicy, MutatingAdmissionPolicy or their bindings) found: nothing was checked",
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
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if diags == nil {
			diags = cel.Diagnostics{}
		}
		return enc.Encode(diags)
	}
	for _, d := range diags {
		fmt.Fprintln(w, d.String())
	}
	return nil
}

// flagSet defines the flags of vapc check into f.
func (f *checkFlags) flagSet(stdout, stderr io.Writer) *flagSet {
	fs := newFlagSet("check", stdout, stderr,
		"usage: vapc check [flags] FILE|DIR|- ...")
	fs.StringVar(&f.version, "kubernetes-version", cel.DefaultKubernetesVersion, "Kubernetes minor to check against: "+strings.Join(cel.SupportedVersions(), ", "))
	fs.choices("kubernetes-version", cel.SupportedVersions()...)
	fs.Var(&f.crds, "crd", "CustomResourceDefinition file or folder for custom kinds (repeatable)")
	fs.StringVar(&f.output, "output", "text", "output format: text, json or sarif")
	fs.choices("output", "text", "json", "sarif")
	fs.BoolVar(&f.warnings, "warnings-as-errors", false, "exit 1 on warnings too")
	fs.BoolVar(&f.cost, "cost", false, "also print the estimated cost of every expression")
	return fs
}
