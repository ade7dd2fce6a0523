package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/suite"
)

func init() {
	register("test", verb{summary: "run test suites: requests and the decisions kube-apiserver must make", run: runTest})
}

type testFlags struct {
	output  string
	version string
	verbose bool
}

func runTest(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var f testFlags
	fs := newFlagSet("test", stderr,
		"usage: vapc test [flags] SUITE|DIR ...\n\nA suite is a YAML file of kind TestSuite (apiVersion vapc.dev/v1alpha1); a folder is searched for *.suite.yaml.")
	fs.StringVar(&f.output, "output", "text", "output format: text, json or junit")
	fs.StringVar(&f.version, "kubernetes-version", verify.KubernetesVersion, "Kubernetes minor to decide as (only "+verify.KubernetesVersion+")")
	fs.BoolVar(&f.verbose, "v", false, "show the results of passing cases too")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		fs.Usage()
		return usagef("test: no suites given")
	}
	switch f.output {
	case "text", "json", "junit":
	default:
		return usagef("test: --output must be text, json or junit, not %q", f.output)
	}
	if err := verify.CheckKubernetesVersion(f.version); err != nil {
		return usagef("test: --kubernetes-version: %v", err)
	}
	files, err := suiteFiles(paths)
	var u *usageError
	if errors.As(err, &u) {
		return err
	}
	if err != nil {
		return usagef("test: %v", err)
	}

	// Every problem of every suite is reported at once: those of the suite files, then those
	// of the policies and objects of the suites that could be read.
	var suites []*suite.Suite
	var bad []string
	for _, file := range files {
		s, err := suite.Load(file)
		if err != nil {
			bad = append(bad, errorLines(err)...)
		}
		suites = append(suites, s...)
	}
	var reports []*suite.SuiteReport
	for _, s := range suites {
		r, err := suite.Run(ctx, s)
		var se *suite.SuiteError
		if errors.As(err, &se) {
			bad = append(bad, errorLines(se.Err)...)
			continue
		}
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	if len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintln(stderr, b)
		}
		return usagef("test: %d problems in the suites, their policies or their objects", len(bad))
	}

	switch f.output {
	case "json":
		err = suite.WriteJSON(stdout, reports)
	case "junit":
		err = suite.WriteJUnit(stdout, reports)
	default:
		err = suite.WriteText(stdout, reports, f.verbose)
	}
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range reports {
		failed += r.Failed()
	}
	if failed > 0 {
		return &findingsError{fmt.Sprintf("test: %d cases failed", failed)}
	}
	return nil
}

// suiteFiles expands folders into the *.suite.yaml files under them.
func suiteFiles(paths []string) ([]string, error) {
	var out []string
	if err := statInputs("test", paths...); err != nil {
		return nil, err
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, errors.New(pathError(p, err))
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (strings.HasSuffix(path, ".suite.yaml") || strings.HasSuffix(path, ".suite.yml")) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no *.suite.yaml files", p)
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}

// errorLines splits joined errors into one line each.
func errorLines(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, errorLines(e)...)
		}
		return out
	}
	return []string{err.Error()}
}
