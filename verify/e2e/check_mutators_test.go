package e2e

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The kinds TestCheckParityMutations mutates.
const (
	policyKind          = "ValidatingAdmissionPolicy"
	bindingKind         = "ValidatingAdmissionPolicyBinding"
	mutatingKind        = "MutatingAdmissionPolicy"
	mutatingBindingKind = "MutatingAdmissionPolicyBinding"
)

// isPolicy and isBinding say whether an object's kind is a policy's or a binding's, validating
// or mutating.
func isPolicy(kind any) bool  { return kind == policyKind || kind == mutatingKind }
func isBinding(kind any) bool { return kind == bindingKind || kind == mutatingBindingKind }

// fits says whether a mutation for kind applies to an object of objKind: a validating
// policy's (or binding's) mutation applies to a mutating one's too, whose fields it mostly
// shares (a field the mutating kind lacks is then an unknown field, which both must refuse).
func fits(kind string, objKind any) bool {
	switch kind {
	case "":
		return true
	case policyKind:
		return isPolicy(objKind)
	case bindingKind:
		return isBinding(objKind)
	}
	return kind == objKind
}

// mutation changes a policy or binding, decoded from JSON, in place. apply returns a label
// of what it did and false when it does not apply to the object.
type mutation struct {
	name  string
	kind  string // policyKind, bindingKind (either also of the mutating kinds), mutatingKind, or "" for all
	apply func(r *rand.Rand, obj map[string]any) (string, bool)
}

// remove, as a value of set, deletes the field.
type removeField struct{}

var remove = removeField{}

// gen, as a value of set, computes the value.
type gen struct {
	label string
	fn    func(r *rand.Rand) any
}

// set returns a mutation that sets the field at one of paths to one of values. A path is
// dot-separated; "name[]" steps into a random item of the list name and applies only when
// the list has one. Maps along the path are created.
func set(name, kind string, paths []string, values ...any) mutation {
	return mutation{name: name, kind: kind, apply: func(r *rand.Rand, obj map[string]any) (string, bool) {
		var fit []string
		for _, p := range paths {
			if strings.Contains(p, "matchConstraints") && !isPolicy(obj["kind"]) ||
				strings.Contains(p, "matchResources") && !isBinding(obj["kind"]) {
				continue
			}
			fit = append(fit, p)
		}
		if len(fit) == 0 {
			return "", false
		}
		path := pick(r, fit...)
		v := pick(r, values...)
		label := describeValue(v)
		if g, ok := v.(gen); ok {
			v = g.fn(r)
		}
		parent, key, ok := walk(r, obj, path)
		if !ok {
			return "", false
		}
		if _, ok := v.(removeField); ok {
			delete(parent, key)
		} else {
			parent[key] = deepCopyJSON(v)
		}
		return "(" + path + "=" + label + ")", true
	}}
}

// custom returns a mutation that applies fn to the map holding the last step of path and
// that step's key (steps as for set).
func custom(name, kind, path string, fn func(r *rand.Rand, parent map[string]any, key string) (string, bool)) mutation {
	return mutation{name: name, kind: kind, apply: func(r *rand.Rand, obj map[string]any) (string, bool) {
		parent, key, ok := walk(r, obj, path)
		if !ok {
			return "", false
		}
		return fn(r, parent, key)
	}}
}

// walk follows path from obj to the map holding its last step, a field, and returns that
// map and the field's name. It creates the maps missing along the path, and changes nothing
// when it cannot follow the path (a list without items, a value that is not a map).
func walk(r *rand.Rand, obj map[string]any, path string) (map[string]any, string, bool) {
	steps := strings.Split(path, ".")
	last := steps[len(steps)-1]
	if strings.HasSuffix(last, "[]") {
		return nil, "", false
	}
	// First pick the items and check that the path can be followed, then create the maps.
	items := make([]int, len(steps))
	cur, missing := obj, false
	for i, step := range steps[:len(steps)-1] {
		name, isItem := strings.CutSuffix(step, "[]")
		switch {
		case missing && isItem:
			return nil, "", false
		case missing:
		case isItem:
			list, _ := cur[name].([]any)
			if len(list) == 0 {
				return nil, "", false
			}
			items[i] = r.IntN(len(list))
			next, ok := list[items[i]].(map[string]any)
			if !ok {
				return nil, "", false
			}
			cur = next
		case cur[name] == nil:
			missing = true
		default:
			next, ok := cur[name].(map[string]any)
			if !ok {
				return nil, "", false
			}
			cur = next
		}
	}
	m := obj
	for i, step := range steps[:len(steps)-1] {
		name, isItem := strings.CutSuffix(step, "[]")
		if isItem {
			m = m[name].([]any)[items[i]].(map[string]any)
			continue
		}
		next, ok := m[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[name] = next
		}
		m = next
	}
	return m, last, true
}

func describeValue(v any) string {
	switch v := v.(type) {
	case removeField:
		return "<removed>"
	case gen:
		return v.label
	case string:
		if len(v) > 40 {
			return strconv.Quote(v[:30]) + fmt.Sprintf("...(%d)", len(v))
		}
		return strconv.Quote(v)
	default:
		s := fmt.Sprint(v)
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return s
	}
}

func repeat(label string, s string, n int) gen {
	return gen{label: label, fn: func(*rand.Rand) any { return strings.Repeat(s, n) }}
}

func strs(xs ...string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// leaf is a place in a decoded object: a key of a map or an index of a list.
type leaf struct {
	path string
	m    map[string]any
	key  string
	list []any
	i    int
}

func (l leaf) get() any {
	if l.m != nil {
		return l.m[l.key]
	}
	return l.list[l.i]
}

func (l leaf) set(v any) {
	if l.m != nil {
		l.m[l.key] = v
	} else {
		l.list[l.i] = v
	}
}

// leaves lists every place of v, depth first, in a stable order.
func leaves(path string, v any) []leaf {
	var out []leaf
	switch v := v.(type) {
	case map[string]any:
		for _, k := range sortedMapKeys(v) {
			p := path + "." + k
			out = append(out, leaf{path: p, m: v, key: k})
			out = append(out, leaves(p, v[k])...)
		}
	case []any:
		for i, e := range v {
			p := fmt.Sprintf("%s[%d]", path, i)
			out = append(out, leaf{path: p, list: v, i: i})
			out = append(out, leaves(p, e)...)
		}
	}
	return out
}

func sortedMapKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// anyLeaf returns a mutation that applies fn to a random place of the object that ok accepts.
func anyLeaf(name string, ok func(l leaf) bool, fn func(r *rand.Rand, l leaf) string) mutation {
	return mutation{name: name, apply: func(r *rand.Rand, obj map[string]any) (string, bool) {
		var fit []leaf
		for _, l := range leaves("", obj) {
			// A document without a policy's or a binding's apiVersion and kind is not
			// something vapc check checks (it refuses it as such, as kubectl does one
			// without them), and the server takes the kind from the URL.
			if l.path != ".apiVersion" && l.path != ".kind" && ok(l) {
				fit = append(fit, l)
			}
		}
		if len(fit) == 0 {
			return "", false
		}
		l := fit[r.IntN(len(fit))]
		return "(" + strings.TrimPrefix(l.path, ".") + ": " + fn(r, l) + ")", true
	}}
}

// rawPlaceholder is the string value that stands for rawScalars[N] until the mutant is
// written as YAML: rawPlaceholder followed by N.
const rawPlaceholder = "rawyamlplaceholder"

var rawPlaceholderRE = regexp.MustCompile(rawPlaceholder + `(\d+)`)

// withRawYAML replaces the placeholders of rawScalars in the YAML text of a mutant.
func withRawYAML(data []byte) []byte {
	return rawPlaceholderRE.ReplaceAllFunc(data, func(m []byte) []byte {
		n, _ := strconv.Atoi(string(m[len(rawPlaceholder):]))
		return []byte(rawScalars[n])
	})
}
