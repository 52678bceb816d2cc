package withlock_test

// A semaphore's marker, its Status, Break and busy error.

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
