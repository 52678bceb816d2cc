package withlock_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

func TestAcquireWaitsForRelease(t *testing.T) {
	ctx := context.Background()
	locker, rdb, _ := setup(t)
	resetStats(t, rdb)
	first, err := locker.TryAcquire(ctx, "job", 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	type result struct {
		l   *withlock.Lock
		err error
		at  time.Time // when Acquire returned
	}
	done := make(chan result, 1)
	asked := time.Now()
	go func() {
		l, err := locker.Acquire(wctx, "job", 10*time.Second, nil)
		done <- result{l, err, time.Now()}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for commandCalls(t, rdb)["set"] < 3 { // ours, then at least two tries of the waiter
		if time.Now().After(deadline) {
			t.Fatal("the waiter never tried to SET")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case r := <-done:
		t.Fatalf("Acquire returned %v, %v while the lock was held", r.l, r.err)
	default:
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("Acquire after Release: %v", r.err)
	}
	// The lock's life is counted from a moment no later than the key got
	// the waiter's token: in the fair line, the last proof that the waiter
	// was queued, which may precede the release. It is never before the
	// wait began, nor after Acquire returned.
	if at := r.l.Acquired(); at.Before(asked) || at.After(r.at) {
		t.Errorf("acquired at %v, outside the wait [%v, %v]", at, asked, r.at)
	}
	if got := rdb.Get(ctx, "lock:job").Val(); got != r.l.Token() || got == first.Token() {
		t.Errorf("key holds %q after the waiter got it, want its own token", got)
	}
}

func TestAcquireWaitsForExpiry(t *testing.T) {
	ctx := context.Background()
	locker, rdb, _ := setup(t)
	// A holder that died: its key goes away only by expiring.
	rdb.Set(ctx, "lock:job", foreignToken, 300*time.Millisecond)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	l, err := locker.Acquire(wctx, "job", 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire of an expiring lock: %v", err)
	}
	if got := rdb.Get(ctx, "lock:job").Val(); got != l.Token() {
		t.Errorf("key holds %q, want our token", got)
	}
}

// An Acquire whose context ends gives up with an error that matches both
// ErrNotObtained and the context's, names the holder without its token,
// leaves the holder's key alone and leaves the line.
func TestAcquireGivesUpAtDeadlineNamingTheHolder(t *testing.T) {
	ctx := context.Background()
	_, rdb, srv := setup(t)
	c := waitClient(t, srv)
	rdb.Set(ctx, "lock:job", foreignToken, time.Minute)
	const wait = 300 * time.Millisecond
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	l, err := c.Acquire(wctx, "job", 10*time.Second, nil)
	took := time.Since(start)
	if l != nil || !errors.Is(err, withlock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline = %v, %v; want ErrNotObtained and DeadlineExceeded", l, err)
	}
	var held *withlock.NotObtainedError
	if !errors.As(err, &held) {
		t.Fatalf("error %q is not a *HeldError", err)
	}
	if want := withlock.HolderOf(foreignToken); held.Holder.ID != want || held.Holder.TTL <= 0 || held.Holder.TTL > time.Minute {
		t.Errorf("HeldError = %+v, want holder %s and a TTL within a minute", held, want)
	}
	if strings.Contains(err.Error(), foreignToken) {
		t.Errorf("error %q shows the holder's token", err)
	}
	if took < wait {
		t.Errorf("gave up after %v, before the %v deadline", took, wait)
	}
	if got := rdb.Get(ctx, "lock:job").Val(); got != foreignToken {
		t.Errorf("key after giving up holds %q, want the holder's token", got)
	}
	if n := withlock.Waiting(c, "job"); n != 0 {
		t.Errorf("%d waiters left in line after giving up", n)
	}
}

func TestAcquireWithCancelledContextSendsNothing(t *testing.T) {
	locker, rdb, _ := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if l, err := locker.Acquire(ctx, "job", time.Second, nil); l != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a cancelled context = %v, %v; want context.Canceled", l, err)
	}
	if rdb.Exists(context.Background(), "lock:job").Val() != 0 {
		t.Error("a cancelled Acquire created the key")
	}
}

// lossyDialer returns a go-redis Dialer whose connections lose the reply to
// the first command containing match: Redis runs it, the client never
// hears back, times out, and go-redis retries the command on a new
// connection. That is the one way a SET NX of ours can find our own token.
func lossyDialer(match string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var armed atomic.Bool
	armed.Store(true)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &lossyConn{Conn: conn, match: []byte(match), armed: &armed}, nil
	}
}

type lossyConn struct {
	net.Conn
	match    []byte
	armed    *atomic.Bool // shared by all connections: lose one reply in all
	dropping atomic.Bool
}

func (c *lossyConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, c.match) && c.armed.CompareAndSwap(true, false) {
		c.dropping.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *lossyConn) Read(b []byte) (int, error) {
	for c.dropping.Load() {
		// Swallow whatever arrives until the client's read deadline.
		if _, err := c.Conn.Read(b); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(b)
}

// TestRetriedAcquireThatLandedIsOurs: a SET NX (or the fenced script) whose
// reply was lost did take the lock; the client's retry then sees our own
// token, which must count as acquired, not as busy.
func TestRetriedAcquireThatLandedIsOurs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		match string // the command whose reply is lost, as go-redis writes it
		opts  *withlock.LockOptions
	}{
		{"set", "\r\nset\r\n", nil},
		{"fenced", "\r\neval\r\n", &withlock.LockOptions{Fence: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			check := srv.Client()
			check.Set(ctx, "{lock:job}:fence", 41, 0) // earlier fenced acquisitions
			rdb := srv.ClientWith(&redis.Options{
				Dialer:      lossyDialer(tc.match),
				ReadTimeout: 300 * time.Millisecond,
				MaxRetries:  2, // the retry this test is about
			})
			l, err := withlock.New(rdb, nil).TryAcquire(ctx, "job", 10*time.Second, tc.opts)
			if err != nil {
				t.Fatalf("TryAcquire whose first reply was lost: %v", err)
			}
			if got := check.Get(ctx, "lock:job").Val(); got != l.Token() {
				t.Errorf("key holds %q, want the lock's token %q", got, l.Token())
			}
			if drawn, _ := check.Get(ctx, "{lock:job}:fence").Int64(); tc.opts != nil && (l.Fence() != drawn || drawn <= 41) {
				t.Errorf("Fence() = %d, want %d, the number above 41 the landed script drew", l.Fence(), drawn)
			}
			if err := l.Release(ctx); err != nil {
				t.Errorf("Release: %v", err)
			}
		})
	}
}
