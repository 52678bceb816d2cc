package withlock_test

import (
	"context"
	"slices"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// listed reports whether lister's List shows key held with token's holder.
func listed(t *testing.T, lister *withlock.Client, key, token string) bool {
	t.Helper()
	list, err := lister.List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range list {
		if st.Key == key {
			if !st.Held {
				return false
			}
			if len(st.Holders) > 0 {
				return slices.ContainsFunc(st.Holders, func(h withlock.Holder) bool { return h.ID == withlock.HolderOf(token) })
			}
			return st.Holder.ID == withlock.HolderOf(token)
		}
	}
	return false
}

// A lock is listed from the moment it is taken, before any renewal and
// once the index of names holds other names, whatever the acquisition's
// options and however it was taken: by a fresh Client's SET, fenced, with
// a min-hold, a semaphore's slot, a waiter handed the lock by the release
// in the fair line, and a waiter of the same Client handed it by its
// Release outside the line. On one Redis, where List reads the index, and
// on a quorum, where it scans.
func TestListShowsALockFromTheMomentItIsTaken(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client()
	lister := withlock.New(rdb, nil)
	runOnce(t, lister, "earlier", 0) // the index holds a name
	take := func(opts *withlock.LockOptions) func(t *testing.T, name string) *withlock.Lock {
		return func(t *testing.T, name string) *withlock.Lock {
			l, err := withlock.New(srv.Client(), nil).TryAcquire(ctx, name, time.Minute, opts)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
	}
	// handed has a first Client hold name, a waiter of c wait for it, and
	// the holder release it to the waiter.
	handed := func(holder, c *withlock.Client, inLine func(name string) bool) func(t *testing.T, name string) *withlock.Lock {
		return func(t *testing.T, name string) *withlock.Lock {
			h := mustAcquire(t, holder, name, time.Minute)
			ch := acquireAsync(ctx, c, name, time.Minute)
			deadline := time.Now().Add(promptly)
			for !inLine(name) {
				if time.Now().After(deadline) {
					t.Fatal("the waiter never queued")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}
			return served(t, ch, "the waiter")
		}
	}
	fairLine := func(name string) bool { return inLine(t, rdb, lister.Key(name)) == 1 }
	local := waitClient(t, srv)
	localQueue := func(name string) bool { return withlock.WaitingWithoutLine(local, name) == 1 }
	for _, tc := range []struct {
		name string
		take func(t *testing.T, name string) *withlock.Lock
	}{
		{"plain", take(nil)},
		{"fenced", take(&withlock.LockOptions{Fence: true})},
		{"min-hold", take(&withlock.LockOptions{MinHold: time.Hour})},
		{"slot", func(t *testing.T, name string) *withlock.Lock {
			return mustAcquire(t, semaphore(t, srv.Client(), 2), name, time.Minute)
		}},
		{"handed-in-line", handed(withlock.New(srv.Client(), nil), waitClient(t, srv), fairLine)},
		{"a}handed-locally", handed(local, local, localQueue)}, // '}' without a hash tag: no line
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.take(t, tc.name)
			if !listed(t, lister, l.Key(), l.Token()) {
				t.Errorf("%s is held by %s but not listed", l.Key(), withlock.HolderOf(l.Token()))
			}
		})
	}

	t.Run("quorum", func(t *testing.T) {
		_, _, c := quorumNodes(t)
		l := mustAcquire(t, c, "young", time.Minute)
		if !listed(t, c, l.Key(), l.Token()) {
			t.Errorf("the quorum's List misses %s", l.Key())
		}
	})
}

// A waiter that rejoins the fair line (its entry was skipped while its
// Client seemed dead, say) writes its name into the index again with its
// entry, when its Client's write is no longer recent: the release then hands
// it the lock without a SET of its own, and the lock is listed.
func TestAWaiterThatRejoinsTheLineWritesItsNameAgain(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client()
	holder := withlock.New(rdb, nil)
	waiter := withlock.New(srv.Client(), nil)
	withlock.SetWaitTimings(waiter, 50*time.Millisecond, time.Second)
	h := mustAcquire(t, holder, "rejoin", time.Minute)
	ch := acquireAsync(ctx, waiter, "rejoin", time.Minute)
	queue := lineBaseOf(h.Key()) + ":q"
	var entry string
	eventually(t, "the waiter queued", func() bool {
		entry = rdb.LIndex(ctx, queue, 0).Val()
		return entry != ""
	})
	// Its entry goes as a release skipping a dead waiter's would; its
	// Client's write goes stale, and the index loses the name.
	withlock.SetIndexTimings(waiter, time.Millisecond, withlock.PruneAfter)
	rdb.LRem(ctx, queue, 1, entry)
	rdb.HDel(ctx, indexOf, h.Key())
	eventually(t, "the waiter rejoined", func() bool { return rdb.LLen(ctx, queue).Val() == 1 })
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l := served(t, ch, "the waiter")
	if !listed(t, holder, l.Key(), l.Token()) {
		t.Errorf("%s, handed to a waiter that rejoined the line, is not listed", l.Key())
	}
}

// eventually polls cond until it holds, failing after promptly.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(promptly); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, promptly)
		}
	}
}
