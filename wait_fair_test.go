package withlock_test

// The fair line: waiters of every Client served in arrival order, each
// hand-over with the waiter's TTL, Break handing the lock to the line's
// head at once, on one Redis, a Cluster and through Sentinel; further down,
// its dead, frozen and far waiters, and its faults.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/redistest"
)

// Waiters of different Clients (processes, machines) are served in the
// order they joined the line.
func TestLineServesClientsInArrivalOrder(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	holder := mustAcquire(t, withlock.New(srv.Client(), nil), "fifo", time.Minute)
	clients := make([]*withlock.Client, 8)
	for i := range clients {
		clients[i] = waitClient(t, srv)
	}
	served := joinInOrder(t, rdb, clients, "fifo")
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if order, want := served(), []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(order, want) {
		t.Errorf("acquired in order %v, want %v", order, want)
	}
}

// joinInOrder starts a waiting Acquire of name in each of clients, the
// next only once the one before is queued in the line, each releasing as
// soon as it is served. served waits for them all and returns the order
// in which they were served, by index in clients.
func joinInOrder(t *testing.T, rdb *redis.Client, clients []*withlock.Client, name string) (served func() []int) {
	t.Helper()
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			l, err := acquireBounded(c, name, time.Minute, nil)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := l.Release(context.Background()); err != nil {
				t.Error(err)
			}
		})
		clitest.Eventually(t, promptly, "waiter never joined the line", func() bool { return inLine(t, rdb, "lock:"+name) == int64(i+1) })
	}
	return func() []int {
		wg.Wait()
		return order
	}
}

// A handed-over acquisition costs the same number of Redis commands with 4
// or 16 waiting Clients, and at most 8: only the head of the line is woken.
//
// Not parallel: a hand-over delayed by other tests' load lets waiters'
// polls and retries in, which the count of commands would take for cost.
func TestLineHandOffCommandsDoNotGrowWithWaiters(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	per := map[int]float64{}
	for _, n := range []int{4, 16} {
		name := fmt.Sprint("cost-", n)
		clients := make([]*withlock.Client, n)
		for i := range clients {
			clients[i] = waitClient(t, srv)
			// Warm up: each Client's room and subscription exist.
			if err := mustAcquire(t, clients[i], name, time.Minute).Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		holder := mustAcquire(t, clients[0], name, time.Minute)
		var wg sync.WaitGroup
		var total atomic.Int64
		start := make(chan struct{})
		for _, c := range clients[1:] {
			wg.Go(func() {
				<-start
				for range 20 {
					l, err := acquireBounded(c, name, time.Minute, nil)
					if err != nil {
						t.Error(err)
						return
					}
					total.Add(1)
					time.Sleep(200 * time.Microsecond)
					if err := l.Release(context.Background()); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		// Steady state: everyone queued before the first release.
		resetStats(t, rdb)
		close(start)
		clitest.Eventually(t, promptly, "waiters never queued", func() bool { return inLine(t, rdb, holder.Key()) == int64(n-1) })
		resetStats(t, rdb)
		if err := holder.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		sum := 0
		for cmd, k := range commandCallsExceptSetup(t, rdb) {
			if cmd != "llen" { // our polling above
				sum += k
			}
		}
		per[n] = float64(sum) / float64(total.Load())
		t.Logf("%d Clients: %.2f commands per acquisition", n, per[n])
	}
	if per[4] > 8 || per[16] > 8 || per[16] > per[4]+0.5 {
		t.Errorf("commands per acquisition %v, want at most 8, not growing with waiters", per)
	}
}

// Locks pass back and forth between two Clients, each in turn waiting
// while the other releases at a moment spread over its SET, SSUBSCRIBE and
// RPUSH: no hand-over is lost (the waiters poll only once a minute).
func TestLineNoLostHandOffBetweenClients(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, linger := range []time.Duration{time.Microsecond, time.Minute} {
		t.Run(fmt.Sprint("linger ", linger), func(t *testing.T) {
			cs := [2]*withlock.Client{waitClient(t, srv), waitClient(t, srv)}
			for _, c := range cs {
				withlock.SetWaitTimings(c, longPoll, linger)
			}
			l := mustAcquire(t, cs[0], "pingpong", time.Minute)
			for i := range 150 {
				got := acquireAsync(context.Background(), cs[(i+1)%2], "pingpong", time.Minute)
				time.Sleep(time.Duration(i%30) * 50 * time.Microsecond)
				if err := l.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
				o := wait(t, got, promptly, fmt.Sprintf("iteration %d", i))
				if o.err != nil {
					t.Fatalf("iteration %d: %v", i, o.err)
				}
				l = o.lock
			}
			if err := l.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// On Cluster the line, the liveness keys and the wake channel live in the
// lock key's slot: a waiter on another Client is handed the lock.
func TestLineOnCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	holders := withlock.New(cl.Client(), nil)
	waiter := withlock.New(cl.Client(), nil)
	withlock.SetWaitTimings(waiter, longPoll, time.Minute)
	for _, name := range []string{"c-line", "{tag}c-line"} {
		holder := mustAcquire(t, holders, name, time.Minute)
		got := acquireAsync(context.Background(), waiter, name, time.Minute)
		node := cl.NodeFor(holder.Key())
		clitest.Eventually(t, promptly, "waiter never in line", func() bool {
			return inLine(t, node.Client(), holder.Key()) == 1
		})
		if err := holder.Release(context.Background()); err != nil {
			t.Fatalf("%s: Release: %v", name, err)
		}
		o := wait(t, got, promptly, name)
		if o.err != nil {
			t.Fatalf("%s: %v", name, o.err)
		}
		if v := node.Client().Get(context.Background(), holder.Key()).Val(); v != o.lock.Token() {
			t.Errorf("%s: key holds %q, want the waiter's token", name, v)
		}
		if err := o.lock.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// Through Sentinel the line lives on the master: a waiter on another
// Client is handed the lock, or a semaphore's slot, by the release.
func TestLineThroughSentinel(t *testing.T) {
	t.Parallel()
	g := redistest.StartSentinels(t)
	admin := g.Client(nil)
	for _, slots := range []int{1, 2} {
		t.Run(fmt.Sprint(slots, " slots"), func(t *testing.T) {
			name := fmt.Sprint("s-line-", slots)
			held := fillSlots(t, semaphore(t, g.Client(nil), slots), name, slots)
			waiter := semaphore(t, g.Client(nil), slots)
			withlock.SetWaitTimings(waiter, longPoll, time.Minute)
			got := acquireAsync(context.Background(), waiter, name, time.Minute)
			clitest.Eventually(t, promptly, "waiter never in line", func() bool {
				return inLine(t, admin, "lock:"+name) == 1
			})
			if err := held[0].Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			o := wait(t, got, promptly, "waiter")
			if o.err != nil {
				t.Fatal(o.err)
			}
			key := "lock:" + name
			if slots > 1 {
				key = fmt.Sprintf("{lock:%s}:s:%d", name, o.lock.Slot())
			}
			if v := admin.Get(context.Background(), key).Val(); v != o.lock.Token() || o.lock.Slot() != held[0].Slot() {
				t.Errorf("%s holds %q, want the waiter's token in the freed slot %d (got slot %d)", key, v, held[0].Slot(), o.lock.Slot())
			}
			for _, l := range append(held[1:], o.lock) {
				if err := l.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A lock handed to a waiter in the fair line lives for the waiter's TTL,
// not the releaser's nor the line's liveness window: whether a release
// hands it over (to a waiter of another Client or of its own) or the
// holder's expiry does, for a plain lock and a semaphore's slot.
func TestLineHandsOverWithTheWaitersTTL(t *testing.T) {
	t.Parallel()
	const waiterTTL = 45 * time.Second
	srv := redistest.Start(t)
	rdb := srv.Client()
	plainClient := func() *withlock.Client { return waitClient(t, srv) }
	semClient := func() *withlock.Client {
		c := semaphore(t, rdb, 2)
		withlock.SetWaitTimings(c, longPoll, 100*time.Millisecond)
		return c
	}
	for _, tc := range []struct {
		name      string
		client    func() *withlock.Client
		slots     int           // held before the waiter queues
		holderTTL time.Duration // of the holder the waiter gets its lock from
		release   bool          // whether that holder releases, or expires
		same      bool          // whether the waiter is of the holders' Client
		lock      string        // the name, "" for the subtest's
	}{
		{"PlainReleased", plainClient, 1, time.Minute, true, false, ""},
		{"PlainReleasedWithinClient", plainClient, 1, time.Minute, true, true, ""},
		// A name with '}' and no hash tag has no line: a waiter of the same
		// Client is handed the lock by the release's pipelined SET.
		{"PlainReleasedWithinClientWithoutLine", plainClient, 1, time.Minute, true, true, "no}line"},
		{"PlainExpired", plainClient, 1, 500 * time.Millisecond, false, false, ""},
		{"SlotReleased", semClient, 2, time.Minute, true, false, ""},
		{"SlotReleasedWithinClient", semClient, 2, time.Minute, true, true, ""},
		{"SlotExpired", semClient, 2, 500 * time.Millisecond, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			name, lined := tc.lock, tc.lock == ""
			if lined {
				name = tc.name
			}
			holders := tc.client()
			var last *withlock.Lock
			for i := range tc.slots {
				ttl := time.Minute
				if i == tc.slots-1 {
					ttl = tc.holderTTL
				}
				last = mustAcquire(t, holders, name, ttl)
			}
			waiter := holders
			if !tc.same {
				waiter = tc.client()
			}
			actx, cancel := context.WithTimeout(ctx, promptly)
			defer cancel()
			got := acquireAsync(actx, waiter, name, waiterTTL)
			clitest.Eventually(t, promptly, "the waiter never joined the line", func() bool {
				return withlock.Waiting(waiter, name) == 1 && (!lined || inLine(t, rdb, last.Key()) == 1)
			})
			if tc.release {
				if err := last.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			o := wait(t, got, promptly, "waiter")
			if o.err != nil {
				t.Fatalf("the waiter: %v", o.err)
			}
			key := o.lock.Key()
			if o.lock.Slot() > 0 {
				key = slotKeyOf(key, o.lock.Slot())
			}
			if v, ttl := rdb.Get(ctx, key).Val(), rdb.PTTL(ctx, key).Val(); v != o.lock.Token() || ttl <= waiterTTL-10*time.Second || ttl > waiterTTL {
				t.Errorf("the lock handed to the waiter: %s holds its token %v, PTTL %s; want the waiter's TTL, %s", key, v == o.lock.Token(), ttl, waiterTTL)
			}
			if err := o.lock.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Break hands a plain lock to the head of the fair line in its own script,
// as a release does: the waiter, whose checks and poll are a minute apart,
// holds the lock as soon as the hand-over's message arrives, well under the
// second a check would take.
func TestBreakHandsTheLockToTheLineHeadAtOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	holders := withlock.New(srv.Client(), nil)
	holder := mustAcquire(t, holders, "break-line", 5*time.Minute)
	c := waitClient(t, srv) // checks and polls once a minute
	ctx, cancel := context.WithTimeout(context.Background(), servedWithin)
	defer cancel()
	got := acquireAsync(ctx, c, "break-line", time.Minute)
	clitest.Eventually(t, promptly, "the waiter never joined the line", func() bool { return inLine(t, rdb, holder.Key()) == 1 })
	broke := time.Now()
	if _, err := holders.Break(ctx, "break-line"); err != nil {
		t.Fatal(err)
	}
	// One message's delivery; a check would come a minute later. The
	// bound leaves a loaded machine half a second.
	const bound = 500 * time.Millisecond
	o := wait(t, got, bound, "the line's head after Break (not handed over by it?)")
	if o.err != nil {
		t.Fatalf("waiter after Break: %v", o.err)
	}
	t.Logf("the line's head took the lock %s after Break", o.at.Sub(broke).Round(time.Millisecond))
	if v := rdb.Get(ctx, holder.Key()).Val(); v != o.lock.Token() {
		t.Errorf("the key holds %q, want the waiter's token", v)
	}
	_ = o.lock.Release(ctx)
}

// The fair line's dead, frozen and far waiters: skipped at hand-over, kept
// alive, and never holding the line up past AliveFor.

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

// gatedSubscriptionDialer dials like net.Dialer, except that a dial made by
// go-redis for a Pub/Sub connection (its caller's stack runs through
// (*PubSub)) reports on dialing and then waits until open is closed: a
// subscription connection slow to be accepted, with every other
// connection of the Client prompt.
func gatedSubscriptionDialer(open <-chan struct{}, dialing chan<- struct{}) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dialledByPubSub() {
			select {
			case dialing <- struct{}{}:
			default:
			}
			select {
			case <-open:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
}

func dialledByPubSub() bool {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "go-redis/v9.(*PubSub)") {
			return true
		}
		if !more {
			return false
		}
	}
}

// While a waiter's subscription connection is slow to be dialled, the
// rest of its Client goes on: a Release of another lock is not held up
// behind the dial. The waiter itself still joins the line only once its
// subscription is confirmed, and then gets the lock at the release.
func TestSlowSubscriptionDialStallsNoRelease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts *withlock.LockOptions
	}{
		{"in the line", nil},
		{"fenced", &withlock.LockOptions{Fence: true}}, // waits outside the line, on the key's channel
	} {
		t.Run(tc.name, func(t *testing.T) { testSlowSubscriptionDial(t, tc.opts) })
	}
}

func testSlowSubscriptionDial(t *testing.T, opts *withlock.LockOptions) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	open, dialing := make(chan struct{}), make(chan struct{}, 1)
	var once sync.Once
	openGate := func() { once.Do(func() { close(open) }) }
	t.Cleanup(openGate)
	c := withlock.New(srv.ClientWith(&redis.Options{
		Dialer:      gatedSubscriptionDialer(open, dialing),
		DialTimeout: time.Minute, // the gate, not go-redis, decides when the dial ends
	}), nil)
	withlock.SetWaitTimings(c, longPoll, 100*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	holder := mustAcquire(t, c, "slow-sub", time.Minute)
	other := mustAcquire(t, c, "slow-sub-other", time.Minute)
	waiter := make(chan outcome, 1)
	go func() {
		l, err := c.Acquire(ctx, "slow-sub", time.Minute, opts)
		waiter <- outcome{l, err, time.Now()}
	}()
	select {
	case <-dialing:
	case <-time.After(promptly):
		t.Fatalf("the waiter dialled no subscription connection within %s", promptly)
	}

	released := make(chan error, 1)
	start := time.Now()
	go func() { released <- other.Release(ctx) }()
	const bound = 5 * time.Second // a Release takes milliseconds; the dial hangs until the gate opens
	select {
	case err := <-released:
		if err != nil {
			t.Fatalf("Release of another lock while the subscription dials: %v", err)
		}
		t.Logf("Release of another lock took %s while the subscription dialled", time.Since(start).Round(time.Millisecond))
	case <-time.After(bound):
		openGate()
		t.Fatalf("Release of another lock of the Client blocked for %s behind a waiter's slow subscription dial (a network call under the line's mutex)", bound)
	}
	if opts == nil {
		if n := inLine(t, rdb, holder.Key()); n != 0 {
			t.Fatalf("%d entries in the line before the waiter's subscription is confirmed: a release would skip it as dead", n)
		}
	}

	openGate()
	if opts == nil {
		clitest.Eventually(t, promptly, "the waiter never joined the line once its subscription was dialled", func() bool {
			return inLine(t, rdb, holder.Key()) == 1
		})
	} else {
		clitest.Eventually(t, promptly, "the waiter never subscribed to the key's channel once its connection was dialled", func() bool {
			return subscribers(t, rdb, holder.Key()) == 1
		})
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	o := wait(t, waiter, promptly, "waiter after the release")
	if o.err != nil {
		t.Fatalf("waiter: %v", o.err)
	}
	if got := rdb.Get(ctx, holder.Key()).Val(); got != o.lock.Token() {
		t.Errorf("the key holds %q, want the waiter's token", got)
	}
	_ = o.lock.Release(ctx)
}

// stallAfterExtend wraps a Client's connections: when one writes the
// extend script, it first calls before (with Redis still answering), lets
// the script through, and pauses Redis (SIGSTOP) the moment the reply has
// been read, then closes stopped. So the Client has its answer and Redis
// stalls right at the next step, deterministically.
type stallAfterExtend struct {
	pid     int
	before  func()
	once    sync.Once
	stopped chan struct{}
}

func (s *stallAfterExtend) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: conn, s: s}, nil
}

type stallConn struct {
	net.Conn
	s     *stallAfterExtend
	armed bool // this connection sent the extend: stop Redis at its reply
}

func (c *stallConn) Write(b []byte) (int, error) {
	// The renewal's script, or the first renewal's (with the index).
	if w := string(b); strings.Contains(w, withlock.ExtendScript()) || strings.Contains(w, withlock.ExtendIndexScript()) {
		c.s.once.Do(func() {
			c.s.before()
			c.armed = true
		})
	}
	return c.Conn.Write(b)
}

func (c *stallConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.armed && n > 0 {
		c.armed = false
		_ = syscall.Kill(c.s.pid, syscall.SIGSTOP)
		close(c.s.stopped)
	}
	return n, err
}

// A waiter handed the lock so late that it expired before it could renew
// it queues again. If Redis stalls right then, before the new
// subscription is confirmed, the waiter still gives up at its deadline or
// cancellation, and leaves the line: no entry of it remains in its Client,
// and, once Redis is back, none in Redis and no subscription left open.
func TestRequeuedWaiterHonoursContextWhenRedisStalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		cancel bool // cancel the Acquire; otherwise its deadline passes
	}{
		{"deadline", false},
		{"cancellation", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			rdb := srv.Client()
			name := "requeue-" + tc.name
			key := "lock:" + name
			channels := keys.Channel(key, "*") // the waiter's subscription
			subscribed := func() bool {
				chs, err := rdb.PubSubShardChannels(context.Background(), channels).Result()
				return err == nil && len(chs) > 0
			}
			stall := &stallAfterExtend{pid: srv.Pid(), stopped: make(chan struct{})}
			stall.before = func() {
				// The waiter's room lingered out after the hand-over, so
				// the re-queue subscribes anew; and the handed key is
				// gone, so the extend fails as for an expired lock.
				for end := time.Now().Add(promptly); subscribed(); time.Sleep(5 * time.Millisecond) {
					if time.Now().After(end) {
						t.Errorf("the waiter's subscription still open %s after the hand-over", promptly)
						break
					}
				}
				rdb.Del(context.Background(), key)
			}
			t.Cleanup(func() { _ = syscall.Kill(srv.Pid(), syscall.SIGCONT) })
			c := withlock.New(srv.ClientWith(&redis.Options{Dialer: stall.dial}), nil)
			withlock.SetWaitTimings(c, longPoll, 50*time.Millisecond)
			holder := mustAcquire(t, withlock.New(srv.Client(), nil), name, time.Minute)

			const deadline = 10 * time.Second // the steps before the stall take well under a second
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			if tc.cancel {
				ctx, cancel = context.WithCancel(context.Background())
				defer cancel()
			}
			const ttl = 2 * time.Second
			start := time.Now()
			waiter := acquireAsync(ctx, c, name, ttl)
			clitest.Eventually(t, promptly, "the waiter never joined the line", func() bool { return inLine(t, rdb, key) == 1 })
			// A hand-over more than ttl/8 after the waiter was last seen in
			// line makes it renew before it returns.
			time.Sleep(ttl / 4)
			if err := holder.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			select {
			case <-stall.stopped:
			case o := <-waiter:
				t.Fatalf("the waiter returned (%v) without renewing the late hand-over", o.err)
			case <-time.After(promptly):
				t.Fatalf("the waiter sent no renewal within %s of the hand-over", promptly)
			}
			stoppedAt := time.Now()
			clitest.Eventually(t, promptly, "the waiter did not queue again after its renewal failed", func() bool {
				return withlock.Waiting(c, name) == 1
			})
			if tc.cancel {
				cancel()
			}
			end := start.Add(deadline)
			if tc.cancel {
				end = time.Now()
			}
			const bound = 2 * time.Second // for a loaded machine; giving up sends nothing to Redis
			var o outcome
			select {
			case o = <-waiter:
			case <-time.After(time.Until(end) + bound):
				t.Fatalf("Acquire did not return within %s of its %s while Redis stalled at its re-queue (Redis stopped %s after the start)",
					bound, tc.name, stoppedAt.Sub(start).Round(time.Millisecond))
			}
			t.Logf("Acquire returned %s after its %s: %v", o.at.Sub(end).Round(time.Millisecond), tc.name, o.err)
			want := context.DeadlineExceeded
			if tc.cancel {
				want = context.Canceled
			}
			if !errors.Is(o.err, want) || !errors.Is(o.err, withlock.ErrNotObtained) {
				t.Errorf("Acquire = %v, want ErrNotObtained and %v", o.err, want)
			}
			if n := withlock.Waiting(c, name); n != 0 {
				t.Errorf("%d waiters of the Client still in line after the Acquire gave up", n)
			}

			_ = syscall.Kill(srv.Pid(), syscall.SIGCONT)
			clitest.Eventually(t, promptly, "the given-up waiter's subscription still open after Redis resumed", func() bool { return !subscribed() })
			if n := inLine(t, rdb, key); n != 0 {
				t.Errorf("%d entries in the line after the waiter gave up, want none", n)
			}
			if n := rdb.Exists(context.Background(), key).Val(); n != 0 {
				t.Errorf("the lock is held (%q) after the only waiter gave up", rdb.Get(context.Background(), key).Val())
			}
		})
	}
}
