package main_test

import (
	"context"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// A run whose lock another process broke with --break says so, naming
// the breaker, and exits 125; with --on-lost reacquire too, since
// breaking a lock is an operator's decision and is not undone.
func TestBrokenHolderSaysWhoBrokeItWithBreak(t *testing.T) {
	e := setup(t)
	host, _ := hostPid(t, 0)
	for _, onLost := range []string{"term", "reacquire"} {
		t.Run(onLost, func(t *testing.T) {
			name := "broken-victim-" + onLost
			p, pids := startTree(t, e.srv, name, "--redis", e.srv.URL(), "--ttl", "1500ms", "--on-lost", onLost)
			if res := e.run("--break", name); res.Code != 0 {
				t.Fatalf("--break: exit %d, stderr %q", res.Code, res.Stderr)
			}
			clitest.WaitDead(t, 10*time.Second, pids...)
			res := p.Wait(10 * time.Second)
			if res.Code != 125 || !hasLine(res.Stderr, "lock:"+name, "lost: broken by "+host+":", " with --break", "SIGTERM") {
				t.Errorf("exit %d, stderr %q; want 125 and a line saying it was broken by %s:<pid> with --break", res.Code, res.Stderr, host)
			}
			if hasLine(res.Stderr, "took it again") || hasLine(res.Stderr, "Redis restarted") {
				t.Errorf("stderr %q: the broken lock was taken back, or blamed on Redis", res.Stderr)
			}
			if n := e.rdb.Exists(context.Background(), "lock:"+name).Val(); n != 0 {
				t.Error("the broken lock was taken back")
			}
		})
	}
}
