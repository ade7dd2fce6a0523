//go:build !linux

package harness

import "syscall"

// sysProcAttr puts a child in a process group of its own, so that stopping
// it stops whatever it started. Only Linux can also have the kernel kill it
// when the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
