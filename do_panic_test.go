package withlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A panic in fn, recovered by the caller as net/http recovers a handler's,
// must not leave the lock held and renewed for as long as the process lives:
// Do stops the KeepAlive, releases, and lets the panic go on.
func TestDoReleasesWhenFnPanics(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	locker := kaClient(t, srv, time.Second)
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
