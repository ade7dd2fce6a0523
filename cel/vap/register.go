package vap

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/vapc-dev/vapc/cel"
)

// Builder builds a policy and its bindings; its errors are *Error values at the Go lines that
// wrote the faulty fields, as NewPolicy and NewBinding return them.
type Builder func() (*Policy, []*Binding, error)

var registry struct {
	mu       sync.Mutex
	builders []Builder
}

// Register adds a policy to the package's policies that `vapc emit --package` emits: a package
// of policies registers each one from a package-level variable (or an init function), so that
// vapc can import it into a program of its own, build every policy and write its YAML. No main
// package is needed:
//
//	var _ = vap.Register(func() (*vap.Policy, []*vap.Binding, error) {
//		p, err := vap.NewPolicy("no-latest-tag", ...)
//		if err != nil {
//			return nil, nil, err
//		}
//		b, err := vap.NewBinding(p)
//		return p, []*vap.Binding{b}, err
//	})
//
// It returns true, for the variable.
func Register(b Builder) bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.builders = append(registry.builders, b)
	return true
}

// Registered builds every registered policy. Every builder runs, and every error is returned,
// joined.
func Registered() ([]*Policy, [][]*Binding, error) {
	registry.mu.Lock()
	builders := append([]Builder(nil), registry.builders...)
	registry.mu.Unlock()
	var policies []*Policy
	var bindings [][]*Binding
	var errs []error
	for _, b := range builders {
		p, bs, err := b()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if p == nil {
			errs = append(errs, errors.New("a registered builder returned no policy"))
			continue
		}
		policies = append(policies, p)
		bindings = append(bindings, bs)
	}
	return policies, bindings, errors.Join(errs...)
}

// EmittedFile is one file of the output of EmitRegistered: <policy>.yaml and its content.
type EmittedFile struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// EmitRegistered is the main function of the program `vapc emit --package` builds: it builds
// every registered policy and writes the files Emit makes of them, with the stage of the
// argument --stage (Audit by default), as JSON on stdout: a list of EmittedFile. Errors of the
// policies, and the warnings of their checks, go to stderr, one a line, at the Go lines that
// wrote them. It returns the program's exit code: 0, 1 when a policy does not build or two
// have one name, 2 on a wrong argument.
func EmitRegistered(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("emit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stage := fs.String("stage", string(StageAudit), "rollout stage of every binding: Audit, Warn or Deny")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	st, err := ParseStage(*stage)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	policies, bindings, err := Registered()
	if err != nil {
		for _, e := range unjoin(err) {
			fmt.Fprintln(stderr, e)
		}
		return 1
	}
	if len(policies) == 0 {
		fmt.Fprintln(stderr, "no policies registered: call vap.Register in the package")
		return 1
	}
	var files []EmittedFile
	seen := map[string]bool{}
	code := 0
	for i, p := range policies {
		for _, d := range p.Diagnostics() {
			if d.Severity == cel.Warning {
				fmt.Fprintln(stderr, d.String())
			}
		}
		name := p.Name() + ".yaml"
		if seen[name] {
			fmt.Fprintf(stderr, "%s: a second policy is named %s\n", p.Source(), p.Name())
			code = 1
			continue
		}
		seen[name] = true
		var buf bytes.Buffer
		if err := Emit(&buf, p, bindings[i], st); err != nil {
			fmt.Fprintln(stderr, err)
			code = 1
			continue
		}
		files = append(files, EmittedFile{Name: name, Data: buf.Bytes()})
	}
	if code != 0 {
		return code
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	if err := json.NewEncoder(stdout).Encode(files); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}
