package verify

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// A JSON patch operation (RFC 6902): a remove has no value, an add or replace always has one
// (null included).
type (
	removeOp struct {
		Op   string `json:"op"`
		Path string `json:"path"`
	}
	valueOp struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
)

// jsonPatchBetween returns a JSON patch that turns the JSON document before into after: nil
// when they are equal. Objects are compared member by member; a list of the same length item
// by item, a list whose length changed is replaced whole (the patch says what changed, not the
// smallest edit).
func jsonPatchBetween(before, after []byte) (json.RawMessage, error) {
	var b, a any
	if err := decodeNumbers(before, &b); err != nil {
		return nil, err
	}
	if err := decodeNumbers(after, &a); err != nil {
		return nil, err
	}
	var ops []any
	diffJSON("", b, a, &ops)
	if len(ops) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ops); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func diffJSON(path string, before, after any, ops *[]any) {
	switch b := before.(type) {
	case map[string]any:
		a, ok := after.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(b)+len(a))
		for k := range b {
			keys = append(keys, k)
		}
		for k := range a {
			if _, ok := b[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "/" + escapePointer(k)
			bv, inB := b[k]
			av, inA := a[k]
			switch {
			case !inA:
				*ops = append(*ops, removeOp{"remove", p})
			case !inB:
				*ops = append(*ops, valueOp{"add", p, av})
			default:
				diffJSON(p, bv, av, ops)
			}
		}
		return
	case []any:
		a, ok := after.([]any)
		if !ok || len(a) != len(b) {
			break
		}
		for i := range b {
			diffJSON(path+"/"+strconv.Itoa(i), b[i], a[i], ops)
		}
		return
	}
	if !reflect.DeepEqual(before, after) {
		*ops = append(*ops, valueOp{"replace", path, after})
	}
}

// escapePointer escapes a member name for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
