package withlock_test

// Acquire waits for a release or an expiry, gives up at its deadline saying
// why, and a retried SET that landed is ours.

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
	t.Parallel()
	ctx := context.Background()
	locker, rdb, _ := setup(t)
	resetStats(t, rdb)
	first := mustAcquire(t, locker, "job", 30*time.Second)
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// A wait that its context ends says why in words, in the fair line and
// outside it, while errors.Is still matches the context's cause: the
// deadline, a cancel, or the caller's own cause. Go's "context deadline
// exceeded" reads as a fault of the library; it is the caller's limit.
func TestGivenUpWaitSaysWhyInWords(t *testing.T) {
	t.Parallel()
	shutdown := errors.New("the service is shutting down")
	for _, tc := range []struct {
		name  string
		ctx   func() (context.Context, context.CancelFunc)
		cause error
		words string
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 300*time.Millisecond)
		}, context.DeadlineExceeded, "gave up waiting: the wait's deadline passed"},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled, "gave up waiting: the wait was cancelled"},
		{"own cause", func() (context.Context, context.CancelFunc) {
			return context.WithTimeoutCause(context.Background(), 300*time.Millisecond, shutdown)
		}, shutdown, "gave up waiting: the service is shutting down"},
	} {
		for _, way := range []struct {
			name string
			opts *withlock.LockOptions
		}{{"fair line", nil}, {"outside the line", &withlock.LockOptions{Fence: true}}} {
			t.Run(tc.name+"/"+way.name, func(t *testing.T) {
				c, _ := waitSetup(t)
				holder := mustAcquire(t, c, "job", time.Minute)
				defer holder.Release(context.Background())
				ctx, cancel := tc.ctx()
				defer cancel()
				o := wait(t, acquireAsyncWith(ctx, c, "job", time.Minute, way.opts), promptly, tc.name)
				if o.err == nil {
					t.Fatal("Acquire of a held lock succeeded")
				}
				if !errors.Is(o.err, withlock.ErrNotObtained) || !errors.Is(o.err, tc.cause) {
					t.Errorf("Acquire = %v, want ErrNotObtained and %v", o.err, tc.cause)
				}
				msg := o.err.Error()
				if !strings.HasSuffix(msg, tc.words) || !strings.HasPrefix(msg, "lock:job is held by ") {
					t.Errorf("Acquire's error %q, want the holder then %q", msg, tc.words)
				}
			})
		}
	}

	t.Run("ended before the first try", func(t *testing.T) {
		c, _ := waitSetup(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Acquire(ctx, "job", time.Minute, nil)
		want := "acquire lock:job: not tried: the wait was cancelled"
		if !errors.Is(err, context.Canceled) || err == nil || err.Error() != want {
			t.Errorf("Acquire with a cancelled context = %v, want %q matching context.Canceled", err, want)
		}
	})
}

// A NotObtainedError reads as a sentence about the key: never "lock
// lock:x", "for 0s" or "expires in 0s" when the time held or left is
// nothing or unknown.
func TestNotObtainedErrorReadsWell(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, tc := range []struct {
		name string
		err  withlock.NotObtainedError
		want string
	}{
		{"held a while", withlock.NotObtainedError{Key: "lock:x", Holder: withlock.Holder{ID: "web2:4711", TTL: 24500 * time.Millisecond, Since: now.Add(-192 * time.Second)}},
			"lock:x is held by web2:4711 for 3m12s (expires in 24.5s)"},
		{"taken just now", withlock.NotObtainedError{Key: "lock:x", Holder: withlock.Holder{ID: "web2:4711", TTL: 30 * time.Second, Since: now}},
			"lock:x is held by web2:4711, taken just now (expires in 30s)"},
		{"expiry unknown", withlock.NotObtainedError{Key: "lock:x", Holder: withlock.Holder{ID: "unknown"}},
			"lock:x is held by unknown"},
		{"semaphore", withlock.NotObtainedError{Key: "lock:b", Holder: withlock.Holder{ID: "db1:7352", TTL: 29 * time.Second, Since: now}, Slots: 2},
			"all 2 slots of lock:b are held; the first to free is db1:7352's, taken just now (expires in 29s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.err.Error()
			if got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}
