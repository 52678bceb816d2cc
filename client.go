package withlock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is put before a lock's name to make its Redis key.
const DefaultPrefix = "lock:"

var (
	// ErrNotObtained means the lock is held by someone else. Errors from
	// TryAcquire and Acquire that match it with errors.Is are *NotObtainedError.
	ErrNotObtained = errors.New("lock is held by another owner")

	// ErrLockNotHeld means the lock is no longer ours: it expired, or it
	// expired and someone else took it, or the server answered READONLY (it
	// was demoted in a failover). Release and Extend return it and leave the
	// key untouched.
	ErrLockNotHeld = errors.New("lock is no longer held")

	// ErrWrongType means a key the lock needs (the lock's own key, or its
	// fencing counter) exists but holds something this package did not
	// write: another program uses the same key. Waiting does not help; pick
	// another name or prefix, or remove the foreign key.
	ErrWrongType = errors.New("key holds a value that is not a lock")

	// ErrEmptyName means a lock's name is "": its key would be the bare
	// prefix, one lock shared by every caller that forgot to name theirs.
	// TryAcquire, Acquire, Do, Status and Break return it.
	ErrEmptyName = errors.New("lock name is empty")
)

// NotObtainedError tells who holds a lock that could not be obtained. It
// matches ErrNotObtained with errors.Is.
type NotObtainedError struct {
	Key    string        // the lock's Redis key
	Holder string        // "<host>:<pid>" of the owner, or "unknown"
	TTL    time.Duration // the owner's remaining time; 0 if unknown or gone
	Since  time.Time     // when the owner began acquiring it; zero if unknown
	// Slots is, for a semaphore (NewSemaphore), its number of slots, all
	// held; Holder, TTL and Since are then those of the holder whose slot
	// frees first. 0 for a plain lock.
	Slots int
}

// Error names the key, the holder, how long it has held the lock when
// known, and its remaining time when known, which renewal keeps near the
// TTL. It never shows the holder's full token.
func (e *NotObtainedError) Error() string {
	held := ""
	switch d := time.Since(e.Since); {
	case e.Since.IsZero():
	case d < time.Second:
		held = ", taken just now"
	default:
		held = " for " + d.Round(time.Second).String()
	}
	expires := ""
	if e.TTL > 0 {
		expires = " (expires in " + e.TTL.Round(time.Millisecond).String() + ")"
	}
	if e.Slots > 0 {
		return fmt.Sprintf("all %d slots of %s are held; the first to free is %s's%s%s",
			e.Slots, e.Key, e.Holder, held, expires)
	}
	return fmt.Sprintf("%s is held by %s%s%s", e.Key, e.Holder, held, expires)
}

// Is makes errors.Is(err, ErrNotObtained) true.
func (e *NotObtainedError) Is(target error) bool { return target == ErrNotObtained }

// notObtained describes the lock on key held by the owner of token ("" when
// unknown) with ttl left.
func notObtained(key, token string, ttl time.Duration) *NotObtainedError {
	e := &NotObtainedError{Key: key, Holder: "unknown", TTL: ttl}
	if token != "" {
		e.Holder, e.Since = holderOf(token), sinceOf(token)
	}
	return e
}

// unsupported is a combination of options this package refuses. Its
// message says which and matches errors.ErrUnsupported with errors.Is
// without ending in Go's "unsupported operation", so that the CLI can show
// it as it is.
type unsupported string

func (e unsupported) Error() string        { return string(e) }
func (e unsupported) Is(target error) bool { return target == errors.ErrUnsupported }

// Options configure a Client. A nil *Options means the defaults.
type Options struct {
	// Prefix is put before a lock's name to make its key; "" means
	// DefaultPrefix.
	Prefix string
	// History is how many runs Lock.ReleaseAndRecord keeps in a name's
	// history (Client.History); 0 means DefaultHistory, a negative number
	// none.
	History int
}

// LockOptions configure one acquisition. A nil *LockOptions means the
// defaults: no fencing number, no min-hold, no replica acknowledgement.
type LockOptions struct {
	// Fence draws a fencing number with the acquisition: see Lock.Fence.
	// A quorum Client refuses it (errors.ErrUnsupported).
	Fence bool
	// MinHold keeps the key at least this long after acquisition: Release
	// shortens its life to what is left of MinHold instead of deleting it.
	MinHold time.Duration
	// MinReplicas, when positive, makes the acquisition wait (Redis WAIT)
	// until that many replicas acknowledge the key; if fewer do within
	// ReplicaTimeout the lock is released and the error matches
	// ErrNotReplicated. This narrows, but does not close, the window in
	// which a failover loses the lock: Sentinel or Cluster may still
	// promote a replica that had not acknowledged.
	MinReplicas int
	// ReplicaTimeout bounds the wait for MinReplicas; 0 means 1s. Keep it
	// below the Redis client's ReadTimeout.
	ReplicaTimeout time.Duration
}

// Client takes locks on one Redis deployment, or on a quorum of them
// (NewQuorum). It is safe for concurrent use. Beyond its configuration it
// holds state only while Acquire waits: the waiting lines and one shared
// Pub/Sub connection, closed again soon after the last waiter is done.
type Client struct {
	b      backend // where locks are kept: single.go or quorum.go
	prefix string
	owner  string   // "<host>:<pid>:" put before every token
	line   waitLine // waiting Acquires, see waitline.go

	history int // runs kept per name by ReleaseAndRecord (records.go)
}

// New returns a Client that takes locks on the Redis deployment rdb: a
// plain client, a Sentinel failover client or a Cluster client.
func New(rdb redis.UniversalClient, opts *Options) *Client {
	return newClient(&single{rdb: rdb}, opts)
}

func newClient(b backend, opts *Options) *Client {
	c := &Client{b: b, prefix: DefaultPrefix, owner: ownerPrefix(), history: DefaultHistory}
	if opts != nil && opts.Prefix != "" {
		c.prefix = opts.Prefix
	}
	if opts != nil && opts.History != 0 {
		c.history = max(opts.History, 0)
	}
	return c
}

// Key returns the Redis key of the lock called name.
func (c *Client) Key(name string) string { return c.prefix + name }

// TryAcquire takes the lock called name for ttl, or fails at once with a
// *NotObtainedError (errors.Is(err, ErrNotObtained)) when someone else
// holds it. On one deployment without fencing it is exactly one SET key
// token NX PX ttl (EX when ttl is whole seconds). ttl must be at least a
// millisecond.
func (c *Client) TryAcquire(ctx context.Context, name string, ttl time.Duration, opts *LockOptions) (*Lock, error) {
	if name == "" {
		return nil, ErrEmptyName
	}
	token, err := newToken(c.owner, time.Now())
	if err != nil {
		return nil, err
	}
	return c.tryAcquire(ctx, name, token, ttl, opts)
}

func (c *Client) tryAcquire(ctx context.Context, name, token string, ttl time.Duration, opts *LockOptions) (*Lock, error) {
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("ttl %s is below 1ms", ttl)
	}
	return c.take(ctx, c.newLock(name, token, ttl, opts), opts)
}

// newLock is the Lock an acquisition of name with token wants.
func (c *Client) newLock(name, token string, ttl time.Duration, opts *LockOptions) *Lock {
	l := &Lock{c: c, name: name, key: c.Key(name), token: token, ttl: ttl}
	if opts != nil {
		l.minHold = opts.MinHold
	}
	return l
}

// take sends l's acquiring command and returns l when it is ours. A
// waiter's first try takes the Lock it will wait with, so that the
// uncontended path allocates one Lock.
func (c *Client) take(ctx context.Context, l *Lock, opts *LockOptions) (*Lock, error) {
	l.acquired = time.Now() // before sending: the key cannot outlive acquired+ttl
	if err := c.b.acquire(ctx, l, opts); err != nil {
		return nil, err
	}
	return l, nil
}

// Acquire takes the lock called name for ttl, waiting while someone else
// holds it until ctx is done. When ctx ends first the error matches both
// ErrNotObtained and ctx.Err() with errors.Is.
//
// A free lock costs what TryAcquire does: one SET. A busy one is waited for
// without polling, in a line kept in Redis beside the lock's key (line.go):
// waiters of every Client, in any process, are served in the order they
// joined, and a release hands the lock to the first live waiter and wakes
// only it. A waiter that gives up leaves the line at once; one whose
// process died is skipped. Where there is no line (a quorum, fenced or
// replicated acquisitions, Redis before 7.0) waiters subscribe to the
// lock's release messages, try again, and sleep until a release, the
// holder's expiry or a fallback poll of about a second; those of one Client
// are still served in FIFO order. A try in flight when ctx ends is
// completed, bounded by the Redis client's read timeout, so that it cannot
// leave behind a lock nobody knows of.
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration, opts *LockOptions) (*Lock, error) {
	if name == "" {
		return nil, ErrEmptyName
	}
	token, err := newToken(c.owner, time.Now())
	if err != nil {
		return nil, err
	}
	return c.line.wait(ctx, c, name, token, ttl, opts)
}

// Lock is a lock that was obtained. Its methods are safe for concurrent use.
type Lock struct {
	c        *Client
	name     string
	key      string
	token    string
	ttl      time.Duration
	minHold  time.Duration
	fence    int64
	slot     int       // a semaphore's slot (semaphore.go), 0 for a plain lock
	acquired time.Time // when the acquiring command was sent (monotonic)
	// renewBy is set by the backend: a time since acquired at which the
	// lock should be renewed before its regular interval (a quorum repairs
	// a node then), or 0 for none. KeepAlive reads it.
	renewBy atomic.Int64
	// refence is the fencing number of the last reacquisition by a
	// KeepAlive (KeepAliveOptions.Reacquire), or 0: Fence returns it.
	refence atomic.Int64

	window  *Span       // set by OncePer: the window a success marks done (onceper.go)
	indexed atomic.Bool // a renewal put it into its prefix's index (index.go)
}

// Name returns the lock's name as given to TryAcquire or Acquire.
func (l *Lock) Name() string { return l.name }

// Key returns the lock's Redis key.
func (l *Lock) Key() string { return l.key }

// Token returns the value that proves ownership. Treat it as a secret: anyone
// who knows it can release the lock.
func (l *Lock) Token() string { return l.token }

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
		// the same round trip, if the backend can (handoff.go).
		if done, err := l.c.line.handOff(ctx, l); done {
			return err
		}
	}
	return l.c.b.release(ctx, l, keep)
}

// renewalDue returns when the backend wants l renewed early, and false when
// it does not.
func (l *Lock) renewalDue() (time.Time, bool) {
	at := time.Duration(l.renewBy.Load())
	return l.acquired.Add(at), at > 0
}
