package export

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestValidJSON holds validJSON to json.Valid on what a Log Analytics column may hold, and
// on what it must refuse.
func TestValidJSON(t *testing.T) {
	t.Parallel()
	for _, s := range validJSONSeeds {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", s, got, want)
		}
	}
}

var validJSONSeeds = []string{
	`{"username":"system:serviceaccount:kube-system:job-controller","uid":"u","groups":["a","b"],"extra":{"k":["v"]}}`,
	`{"resource":"pods","namespace":"a","name":"p","apiVersion":"v1"}`, `{"metadata":{},"code":200}`, `["10.0.0.1"]`,
	` {"a" : [1, -2.5e+10, 0, true, false, null, "\u00e9\n\"\\\/"]} `, `{}`, `[]`, `""`, `0`, `-0.1E-2`, `"é"`,
	`{"a":1,}`, `{"a" 1}`, `{a:1}`, `[1,]`, `01`, `1.`, `1e`, `-`, `tru`, `nul`, `"\x"`, `"\u12g4"`, `"a`, `"` + "\x01" + `"`,
	"\"\xff\"", `{"a":1}{`, `[1 2]`, `{"a":1}}`, `]`, ``, ` `, `{"a":{"b":[{"c":"d"}]}}`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 9999) + strings.Repeat("]", 9999),
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}
