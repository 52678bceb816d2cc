package main_test

import (
	"context"
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
	pty := clitest.OpenPTY(t)
	p := clitest.Spec{Env: redisEnv(srv), Terminal: pty, Args: []string{"--ttl", "2s", "tty",
		"sh", "-c", `printf 'name? '; read name; echo "got:$name"; exec sleep 100`}}.Start(t)
	p.WaitStdout("name? ")
	pty.Type([]byte("alice\n"))
	p.WaitStdout("got:alice")
	if rdb.Exists(context.Background(), "lock:tty").Val() != 1 {
		t.Fatal("lock not held while the command runs")
	}
	ctrlC := time.Now()
	pty.Type([]byte{0x03}) // Ctrl-C: SIGINT to the foreground group
	r := p.Wait(10 * time.Second)
	t.Logf("read %q from the terminal; Ctrl-C ended with-lock after %s with exit %d", "alice", time.Since(ctrlC).Round(time.Millisecond), r.Code)
	if r.Code != 130 || r.Signal != 0 {
		t.Errorf("exit %d (signal %v) after Ctrl-C, want 130; terminal output %q", r.Code, r.Signal, r.Stdout)
	}
	if rdb.Exists(context.Background(), "lock:tty").Val() != 0 {
		t.Error("lock not released after Ctrl-C")
	}
}
