package clitest

import "golang.org/x/sys/unix"

// unlockPTY does unlockpt(3) and ptsname(3) on the controller side fd and
// returns the number of its terminal side, /dev/pts/N.
func unlockPTY(fd int) (int, error) {
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		return 0, err
	}
	return unix.IoctlGetInt(fd, unix.TIOCGPTN)
}
