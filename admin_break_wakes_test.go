package withlock_test

import (
	"context"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

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

// Break does not serve the fair line itself (it publishes on the key's
// channel, which the line's waiters do not listen to): the line's head takes
// the lock at its next check, which every waiter runs each poll interval
// (1 s, plus up to a quarter of jitter). So within about 1.25 s, not at the
// holder's expiry.
func TestBreakFreesTheLineWithinOnePoll(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	holders := withlock.New(srv.Client(), nil)
	holder := mustAcquire(t, holders, "break-line", 5*time.Minute)
	c := withlock.New(srv.Client(), nil) // the default poll
	ctx, cancel := context.WithTimeout(context.Background(), servedWithin)
	defer cancel()
	got := acquireAsync(ctx, c, "break-line", time.Minute)
	clitest.Eventually(t, promptly, "the waiter never joined the line", func() bool { return inLine(t, rdb, holder.Key()) == 1 })
	broke := time.Now()
	if _, err := holders.Break(ctx, "break-line"); err != nil {
		t.Fatal(err)
	}
	// 1.25 s at most after its last check, plus the check's round trip:
	// the slack is for a loaded machine, far below the holder's 5 minutes.
	const bound = 1250*time.Millisecond + 5*time.Second
	o := wait(t, got, bound, "the line's head after Break")
	if o.err != nil {
		t.Fatalf("waiter after Break: %v", o.err)
	}
	t.Logf("the line's head took the lock %s after Break", o.at.Sub(broke).Round(time.Millisecond))
	if v := rdb.Get(ctx, holder.Key()).Val(); v != o.lock.Token() {
		t.Errorf("the key holds %q, want the waiter's token", v)
	}
	_ = o.lock.Release(ctx)
}
