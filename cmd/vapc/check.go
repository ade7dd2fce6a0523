package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/vapc-dev/vapc/cel"
)

func init() {
	register("check", verb{summary: "type-check policies and bindings offline, as kube-apiserver would", run: runCheck})
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
	fs := newFlagSet("check", stderr,
		"usage: vapc check [flags] FILE|DIR|- ...")
	fs.StringVar(&f.version, "kubernetes-version", cel.DefaultKubernetesVersion, "Kubernetes minor to check against")
	fs.Var(&f.crds, "crd", "CustomResourceDefinition file for custom kinds (repeatable)")
	fs.StringVar(&f.output, "output", "text", "output format: text or json")
	fs.BoolVar(&f.warnings, "warnings-as-errors", false, "exit 1 on warnings too")
	fs.BoolVar(&f.cost, "cost", false, "also print the estimated cost of every expression")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		fs.Usage()
		return usagef("check: no files given")
	}
	if f.output != "text" && f.output != "json" {
		return usagef("check: --output must be text or json, not %q", f.output)
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
	checker, err := cel.NewChecker(cel.WithKubernetesVersion(f.version), cel.WithCRDs(f.crds...))
	if err != nil {
		return usagef("check: %v", err)
	}
	set, diags := cel.ReadPaths(stdin, paths...)
	for _, d := range set.Others {
		if d.GroupVersionKind().Group == "vapc.dev" {
			continue // vapc's own configuration (policies/settings.yaml), not for the apiserver
		}
		diags = append(diags, cel.Diagnostic{
			Pos: d.Pos(), Severity: cel.Error, Category: cel.CategoryInput,
			Message: fmt.Sprintf("%s %s is not a ValidatingAdmissionPolicy or ValidatingAdmissionPolicyBinding", d.GroupVersionKind().GroupVersion(), d.Object.GetKind()),
		})
	}
	diags = append(diags, checker.Check(set)...)
	if !f.cost {
		diags = diags.Without(cel.Info)
	}
	diags.Sort()
	if err := writeDiagnostics(stdout, f.output, diags); err != nil {
		return err
	}
	errs, warns := count(diags)
	if f.output == "text" {
		fmt.Fprintf(stdout, "%d policies, %d bindings checked against Kubernetes %s: %d errors, %d warnings\n",
			len(set.Policies), len(set.Bindings), checker.Version(), errs, warns)
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
