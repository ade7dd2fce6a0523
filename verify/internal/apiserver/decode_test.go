package apiserver

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
)

// TestDecodeKnown: decodeKnown (json-iterator into the external type, defaulted, converted)
// decodes every built-in object the repository's recorded logs hold, requests and responses,
// as kube-apiserver's universal decoder does.
func TestDecodeKnown(t *testing.T) {
	var logs []string
	for _, root := range []string{"../../replay/testdata", "../../../testdata"} {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".log.gz") {
				logs = append(logs, path)
			}
			return nil
		})
	}
	if len(logs) == 0 {
		t.Fatal("no recorded logs found under the testdata folders")
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
				RequestObject, ResponseObject json.RawMessage
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
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
		}
		zr.Close()
		f.Close()
	}
	if kinds["Pod"] == 0 || len(kinds) < 10 {
		t.Errorf("decoded %v: want pods and ten kinds at least", kinds)
	}
	t.Logf("%d logs, objects by kind: %v", len(logs), kinds)
}
