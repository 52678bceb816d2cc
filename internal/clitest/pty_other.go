//go:build !linux

package clitest

import "errors"

// unlockPTY is Linux-only: the tests that need a terminal run on Linux, and
// elsewhere this package only has to compile.
func unlockPTY(int) (int, error) {
	return 0, errors.New("pseudo-terminals are opened the Linux way only")
}
