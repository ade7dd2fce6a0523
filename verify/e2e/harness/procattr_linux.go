package harness

import "syscall"

// sysProcAttr puts a child in a process group of its own, so that stopping
// it stops whatever it started, and has the kernel kill it when the test
// binary dies: a test that times out or is killed runs no t.Cleanup.
//
// Pdeathsig fires when the OS thread that started the child exits, not only
// the process; the Go runtime ends a thread only when a goroutine locked to
// it (runtime.LockOSThread) returns without unlocking, which neither the
// harness nor vapc's tests do.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
