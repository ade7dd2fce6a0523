package e2e

import (
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain keeps the logs of kube-apiserver's code that replays run (the admission plugins it
// loads) out of the test output, as vapc's main does, and repeats the first errors of each
// failed test at the end (writeFailures).
func TestMain(m *testing.M) {
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	code := m.Run()
	writeFailures(os.Stdout)
	os.Exit(code)
}
