package withlock_test

// The fair line: waiters of every Client served in arrival order, each
// hand-over with the waiter's TTL, Break handing the lock to the line's
// head at once, on one Redis, a Cluster and through Sentinel.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
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
