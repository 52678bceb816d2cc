package withlock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A Release with a waiter of the same Client first in line hands the lock
// to it in the same round trip: one EVAL that sets the key to the waiter's
// token and publishes nothing, so nobody else in line wakes.
func TestReleaseHandsOffToWaiterInLine(t *testing.T) {
	t.Parallel()
	c, rdb := waitSetup(t)
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
// gets the lock or leaves nothing behind: in the fair line, and in the
// in-process queue (a name with '}' but no hash tag has no line).
func TestHandOffRacingCancelLeavesNothingLocked(t *testing.T) {
	t.Parallel()
	c, rdb := waitSetup(t)
	for _, name := range []string{"cancel", "can}cel"} {
		t.Run(name, func(t *testing.T) {
			for i := range 100 {
				handOffRacingCancel(t, rdb, c, name, time.Duration(i%20)*20*time.Microsecond)
			}
		})
	}
}

// handOffRacingCancel releases a lock of c called name with a waiter of c
// in line whose context is cancelled after delay.
func handOffRacingCancel(t *testing.T, rdb *redis.Client, c *withlock.Client, name string, delay time.Duration) {
	t.Helper()
	holder := mustAcquire(t, c, name, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := acquireAsync(ctx, c, name, time.Minute)
	clitest.Eventually(t, promptly, "waiter never in line", func() bool { return withlock.Waiting(c, name) == 1 })
	go func() {
		time.Sleep(delay)
		cancel()
	}()
	if err := holder.Release(context.Background()); err != nil {
		t.Fatalf("cancel after %s: Release: %v", delay, err)
	}
	o := wait(t, got, promptly, fmt.Sprintf("cancel after %s", delay))
	switch {
	case o.err == nil:
		if err := o.lock.Release(context.Background()); err != nil {
			t.Fatalf("cancel after %s: the handed-off lock was not ours: %v", delay, err)
		}
	case !errors.Is(o.err, context.Canceled):
		t.Fatalf("cancel after %s: %v", delay, o.err)
	}
	cancel()
	if n, _ := rdb.Exists(context.Background(), holder.Key()).Result(); n != 0 {
		t.Fatalf("cancel after %s: %s left behind (waiter returned %v)", delay, holder.Key(), o.err)
	}
}

// A fenced waiter is not handed the lock (its acquisition is a script):
// it is woken by the release message and draws its fencing number.
func TestFencedWaiterIsWokenNotHandedOff(t *testing.T) {
	t.Parallel()
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

// Where a waiter cannot wait in the fair line, a Release of the same Client
// still hands the lock to the first in its in-process queue, in the
// release's round trip: for a name with '}' but no hash tag (no line), for
// a user whose ACL refuses SSUBSCRIBE, and for a Redis that does not know
// SSUBSCRIBE (what Redis before 7.0 answers; here a 7.x with the command
// renamed away, as no older server is at hand).
func TestHandOffWithoutTheLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, lock string
		server     string // a line of the server's config
		acl        string // rules of the Client's user; "": the default user
	}{
		{"NameWithoutHashTag", "no}line", "", ""},
		{"ACLWithoutSSubscribe", "acl", "", "+@all -ssubscribe"},
		{"ServerWithoutSSubscribe", "old", `rename-command SSUBSCRIBE ""`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var conf []string
			if tc.server != "" {
				// In a file: rename-command's two arguments do not fit
				// Start's "name", "value" pairs.
				file := filepath.Join(t.TempDir(), "extra.conf")
				if err := os.WriteFile(file, []byte(tc.server+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				conf = []string{"include", file}
			}
			srv := redistest.Start(t, conf...)
			rdb := srv.Client()
			opts := &redis.Options{}
			if tc.acl != "" {
				args := []any{"ACL", "SETUSER", "waiter", "reset", "on", ">pw", "~*", "&*"}
				for _, r := range strings.Fields(tc.acl) {
					args = append(args, r)
				}
				if err := rdb.Do(ctx, args...).Err(); err != nil {
					t.Fatalf("ACL SETUSER: %v", err)
				}
				opts.Username, opts.Password = "waiter", "pw"
			}
			hold, release := make(chan struct{}), make(chan struct{})
			opts.Dialer = heldSubscriptionDialer(hold, release)
			c := waitClientOn(srv.ClientWith(opts))
			holder := mustAcquire(t, c, tc.lock, time.Minute)
			got := acquireAsync(ctx, c, tc.lock, time.Minute)
			clitest.Eventually(t, promptly, "the waiter never queued without the line", func() bool {
				return withlock.WaitingWithoutLine(c, tc.lock) == 1
			})
			// From now on no release message reaches the waiter: only a
			// hand-off gives it the lock before the key is read.
			close(hold)
			done, err := withlock.HandOff(ctx, holder)
			v := rdb.Get(ctx, holder.Key()).Val()
			close(release)
			if !done || err != nil {
				t.Fatalf("the Release's hand-off: done %v, %v; want the lock handed to the waiter", done, err)
			}
			o := wait(t, got, promptly, "the waiter")
			if o.err != nil {
				t.Fatalf("the waiter: %v", o.err)
			}
			if v != o.lock.Token() {
				t.Errorf("%s held %q once the hand-off returned, want the waiter's token (handed in the release's round trip)", holder.Key(), v)
			}
			if err := o.lock.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// heldSubscriptionDialer dials like net.Dialer; a Pub/Sub connection's
// reads (dialledByPubSub) that return once hold is closed wait for release
// to be closed: release messages held back, every other connection prompt.
func heldSubscriptionDialer(hold, release <-chan struct{}) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil || !dialledByPubSub() {
			return conn, err
		}
		return &heldConn{Conn: conn, hold: hold, release: release}, nil
	}
}

type heldConn struct {
	net.Conn
	hold, release <-chan struct{}
}

func (c *heldConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	select {
	case <-c.hold:
		<-c.release
	default:
	}
	return n, err
}
