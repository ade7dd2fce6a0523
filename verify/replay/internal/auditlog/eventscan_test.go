package auditlog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sameAsUnmarshal fails the test unless decodeEventFast decodes the line as json.Unmarshal
// does, or declines it.
func sameAsUnmarshal(t *testing.T, line []byte) (fast bool) {
	t.Helper()
	got, ok := decodeEventFast(line)
	want := &Event{}
	err := json.Unmarshal(line, want)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("decodeEventFast(%q) accepted a line json.Unmarshal refuses: %v", line, err)
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Event{}), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("decodeEventFast(%q) mismatch (-json.Unmarshal +fast):\n%s", line, diff)
	}
	return true
}

// auditData holds the recorded audit logs of the repository.
const auditData = "../../../../testdata/audit"

// logLines returns the lines of every audit log in testdata/audit.
func logLines(tb testing.TB) [][]byte {
	tb.Helper()
	var lines [][]byte
	err := filepath.WalkDir(auditData, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".log") || strings.HasSuffix(path, ".gz") || strings.HasSuffix(path, ".jsonl")) {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		var r io.Reader = f
		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(f)
			if err != nil {
				return err
			}
			r = zr
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			lines = append(lines, append([]byte(nil), sc.Bytes()...))
		}
		return nil // a truncated gzip in testdata ends its lines early
	})
	if err != nil {
		tb.Fatal(err)
	}
	return lines
}

func TestDecodeEventFastLogs(t *testing.T) {
	lines := logLines(t)
	if len(lines) < 1000 {
		t.Fatalf("only %d lines in %s", len(lines), auditData)
	}
	fast := 0
	for _, l := range lines {
		if sameAsUnmarshal(t, l) {
			fast++
		}
	}
	// Real logs are the common shape: nearly every line takes the one-pass path.
	if fast < len(lines)*9/10 {
		t.Errorf("%d of %d lines decoded in one pass, want at least 90%%", fast, len(lines))
	}
}

func TestDecodeEventFast(t *testing.T) {
	tests := []struct {
		line string
		fast bool
	}{
		{`{"auditID":"a","stage":"ResponseComplete","verb":"get"}`, true},
		{` { "auditID" : "a" , "stage" : "Panic" } ` + "\r\n", true},
		{`{}`, true},
		{`{"auditID":"a","responseObject":null,"requestObject":{"a":[1,-2.5e+3,true,false,null,{},[]]}}`, true},
		{`{"auditID":"a","objectRef":null,"impersonatedUser":null,"user":{"username":"u","groups":["g"],"extra":{"k":["v"]}}}`, true},
		{`{"auditID":"a","unknown":{"deep":[[[{"x":"\u00e9\n"}]]]},"annotations":{"k":"v"}}`, true},
		{`{"auditID":"caf` + "\xc3\xa9" + `"}`, true},
		{`{"user":{"username":"u","uid":null,"groups":[],"extra":null},"impersonatedUser":{"username":"i","groups":["a","b"]}}`, true},
		{`{"user":{"username":"u","extra":{"k":["v"]}},"objectRef":{"resource":"pods","uid":"x","resourceVersion":"1"}}`, true},
		{`{"user":{"groups":["a",null]},"annotations":{"k":null}}`, true},
		{`{"user":{"Username":"u"},"objectRef":{"Name":"n"},"annotations":{"k":"a","k":"b"}}`, true},
		{`{"responseStatus":{"metadata":{},"code":201,"status":"Success"}}`, true},
		{`{"responseStatus":{"code":-5,"reason":"x\u0041"}}`, true},
		{`{"responseStatus":{"code":12345678901}}`, false}, // overflows int32
		{`{"responseStatus":{"code":1.5}}`, false},
		{`{"auditID":"a\u0062","requestURI":"/api?a=1\u0026b=\u003c\n\t\"\\\/\b\f\r\u00e9\u20ac"}`, true},
		{`{"auditID":"\ud83d\ude00","verb":"\udc00x"}`, true}, // surrogates: those fields through encoding/json           // an escape in a field: that field through encoding/json
		{`{"auditID":"bad` + "\xff" + `"}`, true},             // invalid UTF-8 in a field: the same
		// Left to encoding/json.
		{`{"AuditID":"a"}`, false},               // a case-folded key
		{`{"audit\u0049D":"a"}`, false},          // an escaped key
		{`{"auditID":"a","auditID":"b"}`, false}, // a duplicate
		{`{"verb":5}`, false},                    // a wrong type
		{`{"user":{"username":5}}`, false},       // a wrong nested type
		{`{"auditID":"a",}`, false},              // a trailing comma
		{`{"auditID":"a"`, false},                // truncated
		{`{"x":[1,]}`, false},                    // a trailing comma inside
		{`{"x":01}`, false},                      // a leading zero
		{`{"x":1.}`, false},                      // a bad fraction
		{`{"x":"` + "\x01" + `"}`, false},        // a control character
		{`{"x":"\x"}`, false},                    // a bad escape
		{`{"x":"\u12"}`, false},                  // a short unicode escape
		{`{"x":nul}`, false},                     // a bad literal
		{`{"x":{"a" 1}}`, false},                 // a missing colon
		{`{"x":{1:2}}`, false},                   // a key that is not a string
		{`{"auditID":"a"} {}`, false},            // two values
		{`[]`, false},                            // not an object
		{"\xef\xbb\xbf{}", false},                // a byte-order mark
		{`{"x":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`, false}, // deep
	}
	for _, tt := range tests {
		if got := sameAsUnmarshal(t, []byte(tt.line)); got != tt.fast {
			t.Errorf("decodeEventFast(%.60q) took the one-pass path: %v, want %v", tt.line, got, tt.fast)
		}
	}
}

// FuzzDecodeEventFast holds the one-pass decoder to json.Unmarshal's results on any input.
func FuzzDecodeEventFast(f *testing.F) {
	for i, l := range logLines(f) {
		if i%7 == 0 && len(l) < 8<<10 {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"auditID":"a","user":{"username":"u"},"x":[1,{"y":null}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		sameAsUnmarshal(t, line)
		if bytes.Count(line, []byte("{")) > 0 {
			_, _ = Decode(line)
		}
	})
}
