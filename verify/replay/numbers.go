package replay

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
)

// A custom resource's numbers reach admission as the client wrote them: kube-apiserver decodes
// its body without a Go type, and a number written with a fraction or an exponent (2.0, 1e2)
// is a double in CEL where 2 is an int (object.spec.ratio * 2.0 is an error on the one, a
// value on the other; type() tells them apart). The audit log writes the object it decoded,
// where a double that is whole is written 2: the log of a create or update does not say which
// the client sent (kubectl never sends 2.0, as YAML's 2.0 reaches JSON as 2; Python's and
// Java's serializers do, and `kubectl create --raw` sends the file's). A request whose user
// agent is client-go's default is taken as sent with ints (clientGoEncoded), kubectl's --raw
// aside. The stored object is read back with ints, so the old object and a response are what
// the log shows. A patch's body is logged as sent.
//
// Which numbers may have been doubles the schema says: one it types number, or whose type it
// does not give. One it types integer (or int-or-string) the replay takes as an int, as the
// policy's type check does: a client writes it from an integer, and one that holds a float
// there (Python's n / 2) has kube-apiserver decide on a double the replay does not try.

// numbersUnsaid says whether the custom resource of a create or update the log records after
// decoding may have held whole numbers the client sent as doubles: its body is the logged
// object, not a patch.
func numbersUnsaid(ev *Event, t target) bool {
	return (t.op == admission.Create || t.op == admission.Update) && (ev.Verb == "create" || ev.Verb == "update") &&
		!t.reqKind.Empty() && !kubescheme.Knows(t.reqKind) && !clientGoEncoded(ev)
}

// clientGoEncoded says whether the request's body is one a Go client encoded (clientGo's user
// agent), but for kubectl's --raw (`kubectl create --raw`, `kubectl replace --raw`), which
// sends a file's bytes as they are: kubectl's own creates and updates name its field manager in
// the query (kubectl-create, kubectl-replace, kubectl-client-side-apply, kubectl-edit), the raw
// ones do not.
func clientGoEncoded(ev *Event) bool {
	if !clientGo.MatchString(ev.UserAgent) {
		return false
	}
	if strings.HasPrefix(ev.UserAgent, "kubectl/") {
		return strings.HasPrefix(ev.Query().Get("fieldManager"), "kubectl")
	}
	return true
}

// clientGo matches the user agent client-go gives a program that sets none (rest.
// DefaultKubernetesUserAgent: kubectl, kube-controller-manager, most controllers): a Go client
// sends a whole number as 2 (encoding/json writes a whole float64 so, and kubectl's YAML and
// JSON reach it as numbers apimachinery's json makes ints of), never 2.0.
var clientGo = regexp.MustCompile(`^[^/ ]+/[^ ]+ \([a-z0-9]+/[a-z0-9_]+\) kubernetes/`)

// numberSchema is the structural schema of the custom resource a request carries, by which
// doubled says which of its whole numbers may have been sent as doubles; nil when the replay
// does not know it (each may).
func (r *Replayer) numberSchema(t target) *structuralschema.Structural {
	if cat := r.cat.c.Schema(); cat != nil {
		st, _ := cat.CustomResourceSchema(t.reqKind)
		return st
	}
	return nil
}

// mayBeDouble says whether a whole number whose schema is s may have been sent as a double: a
// number's (a client holding a float writes 2.0: Python's json, Java's Jackson), or one of a
// value whose type the schema does not give (x-kubernetes-preserve-unknown-fields, a schema
// the replay does not know). An integer's is an int: a client writes it from an integer.
func mayBeDouble(s *structuralschema.Structural) bool {
	return s == nil || s.Type == "number" || s.Type == "" && !s.XIntOrString
}

// doubledObject is a copy of a custom resource with the whole numbers that may have been sent
// as doubles (mayBeDouble, by the schema st) doubles, but for its metadata, apiVersion and
// kind; ok is false when it holds none.
func doubledObject(u *unstructured.Unstructured, st *structuralschema.Structural) (out *unstructured.Unstructured, ok bool) {
	if u == nil {
		return nil, false
	}
	changed := false
	var walk func(v any, s *structuralschema.Structural) any
	walk = func(v any, s *structuralschema.Structural) any {
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = walk(e, propertySchema(s, k))
			}
			return out
		case []any:
			var items *structuralschema.Structural
			if s != nil {
				items = s.Items
			}
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e, items)
			}
			return out
		case int64:
			if mayBeDouble(s) {
				changed = true
				return float64(x)
			}
		}
		return v
	}
	m := make(map[string]any, len(u.Object))
	for k, v := range u.Object {
		if k == "metadata" || k == "apiVersion" || k == "kind" {
			m[k] = v
			continue
		}
		m[k] = walk(v, propertySchema(st, k))
	}
	if !changed {
		return nil, false
	}
	return &unstructured.Unstructured{Object: m}, true
}

// propertySchema is the schema of the property k of an object whose schema is s: its
// property's, or its additionalProperties'; nil when s gives none.
func propertySchema(s *structuralschema.Structural, k string) *structuralschema.Structural {
	if s == nil {
		return nil
	}
	if p, ok := s.Properties[k]; ok {
		return &p
	}
	if s.AdditionalProperties != nil {
		return s.AdditionalProperties.Structural
	}
	return nil
}

// doublesInPatch says whether a patch of a custom resource writes a whole number as a double
// (2.0, 1e2): the object its response shows writes it 2, where admission decoded a double.
func doublesInPatch(ev *Event, t target) bool {
	if ev.Verb != "patch" && ev.Verb != "apply" || t.reqKind.Empty() || kubescheme.Knows(t.reqKind) || !fractionWritten(ev.RequestObject) {
		return false
	}
	d := json.NewDecoder(bytes.NewReader(ev.RequestObject))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return false
	}
	found := false
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case json.Number:
			if strings.ContainsAny(string(x), ".eE") {
				if f, err := x.Float64(); err == nil && f == math.Trunc(f) {
					found = true
				}
			}
		}
	}
	walk(v)
	return found
}

// fractionWritten says whether a digit is followed by a point or an exponent somewhere in b: a
// number written as a double may be in it.
func fractionWritten(b []byte) bool {
	for i := 1; i < len(b); i++ {
		if c := b[i]; (c == '.' || c == 'e' || c == 'E') && b[i-1] >= '0' && b[i-1] <= '9' {
			return true
		}
	}
	return false
}

// numbersReason says why a decision that differs with the custom resource's whole numbers as
// doubles is not known.
func numbersReason(diff string) undecided {
	return because(ReasonNumberType, "the audit log writes a custom resource's whole numbers as integers (2), and the client may have sent them as doubles (2.0), which kube-apiserver decodes as such: the policies decide the two differently ("+diff+")")
}
