package withlock

import (
	"context"
	"time"
)

// SetWaitTimings sets the fallback poll and the linger of c's waiting
// Acquires, so that a test can tell a wake-up by release message or by
// expiry from one by polling.
func SetWaitTimings(c *Client, poll, linger time.Duration) {
	c.line.poll.Store(int64(poll))
	c.line.linger.Store(int64(linger))
}

// Waiting returns how many Acquires of c are in line for the lock called
// name.
func Waiting(c *Client, name string) int {
	n := 0
	c.line.local.mu.Lock()
	if q := c.line.local.queues[c.Key(name)]; q != nil {
		n += len(q.waiters)
	}
	c.line.local.mu.Unlock()
	c.line.fair.mu.Lock()
	if r := c.line.fair.rooms[c.Key(name)]; r != nil {
		n += len(r.waiters)
	}
	c.line.fair.mu.Unlock()
	return n
}

// HolderOf is holderOf: the "<host>:<pid>" part of a token.
var HolderOf = holderOf

// DefaultMargin is the KeepAlive margin used for a lock with the given TTL.
var DefaultMargin = defaultMargin

// FenceKey returns the key of the fencing counter of c's lock called name.
func FenceKey(c *Client, name string) string { return fenceKey(c.Key(name)) }

// Unindex removes keys of c's prefix from the index of names where they
// are still stale (admin_index.go), as List does after reading them.
func Unindex(ctx context.Context, c *Client, keys ...string) error {
	return c.b.(indexKeeper).unindex(ctx, c.prefix, keys)
}
