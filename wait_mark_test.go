package withlock_test

// The waiting mark "{key}:w": a release with nobody waiting skips the line
// and publishes nothing, and every waiter keeps the mark while it waits, so
// that no release skips it.

import (
	"context"
	"errors"
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
// empty line, no release message. A name with '}' and no hash tag has no
// mark in its slot, and its release still publishes.
func TestReleaseWithNobodyWaitingSkipsTheLineAndPublishesNothing(t *testing.T) {
	rdb := startRedis(t)
	c := withlock.New(rdb, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name, lock string
		record     bool
		publishes  int
	}{
		{"Release", "quiet", false, 0},
		{"ReleaseAndRecord", "quiet-rec", true, 0},
		{"NameWithoutHashTag", "no}tag", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustAcquire(t, c, tc.lock, time.Minute)
			resetStats(t, rdb)
			var err error
			if tc.record {
				err, _ = l.ReleaseAndRecord(ctx, withlock.Run{}, time.Minute)
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
			if sum := calls["eval"] + calls["evalsha"] + calls["get"] + calls["del"]; !tc.record && tc.publishes == 0 && (sum != 3 || len(calls) != 3) {
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
	for _, tc := range []struct {
		name, lock string
		opts       *withlock.LockOptions
		acl        string
	}{
		{"Fenced", "fenced", &withlock.LockOptions{Fence: true}, ""},
		{"ACLWithoutSSubscribe", "acl", nil, "+@all -ssubscribe"},
		{"NameWithoutHashTag", "no}tag", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			const clients, perClient, rounds = 3, 2, 6
			var held, overlaps, total atomic.Int32
			var wg sync.WaitGroup
			for range clients {
				c := waitClient(t, srv)
				if tc.acl != "" {
					c = aclWaitClient(t, srv, tc.acl)
				}
				for range perClient {
					wg.Go(func() {
						for i := range rounds {
							l, err := acquireBounded(c, tc.lock, time.Minute, tc.opts)
							if err != nil {
								t.Error(err)
								return
							}
							if held.Add(1) > 1 {
								overlaps.Add(1)
							}
							total.Add(1)
							time.Sleep(time.Millisecond)
							held.Add(-1)
							if i%2 == 0 {
								err = l.Release(context.Background())
							} else {
								err, _ = l.ReleaseAndRecord(context.Background(), withlock.Run{}, time.Minute)
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
				t.Errorf("%d acquisitions overlapped another holder", n)
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
// by a Client with no waiters of its own, hands the lock on in turn.
func TestHandOverSetsTheMarkAgainForThoseBehind(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	holder := mustAcquire(t, withlock.New(rdb, nil), "behind", time.Minute)
	first := acquireAsync(ctx, waitClient(t, srv), "behind", time.Minute)
	clitest.Eventually(t, promptly, "first waiter never in line", func() bool { return inLine(t, rdb, holder.Key()) == 1 })
	second := acquireAsync(ctx, waitClient(t, srv), "behind", time.Minute)
	clitest.Eventually(t, promptly, "second waiter never in line", func() bool { return inLine(t, rdb, holder.Key()) == 2 })
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l := served(t, first, "first waiter")
	// Set again by the hand-over for as long as a liveness key lives, 3s
	// (or by the second waiter's refresh, for as long).
	if ttl := rdb.PTTL(ctx, markOf(holder.Key())).Val(); ttl <= 0 || ttl > 3*time.Second {
		t.Errorf("the mark's TTL after the hand-over is %s, want up to 3s", ttl)
	}
	recordAndServe(t, l, second)
}

// A Release that hands its lock to a waiter of its own Client outside the
// line keeps the mark for the waiters queued behind that one, who have not
// tried yet and so have not marked it: the next holder's ReleaseAndRecord
// (no hand-off within the Client) still wakes them.
func TestHandOffOutsideTheLineKeepsTheMarkForThoseBehind(t *testing.T) {
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
// back on the minute's poll.
func TestWaiterRefusedTheMarkSaysSo(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), promptly)
	defer cancel()
	holder := mustAcquire(t, withlock.New(srv.Client(), nil), "narrow", time.Minute)
	c := aclWaitClient(t, srv, "resetkeys ~lock:* resetchannels &* +@all -ssubscribe")
	_, err := c.Acquire(ctx, "narrow", time.Minute, nil)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "mark the wait for "+holder.Key()) || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("Acquire = %v, want an error at once naming the refused mark", err)
	}
}

// A waiter that finds its Client already listening for the key's releases
// (a queue lingering after earlier waiters) marks its very first try, as it
// sleeps without trying again: the holder's release then wakes it.
func TestWaiterJoiningAListeningQueueMarksItsFirstTry(t *testing.T) {
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
	if err, _ := l.ReleaseAndRecord(ctx, withlock.Run{}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := served(t, next, "next waiter").Release(ctx); err != nil {
		t.Fatal(err)
	}
}
