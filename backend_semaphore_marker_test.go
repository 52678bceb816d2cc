package withlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
)

// A semaphore's marker stays while any slot is held, whatever the slots'
// TTLs and however they go (acquired with a shorter TTL than another's,
// extended to a shorter one, released, released within a min-hold, expired,
// handed to a waiter): at every step it lives at least as long as every held
// slot, and a plain lock or a semaphore of another size is refused with
// ErrSlotsMismatch. With the last slot it goes, and the name is free.
func TestSlotsMarkerStaysWhileAnySlotIsHeld(t *testing.T) {
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
