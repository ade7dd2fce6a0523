package replay

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestEncodedFixedPoint holds what verify.Request.Encoded says of the response of a successful
// create or update, which the replay gives admission without the round trip through its typed
// object: over every built-in object such a response of the repository's recorded logs holds,
// decoded as the replay decodes it, the conversion to the typed object and back gives it
// unchanged.
func TestEncodedFixedPoint(t *testing.T) {
	t.Parallel()
	var logs []string
	for _, root := range []string{"testdata", "../../testdata"} {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".log.gz") {
				logs = append(logs, path)
			}
			return nil
		})
	}
	kinds := map[string]int{}
	for _, log := range logs {
		f, err := os.Open(log)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			continue // a cut that is not gzip: not this test's
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for n := 1; sc.Scan(); n++ {
			var ev struct {
				Verb           string
				ResponseStatus struct{ Code int }
				ResponseObject json.RawMessage
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil || (ev.Verb != "create" && ev.Verb != "update" && ev.Verb != "patch") ||
				ev.ResponseStatus.Code < 200 || ev.ResponseStatus.Code >= 300 {
				continue
			}
			u := auditlog.DecodeAnyObject(ev.ResponseObject)
			if u == nil || !clientgoscheme.Scheme.Recognizes(u.GroupVersionKind()) {
				continue
			}
			typed, err := clientgoscheme.Scheme.New(u.GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
				t.Errorf("%s:%d: %s: %v", log, n, u.GetKind(), err)
				continue
			}
			back, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
			if err != nil {
				t.Errorf("%s:%d: %s: %v", log, n, u.GetKind(), err)
				continue
			}
			if diff := cmp.Diff(u.Object, back); diff != "" {
				t.Errorf("%s:%d: %s: the typed round trip changes the response (-response +round trip):\n%s", log, n, u.GetKind(), diff)
			}
			kinds[u.GetKind()]++
		}
		zr.Close()
		f.Close()
	}
	if kinds["Pod"] == 0 || len(kinds) < 10 {
		t.Errorf("checked %v: want pods and ten kinds at least", kinds)
	}
	t.Logf("%d logs, responses by kind: %v", len(logs), kinds)
}
