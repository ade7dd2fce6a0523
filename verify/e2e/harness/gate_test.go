package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test ended instead of ending the test
// running it.
type recorder struct {
	testing.TB
	skipped, fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	panic(r)
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	panic(r)
}

// run calls f with a recorder and returns it once f ends, by returning, skipping or failing.
func run(t *testing.T, f func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		f(r)
	}()
	return r
}

// TestStartNeedsE2E: without VAPC_E2E, Start skips the test and says how to run it; with it,
// a test without its binaries fails at once with the command that builds them, before it
// starts anything. No kube-apiserver runs here.
func TestStartNeedsE2E(t *testing.T) {
	t.Setenv(EnvE2E, "")
	r := run(t, func(tb testing.TB) { Start(tb) })
	if !strings.Contains(r.skipped, "make e2e") || r.fatal != "" {
		t.Errorf("without %s: skipped %q, fatal %q; want a skip that says make e2e", EnvE2E, r.skipped, r.fatal)
	}

	t.Setenv(EnvE2E, "1")
	empty := t.TempDir()
	r = run(t, func(tb testing.TB) { Start(tb, WithBinDir(empty)) })
	if !strings.Contains(r.fatal, "missing binaries") || !strings.Contains(r.fatal, "hack/e2e-tools.sh "+empty) || r.skipped != "" {
		t.Errorf("with an empty --bin-dir: fatal %q, skipped %q; want missing binaries and the command", r.fatal, r.skipped)
	}
}

// TestCheckTools: hack/e2e-tools.sh --check builds nothing and fails, naming the command that
// builds them, on binaries that are missing or were built from other modules.
func TestCheckTools(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := checkTools(root, dir); err == nil || !strings.Contains(err.Error(), "build them with make e2e-tools") || !strings.Contains(err.Error(), "missing") {
		t.Errorf("checkTools(empty dir) = %v, want the missing binaries and make e2e-tools", err)
	}
	names := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := checkTools(root, dir); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Errorf("checkTools(binaries without stamps) = %v, want them stale", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(names) {
		t.Errorf("checkTools wrote into %s: %d entries, want the %d binaries only", dir, len(entries), len(names))
	}
}
