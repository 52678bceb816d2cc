package withlock

// The in-process queues: localQueues owns the waiting without the fair
// line (one queue per lock that has waiters), its mutex, and the waiting in it.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// localQueues is the waiting without the fair line (wait_fair.go): on a
// quorum, for fenced or replicated acquisitions, for names with '}' but no
// hash tag, and where Redis refuses the line's subscription (before 7.0, or
// an ACL without SSUBSCRIBE). It keeps one queue per lock key that has
// waiters (wait_local_queue.go) and one subscription to release messages
// shared by all of them (wait_local_subscription.go). Its mu guards them and
// every queue's and waiter's fields; the subscription reaches them only
// through localQueues' methods. It holds anything only while someone waits
// (and for the linger time after).
//
// Waiters of one Client queue up in FIFO order and only the first in line
// talks to Redis: a release message wakes that one alone, which tries the
// SET and, on success, leaves the next waiter first in line. A second
// Acquire on a lock that already has waiters here joins the queue without
// sending anything, since the first in line will be woken by the next
// release anyway. So a hand-off between waiters of one Client costs the
// release script and one SET (wait_local_handoff.go), with no stampede
// however many wait, and waiters are served in turn. Waiters in other
// processes each have their own Client and are woken by the same message;
// each of those sends one SET (plus the inspection of a failed one) per
// release.
type localQueues struct {
	busy atomic.Int32 // len(queues), read without mu so the uncontended path takes no mutex
	waitTimings

	mu     sync.Mutex
	queues map[string]*queue
	sub    *subscription // nil when there are no queues
}

// wait is Acquire in want.key's queue. Waiters of this Client queue up;
// across Clients every release wakes the first waiter of each, and they
// race.
func (lq *localQueues) wait(ctx, tctx context.Context, c *Client, want *Lock, opts *LockOptions) (*Lock, error) {
	var seen *queue // a listening queue seen before our first try
	var events uint64
	if lq.busy.Load() > 0 {
		lq.mu.Lock()
		if q := lq.queues[want.key]; q != nil {
			if len(q.waiters) > 0 {
				// Busy with waiters here already: the SET would fail or
				// take the lock from under them. Queue up behind them.
				w := q.join(false, want, opts)
				lq.mu.Unlock()
				return lq.waitInLine(ctx, tctx, q, w)
			}
			if q.listening {
				seen, events = q, q.events
			}
		}
		lq.mu.Unlock()
	}

	if seen != nil {
		// Others waited here lately: mark our first try as a waiter's,
		// which the shortcut at join below relies on.
		want.announce = lq.markFor()
	}
	l, held, err := c.tryBeforeWaiting(tctx, want, opts)
	if l != nil || err != nil {
		return l, err
	}
	now := time.Now()
	lq.mu.Lock()
	q := lq.queueFor(c, held.Key)
	q.noteHolder(held, now)
	// The first in line must try again once the subscription is confirmed
	// (a release between our SET and the SUBSCRIBE would otherwise be
	// missed, and every try after the first marks the key as waited for,
	// without which a release publishes nothing) unless our SET was already
	// sent, marked, while listening and no message has come since.
	w := q.join(q.listening && (q != seen || q.events != events), want, opts)
	lq.mu.Unlock()
	return lq.waitInLine(ctx, tctx, q, w)
}

// waitInLine waits in q until w gets the lock or ctx ends. Tries use tctx,
// which ctx's end does not cut short.
func (lq *localQueues) waitInLine(ctx, tctx context.Context, q *queue, w *waiter) (*Lock, error) {
	poll := lq.pollInterval()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if l := lq.takeHandOff(q, w); l != nil {
			return l, nil
		}
		lq.mu.Lock()
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
		lq.mu.Unlock()

		if try {
			l, err := lq.try(tctx, w)
			var held *NotObtainedError
			switch {
			case err == nil:
				lq.leave(q, w, l)
				return l, nil
			case !errors.As(err, &held):
				if l := lq.takeHandOff(q, w); l != nil {
					return l, nil // a local Release took it for us meanwhile
				}
				lq.leave(q, w, nil)
				return nil, err
			}
			now := time.Now()
			lq.mu.Lock()
			q.noteHolder(held, now)
			lq.mu.Unlock()
			if ctx.Err() != nil {
				return lq.giveUp(ctx, q, w)
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
			lq.mu.Lock()
			w.tryNext = true
			lq.mu.Unlock()
		case <-ctx.Done():
			return lq.giveUp(ctx, q, w)
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// try is w's SET (or its fenced or replicated acquisition) after the
// first, which marks the key as waited for in the same round trip: the
// holder's release then publishes, and wakes us.
func (lq *localQueues) try(ctx context.Context, w *waiter) (*Lock, error) {
	want := w.want
	l := want.c.newLock(want.name, want.token, want.ttl, w.opts)
	l.announce = lq.markFor()
	return want.c.take(ctx, l, w.opts, time.Now())
}

// markFor is how long a waiter's try marks the key as waited for: past
// the waiter's next try, at most a poll interval and its jitter later, and
// past the next try of the one behind it when a hand-off made that one
// first (the mark set by the try before, up to that long ago, is all it has).
func (lq *localQueues) markFor() time.Duration {
	return max(aliveFor, 3*lq.pollInterval())
}

// giveUp leaves q because ctx ended and returns the error for it: the last
// known holder, matching ErrNotObtained, and ctx's cause. A hand-off to w
// already under way is waited for, and the lock it got is returned.
func (lq *localQueues) giveUp(ctx context.Context, q *queue, w *waiter) (*Lock, error) {
	if l := lq.takeHandOff(q, w); l != nil {
		return l, nil
	}
	lq.leave(q, w, nil)
	lq.mu.Lock()
	held := &NotObtainedError{Key: q.key, Holder: Holder{ID: q.holder}}
	if !q.holderExpires.IsZero() {
		held.Holder.TTL = max(0, time.Until(q.holderExpires)).Round(time.Millisecond)
	}
	lq.mu.Unlock()
	if held.Holder.ID == "" {
		held.Holder.ID = "unknown"
	}
	return nil, fmt.Errorf("%w; gave up waiting: %w", held, waitEnded{context.Cause(ctx)})
}
