package replay

import "testing"

// TestAskedVersion: the resourceVersion a body asks for, read as far as the member that holds
// it, as encoding/json would decode it.
func TestAskedVersion(t *testing.T) {
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
		if got := askedVersion([]byte(tc.body), tc.member); got != tc.want {
			t.Errorf("%s: askedVersion(%s) = %q, want %q", tc.name, tc.body, got, tc.want)
		}
	}
}
