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
	"time"
)

// binaries are the paths of the programs a Server runs.
type binaries struct {
	etcd, apiserver, kubectl string
}

func binariesIn(dir string) binaries {
	return binaries{
		etcd:      filepath.Join(dir, "etcd"),
		apiserver: filepath.Join(dir, "kube-apiserver"),
		kubectl:   filepath.Join(dir, "kubectl"),
	}
}

func (b binaries) missing() []string {
	var missing []string
	for _, path := range []string{b.etcd, b.apiserver, b.kubectl} {
		if info, err := os.Stat(path); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			missing = append(missing, path)
		}
	}
	return missing
}

// build runs hack/e2e-tools.sh once per test binary: it builds what is
// missing or stale (a first build takes minutes) and is quick otherwise.
var build struct {
	once sync.Once
	bin  binaries
	log  string
	err  error
}

// ensureBinaries returns the binaries in binDir if it is set, and otherwise
// builds them into <repo>/.cache/e2e/bin with hack/e2e-tools.sh.
func ensureBinaries(t testing.TB, binDir string) binaries {
	t.Helper()
	if binDir != "" {
		bin := binariesIn(binDir)
		if missing := bin.missing(); len(missing) > 0 {
			t.Fatalf("harness: missing binaries %s; build them with hack/e2e-tools.sh %s", strings.Join(missing, ", "), binDir)
		}
		return bin
	}
	build.once.Do(func() {
		start := time.Now()
		build.bin, build.log, build.err = runTools()
		build.log += fmt.Sprintf("(hack/e2e-tools.sh took %v)\n", time.Since(start).Round(time.Millisecond))
	})
	if build.err != nil {
		t.Fatalf("harness: building the e2e binaries: %v\n%s", build.err, build.log)
	}
	t.Logf("harness: %s", strings.TrimSpace(build.log))
	return build.bin
}

func runTools() (binaries, string, error) {
	root, err := repoRoot()
	if err != nil {
		return binaries{}, "", err
	}
	dir := filepath.Join(root, ".cache", "e2e", "bin")
	var out bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, "hack", "e2e-tools.sh"), dir)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return binaries{}, out.String(), fmt.Errorf("hack/e2e-tools.sh: %w", err)
	}
	bin := binariesIn(dir)
	if missing := bin.missing(); len(missing) > 0 {
		return binaries{}, out.String(), fmt.Errorf("hack/e2e-tools.sh did not build %s", strings.Join(missing, ", "))
	}
	return bin, out.String(), nil
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
