package withlock

import (
	"context"
	"time"
)

// handoffResult is what a Release that handed its lock to a waiter of the
// same Client tells that waiter.
type handoffResult struct {
	ok       bool      // the SET NX for the waiter's token succeeded
	acquired time.Time // when it was sent
}

// handable reports whether w's acquisition is a plain SET NX PX, which a
// Release can send for it. Fenced acquisitions (and any other option but
// MinHold, which only matters at release) go through the waiter's own try.
func (w *waiter) handable() bool {
	return w.opts == nil || *w.opts == (LockOptions{MinHold: w.opts.MinHold})
}

// handoff releases l and, in the same round trip, sends the SET NX PX that
// the first waiter in line for l's key in this Client would send after
// being woken: the release script first, then the waiter's SET, pipelined.
// A handoff between waiters of one Client then costs one round trip instead
// of the release, the release message's delivery and the waiter's own SET,
// with the same commands. The release is still the one EVAL of the release
// script, and its message still wakes waiters in other processes, which may
// win the race for the key as they could anyway.
//
// It returns false, having sent nothing, when no waiter here can take the
// lock that way or the backend cannot (backend.handOver); Release then
// sends its release alone.
func (s *waitState) handoff(ctx context.Context, c *Client, l *Lock) (bool, error) {
	if s.n.Load() == 0 {
		return false, nil
	}
	s.mu.Lock()
	r := s.rooms[l.key]
	if r == nil || len(r.queue) == 0 {
		s.mu.Unlock()
		return false, nil
	}
	w := r.queue[0]
	if w.handing || w.handed != nil || !w.handable() {
		s.mu.Unlock()
		return false, nil
	}
	w.handing = true
	skip := r.ready // our release message will reach the room: it must not wake the next in line
	if skip {
		r.skip++
	}
	s.mu.Unlock()

	to := &Lock{c: c, name: w.name, key: l.key, token: w.token, ttl: w.ttl}
	if w.opts != nil {
		to.minHold = w.opts.MinHold
	}
	handled, got, err := c.b.handOver(ctx, l, to)

	s.mu.Lock()
	if skip && (!handled || err != nil) && r.skip > 0 {
		r.skip-- // nothing was published, or we cannot tell: skip nothing
	}
	w.handing = false
	if handled {
		// A SET that failed on the wire was cleaned up by handOver.
		w.handed = &handoffResult{ok: got, acquired: to.acquired}
	}
	w.poke()
	s.mu.Unlock()
	return handled, err
}

// takeHandoff picks up the outcome of a handoff to w, waiting for one in
// flight, and returns the lock it got, or nil (then w should try on its
// own, as a handoff that failed may have seen another holder take over).
// A handoff whose SET may have landed unseen was cleaned up by handOver.
func (s *waitState) takeHandoff(c *Client, r *room, w *waiter) *Lock {
	for {
		s.mu.Lock()
		h, handing := w.handed, w.handing
		w.handed = nil
		if h != nil && !h.ok {
			w.try = true
		}
		s.mu.Unlock()
		switch {
		case h != nil && h.ok:
			l := &Lock{c: c, name: w.name, key: r.key, token: w.token, ttl: w.ttl, acquired: h.acquired}
			if w.opts != nil {
				l.minHold = w.opts.MinHold
			}
			s.leave(c, r, w, l)
			return l
		case h != nil || !handing:
			return nil
		}
		<-w.wake // the handoff pokes w when it is done
	}
}
