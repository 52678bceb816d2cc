package withlock_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/redistest"
)

// gatedSubscriptionDialer dials like net.Dialer, except that a dial made by
// go-redis for a Pub/Sub connection (its caller's stack runs through
// (*PubSub)) reports on dialing and then waits until open is closed: a
// subscription connection slow to be accepted, with every other
// connection of the Client prompt.
func gatedSubscriptionDialer(open <-chan struct{}, dialing chan<- struct{}) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dialledByPubSub() {
			select {
			case dialing <- struct{}{}:
			default:
			}
			select {
			case <-open:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
}

func dialledByPubSub() bool {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "go-redis/v9.(*PubSub)") {
			return true
		}
		if !more {
			return false
		}
	}
}

// While a waiter's subscription connection is slow to be dialled, the
// rest of its Client goes on: a Release of another lock is not held up
// behind the dial. The waiter itself still joins the line only once its
// subscription is confirmed, and then gets the lock at the release.
func TestSlowSubscriptionDialStallsNoRelease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts *withlock.LockOptions
	}{
		{"in the line", nil},
		{"fenced", &withlock.LockOptions{Fence: true}}, // waits outside the line, on the key's channel
	} {
		t.Run(tc.name, func(t *testing.T) { testSlowSubscriptionDial(t, tc.opts) })
	}
}

func testSlowSubscriptionDial(t *testing.T, opts *withlock.LockOptions) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	open, dialing := make(chan struct{}), make(chan struct{}, 1)
	var once sync.Once
	openGate := func() { once.Do(func() { close(open) }) }
	t.Cleanup(openGate)
	c := withlock.New(srv.ClientWith(&redis.Options{
		Dialer:      gatedSubscriptionDialer(open, dialing),
		DialTimeout: time.Minute, // the gate, not go-redis, decides when the dial ends
	}), nil)
	withlock.SetWaitTimings(c, longPoll, 100*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	holder := mustAcquire(t, c, "slow-sub", time.Minute)
	other := mustAcquire(t, c, "slow-sub-other", time.Minute)
	waiter := make(chan outcome, 1)
	go func() {
		l, err := c.Acquire(ctx, "slow-sub", time.Minute, opts)
		waiter <- outcome{l, err, time.Now()}
	}()
	select {
	case <-dialing:
	case <-time.After(promptly):
		t.Fatalf("the waiter dialled no subscription connection within %s", promptly)
	}

	released := make(chan error, 1)
	start := time.Now()
	go func() { released <- other.Release(ctx) }()
	const bound = 5 * time.Second // a Release takes milliseconds; the dial hangs until the gate opens
	select {
	case err := <-released:
		if err != nil {
			t.Fatalf("Release of another lock while the subscription dials: %v", err)
		}
		t.Logf("Release of another lock took %s while the subscription dialled", time.Since(start).Round(time.Millisecond))
	case <-time.After(bound):
		openGate()
		t.Fatalf("Release of another lock of the Client blocked for %s behind a waiter's slow subscription dial (a network call under the line's mutex)", bound)
	}
	if opts == nil {
		if n := inLine(t, rdb, holder.Key()); n != 0 {
			t.Fatalf("%d entries in the line before the waiter's subscription is confirmed: a release would skip it as dead", n)
		}
	}

	openGate()
	if opts == nil {
		clitest.Eventually(t, promptly, "the waiter never joined the line once its subscription was dialled", func() bool {
			return inLine(t, rdb, holder.Key()) == 1
		})
	} else {
		clitest.Eventually(t, promptly, "the waiter never subscribed to the key's channel once its connection was dialled", func() bool {
			return subscribers(t, rdb, holder.Key()) == 1
		})
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	o := wait(t, waiter, promptly, "waiter after the release")
	if o.err != nil {
		t.Fatalf("waiter: %v", o.err)
	}
	if got := rdb.Get(ctx, holder.Key()).Val(); got != o.lock.Token() {
		t.Errorf("the key holds %q, want the waiter's token", got)
	}
	_ = o.lock.Release(ctx)
}

// stallAfterExtend wraps a Client's connections: when one writes the
// extend script, it first calls before (with Redis still answering), lets
// the script through, and pauses Redis (SIGSTOP) the moment the reply has
// been read, then closes stopped. So the Client has its answer and Redis
// stalls right at the next step, deterministically.
type stallAfterExtend struct {
	pid     int
	before  func()
	once    sync.Once
	stopped chan struct{}
}

func (s *stallAfterExtend) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: conn, s: s}, nil
}

type stallConn struct {
	net.Conn
	s     *stallAfterExtend
	armed bool // this connection sent the extend: stop Redis at its reply
}

func (c *stallConn) Write(b []byte) (int, error) {
	// The renewal's script, or the first renewal's (with the index).
	if w := string(b); strings.Contains(w, withlock.ExtendScript()) || strings.Contains(w, withlock.ExtendIndexScript()) {
		c.s.once.Do(func() {
			c.s.before()
			c.armed = true
		})
	}
	return c.Conn.Write(b)
}

func (c *stallConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.armed && n > 0 {
		c.armed = false
		_ = syscall.Kill(c.s.pid, syscall.SIGSTOP)
		close(c.s.stopped)
	}
	return n, err
}

// A waiter handed the lock so late that it expired before it could renew
// it queues again. If Redis stalls right then, before the new
// subscription is confirmed, the waiter still gives up at its deadline or
// cancellation, and leaves the line: no entry of it remains in its Client,
// and, once Redis is back, none in Redis and no subscription left open.
func TestRequeuedWaiterHonoursContextWhenRedisStalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		cancel bool // cancel the Acquire; otherwise its deadline passes
	}{
		{"deadline", false},
		{"cancellation", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			rdb := srv.Client()
			name := "requeue-" + tc.name
			key := "lock:" + name
			channels := keys.Channel(key, "*") // the waiter's subscription
			subscribed := func() bool {
				chs, err := rdb.PubSubShardChannels(context.Background(), channels).Result()
				return err == nil && len(chs) > 0
			}
			stall := &stallAfterExtend{pid: srv.Pid(), stopped: make(chan struct{})}
			stall.before = func() {
				// The waiter's room lingered out after the hand-over, so
				// the re-queue subscribes anew; and the handed key is
				// gone, so the extend fails as for an expired lock.
				for end := time.Now().Add(promptly); subscribed(); time.Sleep(5 * time.Millisecond) {
					if time.Now().After(end) {
						t.Errorf("the waiter's subscription still open %s after the hand-over", promptly)
						break
					}
				}
				rdb.Del(context.Background(), key)
			}
			t.Cleanup(func() { _ = syscall.Kill(srv.Pid(), syscall.SIGCONT) })
			c := withlock.New(srv.ClientWith(&redis.Options{Dialer: stall.dial}), nil)
			withlock.SetWaitTimings(c, longPoll, 50*time.Millisecond)
			holder := mustAcquire(t, withlock.New(srv.Client(), nil), name, time.Minute)

			const deadline = 10 * time.Second // the steps before the stall take well under a second
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			if tc.cancel {
				ctx, cancel = context.WithCancel(context.Background())
				defer cancel()
			}
			const ttl = 2 * time.Second
			start := time.Now()
			waiter := acquireAsync(ctx, c, name, ttl)
			clitest.Eventually(t, promptly, "the waiter never joined the line", func() bool { return inLine(t, rdb, key) == 1 })
			// A hand-over more than ttl/8 after the waiter was last seen in
			// line makes it renew before it returns.
			time.Sleep(ttl / 4)
			if err := holder.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			select {
			case <-stall.stopped:
			case o := <-waiter:
				t.Fatalf("the waiter returned (%v) without renewing the late hand-over", o.err)
			case <-time.After(promptly):
				t.Fatalf("the waiter sent no renewal within %s of the hand-over", promptly)
			}
			stoppedAt := time.Now()
			clitest.Eventually(t, promptly, "the waiter did not queue again after its renewal failed", func() bool {
				return withlock.Waiting(c, name) == 1
			})
			if tc.cancel {
				cancel()
			}
			end := start.Add(deadline)
			if tc.cancel {
				end = time.Now()
			}
			const bound = 2 * time.Second // for a loaded machine; giving up sends nothing to Redis
			var o outcome
			select {
			case o = <-waiter:
			case <-time.After(time.Until(end) + bound):
				t.Fatalf("Acquire did not return within %s of its %s while Redis stalled at its re-queue (Redis stopped %s after the start)",
					bound, tc.name, stoppedAt.Sub(start).Round(time.Millisecond))
			}
			t.Logf("Acquire returned %s after its %s: %v", o.at.Sub(end).Round(time.Millisecond), tc.name, o.err)
			want := context.DeadlineExceeded
			if tc.cancel {
				want = context.Canceled
			}
			if !errors.Is(o.err, want) || !errors.Is(o.err, withlock.ErrNotObtained) {
				t.Errorf("Acquire = %v, want ErrNotObtained and %v", o.err, want)
			}
			if n := withlock.Waiting(c, name); n != 0 {
				t.Errorf("%d waiters of the Client still in line after the Acquire gave up", n)
			}

			_ = syscall.Kill(srv.Pid(), syscall.SIGCONT)
			clitest.Eventually(t, promptly, "the given-up waiter's subscription still open after Redis resumed", func() bool { return !subscribed() })
			if n := inLine(t, rdb, key); n != 0 {
				t.Errorf("%d entries in the line after the waiter gave up, want none", n)
			}
			if n := rdb.Exists(context.Background(), key).Val(); n != 0 {
				t.Errorf("the lock is held (%q) after the only waiter gave up", rdb.Get(context.Background(), key).Val())
			}
		})
	}
}
