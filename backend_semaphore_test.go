package withlock_test

// The semaphore (NewSemaphore): N holders per name, each on its slot; its
// waiters in the fair line; and its marker, Status, Break and busy error.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// At no moment do more than N Clients hold a semaphore of N slots, however
// many wait, whether they wait in the fair line or, fenced, for release
// messages; and all N slots are used.
func TestSlotsNeverExceedN(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const slots, clients = 3, 16
	for _, tc := range []struct {
		name string
		opts *withlock.LockOptions
	}{
		{"in the line", nil},
		{"fenced", &withlock.LockOptions{Fence: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var holding, most, total atomic.Int64
			stop := time.Now().Add(time.Second)
			var wg sync.WaitGroup
			for range clients {
				c := semaphore(t, srv.Client(), slots)
				wg.Go(func() {
					for time.Now().Before(stop) {
						ctx, cancel := context.WithTimeout(context.Background(), promptly)
						l, err := c.Acquire(ctx, "sem", time.Minute, tc.opts)
						cancel()
						if err != nil {
							t.Error(err)
							return
						}
						n := holding.Add(1)
						total.Add(1)
						if n > slots {
							t.Errorf("%d holders at once, want at most %d", n, slots)
						}
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						if l.Slot() < 1 || l.Slot() > slots {
							t.Errorf("Slot() = %d, want 1..%d", l.Slot(), slots)
						}
						time.Sleep(time.Millisecond)
						holding.Add(-1)
						if err := l.Release(context.Background()); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			t.Logf("%d acquisitions, at most %d holders at once", total.Load(), most.Load())
			if most.Load() != slots {
				t.Errorf("at most %d holders at once, want all %d slots used", most.Load(), slots)
			}
		})
	}
}

// KeepAlive (here through Do) renews a slot and the marker with it: a run
// longer than its TTL keeps its slot, and the name stays a semaphore.
//
// Not parallel: it holds a bound in time, kept clear of the parallel
// tests' load.
func TestSlotsKeepAliveRenewsSlotAndMarker(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	// A second's TTL: renewals every 333ms with the local deadline 800ms
	// after each, which a loaded machine keeps to.
	err := semaphore(t, rdb, 2).Do(ctx, "ka", time.Second, nil, func(ctx context.Context, l *withlock.Lock) error {
		select {
		case <-time.After(2 * time.Second): // the run's work: two TTLs
		case <-ctx.Done():
			return ctx.Err()
		}
		if _, err := withlock.New(rdb, nil).TryAcquire(ctx, "ka", time.Minute, nil); !errors.Is(err, withlock.ErrSlotsMismatch) {
			t.Errorf("a plain TryAcquire during the run: %v, want ErrSlotsMismatch", err)
		}
		// Both in one MULTI: a renewal between two separate reads would
		// show a fresh slot beside a marker read a moment before it.
		var markCmd, slotCmd *redis.DurationCmd
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			markCmd = p.PTTL(ctx, l.Key())
			slotCmd = p.PTTL(ctx, slotKeyOf(l.Key(), l.Slot()))
			return nil
		}); err != nil {
			return fmt.Errorf("reading the TTLs: %w", err)
		}
		if mark, slot := markCmd.Val(), slotCmd.Val(); slot <= 0 || mark < slot {
			t.Errorf("marker PTTL %s, slot PTTL %s: want the slot renewed and the marker no shorter", mark, slot)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if rdb.Exists(ctx, "lock:ka").Val() != 0 {
		t.Error("the marker outlived the run")
	}
}

// A name in use with another number of slots (a plain lock is one) is
// refused at once by TryAcquire and Acquire, naming both numbers.
func TestSlotsMismatchRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tests := []struct {
		have, want int
		says       []string
	}{
		{3, 5, []string{"in use with 3 slots, not 5"}},
		{1, 3, []string{"held as a plain lock", "a semaphore of 3 slots"}},
		{3, 1, []string{"in use with 3 slots", "not a plain lock"}},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("mismatch-%d-%d", tc.have, tc.want)
		t.Run(name, func(t *testing.T) {
			l := mustAcquire(t, semaphore(t, srv.Client(), tc.have), name, time.Minute)
			c := semaphore(t, srv.Client(), tc.want)
			for _, op := range []string{"TryAcquire", "Acquire"} {
				ctx, cancel := context.WithTimeout(context.Background(), promptly)
				start := time.Now()
				var err error
				if op == "TryAcquire" {
					_, err = c.TryAcquire(ctx, name, time.Minute, nil)
				} else {
					_, err = c.Acquire(ctx, name, time.Minute, nil)
				}
				cancel()
				var se *withlock.SlotsError
				if !errors.Is(err, withlock.ErrSlotsMismatch) || !errors.As(err, &se) {
					t.Fatalf("%s = %v, want a *SlotsError", op, err)
				}
				if se.Have != tc.have || se.Want != tc.want || se.Key != l.Key() {
					t.Errorf("%s: %+v, want Key %s, Have %d, Want %d", op, se, l.Key(), tc.have, tc.want)
				}
				for _, s := range tc.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("%s: %q does not say %q", op, err, s)
					}
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("%s took %s, want an answer at once", op, d)
				}
			}
			if err := l.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// NewSemaphore with one slot is the plain lock: the same commands on the
// wire, tokens aside.
func TestSlotsOneIsThePlainLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	one, err := withlock.NewSemaphore(srv.Client(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := withlock.NewSemaphore(srv.Client(), 0, nil); err == nil {
		t.Error("NewSemaphore with 0 slots succeeded")
	}
	var sent [2][]string
	for i, c := range []*withlock.Client{withlock.New(srv.Client(), nil), one} {
		ctx := context.Background()
		mon := srv.Monitor()
		l, err := c.TryAcquire(ctx, "one", time.Minute, &withlock.LockOptions{Fence: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Extend(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := l.TTL(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if l.Slot() != 0 {
			t.Errorf("Slot() = %d, want 0 for a plain lock", l.Slot())
		}
		for _, cmd := range withoutHandshake(mon.Commands()) {
			line := strings.ReplaceAll(strings.Join(cmd.Args, " "), l.Token(), "TOKEN")
			sent[i] = append(sent[i], strings.ReplaceAll(line, fmt.Sprint(l.Fence()), "FENCE"))
		}
	}
	if !slices.Equal(sent[0], sent[1]) || len(sent[0]) == 0 {
		t.Errorf("NewSemaphore(1) sent\n%q\nNew sent\n%q", sent[1], sent[0])
	}
}

// Every fenced acquisition of a semaphore draws a number greater than all
// earlier ones of the name, whichever slot it gets, from the name's one
// counter.
func TestSlotsFenceStrictlyIncreases(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	c := semaphore(t, rdb, 3)
	ctx := context.Background()
	fenced := &withlock.LockOptions{Fence: true}
	var last int64
	for round := range 5 {
		var held []*withlock.Lock
		for range 3 {
			l, err := c.TryAcquire(ctx, "fenced", time.Minute, fenced)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if l.Fence() <= last {
				t.Errorf("round %d slot %d: fence %d, not above %d", round, l.Slot(), l.Fence(), last)
			}
			last = l.Fence()
			held = append(held, l)
		}
		if got, _ := rdb.Get(ctx, withlock.FenceKey(c, "fenced")).Int64(); got != last {
			t.Errorf("counter %d, want the last fence %d", got, last)
		}
		if _, err := c.TryAcquire(ctx, "fenced", time.Minute, fenced); !errors.Is(err, withlock.ErrNotObtained) {
			t.Fatalf("a fourth holder: %v, want ErrNotObtained", err)
		}
		for _, l := range held {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, _ := rdb.Get(ctx, withlock.FenceKey(c, "fenced")).Int64(); got != last {
		t.Errorf("a refused acquisition drew a number: counter %d, want %d", got, last)
	}
}

// A slot holder that never releases frees its slot when its TTL runs out,
// and a waiter is woken then and takes it.
func TestSlotHolderCrashFreesSlotByTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := semaphore(t, srv.Client(), 2)
	stays := mustAcquire(t, c, "crash", time.Minute)
	crashed := mustAcquire(t, c, "crash", 300*time.Millisecond)
	expires := crashed.Acquired().Add(300 * time.Millisecond)
	waiter := semaphore(t, srv.Client(), 2)
	withlock.SetWaitTimings(waiter, longPoll, time.Minute)
	o := wait(t, acquireAsync(context.Background(), waiter, "crash", time.Minute), promptly, "waiter")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.lock.Slot() != crashed.Slot() {
		t.Errorf("waiter got slot %d, want the crashed holder's %d", o.lock.Slot(), crashed.Slot())
	}
	if o.at.Before(expires) {
		t.Errorf("waiter got the slot %s before the crashed holder's TTL ran out", expires.Sub(o.at))
	}
	for _, l := range []*withlock.Lock{stays, o.lock} {
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// The marker lives as long as the longest slot: a slot extended beyond the
// others' TTL keeps the name a semaphore after they expired, and another
// number of slots is still refused.
func TestSlotsMarkerOutlivesEverySlot(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	sem := semaphore(t, rdb, 3)
	ctx := context.Background()
	long := mustAcquire(t, sem, "mark", 300*time.Millisecond)
	short := mustAcquire(t, sem, "mark", 300*time.Millisecond)
	if err := long.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitGone(t, rdb, slotKeyOf(short.Key(), short.Slot()))
	mark := rdb.PTTL(ctx, long.Key()).Val() // first: the slot's can only be shorter later
	slot := rdb.PTTL(ctx, slotKeyOf(long.Key(), long.Slot())).Val()
	if slot <= 0 || mark < slot {
		t.Errorf("marker PTTL %s, slot PTTL %s: want the marker to outlive the slot", mark, slot)
	}
	for _, c := range []*withlock.Client{withlock.New(rdb, nil), semaphore(t, rdb, 5)} {
		if _, err := c.TryAcquire(ctx, "mark", time.Minute, nil); !errors.Is(err, withlock.ErrSlotsMismatch) {
			t.Errorf("TryAcquire = %v, want ErrSlotsMismatch", err)
		}
	}
	if err := long.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, long.Key()).Val() != 0 {
		t.Error("the marker outlived the last release")
	}
}

// On Cluster a semaphore's keys live in its name's slot: acquisitions,
// status and release work whether or not the name has a hash tag.
func TestSlotsOnCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	sem := semaphore(t, cl.Client(), 2)
	ctx := context.Background()
	for _, name := range []string{"c-sem", "{tag}c-sem"} {
		a := mustAcquire(t, sem, name, time.Minute)
		b := mustAcquire(t, sem, name, time.Minute)
		node := cl.NodeFor(a.Key()).Client()
		for _, l := range []*withlock.Lock{a, b} {
			if v := node.Get(ctx, slotKeyOf(l.Key(), l.Slot())).Val(); v != l.Token() {
				t.Errorf("%s: slot %d holds %q on the name's node", name, l.Slot(), v)
			}
		}
		st, err := sem.Status(ctx, name)
		if err != nil || len(st.Holders) != 2 {
			t.Errorf("%s: Status = %+v, %v", name, st, err)
		}
		for _, l := range []*withlock.Lock{a, b} {
			if err := l.Release(ctx); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if node.Exists(ctx, a.Key()).Val() != 0 {
			t.Errorf("%s: marker left after the last release", name)
		}
	}
}

// A slot released early within its min-hold is kept until the min-hold
// passes, with the run's record stored in the same round trip; the marker
// then lives no longer than that slot, so the name is soon free for any
// number of slots.
func TestSlotsMinHoldKeepsSlotThenFreesName(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	ctx := context.Background()
	sem := semaphore(t, rdb, 2)
	l, err := sem.TryAcquire(ctx, "hold", time.Minute, &withlock.LockOptions{MinHold: 500 * time.Millisecond, Fence: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 3}, time.Minute)); err != nil {
		t.Fatal(err)
	}
	mark := rdb.PTTL(ctx, l.Key()).Val()
	slot := rdb.PTTL(ctx, slotKeyOf(l.Key(), l.Slot())).Val()
	if slot <= 0 || slot > 500*time.Millisecond || mark < slot || mark > 500*time.Millisecond {
		t.Errorf("after an early release: slot PTTL %s, marker PTTL %s; want both within the 500ms min-hold, the marker no shorter", slot, mark)
	}
	st, err := withlock.New(rdb, nil).Status(ctx, "hold")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || !st.KeptByMinHold || st.LastRun == nil || st.LastRun.ExitCode != 3 || st.LastRun.Fence != l.Fence() {
		t.Errorf("Status during the min-hold: %+v, want held by the finished run it recorded", st)
	}
	waitGone(t, rdb, l.Key())
	if err := mustAcquire(t, withlock.New(rdb, nil), "hold", time.Minute).Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// fillSlots takes all n slots of name with c and returns the holders.
func fillSlots(t *testing.T, c *withlock.Client, name string, n int) []*withlock.Lock {
	t.Helper()
	var held []*withlock.Lock
	for range n {
		held = append(held, mustAcquire(t, c, name, time.Minute))
	}
	return held
}

// Waiters of different Clients are handed a semaphore's slots in the order
// they joined the line.
func TestSlotsLineServesInArrivalOrder(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	held := fillSlots(t, semaphore(t, rdb, 3), "sfifo", 3)
	clients := make([]*withlock.Client, 8)
	for i := range clients {
		clients[i] = semaphore(t, srv.Client(), 3)
		withlock.SetWaitTimings(clients[i], longPoll, 100*time.Millisecond)
	}
	served := joinInOrder(t, rdb, clients, "sfifo")
	// One slot passes down the line; the other two stay held.
	if err := held[1].Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if order, want := served(), []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(order, want) {
		t.Errorf("acquired in order %v, want %v", order, want)
	}
	for _, l := range []*withlock.Lock{held[0], held[2]} {
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// A released slot skips a waiter whose process died (its Client's
// liveness key still there, but nobody subscribed) and goes to the next
// live one; a waiter that gives up leaves the line at once.
func TestSlotsLineSkipsDeadAndLetsGoAtOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	held := fillSlots(t, semaphore(t, rdb, 2), "sdead", 2)

	quitter := semaphore(t, srv.Client(), 2)
	qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := quitter.Acquire(qctx, "sdead", time.Minute, nil)
	cancel()
	if !errors.Is(err, withlock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline = %v, want ErrNotObtained and DeadlineExceeded", err)
	}
	if n := inLine(t, rdb, "lock:sdead"); n != 0 {
		t.Errorf("%d entries in line right after the waiter gave up, want 0", n)
	}

	// A killed process's entry: its liveness key lives on a little, its
	// connection, and so its subscription, is gone.
	const dead = "0123456789abcdef"
	rdb.Set(ctx, "{lock:sdead}:c:"+dead, 1, time.Minute)
	rdb.RPush(ctx, "{lock:sdead}:q", dead+"|60000|deadhost:1:0123456789abcdef0123456789abcdef")
	live := semaphore(t, srv.Client(), 2)
	withlock.SetWaitTimings(live, longPoll, time.Minute)
	got := acquireAsync(ctx, live, "sdead", time.Minute)
	clitest.Eventually(t, promptly, "waiter never joined the line", func() bool { return inLine(t, rdb, "lock:sdead") == 2 })
	if err := held[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	o := wait(t, got, promptly, "live waiter")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.lock.Slot() != held[0].Slot() {
		t.Errorf("live waiter got slot %d, want the released %d", o.lock.Slot(), held[0].Slot())
	}
	if v := rdb.Get(ctx, slotKeyOf("lock:sdead", o.lock.Slot())).Val(); v != o.lock.Token() {
		t.Errorf("slot holds %q, want the live waiter's token", v)
	}
	for _, l := range []*withlock.Lock{held[1], o.lock} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// With 16 Clients contending for 3 slots, a handed-over acquisition costs
// about 8 Redis commands, no more than with 8 Clients:
// only the head of the line is woken. That is the release script's 7
// (EVAL, GET, LPOP, EXISTS, SPUBLISH, SET, and the marker's PEXPIRE GT, one
// more than a plain lock) and the waiter's RPUSH to queue again; the last
// releases, which find the line empty, add a few hundredths.
//
// Not parallel: a hand-over delayed by other tests' load lets waiters'
// polls and retries in, which the count of commands would take for cost.
func TestSlotsLineHandOffCommandsStayFew(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	const slots = 3
	per := map[int]float64{}
	for _, n := range []int{8, 16} {
		name := fmt.Sprint("scost-", n)
		each := 300/(n-1) + 1 // about 300 acquisitions either way
		clients := make([]*withlock.Client, n)
		for i := range clients {
			clients[i] = semaphore(t, srv.Client(), slots)
			withlock.SetWaitTimings(clients[i], longPoll, time.Minute)
			// Warm up: each Client's room and subscription exist.
			if err := mustAcquire(t, clients[i], name, time.Minute).Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		held := fillSlots(t, clients[0], name, slots)
		var wg sync.WaitGroup
		var total, holding atomic.Int64
		for _, c := range clients[1:] {
			wg.Go(func() {
				for range each {
					l, err := acquireBounded(c, name, time.Minute, nil)
					if err != nil {
						t.Error(err)
						return
					}
					total.Add(1)
					if h := holding.Add(1); h > slots {
						t.Errorf("%d holders at once", h)
					}
					time.Sleep(200 * time.Microsecond)
					holding.Add(-1)
					if err := l.Release(context.Background()); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		clitest.Eventually(t, promptly, "waiters never queued", func() bool { return inLine(t, rdb, "lock:"+name) == int64(n-1) })
		resetStats(t, rdb)
		for _, l := range held {
			if err := l.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		sum := 0
		calls := commandCallsExceptSetup(t, rdb)
		for cmd, k := range calls {
			if cmd != "llen" { // our polling above
				sum += k
			}
		}
		per[n] = float64(sum) / float64(total.Load())
		t.Logf("%d Clients, %d slots: %.2f commands per acquisition (%v)", n, slots, per[n], calls)
	}
	// With 8 the line now and then runs empty, and a release that finds
	// nobody costs more: the bound is for the crowded line.
	if per[16] > 8.2 || per[16] > per[8]+0.5 {
		t.Errorf("commands per acquisition %v, want about 8, not growing with waiters", per)
	}
}

// A plain waiter in the fair line whose name becomes a semaphore (the lock
// broken, say, and a semaphore quicker than the line's check) is refused
// with a *SlotsError at its next check, rather than waiting for the
// semaphore.
func TestPlainWaiterRefusedWhenNameBecomesSemaphore(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	mustAcquire(t, withlock.New(rdb, nil), "mix", time.Minute)
	waiter := withlock.New(srv.Client(), nil)
	withlock.SetWaitTimings(waiter, 100*time.Millisecond, time.Minute)
	got := acquireAsync(ctx, waiter, "mix", time.Minute)
	clitest.Eventually(t, promptly, "waiter never joined the line", func() bool { return inLine(t, rdb, "lock:mix") == 1 })
	// The lock broken and a semaphore's slot taken at once, so that no
	// check of the waiter can come between.
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "lock:mix", "#slots=3", time.Minute)
		p.Set(ctx, slotKeyOf("lock:mix", 1), foreignToken, time.Minute)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	o := wait(t, got, promptly, "plain waiter")
	var se *withlock.SlotsError
	if !errors.As(o.err, &se) || se.Have != 3 || se.Want != 1 {
		t.Errorf("plain waiter: %v, %v; want a *SlotsError with Have 3, Want 1", o.lock, o.err)
	}
	if st, err := withlock.New(rdb, nil).Status(ctx, "mix"); err != nil || len(st.Holders) != 1 || st.Holders[0].ID != "otherhost:4242" {
		t.Errorf("Status after: %+v, %v; want the one semaphore holder", st, err)
	}
}

// Fenced waiters (outside the fair line) of one Client fill every slot
// that frees at once, not one slot per release message: after one of them
// takes a slot, the next tries at once.
func TestSlotsFencedWaitersOfOneClientFillFreeSlots(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	fillSlots(t, semaphore(t, rdb, 3), "sfill", 3)
	c := semaphore(t, srv.Client(), 3)
	withlock.SetWaitTimings(c, longPoll, time.Minute)
	var got []<-chan outcome
	for i := range 3 {
		ch := make(chan outcome, 1)
		go func() {
			l, err := c.Acquire(ctx, "sfill", time.Minute, &withlock.LockOptions{Fence: true})
			ch <- outcome{l, err, time.Now()}
		}()
		got = append(got, ch)
		clitest.Eventually(t, promptly, "waiter never waited", func() bool { return withlock.Waiting(c, "sfill") == i+1 })
	}
	// One message for three free slots.
	if _, err := withlock.New(rdb, nil).Break(ctx, "sfill"); err != nil {
		t.Fatal(err)
	}
	for i, ch := range got {
		if o := wait(t, ch, promptly, fmt.Sprint("waiter ", i)); o.err != nil {
			t.Fatal(o.err)
		}
	}
}

// A semaphore's marker, its Status, Break and busy error.

// Status lists every holder of a semaphore by slot, and List shows the name
// once, from a plain Client too; the slot keys are not locks.
func TestSlotsStatusListsEveryHolder(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	sem := semaphore(t, srv.Client(), 3)
	plain := withlock.New(srv.Client(), nil)
	ctx := context.Background()
	for _, name := range []string{"st", "{tag}st"} {
		a := mustAcquire(t, sem, name, time.Minute)
		b := mustAcquire(t, sem, name, 30*time.Second)
		for _, c := range []*withlock.Client{sem, plain} {
			st, err := c.Status(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if !st.Held || st.Slots != 3 || len(st.Holders) != 2 || st.Holder.ID != withlock.HolderOf(a.Token()) {
				t.Fatalf("%s: %+v, want held, 3 slots, 2 holders", name, st)
			}
			ttls := []time.Duration{time.Minute, 30 * time.Second}
			for i, l := range []*withlock.Lock{a, b} {
				h := st.Holders[i]
				if h.Slot != l.Slot() || h.ID != withlock.HolderOf(l.Token()) || h.TTL <= 0 || h.TTL > ttls[i] || h.Since.IsZero() {
					t.Errorf("%s holder %d: %+v, want slot %d", name, i, h, l.Slot())
				}
			}
			list, err := c.List(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].Key != a.Key() || len(list[0].Holders) != 2 {
				t.Errorf("%s: List = %v, want the one semaphore with 2 holders", name, list)
			}
		}
		for _, l := range []*withlock.Lock{a, b} {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		st, err := plain.Status(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if st.Held || st.Slots != 0 || st.Holders != nil {
			t.Errorf("%s after the last release: %+v, want a free name without marker", name, st)
		}
	}
}

// Break clears every holder of a semaphore, from any Client, reports them,
// and the name is free for everyone afterwards.
func TestBreakClearsAllSlots(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	sem := semaphore(t, rdb, 3)
	ctx := context.Background()
	var held []*withlock.Lock
	for range 3 {
		held = append(held, mustAcquire(t, sem, "brk", time.Minute))
	}
	waiter := semaphore(t, srv.Client(), 3)
	// Break hands a slot to the waiter in the fair line at once: it polls
	// only every longPoll.
	withlock.SetWaitTimings(waiter, longPoll, time.Minute)
	got := acquireAsync(ctx, waiter, "brk", time.Minute)
	clitest.Eventually(t, promptly, "waiter never waited", func() bool { return withlock.Waiting(waiter, "brk") == 1 })
	st, err := withlock.New(rdb, nil).Break(ctx, "brk")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || st.Slots != 3 || len(st.Holders) != 3 {
		t.Errorf("Break = %+v, want the 3 holders it removed", st)
	}
	for i, l := range held {
		if err := l.Extend(ctx, time.Minute); !errors.Is(err, withlock.ErrLockNotHeld) {
			t.Errorf("holder %d: Extend after Break = %v, want ErrLockNotHeld", i, err)
		}
	}
	o := wait(t, got, promptly, "waiter")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if err := o.lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, "lock:brk", slotKeyOf("lock:brk", 1), slotKeyOf("lock:brk", 2), slotKeyOf("lock:brk", 3)).Val(); n != 0 {
		t.Errorf("%d of the marker and slot keys left after Break and the last release", n)
	}
	if err := mustAcquire(t, withlock.New(rdb, nil), "brk", time.Minute).Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// When every slot is taken, TryAcquire's *NotObtainedError names the holder
// whose slot frees first (its host:pid and time left), not the first slot's
// or the last's, and says how many slots the name has.
func TestSlotsBusyNamesTheHolderWhoseSlotFreesFirst(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	ctx := context.Background()
	sem := semaphore(t, rdb, 3)
	const other = "otherhost:4242:0123456789abcdef0123456789abcdef"
	first := mustAcquire(t, sem, "busy", 50*time.Second)
	middle := mustAcquire(t, sem, "busy", 50*time.Second)
	// The middle slot passes to another host, with the shortest time left.
	if err := rdb.Set(ctx, slotKeyOf(middle.Key(), middle.Slot()), other, 20*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	last := mustAcquire(t, sem, "busy", 40*time.Second)
	_, err := sem.TryAcquire(ctx, "busy", time.Minute, nil)
	var busy *withlock.NotObtainedError
	if !errors.As(err, &busy) {
		t.Fatalf("TryAcquire with all 3 slots held = %v, want a *NotObtainedError", err)
	}
	if busy.Holder.ID != "otherhost:4242" || busy.Holder.TTL <= 0 || busy.Holder.TTL > 20*time.Second || busy.Slots != 3 || busy.Key != first.Key() {
		t.Errorf("busy names %s with %s left, of %d slots, key %s; want otherhost:4242, whose slot frees first, with at most 20s left, of 3 slots",
			busy.Holder.ID, busy.Holder.TTL, busy.Slots, busy.Key)
	}
	for _, l := range []*withlock.Lock{first, last} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A slot's Extend renews it only while the name still holds this
// semaphore's marker: when another writer put a plain token there, or the
// marker of another size, Extend says ErrLockNotHeld and leaves that key and
// its expiry alone.
func TestSlotsExtendRefusedWhenTheNameIsNoLongerTheSemaphore(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	ctx := context.Background()
	sem := semaphore(t, rdb, 2)
	for _, foreign := range []string{"otherhost:4242:0123456789abcdef0123456789abcdef", "#slots=5"} {
		l := mustAcquire(t, sem, "taken", time.Minute)
		if err := rdb.Set(ctx, l.Key(), foreign, 5*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		if err := l.Extend(ctx, time.Hour); !errors.Is(err, withlock.ErrLockNotHeld) {
			t.Errorf("Extend with %q at the name's key = %v, want ErrLockNotHeld", foreign, err)
		}
		if v, ttl := rdb.Get(ctx, l.Key()).Val(), rdb.PTTL(ctx, l.Key()).Val(); v != foreign || ttl <= 0 || ttl > 5*time.Second {
			t.Errorf("after the refused Extend the name's key holds %q with PTTL %s, want %q with at most 5s", v, ttl, foreign)
		}
		if err := rdb.Del(ctx, l.Key(), slotKeyOf(l.Key(), l.Slot())).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// Break hands a semaphore's slots to the waiters in its fair line at once,
// one slot each in the line's order, as a release hands one: waiters that
// poll only every longPoll get them promptly, and a waiter beyond the
// slots stays in line.
func TestBreakHandsASemaphoresSlotsToItsLine(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx, cancel := context.WithCancel(context.Background()) // the third waiter's end
	defer cancel()
	fillSlots(t, semaphore(t, rdb, 2), "sbreak", 2)
	var got []<-chan outcome
	for i := range 3 {
		got = append(got, acquireAsync(ctx, semaphoreWaitClient(t, srv, 2), "sbreak", time.Minute))
		clitest.Eventually(t, promptly, "a waiter never joined the line", func() bool { return inLine(t, rdb, "lock:sbreak") == int64(i+1) })
	}
	if _, err := withlock.New(rdb, nil).Break(ctx, "sbreak"); err != nil {
		t.Fatal(err)
	}
	slots := map[int]bool{}
	for i, ch := range got[:2] {
		o := wait(t, ch, promptly, fmt.Sprint("waiter ", i, " after Break"))
		if o.err != nil {
			t.Fatal(o.err)
		}
		slots[o.lock.Slot()] = true
		defer o.lock.Release(ctx)
	}
	if !slots[1] || !slots[2] {
		t.Errorf("the first two waiters hold slots %v, want 1 and 2", slots)
	}
	if n := inLine(t, rdb, "lock:sbreak"); n != 1 {
		t.Errorf("%d waiters in line after Break, want the third", n)
	}
	if st, err := withlock.New(rdb, nil).Status(ctx, "sbreak"); err != nil || len(st.Holders) != 2 {
		t.Errorf("Status after Break: %+v, %v; want the two waiters holding", st, err)
	}
}

// A semaphore's marker stays while any slot is held, whatever the slots'
// TTLs and however they go (acquired with a shorter TTL than another's,
// extended to a shorter one, released, released within a min-hold, expired,
// handed to a waiter): at every step it lives at least as long as every held
// slot, and a plain lock or a semaphore of another size is refused with
// ErrSlotsMismatch. With the last slot it goes, and the name is free.
func TestSlotsMarkerStaysWhileAnySlotIsHeld(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	ctx := context.Background()
	sem := semaphore(t, rdb, 3)
	plain, other := withlock.New(rdb, nil), semaphore(t, rdb, 5)
	const name = "marked"
	key := sem.Key(name)

	held := map[int]*withlock.Lock{} // by slot
	take := func(ttl time.Duration, opts *withlock.LockOptions) *withlock.Lock {
		t.Helper()
		l, err := sem.TryAcquire(ctx, name, ttl, opts)
		if err != nil {
			t.Fatalf("TryAcquire with TTL %s: %v", ttl, err)
		}
		held[l.Slot()] = l
		return l
	}
	// stays checks the marker after step, while the slots in held are.
	stays := func(step string) {
		t.Helper()
		mark := rdb.PTTL(ctx, key).Val() // first: a slot's PTTL only shrinks later
		if v := rdb.Get(ctx, key).Val(); v != "#slots=3" {
			t.Fatalf("after %s: %s holds %q, want the marker #slots=3", step, key, v)
		}
		for slot := range held {
			if s := rdb.PTTL(ctx, slotKeyOf(key, slot)).Val(); s > 0 && mark < s {
				t.Errorf("after %s: marker PTTL %s, below slot %d's %s", step, mark, slot, s)
			}
		}
		for what, c := range map[string]*withlock.Client{"a plain lock": plain, "a semaphore of 5": other} {
			l, err := c.TryAcquire(ctx, name, time.Minute, nil)
			if !errors.Is(err, withlock.ErrSlotsMismatch) {
				if l != nil {
					_ = l.Release(ctx)
				}
				t.Fatalf("after %s: TryAcquire as %s = %v, want ErrSlotsMismatch", step, what, err)
			}
		}
	}
	release := func(l *withlock.Lock) {
		t.Helper()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		delete(held, l.Slot())
	}

	take(time.Minute, nil)
	stays("acquiring a slot for a minute")
	short := take(500*time.Millisecond, nil)
	stays("acquiring a second slot for 500ms")
	third := take(30*time.Second, nil)
	stays("acquiring a third slot for 30s")
	if err := third.Extend(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	stays("extending the third slot to 5s, below the first's")
	release(third)
	stays("releasing the third slot")

	waitGone(t, rdb, slotKeyOf(key, short.Slot()))
	delete(held, short.Slot())
	stays("the second slot expiring")

	kept := take(time.Minute, &withlock.LockOptions{MinHold: 300 * time.Millisecond})
	release(kept) // within its min-hold: the slot stays for what is left of it
	held[kept.Slot()] = kept
	stays("releasing a slot within its min-hold")
	waitGone(t, rdb, slotKeyOf(key, kept.Slot()))
	delete(held, kept.Slot())
	stays("the min-hold running out")

	// All three taken, a waiter in line for 2s; a release hands it a slot.
	take(time.Minute, nil)
	last := take(time.Minute, nil)
	waiter := semaphore(t, rdb, 3)
	withlock.SetWaitTimings(waiter, longPoll, time.Minute)
	actx, cancel := context.WithTimeout(ctx, promptly)
	defer cancel()
	got := acquireAsync(actx, waiter, name, 2*time.Second)
	clitest.Eventually(t, promptly, "the waiter never joined the line", func() bool { return inLine(t, rdb, key) == 1 })
	freed := last.Slot()
	release(last)
	o := wait(t, got, promptly, "waiter")
	if o.err != nil {
		t.Fatalf("the waiter: %v", o.err)
	}
	if o.lock.Slot() != freed {
		t.Fatalf("the waiter got slot %d, want the released slot %d", o.lock.Slot(), freed)
	}
	held[o.lock.Slot()] = o.lock
	stays("handing a slot to a waiter for 2s")

	for _, l := range held {
		release(l)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("the marker outlived the last slot: %s holds %q", key, rdb.Get(ctx, key).Val())
	}
	if l, err := plain.TryAcquire(ctx, name, time.Minute, nil); err != nil {
		t.Errorf("a plain lock after the last slot went: %v, want the name free", err)
	} else {
		_ = l.Release(ctx)
	}
}

// A slot released by Release (no record) within its min-hold is kept for
// what is left of the min-hold, not freed: the marker stays no shorter, and
// the slot counts against the limit until the min-hold passes.
func TestSlotsMinHoldKeepsSlotAfterRelease(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	ctx := context.Background()
	sem := semaphore(t, rdb, 2)
	l, err := sem.TryAcquire(ctx, "kept", time.Minute, &withlock.LockOptions{MinHold: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	slot := slotKeyOf(l.Key(), l.Slot())
	mark := rdb.PTTL(ctx, l.Key()).Val()
	left := rdb.PTTL(ctx, slot).Val()
	if v := rdb.Get(ctx, slot).Val(); v != l.Token() || left <= 0 || left > 3*time.Second {
		t.Errorf("slot %d after Release within its 3s min-hold: holds %q, PTTL %s; want the token kept for what is left of the min-hold", l.Slot(), v, left)
	}
	if mark < left {
		t.Errorf("marker PTTL %s, below the kept slot's %s", mark, left)
	}
	st, err := sem.Status(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || len(st.Holders) != 1 || st.Holders[0].Slot != l.Slot() {
		t.Errorf("Status during the min-hold: %+v, want slot %d still held", st, l.Slot())
	}
	other := mustAcquire(t, sem, "kept", time.Minute)
	if extra, err := sem.TryAcquire(ctx, "kept", time.Minute, nil); !errors.Is(err, withlock.ErrNotObtained) {
		t.Errorf("TryAcquire with one slot kept by a min-hold and one held = %v, want ErrNotObtained", err)
		if extra != nil {
			_ = extra.Release(ctx)
		}
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, rdb, slot)
	waitGone(t, rdb, l.Key())
}
