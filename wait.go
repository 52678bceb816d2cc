package withlock

// Waiting for a busy lock: waitLine routes each waiting Acquire, and each
// Release that may hand its lock on, to one of the two owners of waiting.

import (
	"context"
	"errors"
	"fmt"
	"github.com/with-lock/with-lock/internal/keys"
	"sync/atomic"
	"time"
)

// How a waiting Acquire sleeps when no release message wakes it.
const (
	// defaultPoll bounds each sleep of the first waiter in line: a release
	// message can be lost (the subscription dropped, an operator ran DEL, a
	// min-hold release shortened the key without publishing), and then the
	// waiter finds out by trying again. Up to a quarter more is added as
	// jitter so that waiting processes do not poll in step.
	defaultPoll = time.Second
	// defaultLinger keeps a lock's queue or room, and its subscription,
	// this long after its last waiter left, so bursts of contention do not
	// subscribe and unsubscribe for every acquisition.
	defaultLinger = 2 * time.Second
	// expiryMargin is added to a holder's PTTL before trying again: Redis
	// counts in whole milliseconds and a key is expired only past its time.
	expiryMargin = time.Millisecond
)

// waitLine is where a Client's waiting Acquires wait. It holds no state of
// its own: each of the two ways of waiting owns its state and its mutex,
// and neither mutex is held while the other is taken, so a Release, a
// waiter or a message of one never waits for the other's.
//
//   - fair (fairRooms, wait_fair*.go): the fair line across Clients, kept
//     in Redis, for plain and min-hold acquisitions on one deployment.
//   - local (localQueues, wait_local*.go): the in-process queues, for
//     everything else: a quorum, fenced or replicated acquisitions, names
//     with '}' but no hash tag, and where Redis refuses the line's
//     subscription (before 7.0, or an ACL without SSUBSCRIBE).
//
// What Client uses: wait (Acquire) and handOff (Release).
type waitLine struct {
	fair  fairRooms
	local localQueues
}

// wait is Acquire: it tries the SET, and while the lock is busy it waits in
// the fair line or the lock's queue. The token stays the same across tries,
// so a try whose reply was lost is recognised as ours by the next one.
func (ln *waitLine) wait(ctx context.Context, c *Client, name, token string, ttl time.Duration, opts *LockOptions) (*Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("acquire %s: not tried: %w", c.Key(name), waitEnded{context.Cause(ctx)})
	}
	// A try is never cut short by ctx: a SET abandoned in flight may still
	// land and leave a lock nobody releases. Each try is bounded by the
	// client's read timeout instead, and ctx is checked between tries.
	tctx := ctx
	if ctx.Done() != nil {
		tctx = context.WithoutCancel(ctx)
	}
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("ttl %s is below 1ms", ttl)
	}
	want := c.newLock(name, token, ttl, opts)
	replace := opts != nil && opts.Replace
	if replace {
		if err := replaceRefused(c.b, want, opts); err != nil {
			return nil, err
		}
	}
	if fl, ok := c.b.(fairLine); ok && (queues(opts) || replace) && keys.HasLine(want.key) {
		// A replacer waits in the line whatever its options, and draws
		// its fencing number or waits for replicas once it has the lock
		// (replace.go).
		l, err := ln.fair.wait(ctx, tctx, c, fl, want, lineOptions(opts))
		if l != nil && err == nil {
			c.leaseAfterHandOver(tctx, l) // lease.go
		}
		if l != nil && err == nil && replace {
			return c.confirmReplacer(tctx, l, opts)
		}
		if err != errLineRefused {
			return l, err
		}
		if replace {
			return nil, fmt.Errorf("acquire %s: Redis refused the fair line's subscription: %w", want.key, errReplaceUnsupported)
		}
		// Redis refused the line's subscription: wait without the line.
	}
	return ln.local.wait(ctx, tctx, c, want, opts)
}

// handOff is Release's chance to give l straight to a waiter of this
// Client, in the release's round trip: through the fair line when l's key
// has a room here, else to the first of its queue. It returns false,
// having sent nothing, when neither can; Release then releases on its own.
// With nobody waiting it costs two atomic loads.
func (ln *waitLine) handOff(ctx context.Context, l *Lock) (bool, error) {
	if ln.fair.busy.Load() > 0 {
		if done, err := ln.fair.handOff(ctx, l); done {
			return true, err
		}
	}
	if ln.local.busy.Load() > 0 {
		return ln.local.handOff(ctx, l)
	}
	return false, nil
}

// waitTimings are an owner's fallback poll and linger, settable by tests
// (SetWaitTimings), read without a mutex.
type waitTimings struct {
	poll   atomic.Int64 // the fallback poll in ns; 0: defaultPoll
	linger atomic.Int64 // the linger in ns; 0: defaultLinger
}

func (t *waitTimings) pollInterval() time.Duration {
	if d := time.Duration(t.poll.Load()); d > 0 {
		return d
	}
	return defaultPoll
}

func (t *waitTimings) lingerTime() time.Duration {
	if d := time.Duration(t.linger.Load()); d > 0 {
		return d
	}
	return defaultLinger
}

// lingerOn runs drop once the linger time has passed, on *timer
// (created at the first call, re-armed at the next).
func (t *waitTimings) lingerOn(timer **time.Timer, drop func()) {
	if *timer == nil {
		*timer = time.AfterFunc(t.lingerTime(), drop)
	} else {
		(*timer).Reset(t.lingerTime())
	}
}

// setTimings sets the poll and linger of both owners.
func (ln *waitLine) setTimings(poll, linger time.Duration) {
	for _, t := range []*waitTimings{&ln.fair.waitTimings, &ln.local.waitTimings} {
		t.poll.Store(int64(poll))
		t.linger.Store(int64(linger))
	}
}

// tryBeforeWaiting is a waiter's first try: the lock l, or who holds it
// (held), or an error that waiting cannot help.
func (c *Client) tryBeforeWaiting(ctx context.Context, want *Lock, opts *LockOptions) (*Lock, *NotObtainedError, error) {
	l, err := c.take(ctx, want, opts, time.Now())
	if err == nil {
		return l, nil, nil
	}
	var held *NotObtainedError // declared here: errors.As makes it escape to the heap
	if !errors.As(err, &held) {
		return nil, nil, err
	}
	return nil, held, nil
}
