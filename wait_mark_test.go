package withlock_test

// The waiting mark "{key}:w": a release with nobody waiting skips the line
// and publishes nothing, and every waiter keeps the mark while it waits, so
// that no release skips it.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A release nobody waits for runs the compare and one DEL of the key and
// its mark, as Release and as ReleaseAndRecord (the CLI's): no LPOP of the
// empty line, no release message; a semaphore's likewise, beside its
// marker's upkeep. A name with '}' and no hash tag has no mark in its slot,
// and its release still publishes.
func TestReleaseWithNobodyWaitingSkipsTheLineAndPublishesNothing(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	c := withlock.New(rdb, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name, lock string
		c          *withlock.Client
		record     bool
		publishes  int
	}{
		{"Release", "quiet", c, false, 0},
		{"ReleaseAndRecord", "quiet-rec", c, true, 0},
		{"NameWithoutHashTag", "no}tag", c, false, 1},
		{"Semaphore", "quiet-slots", semaphore(t, rdb, 2), false, 0},
		{"SemaphoreReleaseAndRecord", "quiet-slots-rec", semaphore(t, rdb, 2), true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustAcquire(t, tc.c, tc.lock, time.Minute)
			resetStats(t, rdb)
			var err error
			if tc.record {
				err = l.ReleaseAndRecord(ctx, withlock.Run{}, time.Minute)
			} else {
				err = l.Release(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			calls := commandCallsExceptSetup(t, rdb)
			if calls["lpop"] != 0 || calls["publish"] != tc.publishes || calls["spublish"] != 0 {
				t.Errorf("release sent %v, want %d PUBLISH and no LPOP", calls, tc.publishes)
			}
			if sum := calls["eval"] + calls["evalsha"] + calls["get"] + calls["del"]; tc.c == c && !tc.record && tc.publishes == 0 && (sum != 3 || len(calls) != 3) {
				t.Errorf("release sent %v, want one script running one GET and one DEL", calls)
			}
			if n := rdb.Exists(ctx, l.Key()).Val(); n != 0 {
				t.Errorf("%s still exists after the release", l.Key())
			}
		})
	}
}

// Waiters outside the fair line (fenced acquisitions, a Client whose
// SSUBSCRIBE is refused, a name with '}' and no hash tag) are woken by every
// release, never by their minute's poll: each try after the first marks the
// key, so the holder's release publishes. Locks pass between Clients and
// between waiters of one Client, released both ways.
func TestWaitersOutsideTheLineAreWokenByEveryRelease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, lock string
		opts       *withlock.LockOptions
		acl        string
		slots      int
	}{
		{"Fenced", "fenced", &withlock.LockOptions{Fence: true}, "", 1},
		{"ACLWithoutSSubscribe", "acl", nil, "+@all -ssubscribe", 1},
		{"NameWithoutHashTag", "no}tag", nil, "", 1},
		{"SemaphoreFenced", "slots-fenced", &withlock.LockOptions{Fence: true}, "", 2},
		{"SemaphoreACLWithoutSSubscribe", "slots-acl", nil, "+@all -ssubscribe", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			const clients, perClient, rounds = 3, 2, 6
			var held, overlaps, total atomic.Int32
			var wg sync.WaitGroup
			for range clients {
				rdb := srv.Client()
				if tc.acl != "" {
					rdb = aclClient(t, srv, tc.acl)
				}
				c := waitClientOn(rdb)
				if tc.slots > 1 {
					c = semaphore(t, rdb, tc.slots)
					withlock.SetWaitTimings(c, longPoll, 100*time.Millisecond)
				}
				for range perClient {
					wg.Go(func() {
						for i := range rounds {
							l, err := acquireBounded(c, tc.lock, time.Minute, tc.opts)
							if err != nil {
								t.Error(err)
								return
							}
							if held.Add(1) > int32(tc.slots) {
								overlaps.Add(1)
							}
							total.Add(1)
							time.Sleep(time.Millisecond)
							held.Add(-1)
							if i%2 == 0 {
								err = l.Release(context.Background())
							} else {
								err = l.ReleaseAndRecord(context.Background(), withlock.Run{}, time.Minute)
							}
							if err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
			}
			wg.Wait()
			if n := overlaps.Load(); n != 0 {
				t.Errorf("%d acquisitions found all %d slots already held", n, tc.slots)
			}
			if n := total.Load(); n != clients*perClient*rounds {
				t.Errorf("%d acquisitions, want %d", n, clients*perClient*rounds)
			}
		})
	}
}

// A waiter in the fair line keeps the mark for as long as it waits, past
// the life of one setting (its liveness key's): a release long after the
// waiter joined still hands it the lock at once.
func TestLineWaiterKeepsTheMarkWhileItWaits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	holder := mustAcquire(t, withlock.New(rdb, nil), "long-wait", time.Minute)
	got := acquireAsync(ctx, waitClient(t, srv), "long-wait", time.Minute)
	clitest.Eventually(t, promptly, "waiter never in line", func() bool { return inLine(t, rdb, holder.Key()) == 1 })
	// A liveness key lives 3s: watch the mark for longer than that.
	for end := time.Now().Add(3500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if rdb.Exists(ctx, markOf(holder.Key())).Val() != 1 {
			t.Fatalf("%s is gone while a waiter waits in line", markOf(holder.Key()))
		}
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := served(t, got, "waiter").Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A release that hands the lock over the line deletes the mark with the
// key, and sets it again for the waiters behind: the next holder's release,
// by a Client with no waiters of its own, hands the lock on in turn. A
// semaphore's release of one slot does the same.
func TestHandOverSetsTheMarkAgainForThoseBehind(t *testing.T) {
	t.Parallel()
	for _, slots := range []int{1, 2} {
		t.Run(fmt.Sprint(slots, "Slots"), func(t *testing.T) {
			srv := redistest.Start(t)
			rdb := srv.Client()
			ctx := context.Background()
			client := func() *withlock.Client {
				if slots == 1 {
					return waitClient(t, srv)
				}
				c := semaphore(t, srv.Client(), slots)
				withlock.SetWaitTimings(c, longPoll, 100*time.Millisecond)
				return c
			}
			holders := client()
			var held []*withlock.Lock
			for range slots {
				held = append(held, mustAcquire(t, holders, "behind", time.Minute))
			}
			key := held[0].Key()
			first := acquireAsync(ctx, client(), "behind", time.Minute)
			clitest.Eventually(t, promptly, "first waiter never in line", func() bool { return inLine(t, rdb, key) == 1 })
			second := acquireAsync(ctx, client(), "behind", time.Minute)
			clitest.Eventually(t, promptly, "second waiter never in line", func() bool { return inLine(t, rdb, key) == 2 })
			if err := held[0].Release(ctx); err != nil {
				t.Fatal(err)
			}
			l := served(t, first, "first waiter")
			// Set again by the hand-over for as long as a liveness key
			// lives, 3s (or by the second waiter's refresh, for as long).
			if ttl := rdb.PTTL(ctx, markOf(key)).Val(); ttl <= 0 || ttl > 3*time.Second {
				t.Errorf("the mark's TTL after the hand-over is %s, want up to 3s", ttl)
			}
			recordAndServe(t, l, second)
			for _, l := range held[1:] {
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A Release that hands its lock to a waiter of its own Client outside the
// line keeps the mark for the waiters queued behind that one, who have not
// tried yet and so have not marked it: the next holder's ReleaseAndRecord
// (no hand-off within the Client) still wakes them.
func TestHandOffOutsideTheLineKeepsTheMarkForThoseBehind(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	c := aclWaitClient(t, srv, "+@all -ssubscribe")
	holder := mustAcquire(t, c, "queued", time.Minute)
	first := acquireAsync(ctx, c, "queued", time.Minute)
	clitest.Eventually(t, promptly, "first waiter never marked the key", func() bool {
		return withlock.WaitingWithoutLine(c, "queued") == 1 && rdb.Exists(ctx, markOf(holder.Key())).Val() == 1
	})
	second := acquireAsync(ctx, c, "queued", time.Minute)
	clitest.Eventually(t, promptly, "second waiter never queued", func() bool { return withlock.WaitingWithoutLine(c, "queued") == 2 })
	if done, err := withlock.HandOff(ctx, holder); !done || err != nil {
		t.Fatalf("hand-off: done %v, %v; want the lock handed to the first waiter", done, err)
	}
	recordAndServe(t, served(t, first, "first waiter"), second)
}

// A waiter whose ACL refuses the mark's key cannot be woken by a release:
// its wait ends at once with an error that says so, rather than falling
// back on the minute's poll. A semaphore's waiter too, whose ACL allows
// the slots but not the mark.
func TestWaiterRefusedTheMarkSaysSo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, lock string
		slots      int
		keys       string
	}{
		{"Plain", "narrow", 1, "~lock:*"},
		{"Semaphore", "narrow-slots", 2, "~lock:* ~{lock:narrow-slots}:s:*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			ctx, cancel := context.WithTimeout(context.Background(), promptly)
			defer cancel()
			holders, rdb := withlock.New(srv.Client(), nil), aclClient(t, srv, "resetkeys "+tc.keys+" resetchannels &* +@all -ssubscribe")
			c := waitClientOn(rdb)
			if tc.slots > 1 {
				holders, c = semaphore(t, srv.Client(), tc.slots), semaphore(t, rdb, tc.slots)
			}
			var key string
			for range tc.slots {
				key = mustAcquire(t, holders, tc.lock, time.Minute).Key()
			}
			_, err := c.Acquire(ctx, tc.lock, time.Minute, nil)
			if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "mark the wait for "+key) || !strings.Contains(err.Error(), "NOPERM") {
				t.Fatalf("Acquire = %v, want an error at once naming the refused mark", err)
			}
		})
	}
}

// A waiter that finds its Client already listening for the key's releases
// (a queue lingering after earlier waiters) marks its very first try, as it
// sleeps without trying again: the holder's release then wakes it.
func TestWaiterJoiningAListeningQueueMarksItsFirstTry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	fenced := &withlock.LockOptions{Fence: true}
	other := withlock.New(srv.Client(), nil)
	c := withlock.New(srv.Client(), nil)
	withlock.SetWaitTimings(c, longPoll, longPoll) // the queue lingers
	holder := mustAcquire(t, other, "linger", time.Minute)
	earlier := acquireAsyncWith(ctx, c, "linger", time.Minute, fenced)
	clitest.Eventually(t, promptly, "earlier waiter never queued", func() bool { return withlock.WaitingWithoutLine(c, "linger") == 1 })
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l := served(t, earlier, "earlier waiter")
	seen := withlock.ReleaseMessages(c, "linger")
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Its own release message reaches the queue before the next waiter
	// looks at it, so that nothing else makes that waiter try again.
	clitest.Eventually(t, promptly, "the release message never arrived", func() bool { return withlock.ReleaseMessages(c, "linger") == seen+1 })
	holder = mustAcquire(t, other, "linger", time.Minute)
	got := acquireAsyncWith(ctx, c, "linger", time.Minute, fenced)
	clitest.Eventually(t, promptly, "waiter never queued", func() bool { return withlock.WaitingWithoutLine(c, "linger") == 1 })
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := served(t, got, "waiter").Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// recordAndServe releases l with ReleaseAndRecord, which never hands over
// within its Client, so that the release finds the waiters only through
// the mark, and releases the lock next is then served.
func recordAndServe(t *testing.T, l *withlock.Lock, next <-chan outcome) {
	t.Helper()
	ctx := context.Background()
	if err := l.ReleaseAndRecord(ctx, withlock.Run{}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := served(t, next, "next waiter").Release(ctx); err != nil {
		t.Fatal(err)
	}
}
