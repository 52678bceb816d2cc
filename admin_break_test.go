package withlock_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// The holder of a lock that Client.Break removed learns who broke it
// (LostError.BrokenBy, from the marker Break leaves), a plain lock's or a
// semaphore slot's; with Reacquire it does not take a broken lock back,
// since breaking it was an operator's decision.
func TestKeepAliveLearnsWhoBrokeTheLock(t *testing.T) {
	const ttl = 900 * time.Millisecond
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	breaker := host + ":" + strconv.Itoa(os.Getpid()) // Break's Client is in this process
	tests := []struct {
		name      string
		slots     int
		reacquire bool
	}{
		{"plain", 1, false},
		{"plain with reacquire", 1, true},
		{"semaphore slot", 3, false},
	}
	srv := redistest.Start(t)
	rdb := srv.Client()
	admin := withlock.New(srv.Client(), nil)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			locker, err := withlock.NewSemaphore(srv.ClientWith(&redis.Options{MaxRetries: -1}), tt.slots, nil)
			if err != nil {
				t.Fatal(err)
			}
			name := "broken-{" + strconv.Itoa(i) + "}" // a hash tag: the marker is then under the prefix, which List scans
			l, err := locker.TryAcquire(ctx, name, ttl, nil)
			if err != nil {
				t.Fatal(err)
			}
			ka := l.KeepAlive(ctx, &withlock.KeepAliveOptions{Reacquire: tt.reacquire})
			defer ka.Stop()
			if st, err := admin.Break(ctx, name); err != nil || !st.Held {
				t.Fatalf("Break = %+v, %v; want the lock it removed", st, err)
			}
			waitLost(t, ka, 5*time.Second)
			var lerr *withlock.LostError
			err = ka.Err()
			if !errors.As(err, &lerr) || !errors.Is(err, withlock.ErrLockNotHeld) || lerr.BrokenBy != breaker {
				t.Fatalf("Err() = %v (BrokenBy %q); want ErrLockNotHeld broken by %s", err, lerr.BrokenBy, breaker)
			}
			if !strings.Contains(err.Error(), "broken by "+breaker) {
				t.Errorf("Err() says %q, want it to name the breaker", err)
			}
			ka.Stop()
			if n := rdb.Exists(ctx, l.Key()).Val(); n != 0 {
				t.Error("the broken lock was taken back")
			}
			if list, err := admin.List(ctx, nil); err != nil || len(list) != 0 {
				t.Errorf("List after the break = %v, %v; want no lock (the marker is none)", list, err)
			}
		})
	}
}

// The marker speaks only of the tokens Break removed: a later holder whose
// key vanishes otherwise is not told its lock was broken, and with
// Reacquire takes it back.
func TestBreakMarkerNamesOnlyTheTokensItRemoved(t *testing.T) {
	locker, rdb := kaSetup(t)
	ctx := context.Background()
	first, err := locker.TryAcquire(ctx, "broken-later", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locker.Break(ctx, "broken-later"); err != nil {
		t.Fatal(err)
	}
	l, err := locker.TryAcquire(ctx, "broken-later", 900*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() == first.Token() {
		t.Fatal("two acquisitions drew one token")
	}
	rl := make(renewLog, 16)
	ka := l.KeepAlive(ctx, rl.options())
	defer ka.Stop()
	if err := rdb.Del(ctx, l.Key()).Err(); err != nil {
		t.Fatal(err)
	}
	rl.waitFor(t, ka, reacquired, 5*time.Second)
	if v := rdb.Get(ctx, l.Key()).Val(); v != l.Token() {
		t.Errorf("key holds %q after the reacquisition, want the later holder's token", v)
	}
}

// Break (--break) publishes the release message: a waiter outside the fair
// line (here a fenced one) is woken by it and takes the lock at once, not at
// the holder's expiry nor at its poll (both minutes away).
func TestBreakWakesWaitersOutsideTheLineAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	holders := withlock.New(srv.Client(), nil)
	mustAcquire(t, holders, "break-fenced", 5*time.Minute)
	c := waitClient(t, srv) // polls once a minute
	ctx, cancel := context.WithTimeout(context.Background(), servedWithin)
	defer cancel()
	got := make(chan outcome, 1)
	go func() {
		l, err := c.Acquire(ctx, "break-fenced", time.Minute, &withlock.LockOptions{Fence: true})
		got <- outcome{l, err, time.Now()}
	}()
	clitest.Eventually(t, promptly, "the fenced waiter never waited", func() bool { return withlock.Waiting(c, "break-fenced") == 1 })
	broke := time.Now()
	if _, err := holders.Break(ctx, "break-fenced"); err != nil {
		t.Fatal(err)
	}
	o := wait(t, got, promptly, "fenced waiter after Break (not woken by its message?)")
	if o.err != nil {
		t.Fatalf("fenced waiter after Break: %v", o.err)
	}
	t.Logf("the fenced waiter took the lock %s after Break", o.at.Sub(broke).Round(time.Millisecond))
	_ = o.lock.Release(ctx)
}

// Break hands a plain lock to the head of the fair line in its own script,
// as a release does: the waiter, whose checks and poll are a minute apart,
// holds the lock as soon as the hand-over's message arrives, well under the
// second a check would take.
func TestBreakHandsTheLockToTheLineHeadAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	holders := withlock.New(srv.Client(), nil)
	holder := mustAcquire(t, holders, "break-line", 5*time.Minute)
	c := waitClient(t, srv) // checks and polls once a minute
	ctx, cancel := context.WithTimeout(context.Background(), servedWithin)
	defer cancel()
	got := acquireAsync(ctx, c, "break-line", time.Minute)
	clitest.Eventually(t, promptly, "the waiter never joined the line", func() bool { return inLine(t, rdb, holder.Key()) == 1 })
	broke := time.Now()
	if _, err := holders.Break(ctx, "break-line"); err != nil {
		t.Fatal(err)
	}
	// One message's delivery; a check would come a minute later. The
	// bound leaves a loaded machine half a second.
	const bound = 500 * time.Millisecond
	o := wait(t, got, bound, "the line's head after Break (not handed over by it?)")
	if o.err != nil {
		t.Fatalf("waiter after Break: %v", o.err)
	}
	t.Logf("the line's head took the lock %s after Break", o.at.Sub(broke).Round(time.Millisecond))
	if v := rdb.Get(ctx, holder.Key()).Val(); v != o.lock.Token() {
		t.Errorf("the key holds %q, want the waiter's token", v)
	}
	_ = o.lock.Release(ctx)
}
