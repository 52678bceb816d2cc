package withlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
)

func TestDoRunsUnderLockAndReleases(t *testing.T) {
	locker, rdb := kaSetup(t)
	ctx := context.Background()
	ran := false
	err := locker.Do(ctx, "do-ok", 300*time.Millisecond, nil, func(ctx context.Context, l *withlock.Lock) error {
		ran = true
		// Longer than the TTL: only renewal keeps the lock.
		for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if v := rdb.Get(ctx, l.Key()).Val(); v != l.Token() {
				t.Errorf("after %s the key holds %q, not our token", time.Since(l.Acquired()), v)
				return nil
			}
		}
		return ctx.Err()
	})
	if err != nil || !ran {
		t.Fatalf("Do = %v (fn ran: %v), want nil after running fn", err, ran)
	}
	if n := rdb.Exists(ctx, locker.Key("do-ok")).Val(); n != 0 {
		t.Error("lock not released after Do")
	}
}

func TestDoBusy(t *testing.T) {
	locker, rdb := kaSetup(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, locker.Key("do-busy"), "somehost:1:abc", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	called := false
	err := locker.Do(ctx, "do-busy", time.Second, nil, func(context.Context, *withlock.Lock) error {
		called = true
		return nil
	})
	if !errors.Is(err, withlock.ErrNotObtained) || called {
		t.Fatalf("Do on a busy lock = %v (fn called: %v), want ErrNotObtained without calling fn", err, called)
	}
}

func TestDoCancelsOnLoss(t *testing.T) {
	tests := []struct {
		name   string
		fnErr  func(ctx context.Context) error // fn's return once its ctx is done
		wantFn error                           // an error fn's result must match too
	}{
		{"fn returns the cause", context.Cause, nil},
		{"fn returns nil", func(context.Context) error { return nil }, nil},
		{"fn returns its own error", func(context.Context) error { return errFn }, errFn},
	}
	locker, rdb := kaSetup(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			name := "do-lost-" + string(rune('a'+i))
			var cancelled time.Duration
			err := locker.Do(ctx, name, 600*time.Millisecond, nil, func(ctx context.Context, l *withlock.Lock) error {
				if err := rdb.Set(ctx, l.Key(), "other", time.Minute).Err(); err != nil {
					return err
				}
				start := time.Now()
				select {
				case <-ctx.Done():
					cancelled = time.Since(start)
				case <-time.After(5 * time.Second):
					t.Error("fn's context not cancelled within 5s of a takeover")
				}
				return tt.fnErr(ctx)
			})
			t.Logf("fn's context cancelled %s after the takeover; Do = %v", cancelled.Round(time.Millisecond), err)
			if !errors.Is(err, withlock.ErrLockLost) || !errors.Is(err, withlock.ErrLockNotHeld) {
				t.Errorf("Do = %v, want ErrLockLost (not held)", err)
			}
			if tt.wantFn != nil && !errors.Is(err, tt.wantFn) {
				t.Errorf("Do = %v, want it to carry fn's error %v", err, tt.wantFn)
			}
			if v := rdb.Get(ctx, locker.Key(name)).Val(); v != "other" {
				t.Errorf("new owner's key = %q, want untouched", v)
			}
		})
	}
}

var errFn = errors.New("fn failed")

// Min-hold keeps a quickly finished Do's lock until it passes, and fencing
// numbers grow across acquisitions.
func TestDoMinHoldAndFence(t *testing.T) {
	locker, rdb := kaSetup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const minHold = 800 * time.Millisecond
	opts := &withlock.DoOptions{LockOptions: withlock.LockOptions{Fence: true, MinHold: minHold}, Wait: true}
	var fences []int64
	var acquired []time.Time
	for range 2 {
		err := locker.Do(ctx, "do-minhold", 2*time.Second, opts, func(_ context.Context, l *withlock.Lock) error {
			fences = append(fences, l.Fence())
			acquired = append(acquired, l.Acquired())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if d := rdb.PTTL(ctx, locker.Key("do-minhold")).Val(); d <= 0 || d > minHold {
			t.Errorf("after Do the key's PTTL is %s, want it kept for the rest of the %s min-hold", d, minHold)
		}
	}
	gap := acquired[1].Sub(acquired[0])
	t.Logf("fences %v; second Do acquired %s after the first (min-hold %s)", fences, gap.Round(time.Millisecond), minHold)
	if fences[0] <= 0 || fences[1] <= fences[0] {
		t.Errorf("fences %v, want positive and strictly increasing", fences)
	}
	if gap < minHold-50*time.Millisecond {
		t.Errorf("second Do acquired %s after the first, inside the %s min-hold", gap, minHold)
	}
	if _, err := rdb.Get(ctx, withlock.FenceKey(locker, "do-minhold")).Result(); errors.Is(err, redis.Nil) {
		t.Error("no fence counter in Redis")
	}
}

// A panic in fn, recovered by the caller as net/http recovers a handler's,
// must not leave the lock held and renewed for as long as the process lives:
// Do stops the KeepAlive, releases, and lets the panic go on.
func TestDoReleasesWhenFnPanics(t *testing.T) {
	locker, rdb := kaSetup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const ttl = 600 * time.Millisecond
	var renewals atomic.Int64
	opts := &withlock.DoOptions{KeepAlive: withlock.KeepAliveOptions{
		Interval: 50 * time.Millisecond,
		OnRenew:  func(time.Duration, error) { renewals.Add(1) },
	}}
	type boom struct{}
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		_ = locker.Do(ctx, "do-panic", ttl, opts, func(ctx context.Context, _ *withlock.Lock) error {
			// Panic only once renewal runs, so that a KeepAlive left going
			// would show.
			for renewals.Load() == 0 {
				select {
				case <-ctx.Done():
					t.Error("fn's context done before the first renewal")
					return nil
				case <-time.After(10 * time.Millisecond):
				}
			}
			panic(boom{})
		})
	}()
	if _, ok := recovered.(boom); !ok {
		t.Fatalf("recovered %v from Do, want fn's panic to go on up the stack", recovered)
	}
	key := locker.Key("do-panic")
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatalf("right after Do's panic the lock key still exists (PTTL %s): a recovered panic keeps the lock", rdb.PTTL(ctx, key).Val())
	}
	// The KeepAlive must be stopped: no renewal attempt over many of its
	// intervals (a running one would report each, failed or not).
	before := renewals.Load()
	time.Sleep(ttl)
	if n := renewals.Load() - before; n != 0 {
		t.Errorf("%d renewals attempted in the %s after Do's panic, want the KeepAlive stopped", n, ttl)
	}
	// The lock is free to take at once.
	l, err := locker.TryAcquire(ctx, "do-panic", ttl, nil)
	if err != nil {
		t.Fatalf("TryAcquire after Do's panic: %v, want the lock free", err)
	}
	_ = l.Release(ctx)
}
