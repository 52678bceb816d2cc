package withlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// nearLine is how close to the head of the line a waiter keeps refreshing
// its liveness key and checking the line (wait_fair_far.go).
const nearLine = 8

// Waiters far back in a long line neither refresh their liveness key every
// second nor check the line every poll: with 24 Clients whose turns come a
// second apart, a hand-over costs what it costs in a short line, the
// release's script and the next waiter's join. Were every waiter to keep
// that upkeep, each would check the line (LPOS of the whole line) three
// times a wait here, its poll being 300ms.
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
