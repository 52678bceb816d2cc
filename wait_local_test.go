package withlock_test

// Waiting without the fair line: the in-process queues of one Client, the
// shared subscription, and the hand-off between its waiters.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

func TestAcquireFreeLockIsOneSet(t *testing.T) {
	t.Parallel()
	c, rdb := waitSetup(t)
	// A Client's first acquisition of a name in a minute also writes it
	// into the index of names (TestAClientWritesANameIntoTheIndexOncePerPeriod).
	if err := mustAcquire(t, c, "free", time.Minute).Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	resetStats(t, rdb)
	l, err := acquireBounded(c, "free", time.Minute, nil)
	if err != nil {
		t.Fatalf("Acquire of a free lock: %v", err)
	}
	calls := commandCallsExceptSetup(t, rdb)
	if len(calls) != 1 || calls["set"] != 1 {
		t.Errorf("commands for a free lock = %v, want only one set", calls)
	}
	if n := subscribers(t, rdb, l.Key()); n != 0 {
		t.Errorf("%d subscribers on %s after an uncontended Acquire, want 0", n, l.Key())
	}
}

func TestAcquireWakesOnRelease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	holder := mustAcquire(t, withlock.New(srv.Client(), nil), "job", time.Minute)
	c := waitClient(t, srv)

	got := acquireAsync(context.Background(), c, "job", time.Minute)
	clitest.Eventually(t, promptly, "waiter never joined the lock's line", func() bool {
		return inLine(t, rdb, holder.Key()) == 1 && withlock.Waiting(c, "job") == 1
	})
	mon := srv.Monitor()
	released := time.Now()
	if err := holder.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	o := wait(t, got, promptly, "after release")
	if o.err != nil {
		t.Fatalf("Acquire after release: %v", o.err)
	}
	// Neither the holder's TTL nor the poll can explain a wake-up this soon.
	if d := o.at.Sub(released); d > promptly {
		t.Errorf("waiter took %s after the release", d)
	}
	// The waiter slept instead of polling: after the release the lock's
	// key was set once, possibly once more if its retry after subscribing
	// was still in flight when the monitor started. SETs of other keys
	// (the line's liveness key and mark, refreshed every second while a
	// Client has waiters) are no poll of the lock.
	var sets []redistest.Command
	for _, c := range mon.Commands() {
		if len(c.Args) > 1 && strings.EqualFold(c.Args[0], "set") && c.Args[1] == holder.Key() {
			sets = append(sets, c)
		}
	}
	if n := len(sets); n < 1 || n > 2 {
		t.Errorf("%d SETs of %s around the release (%v), want 1 (2 at most)", n, holder.Key(), sets)
	}
	if v, _ := rdb.Get(context.Background(), o.lock.Key()).Result(); v != o.lock.Token() {
		t.Errorf("key holds %q, want the waiter's token", v)
	}
}

func TestAcquireWakesOnExpiryOfCrashedHolder(t *testing.T) {
	t.Parallel()
	c, rdb := waitSetup(t)
	// A holder that crashed: its key just expires, nobody publishes.
	const ttl = 1500 * time.Millisecond
	if err := rdb.Set(context.Background(), "lock:crashed", "host:1:dead", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	o := wait(t, acquireAsync(context.Background(), c, "crashed", time.Minute), promptly+ttl, "crashed holder")
	if o.err != nil {
		t.Fatalf("Acquire after the holder's key expired: %v", o.err)
	}
	// It cannot be earlier than the expiry; later than a few seconds
	// would mean the waiter slept through it to the (minute-long) poll.
	if d := o.at.Sub(start); d < ttl-100*time.Millisecond || d > ttl+promptly {
		t.Errorf("acquired %s after start, want just after the holder's %s TTL", d, ttl)
	}
}

// A waiter that gives up while first in line leaves at once and must not
// take the next release's turn with it: within one Client (its local
// queue) and across Clients (the line in Redis, where its entry is gone
// before Acquire returns).
func TestFirstInLineGivingUpPassesItsTurnOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		oneClient bool
	}{
		{"one Client", true},
		{"two Clients", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			rdb := srv.Client()
			holder := mustAcquire(t, withlock.New(srv.Client(), nil), "line", time.Minute)
			c1, c2 := waitClient(t, srv), waitClient(t, srv)
			waiting := func() int { return int(inLine(t, rdb, holder.Key())) }
			if tc.oneClient {
				c2 = c1
				waiting = func() int { return withlock.Waiting(c1, "line") }
			}
			short, cancel := context.WithCancel(context.Background())
			first := acquireAsync(short, c1, "line", time.Minute)
			clitest.Eventually(t, promptly, "first waiter never in line", func() bool { return waiting() == 1 })
			second := acquireAsync(context.Background(), c2, "line", time.Minute)
			clitest.Eventually(t, promptly, "second waiter never in line", func() bool { return waiting() == 2 })
			cancel()
			if o := wait(t, first, promptly, "cancelled waiter"); !errors.Is(o.err, context.Canceled) || !errors.Is(o.err, withlock.ErrNotObtained) {
				t.Fatalf("cancelled waiter: lock %v, error %v", o.lock, o.err)
			}
			if n := waiting(); n != 1 {
				t.Errorf("%d in line right after a waiter gave up, want 1", n)
			}
			if err := holder.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			if o := wait(t, second, promptly, "second waiter after release"); o.err != nil {
				t.Fatalf("second waiter: %v", o.err)
			}
		})
	}
}

// A release that lands anywhere around the waiter's first SET and its
// SUBSCRIBE must still wake it: the waiter polls only once a minute, so a
// lost wake-up fails the iteration.
func TestAcquireNoLostWakeUp(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	holders := withlock.New(srv.Client(), nil)
	for _, mode := range []struct {
		name   string
		fresh  bool          // a new Client (and subscription) per iteration
		linger time.Duration // how long a queue outlives its last waiter
		parked bool          // another lock's waiter keeps the connection open
	}{
		{"new subscription", true, time.Millisecond, false},
		{"lingering subscription", false, time.Minute, false},
		// The lock's channel is unsubscribed and subscribed again on a
		// connection that stays: a stale confirmation must not count.
		{"channel subscribed again", false, time.Microsecond, true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			c := waitClient(t, srv)
			withlock.SetWaitTimings(c, longPoll, mode.linger)
			if mode.parked {
				defer parkWaiter(t, c, holders, "parked")()
			}
			for i := range 150 {
				if mode.fresh {
					c = waitClient(t, srv)
					withlock.SetWaitTimings(c, longPoll, mode.linger)
				}
				holder := mustAcquire(t, holders, "race", time.Minute)
				got := acquireAsync(context.Background(), c, "race", time.Minute)
				// Spread the release over the waiter's first SET,
				// its SUBSCRIBE and its retry.
				time.Sleep(time.Duration(i%30) * 50 * time.Microsecond)
				if err := holder.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
				o := wait(t, got, promptly, fmt.Sprintf("iteration %d", i))
				if o.err != nil {
					t.Fatalf("iteration %d: %v", i, o.err)
				}
				if err := o.lock.Release(context.Background()); err != nil {
					t.Fatalf("iteration %d: release: %v", i, err)
				}
			}
		})
	}
}

// parkWaiter holds the lock called name through holders and leaves an
// Acquire of c waiting for it; the returned func ends that wait.
func parkWaiter(t *testing.T, c, holders *withlock.Client, name string) func() {
	t.Helper()
	holder := mustAcquire(t, holders, name, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	parked := acquireAsync(ctx, c, name, time.Minute)
	clitest.Eventually(t, promptly, "parked waiter never in line", func() bool { return withlock.Waiting(c, name) == 1 })
	return func() {
		cancel()
		if o := wait(t, parked, promptly, "parked waiter"); !errors.Is(o.err, context.Canceled) {
			t.Errorf("parked waiter: lock %v, error %v; want it cancelled", o.lock, o.err)
		}
		_ = holder.Release(context.Background())
	}
}

// Many waiters on one lock, on two Clients: never two inside at once, all
// served, and within one Client a handoff costs the release and one SET.
func TestWaitersOfTwoClientsNeverHoldAtOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	clients := []*withlock.Client{waitClient(t, srv), waitClient(t, srv)}
	const perClient, rounds = 8, 15
	var inside, overlaps, total atomic.Int32
	resetStats(t, rdb)
	var wg sync.WaitGroup
	errs := make(chan error, len(clients)*perClient)
	for _, c := range clients {
		for range perClient {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				for range rounds {
					l, err := c.Acquire(ctx, "shared", time.Minute, nil)
					if err != nil {
						errs <- err
						return
					}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					time.Sleep(100 * time.Microsecond)
					inside.Add(-1)
					total.Add(1)
					if err := l.Release(ctx); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("waiter: %v", err)
	}
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d acquisitions overlapped another holder", n)
	}
	if n, want := total.Load(), int32(len(clients)*perClient*rounds); n != want {
		t.Errorf("%d acquisitions, want %d", n, want)
	}
}

// Within one Client, waiters queue up: a handoff costs the release script
// and one SET, however many wait.
//
// Not parallel: a hand-over delayed by other tests' load lets waiters'
// polls and retries in, which the count of commands would take for cost.
func TestHandOffWithinClientCostsAtMostSixCommands(t *testing.T) {
	c, rdb := waitSetup(t)
	const waiters, rounds = 16, 10
	resetStats(t, rdb)
	var wg sync.WaitGroup
	var total atomic.Int32
	for range waiters {
		wg.Go(func() {
			for range rounds {
				l, err := acquireBounded(c, "handoff", time.Minute, nil)
				if err != nil {
					t.Error(err)
					return
				}
				total.Add(1)
				if err := l.Release(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	calls := commandCallsExceptSetup(t, rdb)
	sum := 0
	for _, n := range calls {
		sum += n
	}
	// SET + EVAL(GET, DEL, PUBLISH) = 5 per acquisition, plus the first
	// waiters' failed SET with its inspection and the SUBSCRIBE.
	if per := float64(sum) / float64(total.Load()); per > 6 {
		t.Errorf("%.2f commands per acquisition with %d waiters (%v), want at most 6", per, waiters, calls)
	}
}

// A lock deleted behind our back (no release message) is found by the
// fallback poll; a key without TTL is retried with backoff, not hammered.
func TestWaiterPollsForSilentDeleteAndBacksOffOnKeyWithoutTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	c := withlock.New(srv.Client(), nil)
	withlock.SetWaitTimings(c, 200*time.Millisecond, 100*time.Millisecond)
	if err := rdb.Set(context.Background(), "lock:forever", "someone:1:x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	got := acquireAsync(context.Background(), c, "forever", time.Minute)
	clitest.Eventually(t, promptly, "waiter never in line", func() bool { return withlock.Waiting(c, "forever") == 1 })
	resetStats(t, rdb)
	time.Sleep(time.Second)
	// Backoff 2, 4, 8 ... ms up to the 200 ms poll: about a dozen tries a
	// second. A waiter spinning on the key would send thousands.
	if n := commandCalls(t, rdb)["set"]; n > 100 {
		t.Errorf("%d SETs in a second on a key without TTL", n)
	}
	if err := rdb.Del(context.Background(), "lock:forever").Err(); err != nil {
		t.Fatal(err)
	}
	if o := wait(t, got, promptly, "after DEL"); o.err != nil {
		t.Fatalf("Acquire after DEL: %v", o.err)
	}
}

// A Redis restart drops the subscription and the lock (no persistence):
// the waiter subscribes again and, on confirmation, tries at once.
func TestAcquireResubscribesAfterRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	mustAcquire(t, withlock.New(srv.Client(), nil), "restart", time.Minute)
	c := waitClient(t, srv)
	got := acquireAsync(context.Background(), c, "restart", time.Minute)
	clitest.Eventually(t, promptly, "waiter never in line", func() bool { return withlock.Waiting(c, "restart") == 1 })
	srv.Restart()
	if o := wait(t, got, promptly, "after restart"); o.err != nil {
		t.Fatalf("Acquire across a restart: %v", o.err)
	}
}

// Break (--break) publishes the release message: a waiter outside the fair
// line (here a fenced one) is woken by it and takes the lock at once, not at
// the holder's expiry nor at its poll (both minutes away).
func TestBreakWakesWaitersOutsideTheLineAtOnce(t *testing.T) {
	t.Parallel()
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
