//go:build linux || freebsd

package supervise

import "syscall"

// setParentDeathSignal has the kernel kill the child with SIGKILL when
// with-lock dies, killed with SIGKILL included: on Linux when the thread
// that forked it ends (start keeps that thread for the job's life), on
// FreeBSD when the process does. It reaches the command only, not its
// children: the guard (guard.go) covers those.
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
