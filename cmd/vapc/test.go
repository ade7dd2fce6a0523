package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vapc-dev/vapc/cel/manifest"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/suite"
)

func init() {
	register("test", verb{summary: "run test suites: requests and the decisions kube-apiserver must make", run: runTest, flags: func() *flagSet { return new(testFlags).flagSet(io.Discard, io.Discard) }})
}

type testFlags struct {
	output  string
	version string
	verbose bool
}

func runTest(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var f testFlags
	fs := f.flagSet(stdout, stderr)
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		fs.Usage()
		return usagef("test: no suites given")
	}
	if err := testOutputs.check(f.output); err != nil {
		return err
	}
	if err := verify.CheckKubernetesVersion(f.version); err != nil {
		return usagef("test: --kubernetes-version: %v", err)
	}
	if err := statInputs("test", paths...); err != nil {
		return err
	}
	files, err := suiteFiles(paths)
	if err != nil {
		return inputProblems(stderr, "test", err)
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
		return &findingsError{fmt.Sprintf("test: %d %s in the suites, their policies or their objects", len(bad), plural(len(bad), "problem", "problems"))}
	}

	switch f.output {
	case "json":
		err = suite.WriteJSON(stdout, reports)
	case "jsonl":
		err = suite.WriteJSONL(stdout, reports)
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

// suiteFiles expands folders, by the rule of every verb (manifest.Expand), into the suites
// under them: the files named *.suite.yaml or *.suite.yml. A file given is read whatever its
// name. A folder without suites is an error.
func suiteFiles(paths []string) ([]string, error) {
	var out []string
	var errs []error
	for _, p := range paths {
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			out = append(out, p)
			continue
		}
		files, err := manifest.Expand(p)
		var found []string
		for _, f := range files {
			if strings.HasSuffix(f, ".suite.yaml") || strings.HasSuffix(f, ".suite.yml") {
				found = append(found, f)
			}
		}
		if len(found) == 0 && err == nil {
			err = &manifest.Error{Pos: manifest.Position{File: p}, Msg: "no *.suite.yaml files in this folder (testdata and hidden folders below it are not read): nothing to test"}
		}
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, found...)
	}
	return out, errors.Join(errs...)
}

// flagSet defines the flags of vapc test into f.
func (f *testFlags) flagSet(stdout, stderr io.Writer) *flagSet {
	fs := newFlagSet("test", stdout, stderr, help{
		usage: "vapc test [flags] SUITE.suite.yaml|DIR ...",
		about: `Runs test suites: YAML files of kind TestSuite (apiVersion vapc.dev/v1alpha1) that name the
policies, the cluster objects they read (namespaces, params) and the cases. Each case is a
request decided by kube-apiserver ` + verify.KubernetesVersion + `'s own validating and mutating admission code
over the suite's objects (with pipeline: true, through its request pipeline, defaults and
admission plugins included), and compared with what the case expects: admit or deny, the
message and code, warnings, audit annotations, the object a mutating policy made.

The suites' policies are checked first, as vapc check does: a suite whose policies vapc check
rejects does not run (a messageExpression that cannot work is a warning here: the server
answers with the message instead). A folder stands for its *.suite.yaml files at any depth;
see README.md, "vapc test", for the format.`,
		outcomes: []outcome{
			{exitOK, "every case passed"},
			{exitFindings, "a case failed; or a suite, its policies (vapc check's errors) or its objects cannot be read: every problem of every suite is reported"},
			{exitInterrupted, "interrupted (Ctrl-C, SIGTERM)"},
		},
		examples: []example{
			{"run the suites of a folder", "vapc test policies/testdata"},
			{"one suite, with the results of the passing cases too", "vapc test -v testdata/suites/kosmos/kosmos.suite.yaml"},
			{"in CI: a JUnit report for the CI's test report", "vapc test --output junit policies/testdata > vapc-test.xml"},
		},
	})
	outputFlag(fs, &f.output, testOutputs)
	fs.StringVar(&f.version, "kubernetes-version", verify.KubernetesVersion, "Kubernetes minor to decide as: "+verify.KubernetesVersion+" (the evaluator is kube-apiserver "+verify.KubernetesVersion+"'s own code)")
	fs.choices("kubernetes-version", verify.KubernetesVersion)
	fs.BoolVar(&f.verbose, "v", false, "show the results of passing cases too")
	return fs
}
