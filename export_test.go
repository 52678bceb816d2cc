package withlock

// What the tests reach inside the package by: internals exported to the
// external tests, and the fake backend the synctest tests run KeepAlive
// against.

import (
	"context"
	"errors"
	"github.com/with-lock/with-lock/internal/keys"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SetWaitTimings sets the fallback poll and the linger of c's waiting
// Acquires, so that a test can tell a wake-up by release message or by
// expiry from one by polling.
func SetWaitTimings(c *Client, poll, linger time.Duration) { c.line.setTimings(poll, linger) }

// Waiting returns how many Acquires of c are in line for the lock called
// name.
func Waiting(c *Client, name string) int {
	n := WaitingWithoutLine(c, name)
	c.line.fair.mu.Lock()
	defer c.line.fair.mu.Unlock()
	if r := c.line.fair.rooms[c.Key(name)]; r != nil {
		n += len(r.waiters)
	}
	return n
}

// WaitingWithoutLine returns how many Acquires of c wait for the lock called
// name in the in-process queue, outside the fair line.
func WaitingWithoutLine(c *Client, name string) int {
	c.line.local.mu.Lock()
	defer c.line.local.mu.Unlock()
	if q := c.line.local.queues[c.Key(name)]; q != nil {
		return len(q.waiters)
	}
	return 0
}

// HandOff is what Release tries first: handing l straight to a waiter of
// the same Client. It reports whether it did so, and the release's error.
func HandOff(ctx context.Context, l *Lock) (bool, error) { return l.c.line.handOff(ctx, l) }

// HolderOf is keys.Holder: the "<host>:<pid>" part of a token.
var HolderOf = keys.Holder

// DefaultMargin is the KeepAlive margin used for a lock with the given TTL.
var DefaultMargin = defaultMargin

// FenceKey returns the key of the fencing counter of c's lock called name.
func FenceKey(c *Client, name string) string { return keys.Fence(c.Key(name)) }

// Unindex prunes keys of c's prefix from the index of names where they are
// still out of use (admin_index.go), as List does after reading them.
func Unindex(ctx context.Context, c *Client, keys ...string) error {
	return c.b.(indexKeeper).unindex(ctx, c.prefix, keys)
}

// PruneSeen runs the last step of pruning a Cluster's index of names
// (unindexSeenScript) for key, as if List had read its entry as seen and
// found it out of use.
func PruneSeen(ctx context.Context, c *Client, key, seen string) error {
	return c.b.(*single).rdb.Eval(ctx, unindexSeenScript(), []string{keys.Index(c.prefix)}, pruneAfter.Milliseconds(), key, seen).Err()
}

// SetIndexTimings sets how long c trusts its own writes into the index of
// names, and how long its List waits before it removes a name out of use
// (indexEvery and pruneAfter in admin_index.go).
func SetIndexTimings(c *Client, every, unused time.Duration) {
	x := c.b.(indexKeeper).indexWrites()
	x.every, x.unused = every, unused
}

// PruneAfter is how long List waits before it removes a name out of use
// from the index of names; IndexEvery how long a Client trusts its own
// write of a name there.
const PruneAfter, IndexEvery = pruneAfter, indexEvery

// ReleaseMessages returns how many release messages (and subscription
// confirmations) reached c's queue for the lock called name, outside the
// fair line.
func ReleaseMessages(c *Client, name string) uint64 {
	c.line.local.mu.Lock()
	defer c.line.local.mu.Unlock()
	if q := c.line.local.queues[c.Key(name)]; q != nil {
		return q.events
	}
	return 0
}

// DefaultHistory is how many runs a name's history keeps when
// Options.History is 0.
const DefaultHistory = historyRuns

// SlotsError is the error, matching ErrSlotsMismatch, that says with how
// many slots a name is in use (Have) and how many the caller wanted (Want).
type SlotsError = slotsError

// LockName is the lock's name as given to TryAcquire or Acquire.
func LockName(l *Lock) string { return l.name }

// The fake backend KeepAlive's schedule is tested on
// (keepalive_synctest_test.go), and the answers its renewals can give: at
// once, slow, stuck, refused.

// errDown is a fake renewal's failure, as a refused connection would be.
var errDown = errors.New("connection refused")

// fakeRenewals is a backend for KeepAlive's timing: extend records when
// each renewal was sent and answers with answer; acquire always succeeds.
// Nothing else of a backend is used by KeepAlive, and it has none of the
// optional capabilities (backend.go).
type fakeRenewals struct {
	// answer answers the nth renewal (from 1); nil means a success at once.
	// It may sleep (a slow Redis) or wait for ctx (a stuck one).
	answer func(ctx context.Context, n int) error
	// renewBy, set at acquire and cleared by a renewal, is a time since
	// acquisition at which the backend asks to be renewed early, as a
	// quorum does (Lock.renewBy).
	renewBy time.Duration

	mu       sync.Mutex
	sent     []time.Duration // when each renewal was sent, since acquisition
	ttls     []time.Duration // the TTL each renewal asked for
	inflight int             // renewals not yet answered
}

func (f *fakeRenewals) acquire(_ context.Context, l *Lock, _ *LockOptions) error {
	l.renewBy.Store(int64(f.renewBy))
	return nil
}

func (f *fakeRenewals) renew(ctx context.Context, l *Lock, ttl time.Duration) error {
	f.mu.Lock()
	f.sent = append(f.sent, time.Since(l.acquired))
	f.ttls = append(f.ttls, ttl)
	f.inflight++
	n := len(f.sent)
	f.mu.Unlock()
	var err error
	if f.answer != nil {
		err = f.answer(ctx, n)
	}
	f.mu.Lock()
	f.inflight--
	f.mu.Unlock()
	l.renewBy.Store(0)
	return err
}

// renewals returns when the renewals so far were sent and how many are
// unanswered.
func (f *fakeRenewals) renewals() (sent []time.Duration, inflight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent), f.inflight
}

func (f *fakeRenewals) release(context.Context, *Lock, time.Duration) error { panic("not used") }
func (f *fakeRenewals) ttl(context.Context, *Lock) (time.Duration, error)   { panic("not used") }
func (f *fakeRenewals) subscribe(context.Context) *redis.PubSub             { panic("not used") }

// keepAlive takes a lock with ttl on f and starts its KeepAlive with opts,
// stopped when the test ends. Call it inside the bubble.
func keepAlive(t *testing.T, f *fakeRenewals, ttl time.Duration, opts *KeepAliveOptions) (*Lock, *KeepAlive) {
	t.Helper()
	l, err := newClient(f, nil).TryAcquire(t.Context(), "job", ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	ka := l.KeepAlive(context.Background(), opts)
	t.Cleanup(ka.Stop)
	return l, ka
}

// ms is a list of times in milliseconds, for readable wants.
func ms(m ...int) []time.Duration {
	d := make([]time.Duration, len(m))
	for i, v := range m {
		d[i] = time.Duration(v) * time.Millisecond
	}
	return d
}

// slow is an answer that takes d and then succeeds, whatever ctx says: a
// renewal in flight is always completed.
func slow(d time.Duration) func(context.Context, int) error {
	return func(context.Context, int) error { time.Sleep(d); return nil }
}

// stuck is an answer that never comes while the KeepAlive runs, as from a
// paused Redis: it waits for ctx.
func stuck(ctx context.Context, _ int) error { <-ctx.Done(); return ctx.Err() }

// SharedTrips reports whether a round trip of c's shared ones
// (roundtrip.go) is in flight, and how many callers wait for the next.
func SharedTrips(c *Client) (inFlight bool, waiting int) {
	rt := &c.b.(*single).trips
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.inFlight > 0, len(rt.pending)
}

// OneTripInFlight has c's shared round trips go one at a time, so that a
// test holding one in flight has every other caller wait for the next.
func OneTripInFlight(c *Client) {
	rt := &c.b.(*single).trips
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.max = 1
}

// MaxTrips is how many shared round trips of a Client go at once.
const MaxTrips = maxTrips

// ExtendScript and ExtendIndexScript are the texts of a plain lock's
// renewal and of its first renewal, as sent.
func ExtendScript() string      { return extendScript() }
func ExtendIndexScript() string { return extendIndexScript() }
