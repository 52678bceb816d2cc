package main_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// A run whose lock another process broke with --break says so, naming
// the breaker, and exits 125: on one Redis and on a quorum, and with
// --on-lost reacquire too, since breaking a lock is an operator's decision
// and is not undone.
func TestBrokenHolderSaysWhoBrokeItWithBreak(t *testing.T) {
	e := setup(t)
	host, _ := hostPid(t, 0)
	db := func(n int) string { return "redis://" + e.srv.Addr() + "/" + strconv.Itoa(n) }
	tests := []struct {
		name   string
		redis  []string
		onLost string
	}{
		{"term", []string{"--redis", db(0)}, "term"},
		{"reacquire", []string{"--redis", db(0)}, "reacquire"},
		{"quorum", []string{"--redis", db(1), "--redis", db(2), "--redis", db(3)}, "term"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "broken-victim-" + tt.name
			p, pids := startTree(t, e.srv, name, append(tt.redis, "--ttl", "1500ms", "--on-lost", tt.onLost)...)
			if res := clitest.Run(t, nil, append(tt.redis, "--break", name)...); res.Code != 0 {
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
