// Package redact keeps the values of sensitive objects out of what a replay writes: audit logs
// hold Secrets, and reports and CI logs get shared. In a report a sensitive object keeps its
// key names, its values become their sizes, and every value it held is scrubbed from the texts
// shown beside it (a policy's message may quote one); a replay's records (JSON lines, text,
// JUnit) are scrubbed of the values of the Secrets they are about.
package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/verify"
)

// MinScrubbed is the length under which a value is not searched for in texts: shorter
// strings occur everywhere, and tell little.
const MinScrubbed = 4

// Mark replaces a scrubbed value in a text.
const Mark = "<redacted>"

// Secrets is always sensitive.
var Secrets = schema.GroupResource{Resource: "secrets"}

// Redactor knows which resources are sensitive.
type Redactor struct {
	sensitive map[schema.GroupResource]bool
}

// New returns a Redactor of Secrets and of the given resources.
func New(resources ...schema.GroupResource) *Redactor {
	r := &Redactor{sensitive: map[schema.GroupResource]bool{Secrets: true}}
	for _, gr := range resources {
		r.sensitive[gr] = true
	}
	return r
}

// Resources are the sensitive resources, sorted, as GROUP/RESOURCE (RESOURCE for the core
// group).
func (r *Redactor) Resources() []string {
	var out []string
	for gr := range r.sensitive {
		out = append(out, String(gr))
	}
	sort.Strings(out)
	return out
}

// String writes a resource as GROUP/RESOURCE, or RESOURCE for the core group.
func String(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Group + "/" + gr.Resource
}

// Parse reads GROUP/RESOURCE, or RESOURCE for the core group.
func Parse(s string) (schema.GroupResource, error) {
	group, resource, ok := strings.Cut(s, "/")
	if !ok {
		group, resource = "", s
	}
	if resource == "" || strings.Contains(resource, "/") || strings.ContainsAny(s, " \t") {
		return schema.GroupResource{}, fmt.Errorf("%q is not GROUP/RESOURCE (or RESOURCE of the core group), e.g. secrets, example.com/credentials", s)
	}
	return schema.GroupResource{Group: group, Resource: strings.ToLower(resource)}, nil
}

// Sensitive says whether a request for resource is about a sensitive object. group is the
// group of the request's objects; unknown (no object) counts as any group.
func (r *Redactor) Sensitive(group string, groupKnown bool, resource string) bool {
	for gr := range r.sensitive {
		if gr.Resource == resource && (!groupKnown || gr.Group == group) {
			return true
		}
	}
	return false
}

// SensitiveKind says whether objects of a kind (a policy's paramKind) may be sensitive: a
// Secret, or a kind whose plural, as most kinds form it (lower case, "s", "es", "y" to
// "ies"), is a sensitive resource of its group. Where it guesses, it guesses sensitive.
func (r *Redactor) SensitiveKind(group, kind string) bool {
	if group == "" && kind == "Secret" {
		return true
	}
	k := strings.ToLower(kind)
	plurals := []string{k + "s", k + "es", strings.TrimSuffix(k, "y") + "ies", k}
	for gr := range r.sensitive {
		if gr.Group == group && slices.Contains(plurals, gr.Resource) {
			return true
		}
	}
	return false
}

// Values gathers the values of sensitive objects, to scrub them from texts.
type Values struct {
	values map[string]bool
	// sorted are the values the longest first, as Scrub replaces them (nil: not sorted yet).
	sorted []string
	// shown are texts shown anyway (Shown), which Scrub leaves whole.
	shown []string
}

// add gathers s, and the forms a text quotes it in: JSON's (a message within the audit
// annotation that lists an Audit binding's failures, escaped as the server marshals it) and
// Go's %q (a disagreement with the log).
func (v *Values) add(s string) {
	if len(s) < MinScrubbed {
		return
	}
	if v.values == nil {
		v.values = map[string]bool{}
	}
	v.sorted = nil
	v.values[s] = true
	if b, err := json.Marshal(s); err == nil {
		if q := string(b[1 : len(b)-1]); q != s {
			v.values[q] = true
			if b, err := json.Marshal(q); err == nil {
				v.values[string(b[1:len(b)-1])] = true // once more: an annotation's JSON quoted
			}
		}
	}
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		v.values[q[1:len(q)-1]] = true
	}
}

// Of gathers the values of the sensitive object u (nil: none), as Object does.
func (v *Values) Of(u *unstructured.Unstructured) {
	if u != nil {
		Object(u, true, v)
	}
}

// Shown says texts are shown anyway (the object's name and namespace): a gathered value equal
// to one is not scrubbed (a service account token's Secret holds its namespace), and Scrub
// leaves them whole where a value is within one (a Secret named after the account it holds
// the token of), scrubbing the value elsewhere: a message keeps naming the object.
func (v *Values) Shown(texts ...string) {
	for _, t := range texts {
		if t == "" {
			continue
		}
		delete(v.values, t)
		v.sorted = nil
		v.shown = append(v.shown, t)
	}
	sort.Slice(v.shown, func(i, j int) bool { return len(v.shown[i]) > len(v.shown[j]) })
}

// Empty says whether no value was gathered.
func (v *Values) Empty() bool { return len(v.values) == 0 }

// Scrub replaces every gathered value in s, the longest first; a text shown anyway (Shown)
// stays whole, unless a value holds it.
func (v *Values) Scrub(s string) string {
	if len(v.values) == 0 || s == "" {
		return s
	}
	if v.sorted == nil {
		v.sorted = make([]string, 0, len(v.values))
		for x := range v.values {
			v.sorted = append(v.sorted, x)
		}
		sort.Slice(v.sorted, func(i, j int) bool {
			if len(v.sorted[i]) != len(v.sorted[j]) {
				return len(v.sorted[i]) > len(v.sorted[j])
			}
			return v.sorted[i] < v.sorted[j]
		})
	}
	vals := v.sorted
	holdsShown := func(x string) bool {
		return slices.ContainsFunc(v.shown, func(t string) bool { return strings.Contains(x, t) })
	}
	for _, x := range vals {
		if holdsShown(x) {
			s = strings.ReplaceAll(s, x, Mark)
		}
	}
	return v.scrubAround(s, vals, 0)
}

// scrubAround replaces the values in s but within the shown texts from the i-th on.
func (v *Values) scrubAround(s string, vals []string, i int) string {
	for ; i < len(v.shown); i++ {
		if t := v.shown[i]; strings.Contains(s, t) {
			parts := strings.Split(s, t)
			for k := range parts {
				parts[k] = v.scrubAround(parts[k], vals, i+1)
			}
			return strings.Join(parts, t)
		}
	}
	for _, x := range vals {
		s = strings.ReplaceAll(s, x, Mark)
	}
	return s
}

// Object returns a copy of u to show in a report: without metadata.managedFields and, when
// sensitive, with every value replaced by its size (a Secret's data and stringData, every
// field but apiVersion, kind and metadata of another sensitive object, and the values of the
// annotations, which hold the last applied configuration). The values replaced go to vals.
func Object(u *unstructured.Unstructured, sensitive bool, vals *Values) map[string]any {
	if u == nil || u.Object == nil {
		return nil
	}
	out := make(map[string]any, len(u.Object))
	secret := u.GetKind() == "Secret"
	for k, v := range u.Object {
		switch {
		case k == "metadata":
			out[k] = metadata(v, sensitive, vals)
		case !sensitive || k == "apiVersion" || k == "kind":
			out[k] = copyValue(v)
		case secret && k == "data":
			out[k] = secretData(v, vals)
		case secret && k != "stringData":
			out[k] = copyValue(v) // type, immutable
		default:
			out[k] = sizes(v, vals)
		}
	}
	return out
}

func metadata(v any, sensitive bool, vals *Values) any {
	m, ok := v.(map[string]any)
	if !ok {
		return copyValue(v)
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		switch {
		case k == "managedFields":
		case k == "annotations" && sensitive:
			out[k] = sizes(x, vals)
		default:
			out[k] = copyValue(x)
		}
	}
	return out
}

// secretData replaces the base64 values of a Secret's data by their decoded sizes.
func secretData(v any, vals *Values) any {
	m, ok := v.(map[string]any)
	if !ok {
		return sizes(v, vals)
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			out[k] = sizes(x, vals)
			continue
		}
		vals.add(s)
		n := len(s)
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			n = len(b)
			if utf8.Valid(b) {
				vals.add(string(b))
				vals.add(strings.TrimSpace(string(b)))
			}
		}
		out[k] = size(n)
	}
	return out
}

// Sizes is v (a decoded JSON value) with the keys of its maps and the lengths of its lists,
// and every scalar replaced by its size: a sensitive value shown without what it holds.
func Sizes(v any) any {
	var vals Values
	return sizes(v, &vals)
}

// sizes keeps the keys of maps and the lengths of lists, and replaces every scalar by its
// size.
func sizes(v any, vals *Values) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = sizes(e, vals)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = sizes(e, vals)
		}
		return out
	case string:
		vals.add(x)
		return size(len(x))
	case nil:
		return nil
	default:
		s := fmt.Sprint(x)
		vals.add(s)
		return Mark
	}
}

func size(n int) string {
	if n == 1 {
		return "<redacted: 1 byte>"
	}
	return fmt.Sprintf("<redacted: %d bytes>", n)
}

// copyValue copies a decoded JSON value, so that the report never shares the replay's.
func copyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}

// ScrubAll is a new slice of texts scrubbed (a record's may be shared with its decision).
func (v *Values) ScrubAll(texts []string) []string {
	if texts == nil {
		return nil
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = v.Scrub(t)
	}
	return out
}

// ScrubValues is a copy of m with its values scrubbed.
func (v *Values) ScrubValues(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		out[k] = v.Scrub(x)
	}
	return out
}

// Marked is s as Mark, "" as it is.
func Marked(s string) string {
	if s == "" {
		return s
	}
	return Mark
}

// MarkedValues is a copy of m with its values marked.
func MarkedValues(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		out[k] = Marked(x)
	}
	return out
}

// MarkedAll is a new slice of as many Mark as texts.
func MarkedAll(texts []string) []string {
	if texts == nil {
		return nil
	}
	out := make([]string, len(texts))
	for i := range out {
		out[i] = Mark
	}
	return out
}

// Quoted are disagreements with the log (a replay's --check-recorded) with the messages and
// annotation values they quote as Mark: the log's are what the server answered on the version it read, which a
// disagreement says is not the one the replay's objects hold, and a sensitive object's
// values there are not the ones its scrub knows.
func Quoted(texts []string) []string {
	if texts == nil {
		return nil
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		if head, _, ok := strings.Cut(t, ": recorded ["); ok && head == verify.ValidationFailureAnnotation {
			out[i] = head + ": recorded and predicted differ: " + Mark
			continue
		}
		var b strings.Builder
		for j := 0; j < len(t); j++ {
			if t[j] != '"' {
				b.WriteByte(t[j])
				continue
			}
			// A Go-quoted string (%q): to its closing quote, past its escapes.
			k := j + 1
			for k < len(t) && t[k] != '"' {
				if t[k] == '\\' {
					k++
				}
				k++
			}
			b.WriteString(`"` + Mark + `"`)
			j = k
		}
		out[i] = b.String()
	}
	return out
}
