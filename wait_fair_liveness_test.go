package withlock_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// aliveFor is the life of a waiting Client's liveness key (wait_fair.go).
const aliveFor = 3 * time.Second

// cidAt returns the Client id of the entry at index i of key's line.
func cidAt(t *testing.T, rdb *redis.Client, key string, i int64) string {
	t.Helper()
	e, err := rdb.LIndex(context.Background(), lineBaseOf(key)+":q", i).Result()
	if err != nil {
		t.Fatalf("LINDEX %d of %s's line: %v", i, key, err)
	}
	cid, _, _ := strings.Cut(e, "|")
	return cid
}

// A waiter whose process is frozen (stopped, or cut off by a partition)
// keeps its Redis connection, so its subscription stays counted; only its
// Client's liveness key, which it no longer refreshes, expires. A hand-over
// after that skips it and gives the lock to the live waiter behind it,
// instead of to a process that cannot use it: the release's, and the line's
// check's when the key was freed without a release (a DEL, --break, a
// crashed holder's expiry).
func TestLineSkipsFrozenWaiterAtHandOver(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release bool          // the holder releases; otherwise its key is deleted
		poll    time.Duration // of the live waiter, whose check then hands over
	}{
		{"release", true, longPoll},
		{"check", false, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) { testFrozenWaiterSkipped(t, tc.release, tc.poll) })
	}
}

func testFrozenWaiterSkipped(t *testing.T, release bool, poll time.Duration) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	const name = "frozen"
	key := "lock:" + name
	holder := mustAcquire(t, withlock.New(srv.Client(), nil), name, time.Minute)

	// The frozen waiter is a real with-lock process, first in line.
	frozen := clitest.Start(t, nil, "--redis", srv.URL(), "--wait", "5m", "--ttl", "5m", name, "true")
	clitest.Eventually(t, promptly, "the with-lock process never joined the line", func() bool { return inLine(t, rdb, key) == 1 })
	frozenID := cidAt(t, rdb, key, 0)
	live := withlock.New(srv.Client(), nil)
	withlock.SetWaitTimings(live, poll, 100*time.Millisecond)
	got := acquireAsync(ctx, live, name, time.Minute)
	clitest.Eventually(t, promptly, "the live waiter never joined the line", func() bool { return inLine(t, rdb, key) == 2 })

	frozen.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { _ = frozen.Cmd.Process.Signal(syscall.SIGCONT) })
	stopped := time.Now()
	alive := lineBaseOf(key) + ":c:" + frozenID
	// Its last refresh was at most a second before the stop.
	within := aliveFor + promptly
	for rdb.Exists(ctx, alive).Val() != 0 {
		if time.Since(stopped) > within {
			t.Fatalf("the frozen waiter's liveness key %s still exists %s after the stop (PTTL %s): a dead waiter would stay in line for ever",
				alive, within, rdb.PTTL(ctx, alive).Val())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the frozen waiter's liveness key expired %s after the stop", time.Since(stopped).Round(time.Millisecond))
	channel := lineBaseOf(key) + ":w:" + frozenID
	if n := rdb.PubSubShardNumSub(ctx, channel).Val()[channel]; n != 1 {
		t.Fatalf("%d subscribers on the frozen waiter's channel, want its connection still counted (1)", n)
	}

	if release {
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
	} else if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-got:
		if o.err != nil {
			t.Fatalf("live waiter: %v", o.err)
		}
		if v := rdb.Get(ctx, key).Val(); v != o.lock.Token() {
			t.Errorf("the key holds %q, want the live waiter's token", v)
		}
		_ = o.lock.Release(ctx)
	case <-time.After(promptly):
		t.Fatalf("the live waiter behind a frozen one was not handed the lock within %s of the key's freeing: the key holds %q (PTTL %s), handed to the frozen process",
			promptly, rdb.Get(ctx, key).Val(), rdb.PTTL(ctx, key).Val())
	}
	if n := inLine(t, rdb, key); n != 0 {
		t.Errorf("%d entries left in line, want the frozen waiter's popped", n)
	}
}

// A waiting Client's liveness key always expires within aliveFor, whoever
// writes it: its join, its refresh every second, and the line's check. So
// a waiter that dies while Redis keeps its connection can be handed the
// lock (and hold up the line for its TTL) only within aliveFor of its
// death; a key without expiry would make it stall the line at every turn.
func TestLineLivenessKeyExpiresWithinAliveFor(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		slots int           // 1: a plain lock
		poll  time.Duration // short: the line's check writes the key; long: the refresh
	}{
		{"refreshed", 1, longPoll},
		{"checked", 1, 300 * time.Millisecond},
		{"semaphore checked", 2, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "alive-" + strings.ReplaceAll(tc.name, " ", "-")
			key := "lock:" + name
			newClient := func() *withlock.Client { return withlock.New(srv.Client(), nil) }
			if tc.slots > 1 {
				newClient = func() *withlock.Client { return semaphore(t, srv.Client(), tc.slots) }
			}
			held := fillSlots(t, newClient(), name, tc.slots)
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			// Another Client's waiter first, so that ours joins a line
			// that is not empty, where its join runs no check.
			front := newClient()
			withlock.SetWaitTimings(front, longPoll, 100*time.Millisecond)
			frontGot := acquireAsync(wctx, front, name, time.Minute)
			clitest.Eventually(t, promptly, "the first waiter never joined the line", func() bool { return inLine(t, rdb, key) == 1 })
			c := newClient()
			withlock.SetWaitTimings(c, tc.poll, 100*time.Millisecond)
			got := acquireAsync(wctx, c, name, time.Minute)
			clitest.Eventually(t, promptly, "the waiter never joined the line", func() bool { return inLine(t, rdb, key) == 2 })
			alive := lineBaseOf(key) + ":c:" + cidAt(t, rdb, key, 1)
			// Over two and a half refreshes, every sample has an expiry.
			samples := 0
			for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				d, err := rdb.PTTL(ctx, alive).Result()
				if err != nil {
					t.Fatalf("PTTL %s: %v", alive, err)
				}
				samples++
				if d == -1 || d > aliveFor {
					t.Fatalf("the waiting Client's liveness key %s has PTTL %s, want at most %s: a dead waiter could be handed the lock for ever", alive, d, aliveFor)
				}
			}
			if d := rdb.PTTL(ctx, alive).Val(); d <= 0 {
				t.Errorf("the waiting Client's liveness key is gone (PTTL %s) while it waits", d)
			}
			t.Logf("%d samples of the liveness key's PTTL, all within %s", samples, aliveFor)
			cancel()
			for _, ch := range []<-chan outcome{frontGot, got} {
				if o := wait(t, ch, promptly, "cancelled waiter"); o.err == nil {
					_ = o.lock.Release(ctx)
				}
			}
			for _, l := range held {
				_ = l.Release(ctx)
			}
		})
	}
}
