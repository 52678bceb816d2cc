package withlock

// The public entry: Options, LockOptions, Client (New) and TryAcquire and
// Acquire.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
)

// defaultPrefix is put before a lock's name to make its Redis key.
const defaultPrefix = "lock:"

// Options configure a Client. A nil *Options means the defaults.
type Options struct {
	// Prefix is put before a lock's name to make its key; "" means
	// "lock:".
	Prefix string
	// History is how many runs Lock.ReleaseAndRecord keeps in a name's
	// history (Client.History); 0 means 10, a negative number none.
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
	// Replace, for Acquire, asks the lock's holder to stop when the lock
	// is held, and waits first in the fair line: the holder's KeepAlive
	// reports ErrReplaced, renewing until its Release hands the lock over
	// (or the key expires). Of a semaphore's holders it asks the oldest
	// (Holder.Since). With Fence the number is drawn, and with MinReplicas
	// the replicas waited for, once the lock is handed over. On a quorum,
	// for a name with '}' and no hash tag, or where the fair line's
	// subscription is refused, Acquire returns an error matching
	// errors.ErrUnsupported.
	Replace bool
	// detectLapse marks the lease beside the lock's key and reads the
	// mark the lease before left (lease.go): set by internal/lapse, for
	// the command's --lock-delay.
	detectLapse bool
}

// Client takes locks on one Redis deployment, or on a quorum of them
// (NewQuorum). It is safe for concurrent use. Beyond its configuration it
// holds state only while Acquire waits: the waiting lines and one shared
// Pub/Sub connection, closed again soon after the last waiter is done.
type Client struct {
	b      backend // where locks are kept: backend_single.go or backend_quorum.go
	prefix string
	owner  string   // "<host>:<pid>:" put before every token
	line   waitLine // waiting Acquires, see wait.go

	history int // runs kept per name by ReleaseAndRecord (admin_records.go)
}

// New returns a Client that takes locks on the Redis deployment rdb: a
// plain client, a Sentinel failover client or a Cluster client.
func New(rdb redis.UniversalClient, opts *Options) *Client {
	return newClient(newSingle(rdb), opts)
}

func newClient(b backend, opts *Options) *Client {
	c := &Client{b: b, prefix: defaultPrefix, owner: ownerPrefix(), history: historyRuns}
	if opts != nil && opts.Prefix != "" {
		c.prefix = opts.Prefix
	}
	if opts != nil && opts.History != 0 {
		c.history = max(opts.History, 0)
	}
	return c
}

// Key returns the Redis key of the lock called name.
func (c *Client) Key(name string) string { return keys.Lock(c.prefix, name) }

// TryAcquire takes the lock called name for ttl, or fails at once with a
// *NotObtainedError (errors.Is(err, ErrNotObtained)) when someone else
// holds it. On one deployment without fencing it is exactly one SET key
// token NX PX ttl (EX when ttl is whole seconds); a Client's first
// acquisition sends INFO memory after it in the same round trip
// (EvictionPolicy), and where List reads an index of names a Client's first
// acquisition of a name in a minute writes the name there (HSET), ahead of
// the SET in its round trip. ttl must be at least a millisecond.
//
// On a *redis.Client the concurrent acquisitions and releases of one
// Client share round trips: a command that finds none of the Client's in
// flight is sent at once, and those that arrive meanwhile go together in
// the next pipeline, each with its own reply. When ctx ends first, a
// command still waiting to be sent is taken back; one already sent is left
// to its round trip, which deletes the lock if it landed (an acquisition
// that also writes the index waits for its replies, as a lone one does).
func (c *Client) TryAcquire(ctx context.Context, name string, ttl time.Duration, opts *LockOptions) (*Lock, error) {
	if name == "" {
		return nil, ErrEmptyName
	}
	now := time.Now() // the token's and the acquisition's: one clock read, which is dear on some VMs
	token, err := newToken(c.owner, now)
	if err != nil {
		return nil, err
	}
	return c.tryAcquire(ctx, name, token, ttl, opts, now)
}

// tryAcquire is TryAcquire with token, sending its SET no earlier than now.
func (c *Client) tryAcquire(ctx context.Context, name, token string, ttl time.Duration, opts *LockOptions, now time.Time) (*Lock, error) {
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("ttl %s is below 1ms", ttl)
	}
	return c.take(ctx, c.newLock(name, token, ttl, opts), opts, now)
}

// newLock is the Lock an acquisition of name with token wants.
func (c *Client) newLock(name, token string, ttl time.Duration, opts *LockOptions) *Lock {
	l := &Lock{c: c, name: name, token: token, ttl: ttl}
	l.key, l.mark = c.keyAndMark(name)
	l.relKeys[0] = l.key
	l.relArgs = [2]any{&l.token, &l.mark}
	if opts != nil {
		l.minHold, l.lapse = opts.MinHold, opts.detectLapse
	}
	return l
}

// keyAndMark returns the key of the lock called name and its waiting mark
// (keys.Mark), in one allocation where the mark is "{key}:w": the key is
// then inside the mark.
func (c *Client) keyAndMark(name string) (key, mark string) {
	if hasBrace(c.prefix) || hasBrace(name) {
		key = c.Key(name)
		return key, keys.Mark(key)
	}
	mark = "{" + c.prefix + name + "}:w"
	return mark[1 : len(mark)-3], mark
}

// hasBrace reports whether s has a '{' or a '}': strings.ContainsAny
// builds a set of its characters at every call, which the hot path pays.
func hasBrace(s string) bool {
	return strings.IndexByte(s, '{') >= 0 || strings.IndexByte(s, '}') >= 0
}

// take sends l's acquiring command and returns l when it is ours. The
// command is sent no earlier than now, which becomes l's acquisition time:
// the key cannot outlive acquired+ttl. A waiter's first try takes the Lock
// it will wait with, so that the uncontended path allocates one Lock.
func (c *Client) take(ctx context.Context, l *Lock, opts *LockOptions, now time.Time) (*Lock, error) {
	l.acquired = now
	if err := l.leaseRefused(c.b); err != nil {
		return nil, err
	}
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
// without polling, in a line kept in Redis beside the lock's key: waiters of
// every Client, in any process, are served in the order they
// joined, and a release hands the lock to the first live waiter and wakes
// only it. A waiter that gives up leaves the line at once; one whose
// process died is skipped. Where there is no line (a quorum, fenced or
// replicated acquisitions, Redis before 7.0) waiters subscribe to the
// lock's release messages, try again, and sleep until a release, the
// holder's expiry or a fallback poll of about a second; those of one Client
// are still served in FIFO order. A try in flight when ctx ends is
// completed, bounded by the Redis client's read timeout, so that it cannot
// leave behind a lock nobody knows of; a try sharing a round trip with
// other callers (see TryAcquire) stops waiting instead, and its round trip
// deletes the lock if it landed.
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration, opts *LockOptions) (*Lock, error) {
	if name == "" {
		return nil, ErrEmptyName
	}
	token, err := newToken(c.owner, time.Now())
	if err != nil {
		return nil, err
	}
	l, err := c.line.wait(ctx, c, name, token, ttl, opts)
	if err == nil {
		l.obtained = time.Now() // the run's start, which Acquired may precede by the wait
	}
	return l, err
}

// Client.Do: acquire, keep renewing (KeepAlive), run a function, release.

// DoOptions configure Do. A nil *DoOptions means the defaults: fail at once
// when the lock is busy, no fencing, no min-hold, default renewal.
type DoOptions struct {
	// LockOptions are the acquisition's fencing, min-hold and replicas.
	LockOptions
	// Wait makes Do wait for a busy lock until ctx is done, as Acquire
	// does, instead of failing at once with ErrNotObtained.
	Wait bool
	// KeepAlive tunes renewal while fn runs.
	KeepAlive KeepAliveOptions
}

// Do runs fn while holding the lock called name: it acquires the lock for
// ttl, renews it in the background while fn runs, and releases it when fn
// returns. fn's context is cancelled when the lock is lost, with a
// *LostError as its context.Cause; fn should then stop touching what the
// lock protects. l gives fn the lock's fencing number and token.
//
// Do returns the acquisition's error (matching ErrNotObtained when the lock
// is busy) without calling fn. Otherwise it returns fn's error joined with
// any loss (matching ErrLockLost, also when the lock turned out to be gone
// only at release) and any release error. The release runs even when ctx
// is already cancelled; it is bounded by the Redis client's timeouts.
//
// If fn panics (or calls runtime.Goexit), Do stops the renewal and releases
// the lock before the panic goes on up the stack, so a caller that recovers
// (as net/http does for every handler) does not keep the lock for ever.
func (c *Client) Do(ctx context.Context, name string, ttl time.Duration, opts *DoOptions, fn func(ctx context.Context, l *Lock) error) error {
	if opts == nil {
		opts = &DoOptions{}
	}
	acquire := c.TryAcquire
	if opts.Wait {
		acquire = c.Acquire
	}
	l, err := acquire(ctx, name, ttl, &opts.LockOptions)
	if err != nil {
		return err
	}
	ka := l.KeepAlive(ctx, &opts.KeepAlive)
	returned := false
	defer func() {
		if !returned {
			// fn panicked: renewing would keep the lock as long as the
			// process lives. The panic continues after this.
			ka.Stop()
			if !errors.Is(ka.Err(), ErrLockNotHeld) {
				_ = l.Release(context.WithoutCancel(ctx))
			}
		}
	}()
	fnErr := fn(ka.Context(), l)
	returned = true
	ka.Stop()

	lost := ka.Err()
	if errors.Is(fnErr, ErrLockLost) {
		lost = nil // fn returned the cause itself; say it once
	}
	if errors.Is(ka.Err(), ErrLockNotHeld) {
		return errors.Join(fnErr, lost) // the key is someone else's or gone
	}
	relErr := l.Release(context.WithoutCancel(ctx))
	if errors.Is(relErr, ErrLockNotHeld) {
		relErr = nil
		if ka.Err() == nil {
			// Lost between the last renewal and the release.
			lost = &LostError{Key: l.key, Err: ErrLockNotHeld}
		}
	}
	return errors.Join(fnErr, lost, relErr)
}
