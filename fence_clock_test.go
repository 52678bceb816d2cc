package withlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// fenceAheadOfClock stores in the fence counter of c's lock called name a
// number a day ahead of the server's TIME in µs, as a failover to a replica
// whose clock is behind, or a counter carried over, leaves it. It returns
// that number.
func fenceAheadOfClock(t *testing.T, rdb *redis.Client, c *withlock.Client, name string) int64 {
	t.Helper()
	ctx := context.Background()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	ahead := now.Add(24 * time.Hour).UnixMicro()
	if err := rdb.Set(ctx, withlock.FenceKey(c, name), strconv.FormatInt(ahead, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	return ahead
}

// When the stored counter is ahead of the server's clock, every fenced
// acquisition still draws a number above all earlier ones: the counter plus
// one, never the counter itself or the clock. For a plain lock (TryAcquire
// and a waiting Acquire) and for the slots of a semaphore, held together
// and one after another.
func TestFenceStrictlyIncreasesWhenCounterIsAheadOfClock(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client()
	fenced := &withlock.LockOptions{Fence: true}

	// check asserts that l's fence is the one after last and is stored.
	check := func(t *testing.T, c *withlock.Client, l *withlock.Lock, last int64) int64 {
		t.Helper()
		if l.Fence() != last+1 {
			t.Fatalf("fence %d after %d (the counter, ahead of the clock): want %d, the counter plus one", l.Fence(), last, last+1)
		}
		if got, err := rdb.Get(ctx, withlock.FenceKey(c, l.Name())).Int64(); err != nil || got != l.Fence() {
			t.Fatalf("counter after drawing %d: %d, %v; want the fence stored back", l.Fence(), got, err)
		}
		return l.Fence()
	}

	t.Run("PlainLock", func(t *testing.T) {
		c := withlock.New(rdb, nil)
		last := fenceAheadOfClock(t, rdb, c, "ahead")
		for i := range 3 {
			l, err := c.TryAcquire(ctx, "ahead", time.Minute, fenced)
			if err != nil {
				t.Fatalf("fenced TryAcquire %d: %v", i, err)
			}
			last = check(t, c, l, last)
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		actx, cancel := context.WithTimeout(ctx, promptly)
		defer cancel()
		l, err := c.Acquire(actx, "ahead", time.Minute, fenced)
		if err != nil {
			t.Fatalf("fenced Acquire: %v", err)
		}
		check(t, c, l, last)
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Semaphore", func(t *testing.T) {
		c := semaphore(t, rdb, 3)
		last := fenceAheadOfClock(t, rdb, c, "ahead-sem")
		for round := range 2 {
			var held []*withlock.Lock
			for range 3 {
				l, err := c.TryAcquire(ctx, "ahead-sem", time.Minute, fenced)
				if err != nil {
					t.Fatalf("round %d: fenced TryAcquire: %v", round, err)
				}
				last = check(t, c, l, last)
				held = append(held, l)
			}
			for _, l := range held {
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
