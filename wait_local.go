package withlock

// The in-process queues: localQueues owns the waiting without the fair
// line (one queue per lock that has waiters), its mutex, and the waiting in it;
// the single backend's part of the local hand-off (handOver).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
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
// release script and one SET, with no stampede
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

// localQueues' hand-off: a Release that gives the lock straight to the
// first waiter of its queue in the same Client, in the same round trip.

// handOffResult is what a Release that handed its lock to a waiter of the
// same Client tells that waiter.
type handOffResult struct {
	to  *Lock // the waiter's lock, as sent
	got bool  // the SET NX for the waiter's token succeeded
}

// handOffable reports whether w's acquisition is a plain SET NX PX, which a
// Release can send for it. Fenced acquisitions (and any other option but
// MinHold, which only matters at release) go through the waiter's own try.
func (w *waiter) handOffable() bool {
	return w.opts == nil || *w.opts == (LockOptions{MinHold: w.opts.MinHold})
}

// handOff releases l and, in the same round trip, sends the SET NX PX that
// the first waiter in line for l's key in this Client would send after
// being woken: the release script first, then the waiter's SET, pipelined
// by the backend (handOver). A hand-off between waiters of one Client then
// costs one round trip instead of the release, the release message's
// delivery and the waiter's own SET, with the same commands. The release is
// still the one EVAL of the release script, and its message still wakes
// waiters in other processes, which may win the race for the key as they
// could anyway.
//
// It returns false, having sent nothing, when no waiter here can take the
// lock that way or the backend cannot send both at once; Release then
// releases on its own.
func (lq *localQueues) handOff(ctx context.Context, l *Lock) (bool, error) {
	lq.mu.Lock()
	ho, ok := l.c.b.(handOverer)
	q := lq.queues[l.key]
	if !ok || q == nil || len(q.waiters) == 0 {
		lq.mu.Unlock()
		return false, nil
	}
	w := q.waiters[0]
	if w.handOffInFlight || w.handOff != nil || !w.handOffable() {
		lq.mu.Unlock()
		return false, nil
	}
	w.handOffInFlight = true
	// Our release message will reach the queue: it must not wake the next
	// in line, as the lock goes to the first.
	ignore := q.listening
	if ignore {
		q.ownReleasesToIgnore++
	}
	lq.mu.Unlock()

	to := &Lock{c: l.c, name: w.want.name, key: w.want.key, token: w.want.token, ttl: w.want.ttl, minHold: w.want.minHold}
	// The backend cleans up a SET that failed on the wire and may land
	// later, before it returns: the waiter may give up instead of trying
	// again, and then nobody would release that key.
	got, err := ho.handOver(ctx, l, to)

	lq.mu.Lock()
	if ignore && err != nil && q.ownReleasesToIgnore > 0 {
		q.ownReleasesToIgnore-- // we cannot tell whether it was published: ignore nothing
	}
	w.handOffInFlight = false
	w.handOff = &handOffResult{to: to, got: got}
	w.wake()
	lq.mu.Unlock()
	return true, err
}

// takeHandOff picks up the outcome of a hand-off to w, waiting for one in
// flight, and returns the lock it got, or nil (then w should try on its
// own, as a hand-off that failed may have seen another holder take over).
func (lq *localQueues) takeHandOff(q *queue, w *waiter) *Lock {
	for {
		lq.mu.Lock()
		h, inFlight := w.handOff, w.handOffInFlight
		w.handOff = nil
		if h != nil && !h.got {
			w.tryNext = true
		}
		lq.mu.Unlock()
		switch {
		case h != nil && h.got:
			lq.leave(q, w, h.to)
			return h.to
		case h != nil || !inFlight:
			return nil
		}
		<-w.woken // handOff wakes w when it is done
	}
}

// handOver pipelines the release script for from and a SET NX PX for to,
// with what goes with to's SET (sendWith): a handoff between waiters of one
// Client costs one round trip, and the release is still the one EVAL whose
// message wakes other processes.
func (s *single) handOver(ctx context.Context, from, to *Lock) (got bool, err error) {
	to.acquired = time.Now() // before sending: to's key cannot outlive acquired+ttl
	var release *redis.Cmd
	var set *redis.BoolCmd
	_ = s.sendWith(ctx, s.rdb, to, to.acquired, false, func(p redis.Pipeliner) {
		// As a Client with waiters of its own: the key's waiting mark is
		// kept for those behind to, and the release message published.
		release = p.Eval(ctx, releaseScript(), []string{from.key}, releaseArgs(from.token, from.waitMark(), 0, ownWaitersOutsideTheLine)...)
		set = p.SetNX(ctx, to.key, to.token, to.ttl)
	})
	got, serr := set.Result()
	if serr != nil && mayHaveLanded(serr) {
		// The SET may still land, and the waiter may give up instead of
		// trying again: then nobody would release that key.
		s.abandon(ctx, to, false)
	}
	got = got && serr == nil
	to.leaseSent = to.leaseSent && got
	n, err := release.Int64()
	switch {
	case err != nil:
		return got, opError("release", from.key, err)
	case n == 0:
		return got, ErrLockNotHeld
	}
	return got, nil
}
