package main_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// Every timeout says which setting bounds it, never Go's words for it.
func TestTimeoutsSayTheSetting(t *testing.T) {
	e := setup(t)
	e.srv.Signal(syscall.SIGSTOP)
	defer e.srv.Signal(syscall.SIGCONT)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"acquire", []string{"x", "touch", e.path("ran")}},
		{"--status", []string{"--status", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.run(append([]string{"--redis-timeout", "1s"}, tc.args...)...)
			if r.Code != 69 {
				t.Errorf("exit %d, want 69", r.Code)
			}
			oneLine(t, r, "timed out after 1s (--redis-timeout)")
			for _, goWords := range []string{"i/o timeout", "deadline exceeded"} {
				if strings.Contains(r.Stderr, goWords) {
					t.Errorf("stderr %q says %q", r.Stderr, goWords)
				}
			}
		})
	}
	e.notRun("ran")
}

// A wait that runs out says how long it waited, who holds the lock and
// since when.
func TestWaitRunOutSaysWhoAndSinceWhen(t *testing.T) {
	srv := redistest.Start(t)
	holder := holdLock(t, srv, "busy")
	marker := filepath.Join(t.TempDir(), "ran")
	r := clitest.Run(t, redisEnv(srv), "-w", "300ms", "busy", "touch", marker)
	if r.Code != 75 {
		t.Fatalf("exit %d, want 75; stderr %q", r.Code, r.Stderr)
	}
	oneLine(t, r, "gave up waiting for lock:busy after 3")
	want := regexp.MustCompile(`\(-w 300ms\): held by ` + regexp.QuoteMeta(holderOf(holder.Token())) +
		` since \d\d:\d\d:\d\d \((?:just now|\ds ago)\); command not run$`)
	if !want.MatchString(strings.TrimSuffix(r.Stderr, "\n")) {
		t.Errorf("stderr %q does not match %s", r.Stderr, want)
	}
	matchesDoc(t, r, "a wait ran out", "lock:nightly", "lock:busy", "web2:4711", holderOf(holder.Token()))
	if exists(marker) {
		t.Error("the command ran")
	}
}

// A lost lock says exactly why, in one line, and with-lock exits 125.
func TestLostLockSaysWhy(t *testing.T) {
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

// --break through a replica says it is a replica and what to do, exit 69;
// not that a lock of ours was lost to a demotion, while the lock is held
// on the master and stays so.
func TestBreakThroughAReplicaSaysItIsAReplica(t *testing.T) {
	ctx := context.Background()
	master := redistest.Start(t, "repl-diskless-sync-delay", "0") // the replica in sync at once
	replica := redistest.Start(t, "replicaof", "127.0.0.1 "+strconv.Itoa(master.Port))
	if err := master.Client().Set(ctx, "lock:x", foreign, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	clitest.Eventually(t, 10*time.Second, "the replica never had lock:x", func() bool {
		return replica.Client().Get(ctx, "lock:x").Val() == foreign
	})
	r := clitest.Run(t, nil, "--redis", replica.URL(), "--break", "x")
	if r.Code != 69 {
		t.Errorf("exit %d, want 69", r.Code)
	}
	oneLine(t, r, "(that server is a read-only replica: point --redis / WITH_LOCK_REDIS at the master, or use --sentinel to find it)")
	for _, wrong := range []string{"demoted", "no longer held", "not held"} {
		if strings.Contains(r.Stderr, wrong) {
			t.Errorf("stderr %q says %q", r.Stderr, wrong)
		}
	}
	if v := master.Client().Get(ctx, "lock:x").Val(); v != foreign {
		t.Errorf("the master's lock:x holds %q, want the holder's value", v)
	}
}
