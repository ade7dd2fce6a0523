package auditgen

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// A small YAML emitter for JSON documents in the layout `kubectl get -o yaml` writes (sorted
// keys, list items at their key's indentation, strings quoted when they could read as something
// else). sigs.k8s.io/yaml takes milliseconds per pod: too slow for snapshots of large clusters.

// appendYAMLItem appends obj, marshalled to JSON, as an item of a top-level YAML list.
func appendYAMLItem(b *bytes.Buffer, obj any) error {
	j, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	emitList(b, []any{v}, 0)
	return nil
}

func indent(b *bytes.Buffer, n int) {
	for i := 0; i < n; i++ {
		b.WriteByte(' ')
	}
}

func emitMap(b *bytes.Buffer, m map[string]any, ind int, inline bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i > 0 || !inline {
			indent(b, ind)
		}
		emitScalar(b, k)
		b.WriteByte(':')
		switch v := m[k].(type) {
		case map[string]any:
			if len(v) == 0 {
				b.WriteString(" {}\n")
				continue
			}
			b.WriteByte('\n')
			emitMap(b, v, ind+2, false)
		case []any:
			if len(v) == 0 {
				b.WriteString(" []\n")
				continue
			}
			b.WriteByte('\n')
			emitList(b, v, ind)
		default:
			b.WriteByte(' ')
			emitScalar(b, v)
			b.WriteByte('\n')
		}
	}
}

func emitList(b *bytes.Buffer, l []any, ind int) {
	for _, it := range l {
		indent(b, ind)
		b.WriteString("- ")
		switch v := it.(type) {
		case map[string]any:
			if len(v) == 0 {
				b.WriteString("{}\n")
				continue
			}
			emitMap(b, v, ind+2, true)
		case []any:
			if len(v) == 0 {
				b.WriteString("[]\n")
				continue
			}
			b.WriteByte('\n')
			emitList(b, v, ind+2)
		default:
			emitScalar(b, v)
			b.WriteByte('\n')
		}
	}
}

// plainSafe matches strings YAML reads back as the same string when written unquoted.
var plainSafe = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_./-]*$`)

func emitScalar(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		b.WriteString(v.String())
	case string:
		switch strings.ToLower(v) {
		case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
			b.WriteString(strconv.Quote(v))
			return
		}
		if plainSafe.MatchString(v) {
			b.WriteString(v)
			return
		}
		b.WriteString(strconv.Quote(v))
	default:
		j, _ := json.Marshal(v)
		b.Write(j)
	}
}
