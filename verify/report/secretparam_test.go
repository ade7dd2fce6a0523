package report

import (
	"bytes"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedactSecretParam: a ConfigMap's row (not sensitive) whose policy's message quotes its
// param, a Secret: what the policies answered is redacted, the param's value in no text of
// the report.
func TestRedactSecretParam(t *testing.T) {
	d := replayReport(t, filepath.Join("testdata", "secretparam"), "audit.jsonl")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, d); err != nil {
		t.Fatal(err)
	}
	if len(d.Requests.Rows) == 0 {
		t.Fatal("no row: the test proves nothing")
	}
	v := "tok-ABCDEF123456"
	for _, f := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
		if strings.Contains(buf.String(), f) {
			t.Errorf("the report holds the Secret param's value %q", f)
		}
	}
}
