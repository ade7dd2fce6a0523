package policies

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/vap"
)

// Guard is an in-tree policy with its bindings and the rollout stage the settings choose.
type Guard struct {
	Policy   *vap.Policy
	Bindings []*vap.Binding
	Stage    vap.Stage
}

// Guards builds every in-tree guard with the settings. Every guard is built and every error
// returned, joined: each *vap.Error points at the Go line that wrote the faulty field.
func Guards(s *Settings) ([]*Guard, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	type builder struct {
		build func() (*vap.Policy, []*vap.Binding, error)
		stage vap.Stage
	}
	var guards []*Guard
	var errs []error
	for _, b := range []builder{
		{func() (*vap.Policy, []*vap.Binding, error) { return KosmosNodeNotReady(s.KosmosNodeNotReady) }, s.KosmosNodeNotReady.Stage},
		{func() (*vap.Policy, []*vap.Binding, error) { return DrainerCordonGuard(s.DrainerCordonGuard) }, s.DrainerCordonGuard.Stage},
		{func() (*vap.Policy, []*vap.Binding, error) {
			return EvictionTolerationFloor(s.EvictionTolerationFloor)
		}, s.EvictionTolerationFloor.Stage},
	} {
		p, bs, err := b.build()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		guards = append(guards, &Guard{Policy: p, Bindings: bs, Stage: s.stageOf(b.stage)})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return guards, nil
}

// File is an emitted YAML file.
type File struct {
	// Name is the file name, <policy name>.yaml.
	Name string
	Data []byte
}

// Render emits each guard, with its bindings at its stage, as a File, in the order of their
// names.
func Render(guards []*Guard) ([]File, error) {
	var files []File
	for _, g := range guards {
		var buf bytes.Buffer
		if err := vap.Emit(&buf, g.Policy, g.Bindings, g.Stage); err != nil {
			return nil, fmt.Errorf("emitting %s: %w", g.Policy.Name(), err)
		}
		files = append(files, File{Name: g.Policy.Name() + ".yaml", Data: buf.Bytes()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// Diagnostics returns what the checks of the guards found that does not stop them from being
// built: warnings (what could not be type-checked, lints) and infos (estimated costs).
func Diagnostics(guards []*Guard) cel.Diagnostics {
	var out cel.Diagnostics
	for _, g := range guards {
		out = append(out, g.Policy.Diagnostics()...)
	}
	return out
}
