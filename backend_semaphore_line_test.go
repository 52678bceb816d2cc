package withlock_test

import (
	"context"
	"errors"
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
