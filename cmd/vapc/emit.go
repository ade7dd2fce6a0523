package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/vap"
	"github.com/vapc-dev/vapc/policies"
)

func init() {
	register("emit", verb{summary: "write policies' YAML from their Go source: the in-tree guards, or your own package's", run: runEmit, flags: func() *flagSet { return new(emitFlags).flagSet(io.Discard, io.Discard) }})
}

type emitFlags struct {
	settings string
	pkg      string
	out      string
	stage    string
	check    bool
}

func runEmit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f emitFlags
	fs := f.flagSet(stdout, stderr)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		fs.Usage()
		return usagef("emit: unexpected arguments %q", rest)
	}
	var stage vap.Stage
	if f.stage != "" {
		if stage, err = vap.ParseStage(f.stage); err != nil {
			return usagef("emit: --stage: %v", err)
		}
	}
	if f.pkg != "" {
		// A user's package of policies: its vap.Register calls say what to emit.
		if f.settings != policies.DefaultSettingsFile && f.settings != "" {
			return usagef("emit: --settings is the in-tree guards': a package given with --package reads its own")
		}
		if stage == "" {
			stage = vap.StageAudit
		}
		files, err := emitPackage(ctx, f.pkg, stage, stderr)
		if err != nil {
			return err
		}
		return writeEmitted(stdout, f, files)
	}

	settings := policies.DefaultSettings()
	if f.settings != "" {
		if err := statInputs("emit: --settings", f.settings); err != nil {
			return err
		}
		if settings, err = policies.LoadSettings(f.settings); err != nil {
			fmt.Fprintln(stderr, err)
			return &findingsError{fmt.Sprintf("emit: invalid settings in %s", f.settings)}
		}
	}
	if stage != "" {
		settings.SetStage(stage)
	}
	guards, err := policies.Guards(settings)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return &findingsError{"emit: the policies do not build; nothing written"}
	}
	for _, d := range policies.Diagnostics(guards) {
		if d.Severity == cel.Warning {
			fmt.Fprintln(stderr, d.String())
		}
	}
	files, err := policies.Render(guards)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return &findingsError{"emit: the policies cannot be emitted; nothing written"}
	}
	return writeEmitted(stdout, f, files)
}

// writeEmitted makes the --out folder hold the files, or with --check says what it would
// change.
func writeEmitted(stdout io.Writer, f emitFlags, files []policies.File) error {
	changes, err := syncFolder(f.out, files, !f.check)
	if err != nil {
		return err
	}
	for _, c := range changes {
		fmt.Fprintln(stdout, c)
	}
	if f.check && len(changes) > 0 {
		return &findingsError{fmt.Sprintf("emit: %s is stale: run vapc emit (make policies)", f.out)}
	}
	return nil
}

// syncFolder makes dir hold the files: it writes those whose content differs and removes the
// files vapc generated before (they start with vap.Header) that are no longer emitted. Other
// files are left alone. With write false it changes nothing and only reports. It returns what
// it changed (or would change), one line each, in file order.
func syncFolder(dir string, files []policies.File, write bool) ([]string, error) {
	verb := func(done, would string) string {
		if write {
			return done
		}
		return would
	}
	if write {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	var changes []string
	emitted := map[string]bool{}
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		emitted[f.Name] = true
		old, err := os.ReadFile(path)
		switch {
		case err == nil && bytes.Equal(old, f.Data):
			continue
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return nil, err
		}
		changes = append(changes, verb("wrote ", "would write ")+path)
		if write {
			if err := os.WriteFile(path, f.Data, 0o644); err != nil {
				return nil, err
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var stale []string
	for _, e := range entries {
		if e.IsDir() || emitted[e.Name()] || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if bytes.HasPrefix(data, []byte(vap.Header+"\n")) {
			stale = append(stale, path)
		}
	}
	sort.Strings(stale)
	for _, path := range stale {
		changes = append(changes, verb("removed ", "would remove ")+path)
		if write {
			if err := os.Remove(path); err != nil {
				return nil, err
			}
		}
	}
	return changes, nil
}

// flagSet defines the flags of vapc emit into f.
func (f *emitFlags) flagSet(stdout, stderr io.Writer) *flagSet {
	fs := newFlagSet("emit", stdout, stderr, help{
		usage: "vapc emit [--settings FILE | --package PKG] [--out DIR] [--stage STAGE] [--check]",
		about: `Builds the in-tree guards of package policies (or, with --package, the policies a Go package
of yours registers with vap.Register), type-checks every expression, and writes their YAML, one
<policy>.yaml each, for kubectl apply; files it wrote before for policies that no longer exist
are removed. See policies/README.md.`,
		outcomes: []outcome{
			{exitOK, "the folder holds what emit writes (with --check: it did already)"},
			{exitFindings, "the policies do not build (an expression's type error, at the Go line that wrote it), the settings are invalid, or with --check the folder is stale"},
		},
		examples: []example{
			{"write the in-tree guards' YAML into policies/ (make policies)", "vapc emit"},
			{"in CI: fail when policies/ is not what the Go code writes", "vapc emit --check"},
			{"your own package's policies, every binding at its Warn stage", "vapc emit --package ./mypolicies --out deploy/policies --stage Warn"},
		},
	})
	fs.StringVar(&f.settings, "settings", policies.DefaultSettingsFile, `settings file of the guards ("" for the built-in defaults)`)
	fs.meta("settings", "FILE")
	fs.meta("package", "PKG")
	fs.meta("out", "DIR")
	fs.StringVar(&f.pkg, "package", "", "Go package of your own policies (a path such as ./mypolicies, or an import path of your module): vapc builds a program that imports it and emits what it registers with vap.Register (needs the go command)")
	fs.StringVar(&f.out, "out", "policies", "folder to write one <policy>.yaml per policy into")
	fs.StringVar(&f.stage, "stage", "", "rollout stage of every binding, Audit, Warn or Deny, instead of the settings' stages (with --package: Audit unless given)")
	fs.BoolVar(&f.check, "check", false, "write nothing; exit 1 if the folder is not what emit would write")
	fs.choices("stage", "Audit", "Warn", "Deny")
	fs.args = ""
	return fs
}
