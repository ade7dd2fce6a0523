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
	register("emit", verb{summary: "write the in-tree policies' YAML from their Go source and settings", run: runEmit, flags: func() *flagSet { return new(emitFlags).flagSet(io.Discard, io.Discard) }})
}

type emitFlags struct {
	settings string
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
		settings.Stage = stage
		settings.KosmosNodeNotReady.Stage = ""
		settings.DrainerCordonGuard.Stage = ""
		settings.EvictionTolerationFloor.Stage = ""
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
	fs := newFlagSet("emit", stdout, stderr,
		"usage: vapc emit [--settings FILE] [--out DIR] [--stage STAGE] [--check]",
		"\nBuilds the in-tree guards of package policies, type-checks every expression, and writes",
		"their YAML; files it wrote before for guards that no longer exist are removed.")
	fs.StringVar(&f.settings, "settings", policies.DefaultSettingsFile, `settings file of the guards ("" for the built-in defaults)`)
	fs.StringVar(&f.out, "out", "policies", "folder to write one <policy>.yaml per guard into")
	fs.StringVar(&f.stage, "stage", "", "rollout stage of every binding, Audit, Warn or Deny, instead of the settings' stages")
	fs.BoolVar(&f.check, "check", false, "write nothing; exit 1 if the folder is not what emit would write")
	fs.choices("stage", "Audit", "Warn", "Deny")
	fs.args = ""
	return fs
}
