package apiserver

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/internal/recordedlogs"
)

// TestDecodeKnown: decodeKnown (json-iterator into the external type, defaulted, converted)
// decodes every built-in object the repository's recorded logs hold, requests and responses,
// as kube-apiserver's universal decoder does.
func TestDecodeKnown(t *testing.T) {
	kinds := map[string]int{}
	recordedlogs.Each(t, []string{"../../replay/testdata", "../../../testdata"}, func(log string, n int, line []byte) {
		var ev struct {
			RequestObject, ResponseObject json.RawMessage
		}
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		for _, raw := range []json.RawMessage{ev.RequestObject, ev.ResponseObject} {
			gvk, ok := leadingKind(raw)
			if !ok || !kubescheme.Knows(gvk) {
				continue
			}
			want, _, werr := kubescheme.Codecs.UniversalDecoder().Decode(raw, nil, nil)
			got, gerr := decodeKnown(raw)
			if (werr != nil) != (gerr != nil) {
				t.Errorf("%s:%d: %s: the universal decoder's error %v, decodeKnown's %v", log, n, gvk, werr, gerr)
				continue
			}
			if werr == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("%s:%d: %s: decodeKnown's object differs from the universal decoder's", log, n, gvk)
			}
			kinds[gvk.Kind]++
		}
	})
	if kinds["Pod"] == 0 || len(kinds) < 10 {
		t.Errorf("decoded %v: want pods and ten kinds at least", kinds)
	}
	t.Logf("objects by kind: %v", kinds)
}
