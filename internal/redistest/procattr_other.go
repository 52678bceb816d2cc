//go:build !linux

package redistest

import "syscall"

// serverProcAttr puts redis-server in its own process group. Without
// Linux's parent-death signal a test process killed outright leaves its
// servers running; the tests themselves run on Linux.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
