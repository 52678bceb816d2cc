package main_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// Without --stop-timeout, a forwarded SIGTERM (systemctl stop) is not
// followed by SIGKILL, not even after --kill-after, which bounds only a
// command stopped for a lost lock: a command that ignores SIGTERM keeps
// with-lock waiting, with the lock held and renewed, until something kills
// with-lock; its process group dies with it. This is what
// docs/long-jobs.md and the man page's --stop-timeout say of the default
// (stop_timeout_test.go: with it).
func TestForwardedSignalIgnoredKeepsWithLockWaiting(t *testing.T) {
	e := setup(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	const killAfter = 200 * time.Millisecond
	p := clitest.Start(t, redisEnv(e.srv), "--ttl", "2s", "--kill-after", killAfter.String(), "stubborn",
		"sh", "-c", `trap '' TERM; sleep 100 & printf '%s\n%s\n' $$ $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`, pidfile)
	pids := clitest.ReadPids(t, 10*time.Second, pidfile, 2)
	t.Cleanup(func() {
		for _, pid := range pids {
			if clitest.Alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	p.Signal(syscall.SIGTERM)
	// Well past --kill-after and the 2s TTL: the lock is renewed, nothing
	// is killed, with-lock still waits. (What must not happen can only be
	// waited for.)
	time.Sleep(3 * time.Second)
	if p.Exited() {
		t.Fatalf("with-lock exited after a forwarded SIGTERM the command ignored; stderr %q", p.Stderr())
	}
	for _, pid := range pids {
		if !clitest.Alive(pid) {
			t.Errorf("pid %d was killed, though the lock was not lost", pid)
		}
	}
	if got := e.get("lock:stubborn"); got == "" {
		t.Error("the lock is not held while with-lock waits for the command")
	}
	p.Signal(syscall.SIGKILL) // systemd at TimeoutStopSec
	clitest.WaitDead(t, 10*time.Second, pids...)
	clitest.Eventually(t, 10*time.Second, "the lock never expired", func() bool {
		return e.rdb.Exists(context.Background(), "lock:stubborn").Val() == 0
	})
}
