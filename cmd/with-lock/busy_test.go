package main_test

// A lock someone holds: what the refusal says, waiting for it with -w, and
// the fair line's order.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/redistest"
)

// The busy line says what keeps the lock: a holder that finished and only
// --min-hold keeping the key (as --status says), a key with no expiry that
// will never free by itself, or a holder and since when; never "for 0s",
// "expires in 0s", "(0s ago)" or "lock lock:x".
func TestBusyLineSaysWhatKeepsTheLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		lock  string
		take  func(t *testing.T) (holder string, done func())
		wants func(holder string) []string
	}{
		{
			name: "min-hold after the run finished",
			lock: "kept",
			take: func(t *testing.T) (string, func()) {
				if r := e.run("--min-hold", "10m", "kept", "true"); r.Code != 0 {
					t.Fatalf("the first run: exit %d, stderr %q", r.Code, r.Stderr)
				}
				return holderOf(e.get("lock:kept")), func() {}
			},
			wants: func(holder string) []string {
				return []string{"lock:kept is kept by --min-hold until ",
					"from now): the last run, by " + holder + ", has finished; command not run"}
			},
		},
		{
			name: "a foreign key with no expiry",
			lock: "forever",
			take: func(t *testing.T) (string, func()) {
				if err := e.rdb.Set(ctx, "lock:forever", foreign, 0).Err(); err != nil {
					t.Fatal(err)
				}
				return "otherhost:4242", func() {}
			},
			wants: func(holder string) []string {
				return []string{"lock:forever is held by " + holder + " with no expiry: it will never free by itself"}
			},
		},
		{
			name: "a value with-lock did not write, with no expiry",
			lock: "other",
			take: func(t *testing.T) (string, func()) {
				if err := e.rdb.Set(ctx, "lock:other", "x", 0).Err(); err != nil {
					t.Fatal(err)
				}
				return "", func() {}
			},
			wants: func(string) []string {
				return []string{"lock:other is held by an unknown owner (a value with-lock did not write) with no expiry"}
			},
		},
		{
			name: "a running holder",
			lock: "running",
			take: func(t *testing.T) (string, func()) {
				j := e.startJob(0, "running")
				return holderOf(j.token), func() { j.finish() }
			},
			wants: func(holder string) []string {
				return []string{"lock:running is held by " + holder + " since ", ", expires in "}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder, done := tc.take(t)
			defer done()
			r := e.run(tc.lock, "true")
			if r.Code != 75 {
				t.Errorf("exit %d, want 75", r.Code)
			}
			for _, w := range tc.wants(holder) {
				oneLine(t, r, w)
			}
			for _, bad := range []string{"lock lock:", " for 0s", "expires in 0s", "(0s ago)"} {
				if strings.Contains(r.Stderr, bad) {
					t.Errorf("stderr %q says %q", r.Stderr, bad)
				}
			}
		})
	}
}

// A wait that runs out on a lock kept by --min-hold after its run finished
// says so, not that the finished run still holds it.
func TestGaveUpWaitingSaysMinHoldKeepsTheLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if r := e.run("--min-hold", "10m", "kept", "true"); r.Code != 0 {
		t.Fatalf("the first run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	holder := holderOf(e.get("lock:kept"))
	r := e.run("-w", "300ms", "kept", "true")
	if r.Code != 75 {
		t.Errorf("exit %d, want 75", r.Code)
	}
	oneLine(t, r, "gave up waiting for lock:kept after ")
	oneLine(t, r, ": the last run, by "+holder+", has finished and --min-hold keeps the lock until ")
}

// waitFor bounds how long a test waits for with-lock to reach a state; far
// more than any of these steps takes, even on a loaded machine.
const waitFor = 15 * time.Second

// holdLock takes the lock called name for a minute, as another run would.
func holdLock(t *testing.T, srv *redistest.Server, name string) *withlock.Lock {
	t.Helper()
	l, err := withlock.New(srv.Client(), nil).TryAcquire(context.Background(), name, time.Minute, nil)
	if err != nil {
		t.Fatalf("take %s: %v", name, err)
	}
	return l
}

// startWaiting starts with-lock -w on a held lock and returns once it
// waits in the lock's line.
func startWaiting(t *testing.T, srv *redistest.Server, rdb *redis.Client, key string, args ...string) *clitest.Proc {
	t.Helper()
	before := lineLen(t, rdb, key)
	p := clitest.Start(t, redisEnv(srv), args...)
	clitest.Eventually(t, waitFor, "with-lock never joined the lock's line", func() bool {
		return lineLen(t, rdb, key) == before+1
	})
	return p
}

// lineLen is how many wait in the fair line of the lock key key.
func lineLen(t *testing.T, rdb *redis.Client, key string) int64 {
	t.Helper()
	n, err := rdb.LLen(context.Background(), keys.Line(key)).Result()
	if err != nil {
		t.Fatalf("LLEN of the line of %s: %v", key, err)
	}
	return n
}

// -w gives up with 75 once the wait is over, naming the holder, and runs
// nothing.
func TestWaitTimesOutWith75(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	holder := holdLock(t, srv, "busy")
	marker := filepath.Join(t.TempDir(), "ran")
	res := clitest.Run(t, []string{"WITH_LOCK_REDIS=" + srv.URL()}, "-w", "300ms", "busy", "touch", marker)
	if res.Code != 75 {
		t.Fatalf("exit %d, want 75; stderr: %s", res.Code, res.Stderr)
	}
	if exists(marker) {
		t.Errorf("the command ran although the lock stayed busy")
	}
	if res.Duration < 300*time.Millisecond {
		t.Errorf("gave up after %s, before the 300ms wait", res.Duration)
	}
	if !strings.Contains(res.Stderr, "gave up waiting") || !strings.Contains(res.Stderr, holderOf(holder.Token())) {
		t.Errorf("stderr %q does not say who held the lock and that we gave up", res.Stderr)
	}
	if strings.Contains(res.Stderr, holder.Token()) {
		t.Errorf("stderr shows the holder's token")
	}
	if v, _ := srv.Client().Get(context.Background(), "lock:busy").Result(); v != holder.Token() {
		t.Errorf("lock:busy holds %q after the timeout, want the holder's token", v)
	}
}

// -w runs the command as soon as the holder releases the lock.
func TestWaitRunsAfterRelease(t *testing.T) {
	t.Parallel()
	rdb, holder, marker, p := waitingForJob(t)
	if exists(marker) {
		t.Fatalf("the command ran while the lock was held")
	}
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := p.Wait(waitFor); r.Code != 0 {
		t.Fatalf("exit %d after the release, want 0; stderr: %s", r.Code, r.Stderr)
	}
	if !exists(marker) {
		t.Errorf("the command did not run after the lock was released")
	}
	if n, _ := rdb.Exists(context.Background(), "lock:job").Result(); n != 0 {
		t.Errorf("lock:job left behind")
	}
}

// SIGINT while waiting: 130, nothing run, the holder's lock untouched, the
// line left.
func TestWaitInterruptedExits130(t *testing.T) {
	t.Parallel()
	rdb, holder, marker, p := waitingForJob(t)
	p.Signal(syscall.SIGINT)
	r := p.Wait(waitFor)
	if r.Code != 130 {
		t.Fatalf("exit %d on SIGINT while waiting, want 130; stderr: %s", r.Code, r.Stderr)
	}
	if exists(marker) {
		t.Errorf("the command ran although with-lock was interrupted while waiting")
	}
	if !strings.Contains(r.Stderr, "command not run") {
		t.Errorf("stderr %q does not say the command was not run", r.Stderr)
	}
	if v, _ := rdb.Get(context.Background(), "lock:job").Result(); v != holder.Token() {
		t.Errorf("lock:job holds %q, want the holder's token untouched", v)
	}
	if chs, _ := rdb.PubSubShardChannels(context.Background(), "{lock:job}:w:*").Result(); len(chs) != 0 {
		t.Errorf("still subscribed after with-lock exited")
	}
	if n := lineLen(t, rdb, "lock:job"); n != 0 {
		t.Errorf("%d entries left in the line after with-lock exited", n)
	}
}

// A SIGINT that races the release may find with-lock waiting, trying the
// SET, or already holding the lock; whichever, nothing stays locked.
func TestWaitInterruptRacingReleaseLeavesNoLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	for i := range 20 {
		holder := holdLock(t, srv, "race")
		p := startWaiting(t, srv, rdb, "lock:race", "-w", "1m", "race", "true")
		if err := holder.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i) * 100 * time.Microsecond)
		_ = p.Cmd.Process.Signal(syscall.SIGINT) // it may have exited already
		// 130: interrupted while waiting (or the command was). 0: it
		// finished first. Killed by SIGINT: it came after with-lock had
		// released and stopped handling signals, on its way out.
		if r := p.Wait(waitFor); r.Code != 130 && r.Code != 0 && r.Signal != syscall.SIGINT {
			t.Fatalf("iteration %d: exit %d (signal %v), want 130 or 0; stderr: %s", i, r.Code, r.Signal, r.Stderr)
		}
		if n, _ := rdb.Exists(context.Background(), "lock:race").Result(); n != 0 {
			t.Fatalf("iteration %d: lock:race left behind after with-lock exited", i)
		}
	}
}

// waitingForJob holds lock:job and starts a with-lock -w 1m that would
// touch marker, returning once it waits: the admin client, the holder's
// lock, the marker's path and the waiting process.
func waitingForJob(t *testing.T) (*redis.Client, *withlock.Lock, string, *clitest.Proc) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := srv.Client()
	holder := holdLock(t, srv, "job")
	marker := filepath.Join(t.TempDir(), "ran")
	return rdb, holder, marker, startWaiting(t, srv, rdb, "lock:job", "-w", "1m", "job", "touch", marker)
}

// Processes waiting with -w run in the order in which they started
// waiting.
func TestWaitersRunInArrivalOrder(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	holder := holdLock(t, srv, "fifo")
	order := filepath.Join(t.TempDir(), "order")
	var procs []*clitest.Proc
	for i := range 8 {
		// Each starts once the one before it is queued.
		procs = append(procs, startWaiting(t, srv, rdb, "lock:fifo",
			"-w", "1m", "fifo", "sh", "-c", fmt.Sprintf("echo %d >> %s", i, order)))
	}
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Each hands the lock to the next in its release: quietly, as any
	// release that worked.
	for i, p := range procs {
		if r := p.Wait(waitFor); r.Code != 0 || r.Stderr != "" {
			t.Fatalf("waiter %d: exit %d, stderr %q; want 0 and silence", i, r.Code, r.Stderr)
		}
	}
	b, err := os.ReadFile(order)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(b)), strings.Fields("0 1 2 3 4 5 6 7"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ran in order %v, want %v", got, want)
	}
}

// killedWaiterBound is the documented bound on how long a waiter killed
// with -9 can delay the next one: the life of its liveness key. Redis sees
// a killed process's connection close at once, and from then on releases
// skip it without delay; a turn that comes in the instant before hands it
// the lock, which then frees at its TTL, as a crashed holder's does.
const killedWaiterBound = 3 * time.Second

// A waiter killed with -9 while queued delays the one behind it by no more
// than the documented bound.
func TestKilledWaiterDelaysNextByAtMostBound(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	holder := holdLock(t, srv, "killed")
	dir := t.TempDir()
	killed := startWaiting(t, srv, rdb, "lock:killed", "-w", "1m", "killed", "touch", filepath.Join(dir, "killed-ran"))
	next := startWaiting(t, srv, rdb, "lock:killed", "-w", "1m", "killed", "touch", filepath.Join(dir, "next-ran"))
	killed.Signal(syscall.SIGKILL)
	clitest.WaitDead(t, waitFor, killed.Pid())
	// Redis reads the closed connection at once; until it has, the dead
	// waiter still counts as listening (see killedWaiterBound).
	clitest.Eventually(t, waitFor, "Redis never dropped the killed waiter's subscription", func() bool {
		return len(rdb.PubSubShardChannels(context.Background(), "{lock:killed}:w:*").Val()) == 1
	})
	released := time.Now()
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	next.WaitFile(filepath.Join(dir, "next-ran"))
	delay := time.Since(released)
	t.Logf("the next waiter ran %s after the release", delay.Round(time.Millisecond))
	if delay > killedWaiterBound {
		t.Errorf("the next waiter ran %s after the release, want at most %s", delay, killedWaiterBound)
	}
	if r := next.Wait(waitFor); r.Code != 0 {
		t.Fatalf("next waiter: exit %d, stderr %s", r.Code, r.Stderr)
	}
	if exists(filepath.Join(dir, "killed-ran")) {
		t.Error("the killed waiter's command ran")
	}
	if n := lineLen(t, rdb, "lock:killed"); n != 0 {
		t.Errorf("%d entries left in the line", n)
	}
}

// A wait that runs out says how long it waited, who holds the lock and
// since when.
func TestWaitRunOutSaysWhoAndSinceWhen(t *testing.T) {
	t.Parallel()
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
