package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal: a descriptor that answers
// the terminal's own request for its settings (isatty). Being a character
// device is not enough: /dev/null is one, and cron's ">/dev/null 2>&1"
// must not pass for someone watching.
func isTerminal(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var terr error
	if err := rc.Control(func(fd uintptr) { _, terr = unix.IoctlGetTermios(int(fd), ioctlGetTermios) }); err != nil {
		return false
	}
	return terr == nil
}
