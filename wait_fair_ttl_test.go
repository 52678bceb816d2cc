package withlock_test

import (
	"context"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A lock handed to a waiter in the fair line lives for the waiter's TTL,
// not the releaser's nor the line's liveness window: whether a release
// hands it over (to a waiter of another Client or of its own) or the
// holder's expiry does, for a plain lock and a semaphore's slot.
func TestLineHandsOverWithTheWaitersTTL(t *testing.T) {
	const waiterTTL = 45 * time.Second
	srv := redistest.Start(t)
	rdb := srv.Client()
	plainClient := func() *withlock.Client { return waitClient(t, srv) }
	semClient := func() *withlock.Client {
		c := semaphore(t, rdb, 2)
		withlock.SetWaitTimings(c, longPoll, 100*time.Millisecond)
		return c
	}
	for _, tc := range []struct {
		name      string
		client    func() *withlock.Client
		slots     int           // held before the waiter queues
		holderTTL time.Duration // of the holder the waiter gets its lock from
		release   bool          // whether that holder releases, or expires
		same      bool          // whether the waiter is of the holders' Client
		lock      string        // the name, "" for the subtest's
	}{
		{"PlainReleased", plainClient, 1, time.Minute, true, false, ""},
		{"PlainReleasedWithinClient", plainClient, 1, time.Minute, true, true, ""},
		// A name with '}' and no hash tag has no line: a waiter of the same
		// Client is handed the lock by the release's pipelined SET.
		{"PlainReleasedWithinClientWithoutLine", plainClient, 1, time.Minute, true, true, "no}line"},
		{"PlainExpired", plainClient, 1, 500 * time.Millisecond, false, false, ""},
		{"SlotReleased", semClient, 2, time.Minute, true, false, ""},
		{"SlotReleasedWithinClient", semClient, 2, time.Minute, true, true, ""},
		{"SlotExpired", semClient, 2, 500 * time.Millisecond, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			name, lined := tc.lock, tc.lock == ""
			if lined {
				name = tc.name
			}
			holders := tc.client()
			var last *withlock.Lock
			for i := range tc.slots {
				ttl := time.Minute
				if i == tc.slots-1 {
					ttl = tc.holderTTL
				}
				last = mustAcquire(t, holders, name, ttl)
			}
			waiter := holders
			if !tc.same {
				waiter = tc.client()
			}
			actx, cancel := context.WithTimeout(ctx, promptly)
			defer cancel()
			got := acquireAsync(actx, waiter, name, waiterTTL)
			clitest.Eventually(t, promptly, "the waiter never joined the line", func() bool {
				return withlock.Waiting(waiter, name) == 1 && (!lined || inLine(t, rdb, last.Key()) == 1)
			})
			if tc.release {
				if err := last.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			o := wait(t, got, promptly, "waiter")
			if o.err != nil {
				t.Fatalf("the waiter: %v", o.err)
			}
			key := o.lock.Key()
			if o.lock.Slot() > 0 {
				key = slotKeyOf(key, o.lock.Slot())
			}
			if v, ttl := rdb.Get(ctx, key).Val(), rdb.PTTL(ctx, key).Val(); v != o.lock.Token() || ttl <= waiterTTL-10*time.Second || ttl > waiterTTL {
				t.Errorf("the lock handed to the waiter: %s holds its token %v, PTTL %s; want the waiter's TTL, %s", key, v == o.lock.Token(), ttl, waiterTTL)
			}
			if err := o.lock.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
