package main_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// Faults one at a time, each pinned with its timing: what with-lock does
// when the lock is lost under a running command. Each test logs its figure
// and asserts it. TTLs are short so the suite stays fast; the bounds are
// wide so a loaded machine does not fail them. The trial table across all
// faults, with a fenced resource, is in reliability_test.go.

// Another client takes the key over mid-run: the loss is seen within
// one renewal interval, the command's whole tree dies, with-lock exits 125,
// and the new owner's key is left alone.
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
	if sinceStart < ttl-margin {
		t.Errorf("command stopped %s after start, before the local deadline (TTL-%s): a presumed loss came too early", sinceStart, margin)
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

// Short CLIENT PAUSEs, each shorter than TTL/3, keep delaying renewals:
// no false loss.
func TestShortClientPausesCauseNoFalseLoss(t *testing.T) {
	t.Parallel() // load-tolerant: runs beside the other parallel tests, after the timing-critical ones
	srv := redistest.Start(t)
	const ttl = 1500 * time.Millisecond
	const pause = ttl/3 - 100*time.Millisecond
	const run = 3 * time.Second
	p, _ := startTree(t, srv, "client-pauses", "--ttl", ttl.String())
	admin := srv.Client()
	ctx := context.Background()
	pauses := 0
	for end := time.Now().Add(run); time.Now().Before(end); pauses++ {
		if err := admin.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "ALL").Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pause + 50*time.Millisecond)
	}
	st := lookAt(admin, "lock:client-pauses")
	if st.err != nil || !tokenRE.MatchString(st.val) || st.pttl <= 0 || st.pttl > ttl {
		t.Errorf("after %s of pauses the key is %+v, want still held by with-lock with TTL ≤ %s", run, st, ttl)
	}
	p.Signal(syscall.SIGTERM) // the tree dies of it; with-lock passes on 143
	res := p.Wait(10 * time.Second)
	t.Logf("%d CLIENT PAUSEs of %s over %s (TTL %s): exit %d, stderr %q", pauses, pause, run, ttl, res.Code, res.Stderr)
	if res.Code != 128+int(syscall.SIGTERM) || res.Stderr != "" {
		t.Errorf("exit %d, stderr %q; want 143 (our SIGTERM) and no loss", res.Code, res.Stderr)
	}
	if n := admin.Exists(ctx, "lock:client-pauses").Val(); n != 0 {
		t.Error("lock not released")
	}
}

// with-lock is killed with SIGKILL: its command — the whole tree — is
// dead within 100ms, and the lock is free again within the TTL.
func TestKilledHolderTakesCommandTreeAndFreesLockWithinTTL(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	const ttl = time.Second
	p, pids := startTree(t, srv, "killed-holder", "--ttl", ttl.String())
	killedAt := time.Now()
	p.Signal(syscall.SIGKILL)
	deadAt := clitest.WaitDead(t, 5*time.Second, pids...)
	st := lookAt(rdb, "lock:killed-holder")
	var freeAt time.Time
	clitest.Eventually(t, ttl+5*time.Second, "lock freed after with-lock was killed", func() bool {
		freeAt = time.Now()
		return rdb.Exists(context.Background(), "lock:killed-holder").Val() == 0
	})
	took, free := deadAt.Sub(killedAt), freeAt.Sub(killedAt)
	t.Logf("with-lock killed -9: command tree dead after %s; key had PTTL %s then, free after %s (TTL %s)",
		took, st.pttl, free.Round(time.Millisecond), ttl)
	if took > 100*time.Millisecond {
		t.Errorf("command tree dead %s after with-lock was killed, want within 100ms", took)
	}
	if st.pttl > ttl {
		t.Errorf("PTTL %s after the kill exceeds the TTL %s", st.pttl, ttl)
	}
	if free > ttl+250*time.Millisecond {
		t.Errorf("lock free %s after the kill, want within the TTL %s (+250ms to observe)", free, ttl)
	}
}

// A job three times as long as its TTL keeps its lock throughout, the
// key's TTL never above --ttl, and the lock is released at the end.
func TestLongJobKeepsLockPastItsTTL(t *testing.T) {
	t.Parallel() // load-tolerant: runs beside the other parallel tests, after the timing-critical ones
	srv := redistest.Start(t)
	rdb := srv.Client()
	const ttl, run = 2 * time.Second, 6 * time.Second
	finished := filepath.Join(t.TempDir(), "finished")
	p := clitest.Start(t, redisEnv(srv), "--ttl", ttl.String(), "long-job",
		"sh", "-c", `sleep "$1" && touch "$0"`, finished, strconv.Itoa(int(run/time.Second)))
	clitest.Eventually(t, 10*time.Second, "lock taken", func() bool {
		return rdb.Exists(context.Background(), "lock:long-job").Val() == 1
	})
	first := lookAt(rdb, "lock:long-job")
	samples := 0
	minTTL, maxTTL := time.Hour, time.Duration(0)
	for done := false; !done; time.Sleep(20 * time.Millisecond) {
		select {
		case <-p.Done():
			done = true
			continue
		default:
		}
		st := lookAt(rdb, "lock:long-job")
		if errors.Is(st.err, redis.Nil) {
			if !exists(finished) {
				t.Fatalf("key gone while the job ran (sample %d)", samples)
			}
			done = true // released at the end
			continue
		}
		if st.err != nil || st.val != first.val || st.pttl <= 0 || st.pttl > ttl {
			t.Fatalf("sample %d: key %+v, want our token with TTL in (0, %s]", samples, st, ttl)
		}
		samples++
		minTTL, maxTTL = min(minTTL, st.pttl), max(maxTTL, st.pttl)
	}
	res := p.Wait(10 * time.Second)
	t.Logf("job of %s with --ttl %s: %d samples, PTTL between %s and %s; exit %d in %s",
		run, ttl, samples, minTTL, maxTTL, res.Code, res.Duration.Round(time.Millisecond))
	if res.Code != 0 || res.Stderr != "" {
		t.Errorf("exit %d, stderr %q; want 0 and nothing", res.Code, res.Stderr)
	}
	if samples < 50 {
		t.Errorf("only %d samples of the key during the run", samples)
	}
	if n := rdb.Exists(context.Background(), "lock:long-job").Val(); n != 0 {
		t.Error("lock not released at the end")
	}
}
