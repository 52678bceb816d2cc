package withlock

// Lock: one obtained lock, its token and fencing number, Extend, TTL and Release.

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Lock is a lock that was obtained. Its methods are safe for concurrent use.
type Lock struct {
	c        *Client
	name     string
	key      string
	token    string
	ttl      time.Duration
	minHold  time.Duration
	fence    int64
	slot     int       // a semaphore's slot (backend_semaphore.go), 0 for a plain lock
	acquired time.Time // when the acquiring command was sent (monotonic)
	// renewBy is set by the backend: a time since acquired at which the
	// lock should be renewed before its regular interval (a quorum repairs
	// a node then), or 0 for none. KeepAlive reads it.
	renewBy atomic.Int64
	// refence is the fencing number of the last reacquisition by a
	// KeepAlive (KeepAliveOptions.Reacquire), or 0: Fence returns it.
	refence atomic.Int64

	// announce is set on a try of a waiter that is not in the fair line:
	// the backend marks the key as waited for this long (waitMark) with
	// the try, so that the holder's release publishes. 0 for none.
	announce time.Duration

	indexed atomic.Bool // a renewal put it into its prefix's index (admin_index.go)

	// The release script's KEYS and ARGV for a plain release (no min-hold
	// left, no Client id), built once by newLock so that an uncontended
	// Release allocates nothing of its own: the token and the waiting mark
	// go in by pointer, which go-redis writes as the strings. Read-only
	// after newLock, so concurrent Releases share them; a Lock made
	// elsewhere leaves them empty (releaseCall).
	mark    string // waitMark(key), built with key in one allocation
	relKeys [1]string
	relArgs [2]any
}

// Key returns the lock's Redis key.
func (l *Lock) Key() string { return l.key }

// Token returns the value that proves ownership. Treat it as a secret: anyone
// who knows it can release the lock.
func (l *Lock) Token() string { return l.token }

// Acquired returns when the command that obtained the lock was sent, with
// a monotonic clock reading: the key lives at least until Acquired plus
// the TTL. A caller that reports how long it held the lock, or works out
// how much of the TTL is left, starts from it rather than keeping a clock
// of its own.
func (l *Lock) Acquired() time.Time { return l.acquired }

// Fence returns the lock's fencing number, strictly greater than that of
// every earlier fenced acquisition of the same name, or 0 when the lock was
// taken without LockOptions.Fence. The numbers are Redis's clock in
// microseconds, or the last number plus one when that is larger, so they
// keep increasing when Redis loses the counter (a restart without
// persistence, a failover to a replica that lagged) unless the clock of the
// server drawing next is behind by more than the time between the draws.
// After a KeepAlive took the lock again (KeepAliveOptions.Reacquire), it is
// the number drawn then.
func (l *Lock) Fence() int64 {
	if f := l.refence.Load(); f != 0 {
		return f
	}
	return l.fence
}

// TTL returns the lock's remaining time, or ErrLockNotHeld when it is no
// longer ours.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	return l.c.b.ttl(ctx, l)
}

// Extend sets the lock's remaining time to ttl if it is still ours, with one
// compare-and-PEXPIRE script. It never recreates an expired key: then it
// returns ErrLockNotHeld.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("ttl %s is below 1ms", ttl)
	}
	return l.c.b.extend(ctx, l, ttl)
}

// Release gives the lock up if it is still ours, with one compare-and-delete
// script, and wakes those waiting for it. With LockOptions.MinHold, a lock
// released early is kept until its min-hold passes. When the lock is no
// longer ours it returns ErrLockNotHeld and leaves the key alone.
func (l *Lock) Release(ctx context.Context) error {
	keep := l.keep()
	if keep == 0 {
		// A waiter of this Client is first in line: take the lock for it in
		// the same round trip, if the backend can (wait_local_handoff.go).
		if done, err := l.c.line.handOff(ctx, l); done {
			return err
		}
	}
	return l.c.b.release(ctx, l, keep)
}

// releaseCall returns the release script's KEYS and ARGV for l (see
// releaseScript): with keep and cid, the Client id sent by a Client with
// waiters of its own, or "".
func (l *Lock) releaseCall(keep time.Duration, cid string) ([]string, []any) {
	if keep == 0 && cid == "" && l.relArgs[0] != nil {
		return l.relKeys[:], l.relArgs[:]
	}
	return []string{l.key}, releaseArgs(l.token, l.waitMark(), keep, cid)
}

// releaseArgs is releaseScript's ARGV: the token and the waiting mark, then
// the time to keep the key and the Client id only when one of them is
// sent. Redis pushes every argument into the script's ARGV table, which
// costs it time on every release, so a plain release sends only two.
func releaseArgs(token, mark string, keep time.Duration, cid string) []any {
	switch {
	case cid != "":
		return []any{token, mark, keep.Milliseconds(), cid}
	case keep > 0:
		return []any{token, mark, keep.Milliseconds()}
	}
	return []any{token, mark}
}

// waitMark is waitMark(l.key), without building it again when newLock did.
func (l *Lock) waitMark() string {
	if l.mark != "" {
		return l.mark
	}
	return waitMark(l.key)
}

// renewalDue returns when the backend wants l renewed early, and false when
// it does not.
func (l *Lock) renewalDue() (time.Time, bool) {
	at := time.Duration(l.renewBy.Load())
	return l.acquired.Add(at), at > 0
}
