//go:build !linux && !freebsd

package supervise

import "syscall"

// setParentDeathSignal does nothing: only Linux and FreeBSD have a
// parent-death signal.
// Elsewhere the guard (guard.go) alone kills the command's process group
// when with-lock dies, which it does whenever it started; if it could not
// start (with-lock warns), a with-lock killed with SIGKILL leaves the
// command running without the lock.
func setParentDeathSignal(*syscall.SysProcAttr) {}
