package replay

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify"
)

// TestSizedMutations: what a mutating policy wrote into a Secret is shown by its size, the
// paths kept, and metadata but annotations as it is.
func TestSizedMutations(t *testing.T) {
	for _, tc := range []struct{ name, patch, want string }{
		{"data", `[{"op":"add","path":"/data/token","value":"c2VjcmV0"}]`, `[{"op":"add","path":"/data/token","value":"<redacted: 8 bytes>"}]`},
		{"stringData whole", `[{"op":"replace","path":"/stringData","value":{"password":"hunter2"}}]`, `[{"op":"replace","path":"/stringData","value":{"password":"<redacted: 7 bytes>"}}]`},
		{"a label", `[{"op":"add","path":"/metadata/labels/team","value":"a"}]`, `[{"op":"add","path":"/metadata/labels/team","value":"a"}]`},
		{"an annotation", `[{"op":"add","path":"/metadata/annotations/x","value":"hunter2"}]`, `[{"op":"add","path":"/metadata/annotations/x","value":"<redacted: 7 bytes>"}]`},
		{"a test and a removal", `[{"op":"test","path":"/data/a","value":"eA=="},{"op":"remove","path":"/data/b"}]`, `[{"op":"test","path":"/data/a","value":"<redacted: 4 bytes>"},{"op":"remove","path":"/data/b"}]`},
		{"not a patch", `{"x":1}`, `"<redacted>"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []verify.Change{{Policy: "p", Binding: "b", Patch: json.RawMessage(tc.patch)}}
			got := sizedMutations(in)
			if diff := cmp.Diff(tc.want, string(got[0].Patch)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if string(in[0].Patch) != tc.patch {
				t.Errorf("the record's change was changed in place: %s", in[0].Patch)
			}
		})
	}
}
