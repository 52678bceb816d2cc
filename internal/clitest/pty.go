package clitest

import (
	"fmt"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// PTY is a pseudo-terminal for Spec.Terminal: the run gets its terminal
// side; the test types on its controller side with Type and reads what it
// shows through the Proc's Stdout.
type PTY struct {
	t          testing.TB
	ptmx, tty  *os.File
	handedOver bool
}

// OpenPTY opens a new pseudo-terminal, closed when the test ends. It uses
// /dev/ptmx directly, so tests need no pty library.
func OpenPTY(t testing.TB) *PTY {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { _ = ptmx.Close() })
	n, err := unlockPTY(int(ptmx.Fd()))
	if err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/pts/%d: %v", n, err)
	}
	t.Cleanup(func() { _ = tty.Close() })
	return &PTY{t: t, ptmx: ptmx, tty: tty}
}

// handOver closes the test's copy of the terminal side, which the started
// process now holds, and copies what the terminal shows to w. The channel
// it returns is closed once the copy has ended: when no process has the
// terminal open any more and everything it showed was read.
func (p *PTY) handOver(w io.Writer) <-chan struct{} {
	if p.handedOver {
		p.t.Fatalf("clitest: a PTY serves one run")
	}
	p.handedOver = true
	_ = p.tty.Close()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		b := make([]byte, 1024)
		for {
			n, err := p.ptmx.Read(b)
			_, _ = w.Write(b[:n])
			if err != nil { // EIO once no process has the terminal open
				return
			}
		}
	}()
	return copied
}

// Type writes b to the terminal as if typed at its keyboard (0x03 is
// Ctrl-C: SIGINT to the foreground process group).
func (p *PTY) Type(b []byte) {
	p.t.Helper()
	if _, err := p.ptmx.Write(b); err != nil {
		p.t.Fatalf("type on the terminal: %v", err)
	}
}
