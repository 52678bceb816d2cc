package withlock_test

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
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
	waiter := acquireAsync(ctx, c, "slow-sub", time.Minute)
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
	if n := inLine(t, rdb, holder.Key()); n != 0 {
		t.Fatalf("%d entries in the line before the waiter's subscription is confirmed: a release would skip it as dead", n)
	}

	openGate()
	clitest.Eventually(t, promptly, "the waiter never joined the line once its subscription was dialled", func() bool {
		return inLine(t, rdb, holder.Key()) == 1
	})
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
