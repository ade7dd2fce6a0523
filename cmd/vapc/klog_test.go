package main

import (
	"encoding/json"
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain keeps the logs of kube-apiserver's code that replays run (the admission plugins it
// loads) out of the test output, as vapc's main does. When VAPC_TEST_MAIN holds arguments (a
// JSON list), it runs vapc's main with them instead of the tests, so that a test can run vapc
// as a process and signal it (TestSignals).
func TestMain(m *testing.M) {
	if args := os.Getenv("VAPC_TEST_MAIN"); args != "" {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			panic(err)
		}
		os.Args = append([]string{"vapc"}, argv...)
		main()
		return
	}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}
