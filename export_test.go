package withlock

import (
	"context"
	"time"
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

// HolderOf is holderOf: the "<host>:<pid>" part of a token.
var HolderOf = holderOf

// DefaultMargin is the KeepAlive margin used for a lock with the given TTL.
var DefaultMargin = defaultMargin

// FenceKey returns the key of the fencing counter of c's lock called name.
func FenceKey(c *Client, name string) string { return fenceKey(c.Key(name)) }

// Unindex prunes keys of c's prefix from the index of names where they are
// still out of use (admin_index.go), as List does after reading them.
func Unindex(ctx context.Context, c *Client, keys ...string) error {
	return c.b.(indexKeeper).unindex(ctx, c.prefix, keys)
}

// PruneSeen runs the last step of pruning a Cluster's index of names
// (unindexSeenScript) for key, as if List had read its entry as seen and
// found it out of use.
func PruneSeen(ctx context.Context, c *Client, key, seen string) error {
	return c.b.(*single).rdb.Eval(ctx, unindexSeenScript(), []string{indexKey(c.prefix)}, pruneAfter.Milliseconds(), key, seen).Err()
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
