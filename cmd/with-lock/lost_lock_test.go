package main_test

// A lost lock stops the job: each fault one at a time, pinned with its
// timing, then --on-lost ignore and --kill-after. Each test logs its figure
// and asserts it. TTLs are short so the suite stays fast; the bounds are
// wide so a loaded machine does not fail them. The trial table across all
// faults, with a fenced resource, is in reliability_test.go; what with-lock
// says is in lost_lock_says_test.go.

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// Another client takes the key over mid-run: the loss is seen within
// one renewal interval, the command's whole tree dies, with-lock exits 125,
// and the new owner's key is left alone.
//
// Not parallel: it holds a bound in time, kept clear of the parallel
// tests' load.
func TestTakeoverStopsCommandWithinOneInterval(t *testing.T) {
	const ttl = 1500 * time.Millisecond
	const interval = ttl / 3
	tests := []struct {
		name   string
		fault  func(rdb *redis.Client, key string) error
		owner  string // the key's value afterwards; "" for gone
		reason string // in with-lock's message
	}{
		{"SET by another owner", func(rdb *redis.Client, key string) error {
			return rdb.Set(context.Background(), key, foreign, time.Minute).Err()
		}, foreign, "taken over by otherhost:4242"},
		{"PEXPIRE to 1ms", func(rdb *redis.Client, key string) error {
			return rdb.PExpire(context.Background(), key, time.Millisecond).Err()
		}, "", "the key vanished"},
	}
	srv := redistest.Start(t)
	rdb := srv.Client()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "takeover-" + strconv.Itoa(i)
			p, pids := startTree(t, srv, name, "--ttl", ttl.String())
			time.Sleep(interval / 2) // between two renewals
			faultAt := time.Now()
			if err := tt.fault(rdb, "lock:"+name); err != nil {
				t.Fatal(err)
			}
			deadAt := clitest.WaitDead(t, 10*time.Second, pids...)
			res := p.Wait(10 * time.Second)
			took := deadAt.Sub(faultAt)
			t.Logf("%s: command tree (sh and its child) dead %s after the takeover (renewal interval %s); exit %d",
				tt.name, took.Round(time.Millisecond), interval, res.Code)
			if took > interval+700*time.Millisecond {
				t.Errorf("tree dead %s after the takeover, want within one renewal interval (%s) plus 700ms", took, interval)
			}
			if res.Code != 125 || !hasLine(res.Stderr, "lock:"+name, tt.reason, "SIGTERM") {
				t.Errorf("exit %d, stderr %q; want 125 and a line saying %q", res.Code, res.Stderr, tt.reason)
			}
			if tt.owner != "" {
				untouched(t, rdb, "lock:"+name, tt.owner)
			} else if n := rdb.Exists(context.Background(), "lock:"+name).Val(); n != 0 {
				t.Error("with-lock recreated the expired key")
			}
		})
	}
}

// with-lock is paused (SIGSTOP) past its TTL while another process takes
// the lock; on SIGCONT it stops the command at once and exits 125.
func TestPausedHolderStopsCommandOnResume(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	const ttl = time.Second
	p, pids := startTree(t, srv, "paused-holder", "--ttl", ttl.String())
	p.Signal(syscall.SIGSTOP)
	stoppedAt := time.Now()
	ctx := context.Background()
	clitest.Eventually(t, ttl+5*time.Second, "another owner takes the lock of a paused with-lock", func() bool {
		return rdb.SetNX(ctx, "lock:paused-holder", foreign, time.Minute).Val()
	})
	t.Logf("lock taken by another owner %s after pausing with-lock", time.Since(stoppedAt).Round(time.Millisecond))
	contAt := time.Now()
	p.Signal(syscall.SIGCONT)
	deadAt := clitest.WaitDead(t, 10*time.Second, pids...)
	res := p.Wait(10 * time.Second)
	took := deadAt.Sub(contAt)
	t.Logf("command tree dead %s after SIGCONT; exit %d; %s", took.Round(time.Millisecond), res.Code, res.Stderr)
	if took > time.Second {
		t.Errorf("tree dead %s after SIGCONT, want promptly (under 1s)", took)
	}
	if res.Code != 125 || !hasLine(res.Stderr, "lock:paused-holder", "lost", "SIGTERM") {
		t.Errorf("exit %d, stderr %q; want 125 and why", res.Code, res.Stderr)
	}
	untouched(t, rdb, "lock:paused-holder", foreign)
}

// redis-server is killed -9 mid-run and restarted without persistence;
// someone else takes the now free lock: with-lock sees the loss and stops
// the command.
func TestRedisRestartedEmptyStopsCommandWithinOneInterval(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const ttl = 1500 * time.Millisecond
	const interval = ttl / 3
	p, pids := startTree(t, srv, "restarted-empty", "--ttl", ttl.String())
	srv.Restart() // SIGKILL, then a fresh empty server on the same port
	upAt := time.Now()
	rdb := srv.Client()
	if !rdb.SetNX(context.Background(), "lock:restarted-empty", foreign, time.Minute).Val() {
		t.Fatal("the lock survived a restart without persistence")
	}
	deadAt := clitest.WaitDead(t, 10*time.Second, pids...)
	res := p.Wait(10 * time.Second)
	took := deadAt.Sub(upAt)
	t.Logf("command tree dead %s after Redis came back empty (renewal interval %s); exit %d; %s",
		took.Round(time.Millisecond), interval, res.Code, res.Stderr)
	if took > interval+700*time.Millisecond {
		t.Errorf("tree dead %s after the restart, want within one renewal interval (%s) plus 700ms", took, interval)
	}
	if res.Code != 125 || !hasLine(res.Stderr, "lock:restarted-empty", "lost") {
		t.Errorf("exit %d, stderr %q; want 125 and why", res.Code, res.Stderr)
	}
	untouched(t, rdb, "lock:restarted-empty", foreign)
}

// redis-server is paused for 2×TTL: renewals hang, so with-lock must
// stop the command by its local deadline — before the key could expire on
// the server and anyone else could take it. A renewal stuck for the whole
// --redis-timeout (longer than the TTL) must not delay that.
//
// Not parallel: it holds a bound in time, kept clear of the parallel
// tests' load.
func TestStalledRedisStopsCommandBeforeKeyCanExpire(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 2 * time.Second
	margin := deadlineMargin(t, srv.Client(), ttl)
	p, pids := startTree(t, srv, "stalled-redis", "--ttl", ttl.String(), "--redis-timeout", "5s")
	srv.Signal(syscall.SIGSTOP)
	pausedAt := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			srv.Signal(syscall.SIGCONT)
			resumed = true
		}
	}
	defer resume()
	deadAt := clitest.WaitDead(t, 2*ttl, pids...)
	// The SET was sent after with-lock started, so measuring from its start
	// over-states the time the key had: a safe bound.
	sinceStart := deadAt.Sub(p.Started)
	t.Logf("command tree dead %s after with-lock started (%s after Redis was paused); TTL %s, local deadline TTL-%s",
		sinceStart.Round(time.Millisecond), deadAt.Sub(pausedAt).Round(time.Millisecond), ttl, margin)
	if sinceStart >= ttl {
		t.Errorf("command dead %s after with-lock started: the key could have expired (TTL %s) while it ran", sinceStart, ttl)
	}
	// On a loaded host the deadline comes earlier, by at most the margin
	// again (the library's keepalive_clocks.go).
	if sinceStart < ttl-2*margin {
		t.Errorf("command stopped %s after start, before the earliest local deadline (TTL-2×%s): a presumed loss came too early", sinceStart, margin)
	}
	time.Sleep(time.Until(pausedAt.Add(2 * ttl)))
	resume()
	res := p.Wait(10 * time.Second)
	t.Logf("with-lock exited %d, %s after Redis resumed", res.Code, time.Since(pausedAt.Add(2*ttl)).Round(time.Millisecond))
	if res.Code != 125 || !hasLine(res.Stderr, "lock:stalled-redis", "presumed lost: Redis unreachable for longer than the TTL", "no answer from Redis", "SIGTERM") {
		t.Errorf("exit %d, stderr %q; want 125 and a presumed loss", res.Code, res.Stderr)
	}
	if !srv.Client().SetNX(context.Background(), "lock:stalled-redis", foreign, time.Minute).Val() {
		t.Error("lock not free after Redis resumed past the TTL")
	}
}

// --on-lost ignore: the loss is reported, the command finishes with its own
// exit code, and the new owner's key is left alone.
func TestOnLostIgnoreLetsCommandFinishAndLeavesNewOwner(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	dir := t.TempDir()
	marker := filepath.Join(dir, "taken")
	// The command waits until the test took the lock over, then exits 3.
	p := clitest.Start(t, redisEnv(srv), "--ttl", "900ms", "--on-lost", "ignore", "ignore",
		"sh", "-c", `touch "$0.started"; while [ ! -e "$0" ]; do sleep 0.05; done; sleep 0.6; exit 3`, marker)
	clitest.Eventually(t, 10*time.Second, "command started", func() bool { return exists(marker + ".started") })
	if err := rdb.Set(context.Background(), "lock:ignore", foreign, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	touch(t, marker)
	res := p.Wait(10 * time.Second)
	t.Logf("exit %d; stderr %q", res.Code, res.Stderr)
	if res.Code != 3 || !hasLine(res.Stderr, "lock:ignore", "taken over by otherhost:4242", "goes on without the lock") {
		t.Errorf("exit %d, stderr %q; want the command's 3 and a warning", res.Code, res.Stderr)
	}
	if strings.Contains(res.Stderr, "no longer ours at release") {
		t.Errorf("stderr %q: the loss was already reported", res.Stderr)
	}
	untouched(t, rdb, "lock:ignore", foreign)
}

// A command that ignores SIGTERM is killed --kill-after later; with-lock
// waits for the whole tree before exiting 125.
func TestKillAfterKillsTreeThatIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	const killAfter = 700 * time.Millisecond
	pidfile := filepath.Join(t.TempDir(), "pids")
	// trap '' makes the shell and its child ignore SIGTERM.
	p := clitest.Start(t, redisEnv(srv), "--ttl", "900ms", "--kill-after", killAfter.String(), "killafter",
		"sh", "-c", `trap '' TERM; sleep 100 & printf '%s\n%s\n' $$ $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`, pidfile)
	pids := clitest.ReadPids(t, 10*time.Second, pidfile, 2)
	takenAt := time.Now()
	if err := rdb.Set(context.Background(), "lock:killafter", foreign, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	deadAt := clitest.WaitDead(t, 10*time.Second, pids...)
	res := p.Wait(10 * time.Second)
	took := deadAt.Sub(takenAt)
	t.Logf("SIGTERM-proof tree dead %s after the takeover (--kill-after %s, renewal every 300ms); exit %d", took.Round(time.Millisecond), killAfter, res.Code)
	if took < killAfter || took > killAfter+time.Second+300*time.Millisecond {
		t.Errorf("tree dead %s after the takeover, want after --kill-after %s, within a renewal interval plus 1s", took, killAfter)
	}
	if res.Code != 125 || !hasLine(res.Stderr, "SIGKILL after "+killAfter.String()) {
		t.Errorf("exit %d, stderr %q; want 125 and the plan", res.Code, res.Stderr)
	}
}
