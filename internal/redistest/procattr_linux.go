package redistest

import "syscall"

// serverProcAttr puts redis-server in its own process group, so a test
// that signals its own group does not hit the server, and has the kernel
// kill it if the test process dies without its cleanups.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
