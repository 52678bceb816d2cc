package main_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// In a terminal the command is in the foreground: it can read the
// terminal, and Ctrl-C reaches it. with-lock then exits 130 and releases.
func TestInteractiveCommandInTerminal(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ptmx, tty := clitest.OpenPTY(t)
	cmd := clitest.Command(t, rnEnv(srv), "--ttl", "2s", "tty",
		"sh", "-c", `printf 'name? '; read name; echo "got:$name"; exec sleep 100`)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// A session of its own with the pty as controlling terminal, as a
	// login shell would run it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // with-lock has it now
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var out ptyOutput
	go out.copy(ptmx)
	out.waitFor(t, "name? ")
	if _, err := ptmx.Write([]byte("alice\n")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "got:alice")
	if rdb.Exists(context.Background(), "lock:tty").Val() != 1 {
		t.Fatal("lock not held while the command runs")
	}
	ctrlC := time.Now()
	if _, err := ptmx.Write([]byte{0x03}); err != nil { // Ctrl-C: SIGINT to the foreground group
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-waitErr:
	case <-time.After(10 * time.Second):
		t.Fatalf("with-lock still running 10s after Ctrl-C; terminal output %q", out.String())
	}
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	}
	t.Logf("read %q from the terminal; Ctrl-C ended with-lock after %s with exit %d", "alice", time.Since(ctrlC).Round(time.Millisecond), code)
	if code != 130 {
		t.Errorf("exit %d after Ctrl-C, want 130; terminal output %q", code, out.String())
	}
	if rdb.Exists(context.Background(), "lock:tty").Val() != 0 {
		t.Error("lock not released after Ctrl-C")
	}
}

// ptyOutput collects what the terminal shows.
type ptyOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *ptyOutput) copy(ptmx *os.File) {
	b := make([]byte, 1024)
	for {
		n, err := ptmx.Read(b)
		o.mu.Lock()
		o.buf.Write(b[:n])
		o.mu.Unlock()
		if err != nil { // EIO once no process has the terminal open
			return
		}
	}
}

func (o *ptyOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

func (o *ptyOutput) waitFor(t *testing.T, s string) {
	t.Helper()
	clitest.Eventually(t, 10*time.Second, "terminal shows "+strconv.Quote(s), func() bool {
		return strings.Contains(o.String(), s)
	})
}
