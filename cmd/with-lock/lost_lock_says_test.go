package main_test

// What with-lock says when a lost lock stops the job: the reason in one
// line, and who broke the lock with --break.

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// A run whose lock another process broke with --break says so, naming
// the breaker, and exits 125: on one Redis and on a quorum, and with
// --on-lost reacquire too, since breaking a lock is an operator's decision
// and is not undone.
func TestBrokenHolderSaysWhoBrokeItWithBreak(t *testing.T) {
	t.Parallel()
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

// A lost lock says exactly why, in one line, and with-lock exits 125.
func TestLostLockSaysWhy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	const ttl = time.Second
	// A token of this version, made 90 seconds ago by another host.
	taker := "otherhost:4242:" + strconv.FormatInt(time.Now().Add(-90*time.Second).UnixMilli(), 36) + "." + foreignSecret
	tests := []struct {
		name  string
		fault func(t *testing.T, key string, p *clitest.Proc)
		want  *regexp.Regexp
		doc   string // the situation in docs/logs.md's table
	}{
		{"taken over", func(t *testing.T, key string, _ *clitest.Proc) {
			e.rdb.Set(ctx, key, taker, time.Minute)
		}, regexp.MustCompile(`lost: taken over by otherhost:4242 since \d\d:\d\d:\d\d \(1m ago\); stopping`), logsRow("taken over")},
		{"deleted", func(t *testing.T, key string, _ *clitest.Proc) {
			e.rdb.Del(ctx, key)
		}, regexp.MustCompile(`lost: the key vanished \S+ before it was due to expire \(Redis restarted or flushed, or the key deleted\?\); stopping`), logsRow("the key vanished")},
		{"not renewed in time", func(t *testing.T, key string, p *clitest.Proc) {
			p.Signal(syscall.SIGSTOP) // paused past its TTL, nobody else takes the lock
			clitest.Eventually(t, 5*time.Second, "the key did not expire", func() bool { return e.rdb.Exists(ctx, key).Val() == 0 })
			p.Signal(syscall.SIGCONT)
		}, regexp.MustCompile(`lost: it expired: not renewed for \S+ of its 1s TTL \(was with-lock paused or starved of CPU\?\); stopping`), logsRow("it expired")},
		{"Redis unreachable", func(t *testing.T, key string, _ *clitest.Proc) {
			e.srv.Kill()
		}, regexp.MustCompile(`presumed lost: Redis unreachable for longer than the TTL allows: no renewal succeeded for \S+ of its 1s TTL \(last attempt: .*nothing listens at \S+ \(connection refused\)\); stopping`), logsRow("Redis unreachable")},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "lost-" + strconv.Itoa(i)
			// The fault comes once the command runs: the key alone exists
			// before with-lock has read the SET's reply, and a kill then is
			// an acquisition whose outcome is unknown, not a lost lock.
			started := e.path(name + "-runs")
			p := clitest.Start(t, nil, "--redis", e.srv.URL(), "--ttl", ttl.String(), name,
				"sh", "-c", `touch "$1"; exec sleep 30`, "sh", started)
			p.WaitFile(started)
			tc.fault(t, "lock:"+name, p)
			r := p.Wait(clitest.RunTimeout)
			if r.Code != 125 {
				t.Errorf("exit %d, want 125", r.Code)
			}
			oneLine(t, r, "lock:"+name)
			if !tc.want.MatchString(r.Stderr) {
				t.Errorf("stderr %q does not match %s", r.Stderr, tc.want)
			}
			matchesDoc(t, r, tc.doc, "lock:x", "lock:"+name, "web2:4711", "otherhost:4242")
		})
	}
}

// A lock whose key vanishes from a server that may evict it (of which the
// run warned as it began) names eviction as the likely cause, not a
// restart or a flush. The key is deleted here: which of the two removed
// it, the server's policy is what the run can tell.
func TestLostLockOnAnEvictingRedisNamesEviction(t *testing.T) {
	t.Parallel()
	e := setup(t, "maxmemory", "100mb", "maxmemory-policy", "allkeys-lru")
	started := e.path("started")
	p := clitest.Start(t, nil, "--redis", e.srv.URL(), "--ttl", "1s", "evicted",
		"sh", "-c", `touch "$1"; exec sleep 30`, "sh", started)
	p.WaitFile(started)
	e.rdb.Del(context.Background(), "lock:evicted")
	r := p.Wait(clitest.RunTimeout)
	want := regexp.MustCompile(`lost: the key vanished \S+ before it was due to expire \(evicted\? Redis may evict keys under memory pressure: maxmemory-policy allkeys-lru; set noeviction\); stopping`)
	if r.Code != 125 || !want.MatchString(r.Stderr) || strings.Contains(r.Stderr, "restarted") {
		t.Errorf("exit %d, stderr %q; want 125 and a line matching %s", r.Code, r.Stderr, want)
	}
	if !strings.Contains(r.Stderr, evictionWarning("evicted", "allkeys-lru")) {
		t.Errorf("stderr %q: the run did not warn of the policy as it began", r.Stderr)
	}
}
