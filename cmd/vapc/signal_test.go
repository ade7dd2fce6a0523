package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vapc-dev/vapc/verify/replay"
)

// TestSignals: Ctrl-C (SIGINT) or SIGTERM during a replay of standard input that is still open
// stops the reading at once, writes every output marked partial, and exits 130.
func TestSignals(t *testing.T) {
	t.Parallel()
	log := gunzip(t, auditData+"kosmos-basic/audit.log.gz")
	for _, tc := range []struct {
		sig    syscall.Signal
		output string
	}{
		{syscall.SIGINT, "text"},
		{syscall.SIGTERM, "jsonl"},
		{syscall.SIGINT, "junit"},
	} {
		t.Run(tc.sig.String()+"/"+tc.output, func(t *testing.T) {
			t.Parallel()
			args, _ := json.Marshal([]string{"replay", "--policies", auditData + "kosmos-basic/policy.yaml", "--output", tc.output, "--check-recorded", "-"})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "VAPC_TEST_MAIN="+string(args))
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The whole log, and standard input left open, as `tail -f` leaves it.
			if _, err := stdin.Write(log); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second)
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var werr error
			select {
			case werr = <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("vapc did not stop within 30s of %s\nstderr:\n%s", tc.sig, stderr.String())
			}
			stdin.Close()
			var exit *exec.ExitError
			if !errors.As(werr, &exit) || exit.ExitCode() != exitInterrupted {
				t.Fatalf("vapc exited with %v, want %d\nstdout:\n%s\nstderr:\n%s", werr, exitInterrupted, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), "vapc: replay: interrupted after 1084 lines: the outputs are partial\n") {
				t.Errorf("stderr = %q, want the interrupt after the 1084 lines written", stderr.String())
			}
			switch tc.output {
			case "text":
				if !strings.HasPrefix(stdout.String(), "INTERRUPTED: the replay was stopped; what follows is what was read\n  interrupted: interrupted after 1084 lines") || !strings.Contains(stdout.String(), "evaluated:     3 (admit 2, deny 1, indeterminate 0") {
					t.Errorf("text output:\n%s", stdout.String())
				}
			case "jsonl":
				lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
				var end replay.End
				if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil || !end.Partial || end.Verdict.Pass || len(lines) != 4 {
					t.Errorf("jsonl output (%v):\n%s", err, stdout.String())
				}
			case "junit":
				var suites struct {
					Suites []struct {
						Errors int `xml:"errors,attr"`
					} `xml:"testsuite"`
				}
				if err := xml.NewDecoder(io.Reader(&stdout)).Decode(&suites); err != nil || suites.Suites[0].Errors != 1 {
					t.Errorf("junit output (%v): %+v", err, suites)
				}
			}
		})
	}
}
