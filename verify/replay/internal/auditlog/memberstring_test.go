package auditlog

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestMemberString: the resourceVersion a request's body asks for, read as far as the member
// that holds it, as encoding/json would decode it.
func TestMemberString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, member, want string
	}{
		{"an object's", `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"12"},"spec":{}}`, "metadata", "12"},
		{"after its spec", `{"spec":{"x":{"resourceVersion":"1"}},"metadata":{"resourceVersion":"7"}}`, "metadata", "7"},
		{"none", `{"metadata":{"name":"a"},"spec":{"resourceVersion":"3"}}`, "metadata", ""},
		{"nested elsewhere only", `{"spec":{"metadata":{"resourceVersion":"3"}}}`, "metadata", ""},
		{"white space and escapes", " {\n \"a\\\"b\" : [1, {\"c\": \"}\"}], \"metadata\" : { \"resourceVersion\" : \"4\\u0032\" } }", "metadata", "42"},
		{"a delete's preconditions", `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","preconditions":{"uid":"u","resourceVersion":"9"}}`, "preconditions", "9"},
		{"a patch's null", `{"metadata":{"resourceVersion":null}}`, "metadata", ""},
		{"not an object", `[1,2]`, "metadata", ""},
		{"cut short", `{"metadata":{"resourceVersion":"1`, "metadata", ""},
		{"empty", ``, "metadata", ""},
	} {
		if got := MemberString([]byte(tc.body), tc.member, "resourceVersion"); got != tc.want {
			t.Errorf("%s: MemberString(%s) = %q, want %q", tc.name, tc.body, got, tc.want)
		}
	}
}

// FuzzMemberString: MemberString reads any body without panicking, and where encoding/json
// decodes it as an object with one metadata and one resourceVersion (their names written
// plainly), it reads the same resourceVersion.
func FuzzMemberString(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"12"},"spec":{}}`,
		`{"spec":{"x":[1,"]",{"y":"}"}]},"metadata":{"resourceVersion":"7"}}`,
		`{"metadata":{"resourceVersion":null}}`, `[]`, `{"metadata":`, `"x"`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := MemberString(body, "metadata", "resourceVersion")
		var o struct {
			Metadata *struct {
				ResourceVersion *string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if bytes.Count(body, []byte(`"metadata"`)) != 1 || bytes.Count(body, []byte(`"resourceVersion"`)) != 1 || bytes.Contains(body, []byte(`\u`)) ||
			json.Unmarshal(body, &o) != nil || o.Metadata == nil || o.Metadata.ResourceVersion == nil || !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
			return
		}
		if want := *o.Metadata.ResourceVersion; got != want {
			t.Errorf("MemberString(%q) = %q, want %q", body, got, want)
		}
	})
}
