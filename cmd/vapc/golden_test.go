package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGoldenPackages keeps `make golden`, the documented way to rewrite the golden files, true:
// GOLDEN_PKGS in the Makefile must be exactly the packages of the module whose tests define the
// -update flag (go test fails in the others with "flag provided but not defined"), and the
// README must document make golden.
func TestGoldenPackages(t *testing.T) {
	const root = "../.."
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^GOLDEN_PKGS\s*:?=\s*(.*)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile has no GOLDEN_PKGS")
	}
	listed := strings.Fields(string(m[1]))
	slices.Sort(listed)

	var defining []string
	err = walkModule(root, func(path, pkg string) error {
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(src), `flag.Bool("update"`) {
			defining = append(defining, "./"+pkg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(defining)
	defining = slices.Compact(defining)
	if diff := cmp.Diff(defining, listed); diff != "" {
		t.Errorf("GOLDEN_PKGS in the Makefile mismatch (-packages defining -update +listed):\n%s", diff)
	}

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "| `make golden` |") {
		t.Error("README.md does not document make golden")
	}
	if strings.Contains(string(readme), "rewritten with `go test ./... -update`") {
		t.Error("README.md documents go test ./... -update, which fails in the packages without golden files")
	}
}

// walkModule calls fn with every Go file of the module under root and its package, as a path
// relative to root ("cmd/vapc"), leaving out testdata, hidden folders and other modules.
func walkModule(root string, fn func(path, pkg string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		return fn(path, filepath.ToSlash(rel))
	})
}
