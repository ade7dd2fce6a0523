package verify

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// jsonPatchOp is one operation of an RFC 6902 JSON patch.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// jsonPatchBetween returns a JSON patch that turns the JSON document before into after: null
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
	var ops []jsonPatchOp
	diffJSON("", b, a, &ops)
	if len(ops) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteByte('[')
	for i, op := range ops {
		if i > 0 {
			buf.WriteByte(',')
		}
		if op.Op == "remove" {
			// A remove has no value, and a value of null must still be written for add.
			fmtRemove(&buf, op.Path)
			continue
		}
		buf.WriteString(`{"op":`)
		_ = enc.Encode(op.Op)
		buf.Truncate(buf.Len() - 1)
		buf.WriteString(`,"path":`)
		_ = enc.Encode(op.Path)
		buf.Truncate(buf.Len() - 1)
		buf.WriteString(`,"value":`)
		if err := enc.Encode(op.Value); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1)
		buf.WriteByte('}')
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

func fmtRemove(buf *bytes.Buffer, path string) {
	p, _ := json.Marshal(path)
	buf.WriteString(`{"op":"remove","path":`)
	buf.Write(p)
	buf.WriteByte('}')
}

func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func diffJSON(path string, before, after any, ops *[]jsonPatchOp) {
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
				*ops = append(*ops, jsonPatchOp{Op: "remove", Path: p})
			case !inB:
				*ops = append(*ops, jsonPatchOp{Op: "add", Path: p, Value: av})
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
		*ops = append(*ops, jsonPatchOp{Op: "replace", Path: path, Value: after})
	}
}

// escapePointer escapes a member name for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
