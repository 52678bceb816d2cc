package capture

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeSize is what enlarge asks a pipe to hold: the most an unprivileged
// process may ask by default (/proc/sys/fs/pipe-max-size).
const pipeSize = 1 << 20

// enlarge asks the kernel for a larger pipe buffer than its 64 KiB, so
// that a command writing fast wakes with-lock's reader once per large
// read rather than once per few of its small writes. A refusal (a user
// over its pipe-user-pages limits) leaves the pipe as it was.
func enlarge(w *os.File) {
	if rc, err := w.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
	}
}
