package main_test

// A lost lock stops the job: each fault with its timing, what with-lock
// says, --on-lost ignore and --kill-after.

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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

// --on-lost ignore: the loss is reported, the command finishes with its own
// exit code, and the new owner's key is left alone.
func TestOnLostIgnoreLetsCommandFinishAndLeavesNewOwner(t *testing.T) {
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
