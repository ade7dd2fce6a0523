package auditlog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// sameAsUnstructured fails the test unless DecodeObject decodes raw as
// (*unstructured.Unstructured).UnmarshalJSON does.
func sameAsUnstructured(t *testing.T, raw []byte) {
	t.Helper()
	got, gotErr := DecodeObject(raw)
	want := &unstructured.Unstructured{}
	wantErr := want.UnmarshalJSON(raw)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("DecodeObject(%q) error %v, UnmarshalJSON error %v", raw, gotErr, wantErr)
	}
	if wantErr != nil {
		return
	}
	if diff := cmp.Diff(want.Object, got.Object); diff != "" {
		t.Fatalf("DecodeObject(%q) mismatch (-UnmarshalJSON +fast):\n%s", raw, diff)
	}
}

// sameHeader fails the test unless DecodeHeader and DecodeMetadata decode raw as the parts of
// what DecodeObject decodes that they keep.
func sameHeader(t *testing.T, raw []byte) {
	t.Helper()
	full, wantErr := DecodeObject(raw)
	for _, tc := range []struct {
		name                     string
		decode                   func([]byte) (*unstructured.Unstructured, error)
		keepMetadata, keepStatus func(string) bool
	}{
		{"DecodeHeader", DecodeHeader, func(k string) bool { return k != "managedFields" }, func(k string) bool { return k == "phase" }},
		{"DecodeMetadata(conditions)", func(raw []byte) (*unstructured.Unstructured, error) { return DecodeMetadata(raw, "conditions") },
			func(string) bool { return true }, func(k string) bool { return k == "conditions" }},
		{"DecodeKind", DecodeKind, func(string) bool { return false }, func(string) bool { return false }},
	} {
		got, gotErr := tc.decode(raw)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("%s(%q) error %v, DecodeObject error %v", tc.name, raw, gotErr, wantErr)
		}
		if wantErr != nil {
			continue
		}
		want := map[string]any{}
		for k, v := range full.Object {
			switch k {
			case "apiVersion", "kind":
				want[k] = v
			case "metadata", "status":
				m, ok := v.(map[string]any)
				if !ok {
					want[k] = v
					continue
				}
				part := map[string]any{}
				for mk, mv := range m {
					if (k == "metadata" && tc.keepMetadata(mk)) || (k == "status" && tc.keepStatus(mk)) {
						part[mk] = mv
					}
				}
				want[k] = part
			}
		}
		if diff := cmp.Diff(want, got.Object); diff != "" {
			t.Fatalf("%s(%q) mismatch (-want +got):\n%s", tc.name, raw, diff)
		}
	}
}

func TestDecodeUnstructured(t *testing.T) {
	for _, raw := range []string{
		`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"n":1,"f":1.5,"e":1e3,"big":9223372036854775808,"neg":-7,"z":-0,"x":[true,false,null,{},[]]}}`,
		`{"kind":"Pod","s":"\u003ca\u003e \"q\" \ud83d\ude00 ` + "caf\xc3\xa9" + `","bad":"` + "\xff" + `"}`,
		`{"kind":"Pod","kind":"Node","a":1,"a":{"b":2}}`,
		`{"kind":"","apiVersion":"v1"}`,
		`{"apiVersion":"v1"}`,
		`{"kind":"Pod","apiVersion":"a/b/c"}`,
		`{"kind":5}`,
		`{"kind":"Pod","n":1e400}`,
		`{"kind":"Pod",}`,
		`{"kind":"Pod"} x`,
		`[]`,
		` {"kind":"Pod"} `,
		`{"kind":"Pod","metadata":{"name":"a","managedFields":[{"x":1}],"labels":{"a":"b"}},"status":{"phase":"Running","conditions":[]},"spec":{"x":[1,2]}}`,
		`{"kind":"Namespace","metadata":null,"status":"odd","metadata":{"name":"n"}}`,
		`{"kind":"Pod","status":{"phase":1,"phase":"Failed"},"spec":{"x":[1,}}`,
	} {
		sameAsUnstructured(t, []byte(raw))
		sameHeader(t, []byte(raw))
	}
	for _, l := range logLines(t) {
		ev, err := Decode(l)
		if err != nil {
			continue
		}
		for _, raw := range [][]byte{ev.RequestObject, ev.ResponseObject} {
			if len(raw) > 0 {
				sameAsUnstructured(t, raw)
				sameHeader(t, raw)
			}
		}
	}
}

// FuzzDecodeObject holds DecodeObject to UnmarshalJSON's results on any input.
func FuzzDecodeObject(f *testing.F) {
	for i, l := range logLines(f) {
		if ev, err := Decode(l); err == nil && i%11 == 0 && len(ev.ResponseObject) > 0 && len(ev.ResponseObject) < 4<<10 {
			f.Add([]byte(ev.ResponseObject))
		}
	}
	f.Add([]byte(`{"kind":"Pod","a":[1,2.5,"x\n",null]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		sameAsUnstructured(t, raw)
		sameHeader(t, raw)
	})
}

// TestSameMembersBut: the members but one the same bytes, each key once, or the caller
// compares decoded.
func TestSameMembersBut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		a, b string
		want bool
	}{
		{"same", `{"kind":"Pod","metadata":{"a":1},"spec":{"x":1}}`, `{"kind":"Pod","metadata":{"a":1},"spec":{"x":1}}`, true},
		{"metadata differs", `{"kind":"Pod","metadata":{"a":1},"spec":{"x":1}}`, `{"kind":"Pod","metadata":{"a":2},"spec":{"x":1}}`, true},
		{"other order", `{"spec":{"x":1},"kind":"Pod","metadata":{}}`, `{"kind":"Pod","metadata":{"a":2},"spec":{"x":1}}`, true},
		{"spec differs", `{"kind":"Pod","metadata":{},"spec":{"x":1}}`, `{"kind":"Pod","metadata":{},"spec":{"x":2}}`, false},
		// Alike decoded, not in their bytes: compared decoded.
		{"spacing", `{"kind":"Pod","metadata":{},"spec":{"x":1}}`, `{"kind":"Pod","metadata":{},"spec":{ "x":1}}`, false},
		{"member only in a", `{"kind":"Pod","metadata":{},"status":{}}`, `{"kind":"Pod","metadata":{}}`, false},
		{"member only in b", `{"kind":"Pod","metadata":{}}`, `{"kind":"Pod","metadata":{},"status":{}}`, false},
		{"twice in a", `{"kind":"Pod","kind":"Pod","metadata":{}}`, `{"kind":"Pod","metadata":{}}`, false},
		{"twice in b", `{"kind":"Pod","metadata":{}}`, `{"kind":"Pod","metadata":{},"kind":"Pod"}`, false},
		{"escaped key", `{"k\u0069nd":"Pod"}`, `{"k\u0069nd":"Pod"}`, false},
		{"not an object", `[1]`, `[1]`, false},
		{"truncated", `{"kind":"Pod"`, `{"kind":"Pod"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SameMembersBut([]byte(tc.a), []byte(tc.b), "metadata"); got != tc.want {
				t.Errorf("SameMembersBut(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
