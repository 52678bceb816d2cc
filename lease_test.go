package withlock_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/lapse"
	"github.com/with-lock/with-lock/internal/redistest"
)

// detecting returns opts (new ones for nil) with internal/lapse's Detect.
func detecting(opts *withlock.LockOptions) *withlock.LockOptions {
	if opts == nil {
		opts = &withlock.LockOptions{}
	}
	lapse.Detect(opts)
	return opts
}

var detect = detecting(nil)

// untilGone polls until key has expired, within a deadline far above the
// TTLs the tests give.
func untilGone(t *testing.T, rdb *redis.Client, key string) {
	t.Helper()
	deadline := time.Now().Add(promptly)
	for rdb.Exists(context.Background(), key).Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists after %s", key, promptly)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lapse.Lapsed tells a lease that ended by a release (or never was) from one
// that expired, whoever held it and however it was released.
func TestLapsedTellsAnExpiredLeaseFromAReleasedOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const short = 150 * time.Millisecond
	for _, tc := range []struct {
		name   string
		before func(t *testing.T, c *withlock.Client, rdb *redis.Client, key string)
		want   bool
	}{
		{"free", func(*testing.T, *withlock.Client, *redis.Client, string) {}, false},
		{"released", func(t *testing.T, c *withlock.Client, _ *redis.Client, _ string) {
			l := mustTake(t, c, time.Minute, detect)
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"expired", func(t *testing.T, c *withlock.Client, rdb *redis.Client, key string) {
			mustTake(t, c, short, detect)
			untilGone(t, rdb, key)
		}, true},
		{"released after its min-hold", func(t *testing.T, c *withlock.Client, rdb *redis.Client, key string) {
			l := mustTake(t, c, time.Minute, detecting(&withlock.LockOptions{MinHold: short}))
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			untilGone(t, rdb, key)
		}, false},
		{"expired, then taken and released", func(t *testing.T, c *withlock.Client, rdb *redis.Client, key string) {
			mustTake(t, c, short, detect)
			untilGone(t, rdb, key)
			l := mustTake(t, c, time.Minute, detect)
			if !lapse.Lapsed(l) {
				t.Error("the lease after the expiry does not say it lapsed")
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}, false},
		// A holder without lapse.Detect: a try with it marks the lease.
		{"expired under a holder that marks no lease, tried meanwhile", func(t *testing.T, c *withlock.Client, rdb *redis.Client, key string) {
			mustTake(t, c, short, nil)
			if _, err := c.TryAcquire(ctx, "job", time.Minute, detect); !errors.Is(err, withlock.ErrNotObtained) {
				t.Fatalf("try on a held lock: %v", err)
			}
			untilGone(t, rdb, key)
		}, true},
		{"released by a holder that marks no lease, tried meanwhile", func(t *testing.T, c *withlock.Client, _ *redis.Client, _ string) {
			l := mustTake(t, c, time.Minute, nil)
			if _, err := c.TryAcquire(ctx, "job", time.Minute, detect); !errors.Is(err, withlock.ErrNotObtained) {
				t.Fatalf("try on a held lock: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rdb, _ := setup(t)
			tc.before(t, c, rdb, c.Key("job"))
			trips := &tripLog{}
			rdb.AddHook(trips)
			l := mustTake(t, c, time.Minute, detect)
			if lapse.Lapsed(l) != tc.want {
				t.Errorf("Lapsed = %v, want %v", lapse.Lapsed(l), tc.want)
			}
			// The lease mark rides in the SET's round trip.
			if got := trips.reset(); len(got) != 1 || !slices.Contains(got[0], "set") {
				t.Errorf("the acquisition took round trips %q, want one with the SETs", got)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if n := rdb.Exists(ctx, "{lock:job}:lease").Val(); n != 0 {
				t.Error("the release left the lease mark")
			}
		})
	}
}

// mustTake takes lock "job" or fails the test.
func mustTake(t *testing.T, c *withlock.Client, ttl time.Duration, opts *withlock.LockOptions) *withlock.Lock {
	t.Helper()
	l, err := c.TryAcquire(context.Background(), "job", ttl, opts)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	return l
}

// A waiter handed the lock by the fair line learns how the lease before it
// ended: a release's hand-over is no lapse, whichever Client releases; the
// line's check handing on an expired key, or a break handing on a key
// whose holder may still run, is one.
func TestWaiterHandedTheLockLearnsWhetherTheLeaseLapsed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		sameOwner bool // the holder's Client is the waiter's: its release hands over as a Client with waiters of its own
		end       func(c *withlock.Client, h *withlock.Lock) error
		lapsed    bool
	}{
		{"released", false, func(_ *withlock.Client, h *withlock.Lock) error { return h.Release(ctx) }, false},
		{"released by the waiter's own Client", true, func(_ *withlock.Client, h *withlock.Lock) error { return h.Release(ctx) }, false},
		{"expired", false, func(*withlock.Client, *withlock.Lock) error { return nil }, true},
		{"broken", false, func(c *withlock.Client, _ *withlock.Lock) error {
			_, err := c.Break(ctx, "job")
			return err
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			waiter := waitClient(t, srv)
			holder := withlock.New(srv.Client(), nil)
			if tc.sameOwner {
				holder = waiter
			}
			// Long enough for the waiter to join the line first on a
			// loaded machine: the expired case waits it out.
			h, err := holder.TryAcquire(ctx, "job", 2*time.Second, detect)
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, promptly)
			defer cancel()
			got := make(chan outcome, 1)
			go func() {
				l, err := waiter.Acquire(wctx, "job", time.Minute, detect)
				got <- outcome{lock: l, err: err}
			}()
			// The waiter is in line once its entry is there.
			deadline := time.Now().Add(promptly)
			for srv.Client().LLen(ctx, "{lock:job}:q").Val() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the waiter never joined the line")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := tc.end(holder, h); err != nil {
				t.Fatal(err)
			}
			o := <-got
			if o.err != nil {
				t.Fatalf("Acquire: %v", o.err)
			}
			if lapse.Lapsed(o.lock) != tc.lapsed {
				t.Errorf("Lapsed = %v after the holder's lease was %s, want %v", lapse.Lapsed(o.lock), tc.name, tc.lapsed)
			}
			if err := o.lock.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Where no lease mark can be kept, lapse.Detect's acquisition is refused, not ignored.
func TestLapseDetectionIsRefusedWhereNoMarkIsKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := startRedis(t)
	sem, err := withlock.NewSemaphore(rdb, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	quorum, err := withlock.NewQuorum([]redis.UniversalClient{rdb, startRedis(t), startRedis(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		c    *withlock.Client
		name string
	}{
		{"a semaphore", sem, "job"},
		{"a quorum", quorum, "job"},
		{"a name with '}' and no hash tag", withlock.New(rdb, nil), "a}b"},
	} {
		for _, wait := range []bool{false, true} {
			acquire := tc.c.TryAcquire
			if wait {
				acquire = tc.c.Acquire
			}
			l, err := acquire(ctx, tc.name, time.Minute, detect)
			if !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("%s (wait %v): lapse.Detect gave %v, %v; want errors.ErrUnsupported", tc.what, wait, l, err)
			}
		}
	}
	if n := rdb.DBSize(ctx).Val(); n != 0 {
		keys := rdb.Keys(ctx, "*").Val()
		t.Errorf("refused acquisitions left keys %q", keys)
	}
}
