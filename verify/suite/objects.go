package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"sigs.k8s.io/yaml"

	"github.com/vapc-dev/vapc/verify"
)

// A case may expect the object validating admission decided on (expect.object), the change
// the MutatingAdmissionPolicies made as a JSON patch of the object they received
// (expect.patch), and which of them changed it (expect.mutations).

// serverSet are the metadata fields the server sets on a write: an expected object that
// leaves one out does not compare it.
var serverSet = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"}

// compareObjects returns how the objects of the decision differ from the expectation.
func (s *Suite) compareObjects(want *Expect, dec *verify.Decision, objs objectPair) []string {
	var out []string
	if len(want.Object) > 0 {
		exp, err := s.loadJSON(want.Object)
		if err != nil {
			return append(out, fmt.Sprintf("expect.object: %v", err))
		}
		if d, err := diffDefaulted(exp, objs.validated, true); err != nil {
			out = append(out, fmt.Sprintf("expect.object: %v", err))
		} else if d != "" {
			out = append(out, fmt.Sprintf("object mismatch (-want +got):\n%s", d))
		}
	}
	if len(want.Patch) > 0 {
		out = append(out, s.comparePatch(want.Patch, objs)...)
	}
	if want.Mutations != nil {
		out = append(out, compareMutations(*want.Mutations, dec.Mutation)...)
	}
	return out
}

// comparePatch applies the expected patch to the object the MutatingAdmissionPolicies
// received and compares the result with the object they made.
func (s *Suite) comparePatch(raw json.RawMessage, objs objectPair) []string {
	data, err := s.loadJSON(raw)
	if err != nil {
		return []string{fmt.Sprintf("expect.patch: %v", err)}
	}
	if objs.input == nil {
		return []string{"expect.patch: the request has no object to patch"}
	}
	patch, err := jsonpatch.DecodePatch(data)
	if err != nil {
		return []string{fmt.Sprintf("expect.patch: %v", err)}
	}
	input, err := verify.DefaultJSON(objs.input)
	if err != nil {
		return []string{fmt.Sprintf("expect.patch: %v", err)}
	}
	exp, err := patch.Apply(input)
	if err != nil {
		return []string{fmt.Sprintf("expect.patch does not apply to the object the mutating policies received: %v", err)}
	}
	d, err := diffDefaulted(exp, objs.mutated, false)
	if err != nil {
		return []string{fmt.Sprintf("expect.patch: %v", err)}
	}
	if d != "" {
		return []string{fmt.Sprintf("the object with expect.patch applied differs from the object the mutating policies made (-want +got):\n%s", d)}
	}
	return nil
}

// diffDefaulted diffs two objects (JSON) after kube-apiserver's defaulting of both, so that an
// expectation need not spell out the defaults the server sets; lenient leaves out of got the
// server-set metadata want does not give.
func diffDefaulted(want, got []byte, lenient bool) (string, error) {
	var err error
	if want, err = verify.DefaultJSON(want); err != nil {
		return "", fmt.Errorf("expected: %w", err)
	}
	if len(got) > 0 {
		if got, err = verify.DefaultJSON(got); err != nil {
			return "", err
		}
	}
	var w, g any
	if err := decodeJSON(want, &w); err != nil {
		return "", fmt.Errorf("expected: %w", err)
	}
	if len(got) > 0 {
		if err := decodeJSON(got, &g); err != nil {
			return "", err
		}
	}
	if lenient {
		wm, _ := w.(map[string]any)
		gm, _ := g.(map[string]any)
		wmeta, _ := wm["metadata"].(map[string]any)
		gmeta, _ := gm["metadata"].(map[string]any)
		if gmeta != nil {
			for _, f := range serverSet {
				if _, ok := wmeta[f]; !ok {
					delete(gmeta, f)
				}
			}
		}
	}
	return cmp.Diff(w, g), nil
}

// decodeJSON decodes numbers as json.Number, so that 30 and 30.0 are told apart as the
// server tells them apart.
func decodeJSON(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

// loadJSON returns an inline value as JSON, or the content of the YAML or JSON file it names.
func (s *Suite) loadJSON(raw json.RawMessage) ([]byte, error) {
	p, ok := pathOf(raw)
	if !ok {
		return raw, nil
	}
	data, err := os.ReadFile(s.path(p))
	if err != nil {
		return nil, err
	}
	out, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return out, nil
}

// compareMutations compares the invocations that changed the object with the expected ones,
// in any order.
func compareMutations(want []ExpectMutation, got *verify.Mutation) []string {
	var changes []verify.Change
	if got != nil {
		changes = got.Changes
	}
	used := make([]bool, len(changes))
	var missing []string
	for _, w := range want {
		found := false
		for i, c := range changes {
			if used[i] || c.Policy != w.Policy || (w.Binding != "" && c.Binding != w.Binding) || (w.Param != "" && c.Param.String() != w.Param) {
				continue
			}
			used[i], found = true, true
			break
		}
		if !found {
			missing = append(missing, describeMutation(w.Policy, w.Binding, w.Param))
		}
	}
	var extra []string
	for i, c := range changes {
		if !used[i] {
			extra = append(extra, describeChange(c))
		}
	}
	var out []string
	if len(missing) > 0 {
		out = append(out, fmt.Sprintf("mutations: no change by %v", missing))
	}
	if len(extra) > 0 {
		out = append(out, fmt.Sprintf("mutations: unexpected change by %v", extra))
	}
	return out
}

func describeMutation(policy, binding, param string) string {
	s := "policy=" + policy
	if binding != "" {
		s += " binding=" + binding
	}
	if param != "" {
		s += " param=" + param
	}
	return s
}

// describeChange says which policy, binding and param changed which fields.
func describeChange(c verify.Change) string {
	param := ""
	if c.Param != nil {
		param = c.Param.String()
	}
	s := describeMutation(c.Policy, c.Binding, param)
	if c.Reinvoked {
		s += " (reinvoked)"
	}
	var ops []struct {
		Op   string `json:"op"`
		Path string `json:"path"`
	}
	if json.Unmarshal(c.Patch, &ops) == nil && len(ops) > 0 {
		s += ":"
		for i, op := range ops {
			if i > 0 {
				s += ","
			}
			s += " " + op.Op + " " + op.Path
		}
	}
	return s
}
