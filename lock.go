package withlock

// Lock: one obtained lock, its token and fencing number, Extend, TTL and Release.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/with-lock/with-lock/internal/keys"
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
	// obtained is when a waiting Acquire had the lock in hand, the start of
	// its run's record; zero for a try, whose acquired is that moment.
	// acquired is the earlier, conservative clock of the key's expiry: for
	// a waiter, a command sent before the lock was handed over.
	obtained time.Time
	// renewBy is set by the backend: a time since acquired at which the
	// lock should be renewed before its regular interval (a quorum repairs
	// a node then), or 0 for none. KeepAlive reads it.
	renewBy atomic.Int64
	// refence is the fencing number of the last reacquisition by a
	// KeepAlive (KeepAliveOptions.Reacquire), or 0: Fence returns it.
	refence atomic.Int64

	// announce is set on a try of a waiter that is not in the fair line:
	// the backend marks the key as waited for this long (keys.Mark) with
	// the try, so that the holder's release publishes. 0 for none.
	announce time.Duration

	indexed atomic.Bool // a renewal put it into its prefix's index (admin_index.go)

	// The lease mark (lease.go), written by the acquisition before the
	// Lock is returned: lapse is internal/lapse.Detect's, leaseSent says
	// the mark went with an acquiring command, lapsed is Lapsed.
	lapse, leaseSent, lapsed bool

	clock serverClock // the server's TIME, as the last renewal read it (keepalive_clocks.go)

	// The release script's KEYS and ARGV for a plain release (no min-hold
	// left, no Client id), built once by newLock so that an uncontended
	// Release allocates nothing of its own: the token and the waiting mark
	// go in by pointer, which go-redis writes as the strings. Read-only
	// after newLock, so concurrent Releases share them; a Lock made
	// elsewhere leaves them empty (releaseCall).
	mark    string // keys.Mark(key), built with key in one allocation
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
// the TTL. A caller that works out how much of the TTL is left starts from
// it rather than keeping a clock of its own. For a waiting Acquire it may
// be well before the lock was handed over (the command that won it was
// sent while another held the lock): to say since when the lock is held,
// take the time Acquire returned, as the run's record does (Run.Started).
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

// Extend renews the lock once: it sets the lock's remaining time to ttl if
// it is still ours, with one compare-and-PEXPIRE script (KeepAlive keeps
// renewing it). It never recreates an expired key: then it
// returns ErrLockNotHeld.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("ttl %s is below 1ms", ttl)
	}
	return l.c.b.renew(ctx, l, ttl)
}

// Release gives the lock up if it is still ours, with one compare-and-delete
// script, and wakes those waiting for it. With LockOptions.MinHold, a lock
// released early is kept until its min-hold passes. When the lock is no
// longer ours it returns ErrLockNotHeld and leaves the key alone.
func (l *Lock) Release(ctx context.Context) error {
	keep := l.keep()
	if keep == 0 {
		// A waiter of this Client is first in line: take the lock for it in
		// the same round trip, if the backend can (wait_local.go).
		if done, err := l.c.line.handOff(ctx, l); done {
			return err
		}
	}
	return l.c.b.release(ctx, l, keep)
}

// keep is what is left of l's min-hold: how long the key must still live
// after a release, or 0 to delete it.
func (l *Lock) keep() time.Duration {
	if l.minHold > 0 {
		if left := l.minHold - time.Since(l.acquired); left >= time.Millisecond {
			return left
		}
	}
	return 0
}

// waitMark is keys.Mark(l.key), without building it again when newLock did.
func (l *Lock) waitMark() string {
	if l.mark != "" {
		return l.mark
	}
	return keys.Mark(l.key)
}

// renewalDue returns when the backend wants l renewed early, and false when
// it does not.
func (l *Lock) renewalDue() (time.Time, bool) {
	at := time.Duration(l.renewBy.Load())
	return l.acquired.Add(at), at > 0
}

// Tokens are made here (owner prefix, time, crypto/rand). Where a lock's
// keys live (its side keys and fair line in its Cluster hash slot), and
// which part of a token may be shown, is decided once, in internal/keys,
// which the library and the tests call directly.

// tokenRandomBytes is the random part of a token: 128 bits make a collision
// between two owners practically impossible.
const tokenRandomBytes = 16

// ownerPrefix returns "<host>:<pid>:", the part of every token that tells an
// operator who holds a lock. It is computed once per Client.
func ownerPrefix() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("%s:%d:", host, os.Getpid())
}

// newToken returns prefix, the time now as base-36 Unix milliseconds, a dot
// and 128 random bits in hex: "<host>:<pid>:<ms36>.<hex>". The time is
// the start of the acquisition, which for a waiting Acquire is the start of
// the wait, since every try of one acquisition sends the same token:
// Holder.Since takes the later end of the run before it for a waiter
// (gotSince). The token is built in
// one allocation: it is on the path of every acquisition.
func newToken(prefix string, now time.Time) (string, error) {
	var b [tokenRandomBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("read random token: %w", err)
	}
	var ms [16]byte
	stamp := strconv.AppendInt(ms[:0], now.UnixMilli(), 36)
	var sb strings.Builder
	sb.Grow(len(prefix) + len(stamp) + 1 + hex.EncodedLen(len(b)))
	sb.WriteString(prefix)
	sb.Write(stamp)
	sb.WriteByte('.')
	var h [2 * tokenRandomBytes]byte
	hex.Encode(h[:], b[:])
	sb.Write(h[:])
	return sb.String(), nil
}

// sinceOf returns the time a token was made (see newToken), or the zero
// time for a token without one: from an older version, or another program.
func sinceOf(token string) time.Time {
	rest := keys.Secret(token)
	stamp, random, ok := strings.Cut(rest, ".")
	if !ok || len(random) != hex.EncodedLen(tokenRandomBytes) {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(stamp, 36, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
