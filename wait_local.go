package withlock

// The in-process waiting: waitLine, its per-key queues of waiters, and what
// the shared subscription reports to them.

import (
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
	// defaultLinger keeps a lock's queue, and its subscription, this long
	// after its last waiter left, so bursts of contention do not SUBSCRIBE
	// and UNSUBSCRIBE for every acquisition. The shared connection closes
	// with the last queue.
	defaultLinger = 2 * time.Second
	// expiryMargin is added to a holder's PTTL before trying again: Redis
	// counts in whole milliseconds and a key is expired only past its time.
	expiryMargin = time.Millisecond
)

// waitLine is where a Client's waiting Acquires wait. On one Redis
// deployment, plain and min-hold acquisitions wait in the fair line across
// Clients (wait_fair.go, the rooms below). What follows here is the waiting
// without that line: on a quorum, for fenced or replicated acquisitions,
// and where Redis refuses the line's subscription (before 7.0, or an ACL
// without it): one queue per lock that has waiters, and one subscription
// to release messages shared by all queues. It owns all of that state, guarded by mu; the subscription and
// Client reach it only through the line's methods. It exists only while
// someone waits (and for the linger time after).
//
// Waiters of one Client queue up in FIFO order and only the first in line
// talks to Redis: a release message wakes that one alone, which tries the
// SET and, on success, leaves the next waiter first in line. A second
// Acquire on a lock that already has waiters here joins the queue without
// sending anything, since the first in line will be woken by the next
// release anyway. So a hand-off between waiters of one Client costs the
// release script and one SET, with no stampede however many wait, and
// waiters are served in turn. Waiters in other processes each have their
// own Client and are woken by the same message; each of those sends one SET
// (plus the inspection of a failed one) per release.
//
// What Client uses: wait (Acquire) and handOff (Release). What the
// subscription uses: released, subscribed, unsubscribed, disconnected.
type waitLine struct {
	busy   atomic.Int32 // len(local.queues)+len(fair.rooms), read without a mutex so the uncontended path stays lock-free
	poll   atomic.Int64 // the fallback poll in ns; 0: defaultPoll
	linger atomic.Int64 // the linger in ns; 0: defaultLinger

	// Each of the two ways of waiting owns its state under its own mutex,
	// and neither is held while the other is taken: a Release, a waiter or
	// a message of one never waits for the other's.
	local localQueues
	fair  fairRooms
}

// localQueues is the waiting without the fair line: one queue per lock key
// that has waiters, and the one subscription to release messages they
// share. Its mu guards them and every queue's and waiter's fields.
type localQueues struct {
	mu     sync.Mutex
	queues map[string]*queue
	sub    *subscription // nil when there are no queues
}

// fairRooms is this Client's part of the fair line (wait_fair.go): its
// rooms by lock key, and its id in the line, drawn with the first room. Its
// mu guards them and every room's and liner's fields.
type fairRooms struct {
	mu    sync.Mutex
	rooms map[string]*room
	cid   string
}

// queue is the line for one lock key. Its fields are guarded by
// localQueues.mu.
type queue struct {
	key     string
	waiters []*waiter // waiters[0] is the first in line, the only one that tries

	// listening is set once Redis confirmed the SUBSCRIBE: from then on every
	// release of the key reaches the queue. events counts release messages
	// and confirmations, so that a waiter can tell whether one came while
	// its SET was in flight.
	listening bool
	events    uint64

	// What the last failed try saw, to tell a giving-up waiter who holds
	// the lock and to sleep until the holder's key expires (a crashed
	// holder publishes nothing).
	holder        string    // "<host>:<pid>", "" if unknown
	holderExpires time.Time // at the latest; zero if unknown
	backoff       int       // failed tries in a row that saw no TTL

	// ownReleasesToIgnore counts release messages still to come from
	// hand-offs by this Client: the lock went to our first in line already,
	// so they must not wake the next one.
	ownReleasesToIgnore int

	lingerTimer *time.Timer // drops the queue once empty for the linger time
}

// waiter is one waiting Acquire. Its fields are guarded by
// localQueues.mu, except the channel.
type waiter struct {
	woken   chan struct{} // capacity 1: a pending wake-up is never lost nor doubled
	tryNext bool          // send the SET when next awake

	// The lock the waiter wants and how, so that a Release of this Client
	// can take it in the waiter's name (wait_local_handoff.go).
	want *Lock
	opts *LockOptions

	handOffInFlight bool           // a Release is sending our SET right now
	handOff         *handOffResult // its outcome, not yet picked up
}

// wake makes w run its loop once more, without blocking: a wake-up already
// pending is enough.
func (w *waiter) wake() {
	select {
	case w.woken <- struct{}{}:
	default:
	}
}

// wakeFirst lets the first in line try, after a release message or a
// confirmation that the subscription is (again) in place.
func (q *queue) wakeFirst() {
	q.events++
	if len(q.waiters) > 0 {
		q.waiters[0].tryNext = true
		q.waiters[0].wake()
	}
}

// noteHolder records what a failed try saw about the holder.
func (q *queue) noteHolder(h *NotObtainedError, now time.Time) {
	q.holder = h.Holder.ID
	if h.Holder.TTL > 0 {
		q.holderExpires, q.backoff = now.Add(h.Holder.TTL+expiryMargin), 0
		return
	}
	// The key has no TTL, is about to expire or is already gone: look again
	// soon, backing off towards the poll interval so a key that never
	// expires is not hammered.
	q.holderExpires = now.Add(min(2*time.Millisecond<<min(q.backoff, 10), time.Hour))
	q.backoff++
}

// sleepFor is how long the first in line may sleep before trying again on
// its own: until the holder's key expires, and never longer than the
// fallback poll plus jitter.
func (q *queue) sleepFor(poll time.Duration) time.Duration {
	d := poll + rand.N(poll/4+1)
	if !q.holderExpires.IsZero() {
		d = min(d, time.Until(q.holderExpires))
	}
	return d
}

func (ln *waitLine) pollInterval() time.Duration {
	if d := time.Duration(ln.poll.Load()); d > 0 {
		return d
	}
	return defaultPoll
}

func (ln *waitLine) lingerTime() time.Duration {
	if d := time.Duration(ln.linger.Load()); d > 0 {
		return d
	}
	return defaultLinger
}

// queueFor returns key's queue, creating it and subscribing to key's
// release messages if needed. Called with ln.local.mu held.
func (ln *waitLine) queueFor(c *Client, key string) *queue {
	if q := ln.local.queues[key]; q != nil {
		return q
	}
	q := &queue{key: key}
	if ln.local.queues == nil {
		ln.local.queues = make(map[string]*queue)
	}
	ln.local.queues[key] = q
	ln.busy.Add(1)
	if ln.local.sub == nil {
		ln.local.sub = newSubscription(c, ln)
	}
	ln.local.sub.subscribe(key)
	return q
}

// join puts a waiter for want at the end of q; the first in line is told to
// try at once when tryNow is set. Called with ln.local.mu held.
func (q *queue) join(tryNow bool, want *Lock, opts *LockOptions) *waiter {
	if q.lingerTimer != nil {
		q.lingerTimer.Stop()
	}
	w := &waiter{woken: make(chan struct{}, 1), want: want, opts: opts}
	q.waiters = append(q.waiters, w)
	if len(q.waiters) == 1 {
		w.tryNext = tryNow
	}
	return w
}

// leave takes w out of q, after it got the lock l or gave up (nil).
func (ln *waitLine) leave(q *queue, w *waiter, l *Lock) {
	ln.local.mu.Lock()
	defer ln.local.mu.Unlock()
	i := slices.Index(q.waiters, w)
	if i < 0 {
		return // cannot happen: every path leaves once
	}
	q.waiters = slices.Delete(q.waiters, i, i+1)
	if l != nil {
		// The next in line sleeps until our key would expire or a release.
		// A wake-up pending for us now is stale: it announced a release
		// from before our SET, as nobody else can release our key.
		q.holder, q.holderExpires, q.backoff = holderOf(l.token), l.acquired.Add(l.ttl+expiryMargin), 0
	}
	if i == 0 && len(q.waiters) > 0 {
		next := q.waiters[0]
		// Giving up, we may have swallowed a wake-up meant for the line;
		// taking one of a semaphore's slots, we may have left others free.
		next.tryNext = next.tryNext || l == nil || slotsPer(l.c.b) > 1
		next.wake() // to arm its timer, or to try
	}
	if len(q.waiters) == 0 {
		if q.lingerTimer == nil {
			q.lingerTimer = time.AfterFunc(ln.lingerTime(), func() { ln.dropIfIdle(q) })
		} else {
			q.lingerTimer.Reset(ln.lingerTime())
		}
	}
}

// dropIfIdle deletes q once it has stayed empty for the linger time, and
// closes the shared subscription with the last queue.
func (ln *waitLine) dropIfIdle(q *queue) {
	ln.local.mu.Lock()
	defer ln.local.mu.Unlock()
	if ln.local.queues[q.key] != q || len(q.waiters) > 0 {
		return
	}
	delete(ln.local.queues, q.key)
	ln.busy.Add(-1)
	if len(ln.local.queues) == 0 {
		ln.local.sub.close()
		ln.local.sub = nil
		return
	}
	ln.local.sub.unsubscribe(q.key)
}

// ifCurrent runs report with ln.local.mu held if s is still the line's
// subscription, and tells whether it is: once the line has closed s, its
// receive loop ends and what it still got is stale.
func (ln *waitLine) ifCurrent(s *subscription, report func()) bool {
	ln.local.mu.Lock()
	defer ln.local.mu.Unlock()
	if ln.local.sub != s {
		return false
	}
	report()
	return true
}

// released is the subscription reporting a release message on channel,
// which is the lock's key.
func (ln *waitLine) released(s *subscription, channel string) bool {
	return ln.ifCurrent(s, func() {
		switch q := ln.local.queues[channel]; {
		case q == nil:
		case q.ownReleasesToIgnore > 0:
			q.ownReleasesToIgnore-- // a Release of ours handed the lock on already
		default:
			q.wakeFirst()
		}
	})
}

// subscribed is the subscription reporting that Redis confirmed a SUBSCRIBE
// to channel: every later release reaches the queue, and its first in line
// tries once more in case one came before.
func (ln *waitLine) subscribed(s *subscription, channel string) bool {
	return ln.ifCurrent(s, func() {
		if q := ln.local.queues[channel]; q != nil && !s.unsubscribing(channel) {
			q.listening = true
			q.wakeFirst()
		}
	})
}

// unsubscribed is the subscription reporting that Redis confirmed an
// UNSUBSCRIBE from channel.
func (ln *waitLine) unsubscribed(s *subscription, channel string) bool {
	return ln.ifCurrent(s, func() { s.unsubscribeDone(channel) })
}

// disconnected is the subscription reporting that its connection failed.
// Messages may have been lost while it was down. go-redis reconnects and
// subscribes again; each queue is listening again, and its first waiter
// tries, on confirmation.
func (ln *waitLine) disconnected(s *subscription) bool {
	return ln.ifCurrent(s, func() {
		s.forgetUnsubscribes()
		for _, q := range ln.local.queues {
			q.listening, q.ownReleasesToIgnore = false, 0
		}
	})
}
