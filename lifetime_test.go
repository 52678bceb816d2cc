package withlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

func TestExtend(t *testing.T) {
	ctx := context.Background()
	t.Run("ours", func(t *testing.T) {
		locker, rdb, _ := setup(t)
		l, err := locker.TryAcquire(ctx, "job", time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, ttl := range []time.Duration{20 * time.Second, 5 * time.Second} { // longer, then shorter
			if err := l.Extend(ctx, ttl); err != nil {
				t.Fatalf("Extend(%v): %v", ttl, err)
			}
			if pttl := rdb.PTTL(ctx, "lock:job").Val(); pttl <= ttl-5*time.Second || pttl > ttl {
				t.Errorf("PTTL after Extend(%v) = %v", ttl, pttl)
			}
		}
		if got := rdb.Get(ctx, "lock:job").Val(); got != l.Token() {
			t.Errorf("Extend changed the value to %q", got)
		}
	})
	t.Run("missing key is not recreated", func(t *testing.T) {
		locker, rdb, _ := setup(t)
		l, err := locker.TryAcquire(ctx, "job", time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		rdb.Del(ctx, "lock:job")
		if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, withlock.ErrLockNotHeld) {
			t.Errorf("Extend of a deleted lock = %v, want ErrLockNotHeld", err)
		}
		if rdb.Exists(ctx, "lock:job").Val() != 0 {
			t.Error("Extend recreated the deleted key")
		}
	})
	t.Run("taken over", func(t *testing.T) {
		locker, rdb, _ := setup(t)
		l, err := locker.TryAcquire(ctx, "job", time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		rdb.Set(ctx, "lock:job", foreignToken, 3*time.Second)
		if err := l.Extend(ctx, time.Minute); !errors.Is(err, withlock.ErrLockNotHeld) {
			t.Errorf("Extend of a taken-over lock = %v, want ErrLockNotHeld", err)
		}
		if pttl := rdb.PTTL(ctx, "lock:job").Val(); pttl > 3*time.Second {
			t.Errorf("Extend prolonged the other owner's lock to %v", pttl)
		}
	})
	t.Run("below 1ms", func(t *testing.T) {
		locker, _, _ := setup(t)
		l, err := locker.TryAcquire(ctx, "job", time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Extend(ctx, 0); err == nil || errors.Is(err, withlock.ErrLockNotHeld) {
			t.Errorf("Extend(0) = %v, want an argument error", err)
		}
	})
}

func TestTTL(t *testing.T) {
	ctx := context.Background()
	locker, rdb, _ := setup(t)
	l, err := locker.TryAcquire(ctx, "job", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := l.TTL(ctx); err != nil || d <= 5*time.Second || d > 10*time.Second {
		t.Errorf("TTL = %v, %v; want about 10s", d, err)
	}
	rdb.Set(ctx, "lock:job", foreignToken, time.Minute)
	if d, err := l.TTL(ctx); !errors.Is(err, withlock.ErrLockNotHeld) {
		t.Errorf("TTL of a taken-over lock = %v, %v; want ErrLockNotHeld", d, err)
	}
	rdb.Del(ctx, "lock:job")
	if d, err := l.TTL(ctx); !errors.Is(err, withlock.ErrLockNotHeld) {
		t.Errorf("TTL of a deleted lock = %v, %v; want ErrLockNotHeld", d, err)
	}
}

func TestMinHold(t *testing.T) {
	ctx := context.Background()
	t.Run("early release keeps the key", func(t *testing.T) {
		locker, rdb, _ := setup(t)
		const minHold = 3 * time.Second
		l, err := locker.TryAcquire(ctx, "job", 30*time.Second, &withlock.LockOptions{MinHold: minHold})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		left := minHold - time.Since(l.Acquired())
		pttl := rdb.PTTL(ctx, "lock:job").Val()
		if pttl <= 0 || pttl > minHold || pttl < left-time.Second {
			t.Errorf("PTTL after an early Release = %v, want about the %v left of the min-hold", pttl, left)
		}
		if got := rdb.Get(ctx, "lock:job").Val(); got != l.Token() {
			t.Errorf("key after an early Release holds %q, want still our token", got)
		}
		if _, err := locker.TryAcquire(ctx, "job", time.Second, nil); !errors.Is(err, withlock.ErrNotObtained) {
			t.Errorf("TryAcquire during the min-hold = %v, want ErrNotObtained", err)
		}
		// The key still holds our token: a second release is still ours,
		// and the key goes when the min-hold is over.
		if err := l.Release(ctx); err != nil {
			t.Errorf("second Release during the min-hold: %v", err)
		}
		kaWaitGone(t, rdb, "lock:job", minHold+time.Second)
	})
	t.Run("late release deletes the key", func(t *testing.T) {
		locker, rdb, _ := setup(t)
		const minHold = 100 * time.Millisecond
		l, err := locker.TryAcquire(ctx, "job", 30*time.Second, &withlock.LockOptions{MinHold: minHold})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(l.Acquired().Add(minHold))) // the job's run time
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if rdb.Exists(ctx, "lock:job").Val() != 0 {
			t.Error("key still exists after a Release past the min-hold")
		}
	})
}
