package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// typeError is what a decoding error of a JSON value of the wrong type tells: the JSON value
// ("number", "number -5", "object"), the Go type it could not go into, the offset in the JSON
// where the decoder stood, and the field path without list indices (spec.validations.expression).
type typeError struct {
	value  string
	typ    reflect.Type
	offset int64
	field  string
}

// asTypeError reads sigs.k8s.io/json's *UnmarshalTypeError, which lives in an internal package
// of that module (a copy of encoding/json's): its fields are exported, its type is not
// nameable, so they are read by name.
func asTypeError(err error) (typeError, bool) {
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct ||
		v.Elem().Type().Name() != "UnmarshalTypeError" {
		return typeError{}, false
	}
	s := v.Elem()
	value, typ, offset, field := s.FieldByName("Value"), s.FieldByName("Type"), s.FieldByName("Offset"), s.FieldByName("Field")
	if value.Kind() != reflect.String || offset.Kind() != reflect.Int64 || field.Kind() != reflect.String ||
		!typ.IsValid() || !typ.CanInterface() {
		return typeError{}, false
	}
	t, _ := typ.Interface().(reflect.Type)
	return typeError{value: value.String(), typ: t, offset: offset.Int(), field: field.String()}, true
}

// decodeError turns the error of decoding the document into a Go type into an Error at the
// value of the wrong type, with its full field path (spec.validations[1].expression): the
// decoder names the field without list indices and map keys, the offset where it stopped
// tells which value it was. Errors that say neither stay at the document's start.
func (d *Document) decodeError(err error) *Error {
	te, ok := asTypeError(err)
	if !ok {
		return &Error{Pos: d.Pos(), Msg: fmt.Sprintf("decoding %s: %v", d.Object.GetKind(), err)}
	}
	msg := fmt.Sprintf("expected %s, got %s", jsonTypeName(te.typ), te.value)
	path := ""
	if steps, ok := jsonPathAt(d.JSON, te.offset); ok {
		path, ok = fieldPath(steps, te.field)
		if !ok {
			path = ""
		}
	}
	if path == "" {
		// The offset is not in the document (a type's own UnmarshalJSON decoded a copy):
		// the decoder's path without indices is the best there is.
		var names []string
		for _, n := range strings.Split(te.field, ".") {
			if n != "" && !isGoName(n) {
				names = append(names, n)
			}
		}
		path = strings.Join(names, ".")
	}
	if path == "" {
		return &Error{Pos: d.Pos(), Msg: msg}
	}
	return &Error{Pos: d.FieldPos(path), Field: path, Msg: msg}
}

// jsonTypeName names a Go type as the JSON it takes.
func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string (base64)"
		}
		return "array"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer (" + t.Kind().String() + ")"
	}
	return t.String()
}

// jsonPathAt returns the path of the value of the JSON data whose text ends at offset, or
// whose opening bracket does (where encoding/json stands when it finds a value of the wrong
// type). ok is false when no value ends there.
func jsonPathAt(data []byte, offset int64) (steps []pathStep, ok bool) {
	type frame struct {
		array     bool
		key       string
		index     int
		expectKey bool
	}
	var stack []*frame
	current := func() []pathStep {
		out := make([]pathStep, 0, len(stack))
		for _, f := range stack {
			if f.array {
				out = append(out, pathStep{index: f.index})
			} else {
				out = append(out, pathStep{name: f.key, index: -1})
			}
		}
		return out
	}
	done := func() { // a value of the innermost container is complete
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.array {
			top.index++
		} else {
			top.expectKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil, false
		}
		if err != nil {
			return nil, false
		}
		end := dec.InputOffset()
		if len(stack) > 0 {
			if top := stack[len(stack)-1]; !top.array && top.expectKey {
				if key, isKey := tok.(string); isKey {
					top.key, top.expectKey = key, false
					continue
				}
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if end == offset {
				return current(), true
			}
			stack = append(stack, &frame{array: tok == json.Delim('['), expectKey: tok == json.Delim('{')})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			if end == offset {
				return current(), true
			}
			done()
		}
		if end > offset {
			return nil, false
		}
	}
}

// fieldPath formats the steps of a JSON path as a field path, checking them against the
// decoder's path without list indices and map keys (field): an object key that is the
// decoder's next field is a struct field (.name), any other a map key ([key]). The decoder's
// path also names the Go fields of embedded structs (RuleWithOperations), which JSON does not
// have: they are skipped. ok is false when the steps do not hold every other field of the
// decoder's path, in order.
func fieldPath(steps []pathStep, field string) (string, bool) {
	var want []string
	if field != "" {
		want = strings.Split(field, ".")
	}
	skipEmbedded := func(name string) {
		for len(want) > 0 && want[0] != name && isGoName(want[0]) {
			want = want[1:]
		}
	}
	var b strings.Builder
	for _, s := range steps {
		if s.index < 0 {
			skipEmbedded(s.name)
		}
		switch {
		case s.index >= 0:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case len(want) > 0 && s.name == want[0]:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
			want = want[1:]
		default:
			b.WriteString("[" + s.name + "]")
		}
	}
	skipEmbedded("")
	return b.String(), len(want) == 0
}

// isGoName reports whether a step of the decoder's path is the Go name of an embedded struct
// rather than a JSON field name: Kubernetes JSON names start in lower case.
func isGoName(s string) bool {
	return s != "" && s[0] >= 'A' && s[0] <= 'Z'
}
