package withlock_test

// Acquire waits for a release or an expiry, gives up at its deadline saying
// why, and a retried SET that landed is ours; further down, the waiting
// mark and the record of a run that waited.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
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

// The waiting mark "{key}:w": a release with nobody waiting skips the line
// and publishes nothing, and every waiter keeps the mark while it waits, so
// that no release skips it.

// A release nobody waits for runs the compare and one DEL of the key and
// its mark, as Release and as ReleaseAndRecord (the CLI's): no LPOP of the
// empty line, no release message; a semaphore's likewise, beside its
// marker's upkeep. A name with '}' and no hash tag has no mark in its slot,
// and its release still publishes.
func TestReleaseWithNobodyWaitingSkipsTheLineAndPublishesNothing(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	c := withlock.New(rdb, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name, lock string
		c          *withlock.Client
		record     bool
		publishes  int
	}{
		{"Release", "quiet", c, false, 0},
		{"ReleaseAndRecord", "quiet-rec", c, true, 0},
		{"NameWithoutHashTag", "no}tag", c, false, 1},
		{"Semaphore", "quiet-slots", semaphore(t, rdb, 2), false, 0},
		{"SemaphoreReleaseAndRecord", "quiet-slots-rec", semaphore(t, rdb, 2), true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustAcquire(t, tc.c, tc.lock, time.Minute)
			resetStats(t, rdb)
			var err error
			if tc.record {
				err = l.ReleaseAndRecord(ctx, withlock.Run{}, time.Minute)
			} else {
				err = l.Release(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			calls := commandCallsExceptSetup(t, rdb)
			if calls["lpop"] != 0 || calls["publish"] != tc.publishes || calls["spublish"] != 0 {
				t.Errorf("release sent %v, want %d PUBLISH and no LPOP", calls, tc.publishes)
			}
			if sum := calls["eval"] + calls["evalsha"] + calls["get"] + calls["del"]; tc.c == c && !tc.record && tc.publishes == 0 && (sum != 3 || len(calls) != 3) {
				t.Errorf("release sent %v, want one script running one GET and one DEL", calls)
			}
			if n := rdb.Exists(ctx, l.Key()).Val(); n != 0 {
				t.Errorf("%s still exists after the release", l.Key())
			}
		})
	}
}

// Waiters outside the fair line (fenced acquisitions, a Client whose
// SSUBSCRIBE is refused, a name with '}' and no hash tag) are woken by every
// release, never by their minute's poll: each try after the first marks the
// key, so the holder's release publishes. Locks pass between Clients and
// between waiters of one Client, released both ways.
func TestWaitersOutsideTheLineAreWokenByEveryRelease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, lock string
		opts       *withlock.LockOptions
		acl        string
		slots      int
	}{
		{"Fenced", "fenced", &withlock.LockOptions{Fence: true}, "", 1},
		{"ACLWithoutSSubscribe", "acl", nil, "+@all -ssubscribe", 1},
		{"NameWithoutHashTag", "no}tag", nil, "", 1},
		{"SemaphoreFenced", "slots-fenced", &withlock.LockOptions{Fence: true}, "", 2},
		{"SemaphoreACLWithoutSSubscribe", "slots-acl", nil, "+@all -ssubscribe", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			const clients, perClient, rounds = 3, 2, 6
			var held, overlaps, total atomic.Int32
			var wg sync.WaitGroup
			for range clients {
				rdb := srv.Client()
				if tc.acl != "" {
					rdb = aclClient(t, srv, tc.acl)
				}
				c := waitClientOn(rdb)
				if tc.slots > 1 {
					c = semaphore(t, rdb, tc.slots)
					withlock.SetWaitTimings(c, longPoll, 100*time.Millisecond)
				}
				for range perClient {
					wg.Go(func() {
						for i := range rounds {
							l, err := acquireBounded(c, tc.lock, time.Minute, tc.opts)
							if err != nil {
								t.Error(err)
								return
							}
							if held.Add(1) > int32(tc.slots) {
								overlaps.Add(1)
							}
							total.Add(1)
							time.Sleep(time.Millisecond)
							held.Add(-1)
							if i%2 == 0 {
								err = l.Release(context.Background())
							} else {
								err = l.ReleaseAndRecord(context.Background(), withlock.Run{}, time.Minute)
							}
							if err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
			}
			wg.Wait()
			if n := overlaps.Load(); n != 0 {
				t.Errorf("%d acquisitions found all %d slots already held", n, tc.slots)
			}
			if n := total.Load(); n != clients*perClient*rounds {
				t.Errorf("%d acquisitions, want %d", n, clients*perClient*rounds)
			}
		})
	}
}

// A waiter in the fair line keeps the mark for as long as it waits, past
// the life of one setting (its liveness key's): a release long after the
// waiter joined still hands it the lock at once.
func TestLineWaiterKeepsTheMarkWhileItWaits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	holder := mustAcquire(t, withlock.New(rdb, nil), "long-wait", time.Minute)
	got := acquireAsync(ctx, waitClient(t, srv), "long-wait", time.Minute)
	clitest.Eventually(t, promptly, "waiter never in line", func() bool { return inLine(t, rdb, holder.Key()) == 1 })
	// A liveness key lives 3s: watch the mark for longer than that.
	for end := time.Now().Add(3500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if rdb.Exists(ctx, markOf(holder.Key())).Val() != 1 {
			t.Fatalf("%s is gone while a waiter waits in line", markOf(holder.Key()))
		}
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := served(t, got, "waiter").Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A release that hands the lock over the line deletes the mark with the
// key, and sets it again for the waiters behind: the next holder's release,
// by a Client with no waiters of its own, hands the lock on in turn. A
// semaphore's release of one slot does the same.
func TestHandOverSetsTheMarkAgainForThoseBehind(t *testing.T) {
	t.Parallel()
	for _, slots := range []int{1, 2} {
		t.Run(fmt.Sprint(slots, "Slots"), func(t *testing.T) {
			srv := redistest.Start(t)
			rdb := srv.Client()
			ctx := context.Background()
			client := func() *withlock.Client {
				if slots == 1 {
					return waitClient(t, srv)
				}
				c := semaphore(t, srv.Client(), slots)
				withlock.SetWaitTimings(c, longPoll, 100*time.Millisecond)
				return c
			}
			holders := client()
			var held []*withlock.Lock
			for range slots {
				held = append(held, mustAcquire(t, holders, "behind", time.Minute))
			}
			key := held[0].Key()
			first := acquireAsync(ctx, client(), "behind", time.Minute)
			clitest.Eventually(t, promptly, "first waiter never in line", func() bool { return inLine(t, rdb, key) == 1 })
			second := acquireAsync(ctx, client(), "behind", time.Minute)
			clitest.Eventually(t, promptly, "second waiter never in line", func() bool { return inLine(t, rdb, key) == 2 })
			if err := held[0].Release(ctx); err != nil {
				t.Fatal(err)
			}
			l := served(t, first, "first waiter")
			// Set again by the hand-over for as long as a liveness key
			// lives, 3s (or by the second waiter's refresh, for as long).
			if ttl := rdb.PTTL(ctx, markOf(key)).Val(); ttl <= 0 || ttl > 3*time.Second {
				t.Errorf("the mark's TTL after the hand-over is %s, want up to 3s", ttl)
			}
			recordAndServe(t, l, second)
			for _, l := range held[1:] {
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A Release that hands its lock to a waiter of its own Client outside the
// line keeps the mark for the waiters queued behind that one, who have not
// tried yet and so have not marked it: the next holder's ReleaseAndRecord
// (no hand-off within the Client) still wakes them.
func TestHandOffOutsideTheLineKeepsTheMarkForThoseBehind(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	c := aclWaitClient(t, srv, "+@all -ssubscribe")
	holder := mustAcquire(t, c, "queued", time.Minute)
	first := acquireAsync(ctx, c, "queued", time.Minute)
	clitest.Eventually(t, promptly, "first waiter never marked the key", func() bool {
		return withlock.WaitingWithoutLine(c, "queued") == 1 && rdb.Exists(ctx, markOf(holder.Key())).Val() == 1
	})
	second := acquireAsync(ctx, c, "queued", time.Minute)
	clitest.Eventually(t, promptly, "second waiter never queued", func() bool { return withlock.WaitingWithoutLine(c, "queued") == 2 })
	if done, err := withlock.HandOff(ctx, holder); !done || err != nil {
		t.Fatalf("hand-off: done %v, %v; want the lock handed to the first waiter", done, err)
	}
	recordAndServe(t, served(t, first, "first waiter"), second)
}

// A waiter whose ACL refuses the mark's key cannot be woken by a release:
// its wait ends at once with an error that says so, rather than falling
// back on the minute's poll. A semaphore's waiter too, whose ACL allows
// the slots but not the mark.
func TestWaiterRefusedTheMarkSaysSo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, lock string
		slots      int
		keys       string
	}{
		{"Plain", "narrow", 1, "~lock:*"},
		{"Semaphore", "narrow-slots", 2, "~lock:* ~{lock:narrow-slots}:s:*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			ctx, cancel := context.WithTimeout(context.Background(), promptly)
			defer cancel()
			holders, rdb := withlock.New(srv.Client(), nil), aclClient(t, srv, "resetkeys "+tc.keys+" resetchannels &* +@all -ssubscribe")
			c := waitClientOn(rdb)
			if tc.slots > 1 {
				holders, c = semaphore(t, srv.Client(), tc.slots), semaphore(t, rdb, tc.slots)
			}
			var key string
			for range tc.slots {
				key = mustAcquire(t, holders, tc.lock, time.Minute).Key()
			}
			_, err := c.Acquire(ctx, tc.lock, time.Minute, nil)
			if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "mark the wait for "+key) || !strings.Contains(err.Error(), "NOPERM") {
				t.Fatalf("Acquire = %v, want an error at once naming the refused mark", err)
			}
		})
	}
}

// A waiter that finds its Client already listening for the key's releases
// (a queue lingering after earlier waiters) marks its very first try, as it
// sleeps without trying again: the holder's release then wakes it.
func TestWaiterJoiningAListeningQueueMarksItsFirstTry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	fenced := &withlock.LockOptions{Fence: true}
	other := withlock.New(srv.Client(), nil)
	c := withlock.New(srv.Client(), nil)
	withlock.SetWaitTimings(c, longPoll, longPoll) // the queue lingers
	holder := mustAcquire(t, other, "linger", time.Minute)
	earlier := acquireAsyncWith(ctx, c, "linger", time.Minute, fenced)
	clitest.Eventually(t, promptly, "earlier waiter never queued", func() bool { return withlock.WaitingWithoutLine(c, "linger") == 1 })
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l := served(t, earlier, "earlier waiter")
	seen := withlock.ReleaseMessages(c, "linger")
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Its own release message reaches the queue before the next waiter
	// looks at it, so that nothing else makes that waiter try again.
	clitest.Eventually(t, promptly, "the release message never arrived", func() bool { return withlock.ReleaseMessages(c, "linger") == seen+1 })
	holder = mustAcquire(t, other, "linger", time.Minute)
	got := acquireAsyncWith(ctx, c, "linger", time.Minute, fenced)
	clitest.Eventually(t, promptly, "waiter never queued", func() bool { return withlock.WaitingWithoutLine(c, "linger") == 1 })
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := served(t, got, "waiter").Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// recordAndServe releases l with ReleaseAndRecord, which never hands over
// within its Client, so that the release finds the waiters only through
// the mark, and releases the lock next is then served.
func recordAndServe(t *testing.T, l *withlock.Lock, next <-chan outcome) {
	t.Helper()
	ctx := context.Background()
	if err := l.ReleaseAndRecord(ctx, withlock.Run{}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := served(t, next, "next waiter").Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A waiting Acquire's record starts when the lock was handed to it, never
// before the holder it waited for released it: Acquired, the conservative
// clock of the key's expiry, may be the wait's last command, sent while
// the holder still held the lock.
func TestWaitedRecordStartsWhenTheLockWasObtained(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	ctx := context.Background()
	holder, err := withlock.New(rdb, nil).TryAcquire(ctx, "waited", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := withlock.New(rdb, nil)
	got := make(chan *withlock.Lock, 1)
	go func() {
		l, err := c.Acquire(ctx, "waited", time.Minute, nil)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	eventually(t, "the waiter joined the line", func() bool { return inLine(t, rdb, "lock:waited") == 1 })
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if l == nil {
		t.FailNow()
	}
	returned := time.Now()
	if err := l.ReleaseAndRecord(ctx, withlock.Run{}, recordTTL); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, "waited")
	if err != nil || st.LastRun == nil {
		t.Fatalf("Status: %+v, %v; want the last run", st, err)
	}
	if s := st.LastRun.Started; s.Before(released) || s.After(returned) {
		t.Errorf("the waiter's run started %s, want between the holder's release (%s) and Acquire's return (%s)",
			s.Format(time.RFC3339Nano), released.Format(time.RFC3339Nano), returned.Format(time.RFC3339Nano))
	}
}
