package withlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

func TestFenceStrictlyIncreasingAcrossAcquisitions(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	locker := kaClient(t, srv, time.Second)
	ctx := context.Background()
	fenced := &withlock.LockOptions{Fence: true}
	var last int64
	for i := range 5 {
		l, err := locker.TryAcquire(ctx, "fence", time.Second, fenced)
		if err != nil {
			t.Fatal(err)
		}
		if l.Fence() <= last {
			t.Fatalf("acquisition %d: fence %d not above %d", i, l.Fence(), last)
		}
		last = l.Fence()
		// A failed acquisition draws no number.
		if _, err := locker.TryAcquire(ctx, "fence", time.Second, fenced); !errors.Is(err, withlock.ErrNotObtained) {
			t.Fatalf("second acquisition while held: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := rdb.Get(ctx, withlock.FenceKey(locker, "fence")).Int64(); got != last {
		t.Errorf("fence counter %d, want %d: failed acquisitions must not draw", got, last)
	}
	// Without Fence the acquisition is a plain SET NX: no number, counter
	// untouched.
	l, err := locker.TryAcquire(ctx, "fence", time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence() != 0 {
		t.Errorf("unfenced lock has fence %d", l.Fence())
	}
	if got, _ := rdb.Get(ctx, withlock.FenceKey(locker, "fence")).Int64(); got != last {
		t.Errorf("unfenced acquisition moved the counter to %d", got)
	}
	t.Logf("5 fenced acquisitions drew up to %d; the counter key is %s", last, withlock.FenceKey(locker, "fence"))
}

func TestMinHoldOnRelease(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	locker := kaClient(t, srv, time.Second)
	ctx := context.Background()
	const minHold = 700 * time.Millisecond

	l, err := locker.TryAcquire(ctx, "minhold", 5*time.Second, &withlock.LockOptions{MinHold: minHold})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	d := rdb.PTTL(ctx, l.Key()).Val()
	t.Logf("released %s after acquiring: key kept %s more (min-hold %s)", time.Since(withlock.AcquiredAt(l)).Round(time.Millisecond), d, minHold)
	if d <= 0 || d > minHold {
		t.Fatalf("after an early release PTTL = %s, want in (0, %s]", d, minHold)
	}
	if _, err := locker.TryAcquire(ctx, "minhold", time.Second, nil); !errors.Is(err, withlock.ErrNotObtained) {
		t.Fatalf("acquire during min-hold: %v, want ErrNotObtained", err)
	}
	// The key still holds the old token: a second release is still ours.
	if err := l.Release(ctx); err != nil {
		t.Errorf("second release during min-hold: %v", err)
	}
	kaWaitGone(t, rdb, l.Key(), minHold+time.Second)

	// Released after the min-hold passed: deleted at once.
	l, err = locker.TryAcquire(ctx, "minhold", 5*time.Second, &withlock.LockOptions{MinHold: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, l.Key()).Val(); n != 0 {
		t.Error("release after the min-hold left the key")
	}
}
