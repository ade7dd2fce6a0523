package cel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vapc-dev/vapc/cel/manifest"
)

// FuzzLoadAndCheck feeds arbitrary manifests to the policy loader and the checker: malformed
// YAML, YAML bombs, odd types in every field, broken CEL. Neither may panic, and whatever is not
// a clean policy must come back as diagnostics.
func FuzzLoadAndCheck(f *testing.F) {
	files, _ := filepath.Glob("../testdata/check/*.yaml")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	checker, err := NewChecker()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, _ := manifest.Parse("fuzz.yaml", data)
		set, _ := Decode(docs)
		for _, d := range checker.Check(set) {
			if d.Message == "" {
				t.Errorf("diagnostic without a message: %+v", d)
			}
		}
	})
}
