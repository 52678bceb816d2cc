package withlock_test

// The fair line's dead, frozen and far waiters: skipped at hand-over, kept
// alive, and never holding the line up past AliveFor.

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
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
	t.Parallel()
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
	t.Parallel()
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

// nearLine is how close to the head of the line a waiter keeps refreshing
// its liveness key and checking the line (wait_fair_far.go).
const nearLine = 8

// Waiters far back in a long line neither refresh their liveness key every
// second nor check the line every poll: with 24 Clients whose turns come a
// second apart, a hand-over costs what it costs in a short line, the
// release's script and the next waiter's join. Were every waiter to keep
// that upkeep, each would check the line (LPOS of the whole line) three
// times a wait here, its poll being 300ms.
//
// Not parallel: a hand-over delayed by other tests' load lets waiters'
// polls and retries in, which the count of commands would take for cost.
func TestLineFarWaitersAddNoUpkeepPerHandOver(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	const n, laps, hold = 24, 2, 40 * time.Millisecond
	name := "far-upkeep"
	clients := make([]*withlock.Client, n)
	for i := range clients {
		clients[i] = withlock.New(srv.Client(), nil)
		withlock.SetWaitTimings(clients[i], 300*time.Millisecond, 5*time.Second)
	}
	turn := func(c *withlock.Client) bool {
		l, err := acquireBounded(c, name, time.Minute, nil)
		if err != nil {
			t.Error(err)
			return false
		}
		time.Sleep(hold)
		if err := l.Release(context.Background()); err != nil {
			t.Error(err)
			return false
		}
		return true
	}
	holders := withlock.New(srv.Client(), nil)
	// A first turn each, behind a holder, to learn the line's pace.
	holder := mustAcquire(t, holders, name, time.Minute)
	var first, rest sync.WaitGroup
	again := make(chan struct{})
	var served atomic.Int64
	for _, c := range clients {
		first.Add(1)
		rest.Go(func() {
			ok := turn(c)
			first.Done()
			if !ok {
				return
			}
			<-again
			for range laps {
				if !turn(c) {
					return
				}
				served.Add(1)
			}
		})
	}
	clitest.Eventually(t, promptly, "waiters never queued", func() bool { return inLine(t, rdb, holder.Key()) == n })
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	// Then the laps measured: all queued behind the holder again, and
	// each waiter back in line right after its turn.
	holder = mustAcquire(t, holders, name, time.Minute)
	close(again)
	clitest.Eventually(t, promptly, "waiters never queued again", func() bool { return inLine(t, rdb, holder.Key()) == n })
	resetStats(t, rdb)
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	rest.Wait()
	calls := commandCallsExceptSetup(t, rdb)
	delete(calls, "llen") // the test's own
	sum := 0
	for _, k := range calls {
		sum += k
	}
	per := float64(sum) / float64(served.Load())
	t.Logf("%d hand-overs to %d Clients: %.2f commands each; calls %v", served.Load(), n, per, calls)
	if served.Load() != n*laps {
		t.Fatalf("%d hand-overs, want %d", served.Load(), n*laps)
	}
	// The hand-over's 6, the join's RPUSH and its liveness key, and a
	// check now and then.
	if per > 10 || calls["lpos"] > n {
		t.Errorf("%.2f commands per hand-over, %d LPOS (checks of the line) in %d hand-overs: want at most 10, and far waiters not checking",
			per, calls["lpos"], n*laps)
	}
}

// A waiter far back has no liveness key left when its turn comes after
// more than aliveFor (it refreshes it only near the head), but its far key
// says it was alive lately: the release hands it the lock for aliveFor
// only, and the waiter renews it to its TTL before its Acquire returns.
// List shows neither key as a lock.
func TestFarWaiterNotSeenLatelyIsHandedTheLockAndRenewsIt(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	holders := waitClient(t, srv)
	holder := mustAcquire(t, holders, "far-turn", time.Minute)
	key := holder.Key()
	var ahead []<-chan outcome
	for i := range nearLine {
		ahead = append(ahead, acquireAsync(ctx, waitClient(t, srv), "far-turn", time.Minute))
		clitest.Eventually(t, promptly, "waiter never queued", func() bool { return inLine(t, rdb, key) == int64(i+1) })
	}
	got := acquireAsync(ctx, waitClient(t, srv), "far-turn", time.Minute)
	clitest.Eventually(t, promptly, "the far waiter never queued", func() bool { return inLine(t, rdb, key) == nearLine+1 })
	cid := cidAt(t, rdb, key, nearLine)
	alive, far := lineBaseOf(key)+":c:"+cid, lineBaseOf(key)+":f:"+cid
	clitest.Eventually(t, aliveFor+promptly, "the far waiter's liveness key never expired, or its far key was never written", func() bool {
		return rdb.Exists(ctx, alive).Val() == 0 && rdb.Exists(ctx, far).Val() == 1
	})
	list, err := holders.List(ctx, &withlock.ListOptions{Scan: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Key != key {
		t.Errorf("List shows %d locks (%+v), want only %s", len(list), list, key)
	}

	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ch := range ahead {
		if err := served(t, ch, "a waiter ahead").Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l := served(t, got, "the far waiter")
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= aliveFor {
		t.Errorf("the far waiter's lock has %s left, want it renewed to its TTL of 1m", ttl)
	}
	if v := rdb.Get(ctx, key).Val(); v != l.Token() {
		t.Errorf("the key holds %q, want the far waiter's token", v)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A waiter that froze while far back in line (a real with-lock process,
// stopped) has no liveness key when its turn comes, but a far key: it is
// handed the lock for aliveFor only, cannot renew it, and the waiter
// behind it, told that it is next, takes the lock when that expires. The
// frozen waiter holds up the line for aliveFor at most, not for its TTL.
func TestFrozenFarWaiterHoldsUpTheLineForAliveForAtMost(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	holder := mustAcquire(t, waitClient(t, srv), "far-frozen", time.Minute)
	key := holder.Key()
	var ahead []<-chan outcome
	for i := range nearLine {
		ahead = append(ahead, acquireAsync(ctx, waitClient(t, srv), "far-frozen", time.Minute))
		clitest.Eventually(t, promptly, "waiter never queued", func() bool { return inLine(t, rdb, key) == int64(i+1) })
	}
	frozen := clitest.Start(t, nil, "--redis", srv.URL(), "--wait", "5m", "--ttl", "5m", "far-frozen", "true")
	clitest.Eventually(t, promptly, "the with-lock process never queued", func() bool { return inLine(t, rdb, key) == nearLine+1 })
	cid := cidAt(t, rdb, key, nearLine)
	got := acquireAsync(ctx, waitClient(t, srv), "far-frozen", time.Minute)
	clitest.Eventually(t, promptly, "the waiter behind never queued", func() bool { return inLine(t, rdb, key) == nearLine+2 })
	alive, far := lineBaseOf(key)+":c:"+cid, lineBaseOf(key)+":f:"+cid
	clitest.Eventually(t, promptly, "the far process never wrote its far key", func() bool { return rdb.Exists(ctx, far).Val() == 1 })
	frozen.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { _ = frozen.Cmd.Process.Signal(syscall.SIGCONT) })
	clitest.Eventually(t, aliveFor+promptly, "the frozen process's liveness key never expired", func() bool { return rdb.Exists(ctx, alive).Val() == 0 })

	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ch := range ahead {
		if err := served(t, ch, "a waiter ahead").Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	reached := time.Now() // the frozen process's turn
	l := served(t, got, "the waiter behind the frozen one")
	held := time.Since(reached)
	t.Logf("the waiter behind was served %s after the frozen one's turn", held.Round(time.Millisecond))
	// aliveFor, then a check at once; a second more for a loaded machine.
	if held > aliveFor+time.Second {
		t.Errorf("the frozen waiter held up the line for %s, want at most %s", held, aliveFor+time.Second)
	}
	if v := rdb.Get(ctx, key).Val(); v != l.Token() {
		t.Errorf("the key holds %q, want the live waiter's token", v)
	}
	_ = l.Release(ctx)
	if n := inLine(t, rdb, key); n != 0 {
		t.Errorf("%d entries left in line, want none", n)
	}
}
