package withlock

// Waiting for a busy lock (Acquire): the plain wait woken by release
// messages, the in-process queue, and giving up.

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// wait is Acquire: it tries the SET, and while the lock is busy it waits in
// the lock's queue for a release message, the holder's expiry or the poll.
// The token stays the same across tries, so a try whose reply was lost is
// recognised as ours by the next one.
func (ln *waitLine) wait(ctx context.Context, c *Client, name, token string, ttl time.Duration, opts *LockOptions) (*Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("acquire %s: %w", c.Key(name), context.Cause(ctx))
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
	if fl, ok := c.b.(fairLine); ok && queues(opts) && hasLine(want.key) {
		return ln.waitFair(ctx, tctx, c, fl, want, opts)
	}
	return ln.waitPlain(ctx, tctx, c, want, opts)
}

// waitPlain is Acquire without the fair line (wait_fair.go): on a quorum, for
// fenced or replicated acquisitions, and where Redis refuses the line's
// subscription. Waiters of this Client queue up; across Clients every
// release wakes the first waiter of each, and they race.
func (ln *waitLine) waitPlain(ctx, tctx context.Context, c *Client, want *Lock, opts *LockOptions) (*Lock, error) {
	var seen *queue // a listening queue seen before our first try
	var events uint64
	if ln.busy.Load() > 0 {
		ln.local.mu.Lock()
		if q := ln.local.queues[want.key]; q != nil {
			if len(q.waiters) > 0 {
				// Busy with waiters here already: the SET would fail or
				// take the lock from under them. Queue up behind them.
				w := q.join(false, want, opts)
				ln.local.mu.Unlock()
				return ln.waitInLine(ctx, tctx, q, w)
			}
			if q.listening {
				seen, events = q, q.events
			}
		}
		ln.local.mu.Unlock()
	}

	l, held, err := c.tryBeforeWaiting(tctx, want, opts)
	if l != nil || err != nil {
		return l, err
	}
	now := time.Now()
	ln.local.mu.Lock()
	q := ln.queueFor(c, held.Key)
	q.noteHolder(held, now)
	// The first in line must try again once the subscription is confirmed
	// (a release between our SET and the SUBSCRIBE would otherwise be
	// missed) unless our SET was already sent while listening and no
	// message has come since.
	w := q.join(q.listening && (q != seen || q.events != events), want, opts)
	ln.local.mu.Unlock()
	return ln.waitInLine(ctx, tctx, q, w)
}

// waitInLine waits in q until w gets the lock or ctx ends. Tries use tctx,
// which ctx's end does not cut short.
func (ln *waitLine) waitInLine(ctx, tctx context.Context, q *queue, w *waiter) (*Lock, error) {
	poll := ln.pollInterval()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if l := ln.takeHandOff(q, w); l != nil {
			return l, nil
		}
		ln.local.mu.Lock()
		first := q.waiters[0] == w
		idle := !w.handOffInFlight && w.handOff == nil // no Release is acting for us
		try := first && w.tryNext && idle
		w.tryNext = w.tryNext && !try
		var d time.Duration
		if first && !try && idle {
			if d = q.sleepFor(poll); d <= 0 {
				try = true
			}
		}
		ln.local.mu.Unlock()

		if try {
			l, err := w.want.c.tryAcquire(tctx, w.want.name, w.want.token, w.want.ttl, w.opts)
			var held *NotObtainedError
			switch {
			case err == nil:
				ln.leave(q, w, l)
				return l, nil
			case !errors.As(err, &held):
				if l := ln.takeHandOff(q, w); l != nil {
					return l, nil // a local Release took it for us meanwhile
				}
				ln.leave(q, w, nil)
				return nil, err
			}
			now := time.Now()
			ln.local.mu.Lock()
			q.noteHolder(held, now)
			ln.local.mu.Unlock()
			if ctx.Err() != nil {
				return ln.giveUp(ctx, q, w)
			}
			continue
		}

		var expired <-chan time.Time
		if d > 0 {
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			expired = timer.C
		}
		select {
		case <-w.woken:
		case <-expired:
			ln.local.mu.Lock()
			w.tryNext = true
			ln.local.mu.Unlock()
		case <-ctx.Done():
			return ln.giveUp(ctx, q, w)
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// giveUp leaves q because ctx ended and returns the error for it: the last
// known holder, matching ErrNotObtained, and ctx's cause. A hand-off to w
// already under way is waited for, and the lock it got is returned.
func (ln *waitLine) giveUp(ctx context.Context, q *queue, w *waiter) (*Lock, error) {
	if l := ln.takeHandOff(q, w); l != nil {
		return l, nil
	}
	ln.leave(q, w, nil)
	ln.local.mu.Lock()
	held := &NotObtainedError{Key: q.key, Holder: Holder{ID: q.holder}}
	if !q.holderExpires.IsZero() {
		held.Holder.TTL = max(0, time.Until(q.holderExpires)).Round(time.Millisecond)
	}
	ln.local.mu.Unlock()
	if held.Holder.ID == "" {
		held.Holder.ID = "unknown"
	}
	return nil, fmt.Errorf("%w; gave up waiting: %w", held, context.Cause(ctx))
}

// tryBeforeWaiting is a waiter's first try: the lock l, or who holds it
// (held), or an error that waiting cannot help.
func (c *Client) tryBeforeWaiting(ctx context.Context, want *Lock, opts *LockOptions) (*Lock, *NotObtainedError, error) {
	l, err := c.take(ctx, want, opts)
	if err == nil {
		return l, nil, nil
	}
	var held *NotObtainedError // declared here: errors.As makes it escape to the heap
	if !errors.As(err, &held) {
		return nil, nil, err
	}
	return nil, held, nil
}
