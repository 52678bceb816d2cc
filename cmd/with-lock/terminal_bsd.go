//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package main

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's settings: isTerminal.
const ioctlGetTermios = unix.TIOCGETA
