package withlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A Release with a waiter of the same Client first in line hands the lock
// to it in the same round trip: one EVAL that sets the key to the waiter's
// token and publishes nothing, so nobody else in line wakes.
func TestReleaseHandsOffToWaiterInLine(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	c := waitClient(t, srv)
	holder := mustAcquire(t, c, "handoff", time.Minute)
	first := acquireAsync(context.Background(), c, "handoff", time.Minute)
	// The second starts only once the first is queued in Redis: both wait
	// for the Client's subscription before they push, in either order.
	clitest.Eventually(t, promptly, "first waiter never in line", func() bool {
		return withlock.Waiting(c, "handoff") == 1 && inLine(t, rdb, holder.Key()) == 1
	})
	second := acquireAsync(context.Background(), c, "handoff", time.Minute)
	clitest.Eventually(t, promptly, "second waiter never in line", func() bool { return withlock.Waiting(c, "handoff") == 2 })
	clitest.Eventually(t, promptly, "never in the line", func() bool { return inLine(t, rdb, holder.Key()) == 2 })

	resetStats(t, rdb)
	if err := holder.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	o := wait(t, first, promptly, "first waiter")
	if o.err != nil {
		t.Fatalf("first waiter: %v", o.err)
	}
	if v, _ := rdb.Get(context.Background(), "lock:handoff").Result(); v != o.lock.Token() {
		t.Fatalf("key holds %q, want the first waiter's token", v)
	}
	// Give a spurious wake-up of the second waiter time to show.
	time.Sleep(200 * time.Millisecond)
	calls := commandCalls(t, rdb)
	if calls["eval"] != 1 || calls["set"] != 1 || calls["publish"]+calls["spublish"] != 0 {
		t.Errorf("handoff sent %v, want one eval setting the key once and publishing nothing", calls)
	}
	select {
	case o := <-second:
		t.Fatalf("second waiter returned %v, %v while the first holds the lock", o.lock, o.err)
	default:
	}
	if err := o.lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o := wait(t, second, promptly, "second waiter"); o.err != nil {
		t.Fatalf("second waiter: %v", o.err)
	}
}

// A waiter whose context ends while a Release hands the lock to it either
// gets the lock or leaves nothing behind.
func TestHandOffRacingCancelLeavesNothingLocked(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	c := waitClient(t, srv)
	for i := range 100 {
		holder := mustAcquire(t, c, "cancel", time.Minute)
		ctx, cancel := context.WithCancel(context.Background())
		got := acquireAsync(ctx, c, "cancel", time.Minute)
		clitest.Eventually(t, promptly, "waiter never in line", func() bool { return withlock.Waiting(c, "cancel") == 1 })
		go func() {
			time.Sleep(time.Duration(i%20) * 20 * time.Microsecond)
			cancel()
		}()
		if err := holder.Release(context.Background()); err != nil {
			t.Fatalf("iteration %d: Release: %v", i, err)
		}
		o := wait(t, got, promptly, fmt.Sprintf("iteration %d", i))
		switch {
		case o.err == nil:
			if err := o.lock.Release(context.Background()); err != nil {
				t.Fatalf("iteration %d: the handed-off lock was not ours: %v", i, err)
			}
		case !errors.Is(o.err, context.Canceled):
			t.Fatalf("iteration %d: %v", i, o.err)
		}
		cancel()
		if n, _ := rdb.Exists(context.Background(), "lock:cancel").Result(); n != 0 {
			t.Fatalf("iteration %d: lock:cancel left behind (waiter returned %v)", i, o.err)
		}
	}
}

// A fenced waiter is not handed the lock (its acquisition is a script):
// it is woken by the release message and draws its fencing number.
func TestFencedWaiterIsWokenNotHandedOff(t *testing.T) {
	srv := redistest.Start(t)
	c := waitClient(t, srv)
	holder := mustAcquire(t, c, "fenced", time.Minute)
	got := make(chan outcome, 1)
	go func() {
		l, err := c.Acquire(context.Background(), "fenced", time.Minute, &withlock.LockOptions{Fence: true})
		got <- outcome{l, err, time.Now()}
	}()
	clitest.Eventually(t, promptly, "waiter never in line", func() bool { return withlock.Waiting(c, "fenced") == 1 })
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := wait(t, got, promptly, "fenced waiter")
	if o.err != nil {
		t.Fatalf("fenced waiter: %v", o.err)
	}
	if o.lock.Fence() <= 0 {
		t.Errorf("fenced waiter got fence %d, want a fencing number", o.lock.Fence())
	}
}
