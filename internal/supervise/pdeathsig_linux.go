package supervise

import "syscall"

// setParentDeathSignal has the kernel kill the child with SIGKILL when the
// thread that forked it dies, which includes with-lock being killed with
// SIGKILL. It reaches the command only, not its children: the guard
// (guard.go) covers those.
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
