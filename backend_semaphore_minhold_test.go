package withlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

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
