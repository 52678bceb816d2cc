package withlock

// localQueues' hand-off: a Release that gives the lock straight to the
// first waiter of its queue in the same Client, in the same round trip.

import "context"

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
