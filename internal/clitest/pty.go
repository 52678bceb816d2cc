package clitest

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// OpenPTY opens a new pseudo-terminal and returns its controller side and
// the terminal a process under test gets as stdin/stdout/stderr. Both are
// closed when the test ends. It uses /dev/ptmx directly, so tests need no
// pty library.
func OpenPTY(t testing.TB) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { _ = ptmx.Close() })
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN) // ptsname
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/pts/%d: %v", n, err)
	}
	t.Cleanup(func() { _ = tty.Close() })
	return ptmx, tty
}
