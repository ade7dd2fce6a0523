package auditlog

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// benchLine is the largest line of the recorded log (a pod create with both objects).
func benchLine(b *testing.B) []byte {
	data, err := os.ReadFile(filepath.Join(auditData, "kosmos-basic", "audit.log.gz"))
	if err != nil {
		b.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(zr)
	var longest []byte
	for _, l := range bytes.Split(buf.Bytes(), []byte("\n")) {
		if len(l) > len(longest) && bytes.Contains(l, []byte(`"verb":"create"`)) {
			longest = l
		}
	}
	return longest
}

// BenchmarkDecodeEvent decodes one event as a replay does.
func BenchmarkDecodeEvent(b *testing.B) {
	line := benchLine(b)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := Decode(line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineUnmarshal is the scale target's baseline: plain encoding/json into a struct
// with the objects as json.RawMessage.
func BenchmarkBaselineUnmarshal(b *testing.B) {
	line := benchLine(b)
	type baseline struct {
		AuditID        string            `json:"auditID"`
		Stage          string            `json:"stage"`
		Verb           string            `json:"verb"`
		ObjectRef      map[string]string `json:"objectRef"`
		RequestObject  json.RawMessage   `json:"requestObject"`
		ResponseObject json.RawMessage   `json:"responseObject"`
		Annotations    map[string]string `json:"annotations"`
	}
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		var e baseline
		if err := json.Unmarshal(line, &e); err != nil {
			b.Fatal(err)
		}
	}
}
