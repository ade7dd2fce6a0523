package verify

import (
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// TestJSONPatchBetween checks that the patch turns before into after, and what it says.
func TestJSONPatchBetween(t *testing.T) {
	for _, tc := range []struct {
		name, before, after, want string
	}{
		{"equal", `{"a":1}`, `{"a":1}`, ``},
		{"add, remove, replace", `{"a":1,"b":{"c":"x"}}`, `{"b":{"c":"y","d":null},"e":[1]}`,
			`[{"op":"remove","path":"/a"},{"op":"replace","path":"/b/c","value":"y"},{"op":"add","path":"/b/d","value":null},{"op":"add","path":"/e","value":[1]}]`},
		{"lists item by item, or whole", `{"l":[1,2],"m":[1]}`, `{"l":[1,3],"m":[1,2]}`,
			`[{"op":"replace","path":"/l/1","value":3},{"op":"replace","path":"/m","value":[1,2]}]`},
		{"keys escaped", `{}`, `{"a/b~c":"x"}`, `[{"op":"add","path":"/a~1b~0c","value":"x"}]`},
		{"big numbers kept", `{"n":1}`, `{"n":12345678901234567890}`, `[{"op":"replace","path":"/n","value":12345678901234567890}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := jsonPatchBetween([]byte(tc.before), []byte(tc.after))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("patch\n got %s\nwant %s", got, tc.want)
			}
			if got == nil {
				return
			}
			p, err := jsonpatch.DecodePatch(got)
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Apply([]byte(tc.before))
			if err != nil {
				t.Fatal(err)
			}
			if !jsonpatch.Equal(out, []byte(tc.after)) {
				t.Errorf("applied: %s, want %s", out, tc.after)
			}
		})
	}
}
