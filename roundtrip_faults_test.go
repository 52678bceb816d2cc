package withlock_test

// Shared round trips (roundtrip.go) under faults: a connection killed
// under one, and callers giving up at random moments.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// lockKeys are the keys under "lock:" left on rdb, but the index of names.
func lockKeys(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	all, err := rdb.Keys(context.Background(), "lock:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, k := range all {
		if typ := rdb.Type(context.Background(), k).Val(); typ != "hash" { // the index of names is a hash
			left = append(left, k)
		}
	}
	return left
}

// pausedClients counts the connections of user that Redis holds in a
// CLIENT PAUSE WRITE with a command read (flag b).
func pausedClients(t *testing.T, admin *redis.Client, user string) int {
	t.Helper()
	list, err := admin.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(list, "\n") {
		f := " " + line + " "
		if strings.Contains(f, " user="+user+" ") && strings.Contains(f, " flags=b ") {
			n++
		}
	}
	return n
}

// TestConnectionKilledUnderASharedRoundTripFailsEachCallerAndLeavesNoLock
// holds a lone acquisition in Redis (CLIENT PAUSE WRITE) with callers
// queued behind it, kills its connection, then kills the connection of the
// shared round trip that follows while Redis holds it too. Each caller gets
// an error of its own, none hangs, no acquisition is left locked, and the
// lock whose release failed is still released after.
func TestConnectionKilledUnderASharedRoundTripFailsEachCallerAndLeavesNoLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client()
	const user = "sharer"
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: user, Password: "pw", MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { _ = rdb.Close() })
	c := withlock.New(rdb, nil)
	withlock.OneTripInFlight(c) // the round trip held in flight is the only one: every other caller waits for the next
	warm, err := c.TryAcquire(ctx, "warm", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		t.Fatal(err)
	}
	held, err := c.TryAcquire(ctx, "held", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}

	if err := admin.Do(ctx, "CLIENT", "PAUSE", "60000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "CLIENT", "UNPAUSE") })
	lead := make(chan callResult, 1)
	go func() { lead <- acquiring(c, ctx, "lead")() }()
	eventually(t, "Redis holds the lone acquisition", func() bool { return pausedClients(t, admin, user) == 1 })

	callers := []func() callResult{
		acquiring(c, ctx, "a"), acquiring(c, ctx, "b"), acquiring(c, ctx, "c"),
		releasing(ctx, held), // last: behind the SETs Redis holds, it never runs
	}
	results := make([]chan callResult, len(callers))
	for i, call := range callers {
		results[i] = make(chan callResult, 1)
		go func() { results[i] <- call() }()
	}
	eventually(t, "every caller waits for the next round trip", func() bool {
		_, n := withlock.SharedTrips(c)
		return n == len(callers)
	})

	kill := func() {
		t.Helper()
		if err := admin.Do(ctx, "CLIENT", "KILL", "USER", user).Err(); err != nil {
			t.Fatal(err)
		}
	}
	kill()
	if r := recv(t, lead); r.err == nil || r.l != nil {
		t.Errorf("lone acquisition on a killed connection: got %v, %v; want an error", r.l, r.err)
	}
	eventually(t, "Redis holds the shared round trip", func() bool {
		_, n := withlock.SharedTrips(c)
		return n == 0 && pausedClients(t, admin, user) == 1
	})
	kill()
	for i := range callers {
		if r := recv(t, results[i]); r.err == nil || r.l != nil {
			t.Errorf("caller %d on a killed connection: got %v, %v; want an error", i, r.l, r.err)
		}
	}

	if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := held.Release(ctx); err != nil {
		t.Errorf("release after the failed one: %v", err)
	}
	eventually(t, "no lock is left", func() bool { return len(lockKeys(t, admin)) == 0 })
	if inFlight, n := withlock.SharedTrips(c); inFlight || n != 0 {
		t.Errorf("after every caller returned: in flight %v, %d waiting", inFlight, n)
	}
}

// TestManyCallersSharingRoundTripsKeepLocksExclusive runs goroutines that
// take and release a few names on one Client, some of them giving up at a
// random moment, so that shared round trips carry mixed outcomes and
// abandoned commands: no two holders ever hold one name at once (a reply
// handed to the wrong caller would show here), every failure is a busy
// lock or the caller's own context, and once all are done no lock is left.
func TestManyCallersSharingRoundTripsKeepLocksExclusive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, rdb, _ := setup(t)
	const goroutines, rounds, names = 16, 60, 4
	var holders [names]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				i := (g + r) % names
				tctx, cancel := context.WithCancel(ctx)
				if r%3 == 0 { // give up at some moment of the try, or after it
					time.AfterFunc(time.Duration(r%7)*50*time.Microsecond, cancel)
				}
				l, err := c.TryAcquire(tctx, fmt.Sprintf("n%d", i), time.Minute, nil)
				switch {
				case err == nil:
					if n := holders[i].Add(1); n != 1 {
						errs <- fmt.Errorf("name n%d has %d holders", i, n)
					}
					time.Sleep(100 * time.Microsecond) // held a while: others try meanwhile
					holders[i].Add(-1)
					if err := l.Release(ctx); err != nil {
						errs <- fmt.Errorf("release n%d: %w", i, err)
					}
				case errors.Is(err, withlock.ErrNotObtained), errors.Is(err, context.Canceled):
				default:
					errs <- fmt.Errorf("acquire n%d: %w", i, err)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	eventually(t, "no lock is left", func() bool { return len(lockKeys(t, rdb)) == 0 })
}
