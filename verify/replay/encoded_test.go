package replay

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/vapc-dev/vapc/verify/internal/recordedlogs"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestEncodedFixedPoint holds what verify.Request.Encoded says of the response of a successful
// create or update, which the replay gives admission without the round trip through its typed
// object: over every built-in object such a response of the repository's recorded logs holds,
// decoded as the replay decodes it, the conversion to the typed object and back gives it
// unchanged.
func TestEncodedFixedPoint(t *testing.T) {
	t.Parallel()
	kinds := map[string]int{}
	recordedlogs.Each(t, []string{"testdata", "../../testdata"}, func(log string, n int, line []byte) {
		var ev struct {
			Verb           string
			ResponseStatus struct{ Code int }
			ResponseObject json.RawMessage
		}
		if json.Unmarshal(line, &ev) != nil || (ev.Verb != "create" && ev.Verb != "update" && ev.Verb != "patch") ||
			ev.ResponseStatus.Code < 200 || ev.ResponseStatus.Code >= 300 {
			return
		}
		u := auditlog.DecodeAnyObject(ev.ResponseObject)
		if u == nil || !clientgoscheme.Scheme.Recognizes(u.GroupVersionKind()) {
			return
		}
		typed, err := clientgoscheme.Scheme.New(u.GroupVersionKind())
		if err != nil {
			t.Fatal(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			t.Errorf("%s:%d: %s: %v", log, n, u.GetKind(), err)
			return
		}
		back, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
		if err != nil {
			t.Errorf("%s:%d: %s: %v", log, n, u.GetKind(), err)
			return
		}
		if diff := cmp.Diff(u.Object, back); diff != "" {
			t.Errorf("%s:%d: %s: the typed round trip changes the response (-response +round trip):\n%s", log, n, u.GetKind(), diff)
		}
		kinds[u.GetKind()]++
	})
	if kinds["Pod"] == 0 || len(kinds) < 10 {
		t.Errorf("checked %v: want pods and ten kinds at least", kinds)
	}
	t.Logf("responses by kind: %v", kinds)
}
