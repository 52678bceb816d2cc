package withlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is put before a lock's name to make its Redis key.
const DefaultPrefix = "lock:"

var (
	// ErrNotObtained means the lock is held by someone else. Errors from
	// TryAcquire and Acquire that match it with errors.Is are *HeldError.
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
)

// HeldError tells who holds a lock that could not be obtained.
type HeldError struct {
	Key    string        // the lock's Redis key
	Holder string        // "<host>:<pid>" of the owner, or "unknown"
	TTL    time.Duration // the owner's remaining time; 0 if unknown or gone
}

// Error names the key, the holder and its remaining time. It never shows the
// holder's full token.
func (e *HeldError) Error() string {
	return fmt.Sprintf("lock %s is held by %s (expires in %s)", e.Key, e.Holder, e.TTL.Round(time.Millisecond))
}

// Is makes errors.Is(err, ErrNotObtained) true.
func (e *HeldError) Is(target error) bool { return target == ErrNotObtained }

// Options configure a Client. A nil *Options means the defaults.
type Options struct {
	// Prefix is put before a lock's name to make its key; "" means
	// DefaultPrefix.
	Prefix string
}

// LockOptions configure one acquisition. A nil *LockOptions means the
// defaults: no fencing number, no min-hold.
type LockOptions struct {
	// Fence draws a fencing number with the acquisition: see Lock.Fence.
	Fence bool
	// MinHold keeps the key at least this long after acquisition: Release
	// shortens its life to what is left of MinHold instead of deleting it.
	MinHold time.Duration
	// MinReplicas, when positive, makes the acquisition wait (Redis WAIT)
	// until that many replicas acknowledge the key; if fewer do within
	// ReplicaTimeout the lock is released and the error matches
	// ErrNotReplicated. See acquireReplicated for what this does and does
	// not guarantee.
	MinReplicas int
	// ReplicaTimeout bounds the wait for MinReplicas; 0 means
	// DefaultReplicaTimeout.
	ReplicaTimeout time.Duration
}

// Client takes locks on one Redis deployment. It is safe for concurrent use.
// Beyond its configuration it holds state only while Acquire waits: the
// waiting lines and one shared Pub/Sub connection, closed again soon after
// the last waiter is done.
type Client struct {
	rdb    redis.UniversalClient
	prefix string
	owner  string   // "<host>:<pid>:" put before every token
	line   waitLine // waiting Acquires, see waitline.go
	b      seamShim // DELETE AT MERGE with seam_shim.go: H1's backend

	// A Redlock quorum (NewQuorum): independent masters, rdb is nodes[0].
	// nil for one deployment, whose path never looks further.
	nodes  []redis.UniversalClient
	quorum int
}

// New returns a Client that takes locks through rdb.
func New(rdb redis.UniversalClient, opts *Options) *Client {
	c := &Client{rdb: rdb, prefix: DefaultPrefix, owner: ownerPrefix()}
	c.b = seamShim{c} // DELETE AT MERGE with seam_shim.go
	if opts != nil && opts.Prefix != "" {
		c.prefix = opts.Prefix
	}
	return c
}

// Key returns the Redis key of the lock called name.
func (c *Client) Key(name string) string { return c.prefix + name }

// FenceKey returns the key of the fencing counter of the lock called name.
// It lies in the same Redis Cluster slot as the lock's key, so both can be
// written by one script.
func (c *Client) FenceKey(name string) string { return fenceKey(c.Key(name)) }

func fenceKey(key string) string {
	// A key's slot comes from its first "{...}" if there is a non-empty one,
	// else from the whole key. Keep that hash tag, or make the whole key one.
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key + ":fence"
		}
	}
	if strings.Contains(key, "}") { // it would end the tag early
		return sameSlotFenceKey(key)
	}
	return "{" + key + "}:fence"
}

// TryAcquire takes the lock called name for ttl, or fails at once with a
// *HeldError (errors.Is(err, ErrNotObtained)) when someone else holds it.
// Without fencing it is exactly one SET key token NX PX ttl (EX when ttl is
// whole seconds). ttl must be at least a millisecond.
func (c *Client) TryAcquire(ctx context.Context, name string, ttl time.Duration, opts *LockOptions) (*Lock, error) {
	token, err := newToken(c.owner)
	if err != nil {
		return nil, err
	}
	return c.tryAcquire(ctx, name, token, ttl, opts)
}

func (c *Client) tryAcquire(ctx context.Context, name, token string, ttl time.Duration, opts *LockOptions) (*Lock, error) {
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("ttl %s is below 1ms", ttl)
	}
	l := &Lock{c: c, name: name, key: c.Key(name), token: token, ttl: ttl}
	if opts != nil {
		l.minHold = opts.MinHold
	}
	l.acquired = time.Now() // before sending: the key cannot outlive acquired+ttl
	if c.nodes != nil {
		return c.acquireQuorum(ctx, l, opts)
	}
	fenced := opts != nil && opts.Fence
	var ok bool
	var err error
	if opts != nil && opts.MinReplicas > 0 {
		ok, err = acquireReplicated(ctx, c.rdb, l, opts)
	} else {
		ok, err = l.set(ctx, c.rdb, fenced)
	}
	if err != nil {
		return nil, err
	}
	if ok {
		return l, nil
	}
	return c.held(ctx, l, fenced)
}

// held builds the *HeldError for a failed SET NX. If the key holds our own
// token, an earlier attempt of this acquisition did land (a retried command
// or a wait loop) and the lock is ours after all.
func (c *Client) held(ctx context.Context, l *Lock, fenced bool) (*Lock, error) {
	holder, ttl, err := inspect(ctx, c.rdb, l.key)
	if redis.HasErrorPrefix(err, "WRONGTYPE") {
		return nil, wrongType(ctx, c.rdb, l.key, "key", err)
	}
	if err != nil {
		if mayHaveLanded(err) { // a retried SET may have landed before
			l.abandon(ctx)
		}
		return nil, err
	}
	if holder == l.token {
		if fenced {
			// While we hold the lock nobody else can draw a number, so the
			// counter is still the one our landed script drew.
			if l.fence, err = c.rdb.Get(ctx, fenceKey(l.key)).Int64(); err != nil {
				l.abandon(ctx)
				return nil, fmt.Errorf("read fence of %s: %w", l.key, err)
			}
		}
		return l, nil
	}
	return nil, heldError(l.key, holder, ttl)
}

// setter is what sends an acquiring command: a client, or one of its
// connections when WAIT must follow on the same one.
type setter interface {
	Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
}

// set sends l's acquiring command through rdb: one SET NX PX, or with
// fencing the script that also draws the fencing number into l.fence. It
// reports false when someone else holds the key. Every acquisition on one
// deployment sends its command here, so this is where a command whose
// outcome is unknown is cleaned up (abandon, in token.go) before its error
// is returned.
func (l *Lock) set(ctx context.Context, rdb setter, fenced bool) (bool, error) {
	var ok bool
	var err error
	if fenced {
		l.fence, err = rdb.Eval(ctx, acquireFencedScript, []string{l.key, fenceKey(l.key)}, l.token, l.ttl.Milliseconds()).Int64()
		ok = err == nil
		if errors.Is(err, redis.Nil) { // the script's false: held
			err = nil
		}
	} else {
		ok, err = rdb.SetNX(ctx, l.key, l.token, l.ttl).Result()
	}
	switch {
	case err == nil:
		return ok, nil
	case fenced && redis.HasErrorPrefix(err, "WRONGTYPE"):
		// Only the counter can fail the script: a lock key of another
		// type makes its SET NX answer "held", and held finds out.
		return false, wrongType(ctx, l.c.rdb, fenceKey(l.key), "fence counter", err)
	case mayHaveLanded(err):
		l.abandon(ctx)
	}
	return false, fmt.Errorf("acquire %s: %w", l.key, err)
}

// inspect reads who holds key and for how long, in one round trip: the
// holder's token ("" when the key is gone) and its remaining time (0 when
// unknown or without expiry).
func inspect(ctx context.Context, rdb redis.UniversalClient, key string) (string, time.Duration, error) {
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, key)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", 0, fmt.Errorf("inspect %s: %w", key, err)
	}
	return get.Val(), max(pttl.Val(), 0), nil
}

// heldError describes the lock on key held by the owner of token.
func heldError(key, token string, ttl time.Duration) *HeldError {
	e := &HeldError{Key: key, Holder: "unknown", TTL: ttl}
	if token != "" {
		e.Holder = Holder(token)
	}
	return e
}

// Acquire takes the lock called name for ttl, waiting while someone else
// holds it until ctx is done. When ctx ends first the error matches both
// ErrNotObtained and ctx.Err() with errors.Is.
//
// A free lock costs what TryAcquire does: one SET. A busy one is waited for
// without polling: the waiter subscribes to the lock's release messages,
// then tries again (so a release in between is not missed), and sleeps
// until a release, the holder's expiry (a crashed holder sends nothing) or
// a fallback poll of about a second. Waiters of one Client are served in
// FIFO order and only the first in line sends commands; a Release by the
// same Client takes the lock for it in its own round trip. A try in flight
// when ctx ends is completed, bounded by the Redis client's read timeout,
// so that it cannot leave behind a lock nobody knows of.
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration, opts *LockOptions) (*Lock, error) {
	token, err := newToken(c.owner)
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
	acquired time.Time // when the acquiring command was sent (monotonic)
	repair   repairClock
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
func (l *Lock) Fence() int64 { return l.fence }

// AcquiredAt returns when the acquiring command was sent. The key cannot
// outlive AcquiredAt plus the TTL unless the lock is extended.
func (l *Lock) AcquiredAt() time.Time { return l.acquired }

// TTL returns the lock's remaining time, or ErrLockNotHeld when it is no
// longer ours.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	if l.c.nodes != nil {
		return l.ttlQuorum(ctx)
	}
	ms, err := l.c.rdb.Eval(ctx, pttlScript, []string{l.key}, l.token).Int64()
	if err != nil {
		return 0, opError("ttl of", l.key, err)
	}
	if ms < 0 {
		return 0, ErrLockNotHeld
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Extend sets the lock's remaining time to ttl if it is still ours, with one
// compare-and-PEXPIRE script. It never recreates an expired key: then it
// returns ErrLockNotHeld.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("ttl %s is below 1ms", ttl)
	}
	if l.c.nodes != nil {
		return l.extendQuorum(ctx, ttl)
	}
	n, err := l.c.rdb.Eval(ctx, extendScript, []string{l.key}, l.token, ttl.Milliseconds()).Int64()
	if err != nil {
		return opError("extend", l.key, err)
	}
	if n != 1 {
		return ErrLockNotHeld
	}
	return nil
}

// Release gives the lock up if it is still ours, with one compare-and-delete
// script, and wakes those waiting for it. With LockOptions.MinHold, a lock
// released early is kept until its min-hold passes. When the lock is no
// longer ours it returns ErrLockNotHeld and leaves the key alone.
func (l *Lock) Release(ctx context.Context) error {
	var keep int64
	if l.minHold > 0 {
		if left := l.minHold - time.Since(l.acquired); left >= time.Millisecond {
			keep = left.Milliseconds()
		}
	}
	if l.c.nodes != nil {
		return l.releaseQuorum(ctx, keep)
	}
	if keep == 0 {
		// A waiter of this Client is first in line: take the lock for it in
		// the same round trip (handoff.go).
		if done, err := l.c.line.handOff(ctx, l); done {
			return err
		}
	}
	n, err := l.c.rdb.Eval(ctx, releaseScript, []string{l.key}, l.token, keep).Int64()
	if err != nil {
		return opError("release", l.key, err)
	}
	if n != 1 {
		return ErrLockNotHeld
	}
	return nil
}
