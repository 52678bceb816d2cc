package withlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
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
	// defaultLinger keeps a lock's subscription this long after its last
	// waiter left, so bursts of contention do not SUBSCRIBE and UNSUBSCRIBE
	// for every acquisition. The shared connection closes with the last one.
	defaultLinger = 2 * time.Second
	// expiryMargin is added to a holder's PTTL before trying again: Redis
	// counts in whole milliseconds and a key is expired only past its time.
	expiryMargin = time.Millisecond
)

// waitState is what a Client keeps for its waiting Acquires: one room per
// lock that has waiters, and one subscription shared by all rooms. All of it
// exists only while someone waits (and for defaultLinger after).
//
// Waiters of one Client queue up in FIFO order and only the first in line
// talks to Redis: a release message wakes that one alone, which tries the
// SET and, on success, leaves the next waiter first in line. A second
// Acquire on a lock that already has waiters here joins the queue without
// sending anything, since the first in line will be woken by the next
// release anyway. So a handoff between waiters of one Client costs the
// release script and one SET, with no stampede however many wait, and
// waiters are served in turn. Waiters in other processes each have their
// own Client and are woken by the same message; each of those sends one SET
// (plus the inspection of a failed one) per release.
type waitState struct {
	mu     sync.Mutex
	n      atomic.Int32 // len(rooms), read without mu so the uncontended path stays lock-free
	rooms  map[string]*room
	sub    *subscriber // nil when there are no rooms
	poll   time.Duration
	linger time.Duration
}

// room is the waiting line for one lock key, guarded by waitState.mu.
type room struct {
	key     string
	queue   []*waiter // queue[0] is the first in line, the only one that tries
	ready   bool      // SUBSCRIBE confirmed: every later release reaches us
	seq     uint64    // release messages and confirmations received
	holder  string    // last known holder, "<host>:<pid>", "" if unknown
	expires time.Time // when the last known holder's key expires at the latest; zero if unknown
	zeroes  int       // failed tries in a row that saw no TTL, for backoff
	skip    int       // release messages of local handoffs still to come, not to wake anyone
	idle    *time.Timer
}

// waiter is one waiting Acquire. Its fields after wake are guarded by mu.
type waiter struct {
	wake chan struct{} // capacity 1: a pending wake-up is never lost nor doubled
	try  bool          // send the SET when next awake

	// What the waiter would SET, so that a local Release can send it
	// (handoff.go), and the state of such a handoff.
	name, token string
	ttl         time.Duration
	opts        *LockOptions
	handing     bool           // a Release is sending our SET right now
	handed      *handoffResult // its outcome, not yet picked up
}

// poke wakes w without blocking; a wake-up already pending is enough.
func (w *waiter) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// notify records a release message, or a confirmation that the room's
// subscription is (again) in place, and lets the first in line try.
func (r *room) notify() {
	r.seq++
	if len(r.queue) > 0 {
		r.queue[0].try = true
		r.queue[0].poke()
	}
}

// learn records what a failed try saw about the holder.
func (r *room) learn(h *NotObtainedError, now time.Time) {
	r.holder = h.Holder
	if h.TTL > 0 {
		r.expires, r.zeroes = now.Add(h.TTL+expiryMargin), 0
		return
	}
	// The key has no TTL, is about to expire or is already gone: look again
	// soon, backing off towards the poll interval so a key that never
	// expires is not hammered.
	r.expires = now.Add(min(2*time.Millisecond<<min(r.zeroes, 10), time.Hour))
	r.zeroes++
}

// sleepFor is how long the first in line may sleep before trying again on
// its own: until the holder's key expires (a crashed holder publishes
// nothing), and never longer than the fallback poll.
func (r *room) sleepFor(poll time.Duration) time.Duration {
	d := poll + rand.N(poll/4+1)
	if !r.expires.IsZero() {
		d = min(d, time.Until(r.expires))
	}
	return d
}

func (s *waitState) pollInterval() time.Duration {
	if s.poll > 0 {
		return s.poll
	}
	return defaultPoll
}

// wait is Acquire: it tries the SET, and while the lock is busy it waits in
// the lock's room for a release message, the holder's expiry or the poll.
// The token stays the same across tries, so a try whose reply was lost is
// recognised as ours by the next one.
func (c *Client) wait(ctx context.Context, name, token string, ttl time.Duration, opts *LockOptions) (*Lock, error) {
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
	s := &c.waits
	var seen *room // a subscribed room seen before our first try
	var seq uint64
	if s.n.Load() > 0 {
		s.mu.Lock()
		if r := s.rooms[c.Key(name)]; r != nil {
			if len(r.queue) > 0 {
				// Busy with waiters here already: the SET would fail or
				// take the lock from under them. Queue up behind them.
				w := s.join(r, false, name, token, ttl, opts)
				s.mu.Unlock()
				return c.sleep(ctx, tctx, r, w)
			}
			if r.ready {
				seen, seq = r, r.seq
			}
		}
		s.mu.Unlock()
	}

	l, err := c.tryAcquire(tctx, name, token, ttl, opts)
	if err == nil {
		return l, nil
	}
	var held *NotObtainedError // declared here: errors.As makes it escape to the heap
	if !errors.As(err, &held) {
		return nil, err
	}
	now := time.Now()
	s.mu.Lock()
	r := s.room(c, held.Key)
	r.learn(held, now)
	// The first in line must try again once the subscription is confirmed
	// (a release between our SET and the SUBSCRIBE would otherwise be
	// missed) unless our SET was already sent while subscribed and no
	// message has come since.
	w := s.join(r, r.ready && (r != seen || r.seq != seq), name, token, ttl, opts)
	s.mu.Unlock()
	return c.sleep(ctx, tctx, r, w)
}

// room returns the room of key, creating and subscribing it if needed.
// Called with s.mu held.
func (s *waitState) room(c *Client, key string) *room {
	if r := s.rooms[key]; r != nil {
		return r
	}
	r := &room{key: key}
	if s.rooms == nil {
		s.rooms = make(map[string]*room)
	}
	s.rooms[key] = r
	s.n.Add(1)
	if s.sub == nil {
		s.sub = newSubscriber(c)
	}
	s.sub.subscribe(key)
	return r
}

// join puts a new waiter at the end of r's queue; the first in line is told
// to try at once when try is set. Called with s.mu held.
func (s *waitState) join(r *room, try bool, name, token string, ttl time.Duration, opts *LockOptions) *waiter {
	if r.idle != nil {
		r.idle.Stop()
	}
	w := &waiter{wake: make(chan struct{}, 1), name: name, token: token, ttl: ttl, opts: opts}
	r.queue = append(r.queue, w)
	if len(r.queue) == 1 {
		w.try = try
	}
	return w
}

// sleep waits in r until w gets the lock or ctx ends.
func (c *Client) sleep(ctx, tctx context.Context, r *room, w *waiter) (*Lock, error) {
	s := &c.waits
	poll := s.pollInterval()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if l := s.takeHandoff(c, r, w); l != nil {
			return l, nil
		}
		s.mu.Lock()
		first := r.queue[0] == w
		try := first && w.try && !w.handing && w.handed == nil
		w.try = w.try && !try
		var d time.Duration
		if first && !try && !w.handing && w.handed == nil {
			if d = r.sleepFor(poll); d <= 0 {
				try = true
			}
		}
		s.mu.Unlock()

		if try {
			l, err := c.tryAcquire(tctx, w.name, w.token, w.ttl, w.opts)
			var held *NotObtainedError
			switch {
			case err == nil:
				s.leave(c, r, w, l)
				return l, nil
			case !errors.As(err, &held):
				if l := s.takeHandoff(c, r, w); l != nil {
					return l, nil // a local Release took it for us meanwhile
				}
				s.leave(c, r, w, nil)
				return nil, err
			}
			now := time.Now()
			s.mu.Lock()
			r.learn(held, now)
			s.mu.Unlock()
			if ctx.Err() != nil {
				return s.giveUp(ctx, c, r, w)
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
		case <-w.wake:
		case <-expired:
			s.mu.Lock()
			w.try = true
			s.mu.Unlock()
		case <-ctx.Done():
			return s.giveUp(ctx, c, r, w)
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// leave takes w out of r's queue, after it got the lock l or gave up (nil).
func (s *waitState) leave(c *Client, r *room, w *waiter, l *Lock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.Index(r.queue, w)
	if i < 0 {
		return // cannot happen: every path leaves once
	}
	r.queue = slices.Delete(r.queue, i, i+1)
	if l != nil {
		// The next in line sleeps until our key would expire or a release.
		// A wake-up pending for us now is stale: it announced a release
		// from before our SET, as nobody else can release our key.
		r.holder, r.expires, r.zeroes = holderOf(l.token), l.acquired.Add(l.ttl+expiryMargin), 0
	}
	if i == 0 && len(r.queue) > 0 {
		next := r.queue[0]
		// Giving up, we may have swallowed a wake-up meant for the line.
		next.try = next.try || l == nil
		next.poke() // to arm its timer, or to try
	}
	if len(r.queue) == 0 {
		if r.idle == nil {
			r.idle = time.AfterFunc(s.lingerTime(), func() { s.reap(r) })
		} else {
			r.idle.Reset(s.lingerTime())
		}
	}
}

func (s *waitState) lingerTime() time.Duration {
	if s.linger > 0 {
		return s.linger
	}
	return defaultLinger
}

// giveUp leaves r because ctx ended and returns the error for it: the last
// known holder, matching ErrNotObtained, and ctx's cause. A handoff to w
// already under way is waited for, and the lock it got is returned.
func (s *waitState) giveUp(ctx context.Context, c *Client, r *room, w *waiter) (*Lock, error) {
	if l := s.takeHandoff(c, r, w); l != nil {
		return l, nil
	}
	s.leave(c, r, w, nil)
	s.mu.Lock()
	held := &NotObtainedError{Key: r.key, Holder: r.holder}
	if !r.expires.IsZero() {
		held.TTL = max(0, time.Until(r.expires)).Round(time.Millisecond)
	}
	s.mu.Unlock()
	if held.Holder == "" {
		held.Holder = "unknown"
	}
	return nil, fmt.Errorf("%w; gave up waiting: %w", held, context.Cause(ctx))
}

// reap deletes r once it has stayed empty for the linger time, and closes
// the shared subscription with the last room.
func (s *waitState) reap(r *room) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rooms[r.key] != r || len(r.queue) > 0 {
		return
	}
	delete(s.rooms, r.key)
	s.n.Add(-1)
	if len(s.rooms) == 0 {
		s.sub.close()
		s.sub = nil
		return
	}
	s.sub.unsubscribe(r.key)
}
