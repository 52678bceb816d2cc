package withlock_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// An acquisition whose SET reached a Redis that was stopped (SIGSTOP, a long
// fork) returns an error when the reply does not come in time; Redis runs
// the SET when it resumes. The failed acquisition must clean that up rather
// than leave a lock for its full TTL that nobody will release.
func TestAcquireErrorLeavesNoTokenBehind(t *testing.T) {
	const ttl = 30 * time.Second
	for _, tc := range []struct {
		name string
		busy time.Duration // a foreign holder's TTL at the start; 0: free
		stop time.Duration // SIGSTOP this long after the start
		cont time.Duration // SIGCONT this long after the start
	}{
		// TryAcquire's SET is sent to the stopped server and times out
		// after 1s; the server resumes 1.5s in.
		{"TryAcquire", 0, 0, 1500 * time.Millisecond},
		// Acquire waits for the foreign key to expire (about 1-1.5s in,
		// by its poll or the holder's TTL), sends its SET to the stopped
		// server, times out a second later; the server resumes 3s in.
		{"Acquire", 1500 * time.Millisecond, 300 * time.Millisecond, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.Start(t)
			admin := srv.Client()
			c := kaClient(t, srv, time.Second)
			// A connection in the pool, so the stopped server gets the SET
			// itself rather than the handshake of a new connection.
			if err := mustAcquire(t, c, "warm-up", ttl).Release(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.busy > 0 {
				admin.Set(ctx, "lock:job", foreignToken, tc.busy)
			}
			start := time.Now()
			done := make(chan error, 1)
			stop := func() { srv.Signal(syscall.SIGSTOP) }
			if tc.stop == 0 {
				stop()
			}
			go func() {
				var err error
				if tc.busy > 0 {
					_, err = c.Acquire(ctx, "job", ttl, nil)
				} else {
					_, err = c.TryAcquire(ctx, "job", ttl, nil)
				}
				done <- err
			}()
			if tc.stop > 0 {
				time.Sleep(time.Until(start.Add(tc.stop)))
				stop()
			}
			time.Sleep(time.Until(start.Add(tc.cont)))
			srv.Signal(syscall.SIGCONT)
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("no return within 20s")
			}
			t.Logf("%s returned after %s: %v", tc.name, time.Since(start).Round(time.Millisecond), err)
			if err == nil {
				t.Fatal("the acquisition succeeded; the server was to stop it in flight")
			}
			// Whatever the resumed server had queued has run by now; give
			// a late SET a moment more to show.
			if err := admin.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				v := admin.Get(ctx, "lock:job").Val()
				if strings.HasPrefix(v, holder(t)+":") {
					t.Fatalf("after a failed %s the key holds our token, PTTL %s: a lock nobody releases",
						tc.name, admin.PTTL(ctx, "lock:job").Val())
				}
			}
		})
	}
}

// A failed acquisition does not hold on for its cleanup when Redis cannot
// be reached at all: nothing was sent, so there is nothing to clean up.
func TestAcquireErrorWithoutConnectionReturnsPromptly(t *testing.T) {
	srv := redistest.Start(t)
	c := kaClient(t, srv, time.Second)
	srv.Kill()
	start := time.Now()
	_, err := c.TryAcquire(context.Background(), "job", time.Minute, &withlock.LockOptions{Fence: true})
	if err == nil {
		t.Fatal("TryAcquire on a dead server succeeded")
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("TryAcquire on a refused connection took %s: it waited for a cleanup of nothing", d)
	}
}
