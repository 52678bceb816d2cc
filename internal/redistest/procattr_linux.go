package redistest

import "syscall"

// serverProcAttr puts redis-server in a session of its own, so a test
// that signals its own process group does not hit the server, and has the
// kernel kill it if the test process dies without its cleanups.
//
// A session, not only a process group: where the kernel groups CPU time
// by session (sched_autogroup, on by default in Debian's kernels), a
// server in its caller's session shares one slice with every process the
// caller starts. A herd of 500 with-lock processes then left it a 500th of
// that slice, and their TLS handshakes timed out waiting for it; in a
// session of its own it gets a share as a Redis on its own host does.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
