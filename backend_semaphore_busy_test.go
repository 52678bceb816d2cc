package withlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

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
