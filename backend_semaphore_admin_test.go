package withlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// Status lists every holder of a semaphore by slot, and List shows the name
// once, from a plain Client too; the slot keys are not locks.
func TestSlotsStatusListsEveryHolder(t *testing.T) {
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

// List shows locks only: not the fair line of a hash-tagged name, nor the
// liveness key of the Client waiting in it.
func TestListSkipsLineKeys(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	c := waitClient(t, srv)
	holder := mustAcquire(t, c, "{tag}busy", time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := acquireAsync(ctx, waitClient(t, srv), "{tag}busy", time.Minute)
	clitest.Eventually(t, promptly, "waiter never in line", func() bool { return inLine(t, rdb, holder.Key()) == 1 })
	keys := rdb.Keys(ctx, "lock:*").Val()
	list, err := c.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Key != holder.Key() {
		var shown []string
		for _, st := range list {
			shown = append(shown, st.Key)
		}
		t.Errorf("List = %q among keys %q, want only %s", shown, keys, holder.Key())
	}
	cancel()
	if o := wait(t, got, promptly, "waiter"); o.err == nil {
		t.Error("the waiter got the lock")
	}
}

// Break clears every holder of a semaphore, from any Client, reports them,
// and the name is free for everyone afterwards.
func TestBreakClearsAllSlots(t *testing.T) {
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
