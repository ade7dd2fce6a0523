package suite

import (
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain keeps the logs of kube-apiserver's code that pipeline cases run (the admission plugins it
// loads) out of the test output, as vapc's main does.
func TestMain(m *testing.M) {
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}
