package main_test

import (
	"context"
	"path/filepath"
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
