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
// read rather than once per few of its small writes, and a reader of
// with-lock's output once per large write. A refusal (a user over its
// pipe-user-pages limits, or f not a pipe) leaves f as it was, and so
// does a pipe already as large.
func enlarge(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			if size, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); err == nil && size < pipeSize {
				_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize)
			}
		})
	}
}
