package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// binaries are the paths of the programs a Server runs.
type binaries struct {
	etcd, apiserver, controllerManager, scheduler, kubectl string
}

func binariesIn(dir string) binaries {
	return binaries{
		etcd:              filepath.Join(dir, "etcd"),
		apiserver:         filepath.Join(dir, "kube-apiserver"),
		controllerManager: filepath.Join(dir, "kube-controller-manager"),
		scheduler:         filepath.Join(dir, "kube-scheduler"),
		kubectl:           filepath.Join(dir, "kubectl"),
	}
}

func (b binaries) missing() []string {
	var missing []string
	for _, path := range []string{b.etcd, b.apiserver, b.controllerManager, b.scheduler, b.kubectl} {
		if info, err := os.Stat(path); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			missing = append(missing, path)
		}
	}
	return missing
}

// EnvE2E is the environment variable that lets tests start a real kube-apiserver: make test
// and make e2e set it. Without it, Start skips the test, so that go test ./... stays fast; with
// it, a test whose binaries are missing or stale fails at once with the command that builds
// them.
const EnvE2E = "VAPC_E2E"

// buildCommand is what builds the binaries, for the messages of a test that lacks them.
const buildCommand = "make e2e-tools (hack/e2e-tools.sh)"

// requireE2E skips t unless EnvE2E is set.
func requireE2E(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvE2E) == "" {
		t.Skipf("harness: this test runs a real kube-apiserver and etcd: run it with make e2e or make test (or %s=1 go test after make e2e-tools)", EnvE2E)
	}
}

// checked runs hack/e2e-tools.sh --check once per test binary.
var checked struct {
	once sync.Once
	bin  binaries
	err  error
}

// ensureBinaries returns the binaries in binDir if it is set, and otherwise those that
// hack/e2e-tools.sh builds into <repo>/.cache/e2e/bin, when they are there and up to date. It
// never builds them (a first build takes minutes, which a test's timeout must not hide): it
// fails t at once with the command that does.
func ensureBinaries(t testing.TB, binDir string) binaries {
	t.Helper()
	if binDir != "" {
		bin := binariesIn(binDir)
		if missing := bin.missing(); len(missing) > 0 {
			t.Fatalf("harness: missing binaries %s; build them with hack/e2e-tools.sh %s", strings.Join(missing, ", "), binDir)
		}
		return bin
	}
	checked.once.Do(func() {
		root, err := repoRoot()
		if err != nil {
			checked.err = err
			return
		}
		checked.bin, checked.err = checkTools(root, filepath.Join(root, ".cache", "e2e", "bin"))
	})
	if checked.err != nil {
		t.Fatalf("harness: %v", checked.err)
	}
	return checked.bin
}

// checkTools runs hack/e2e-tools.sh --check on dir: an error names the binaries that are
// missing or stale and the command that builds them.
func checkTools(root, dir string) (binaries, error) {
	var out bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, "hack", "e2e-tools.sh"), "--check", dir)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return binaries{}, fmt.Errorf("the control plane binaries, etcd and kubectl of the end-to-end tests are not built in %s: build them with %s, then run the tests again\n%s", dir, buildCommand, strings.TrimSpace(out.String()))
	}
	bin := binariesIn(dir)
	if missing := bin.missing(); len(missing) > 0 {
		return binaries{}, fmt.Errorf("missing %s: build them with %s", strings.Join(missing, ", "), buildCommand)
	}
	return bin, nil
}

// repoRoot finds the root of the vapc repository above the working
// directory, which go test sets to the test's package directory.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "hack", "e2e-tools.sh")); err == nil {
			if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isVapcModule(data) {
				return dir, nil
			}
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no vapc repository (hack/e2e-tools.sh beside a go.mod of github.com/vapc-dev/vapc) above " + wd)
		}
	}
}

func isVapcModule(gomod []byte) bool {
	for line := range strings.Lines(string(gomod)) {
		if strings.TrimSpace(line) == "module github.com/vapc-dev/vapc" {
			return true
		}
	}
	return false
}
