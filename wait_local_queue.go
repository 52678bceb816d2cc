package withlock

// A lock's queue of waiters in localQueues (wait_local.go): the queue and
// waiter types, joining, leaving, and dropping an idle queue.

import (
	"github.com/with-lock/with-lock/internal/keys"
	"math/rand/v2"
	"slices"
	"time"
)

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
	// can take it in the waiter's name (wait_local.go).
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

// queueFor returns key's queue, creating it and subscribing to key's
// release messages if needed. Called with lq.mu held.
func (lq *localQueues) queueFor(c *Client, key string) *queue {
	if q := lq.queues[key]; q != nil {
		return q
	}
	q := &queue{key: key}
	if lq.queues == nil {
		lq.queues = make(map[string]*queue)
	}
	lq.queues[key] = q
	lq.busy.Add(1)
	if lq.sub == nil {
		lq.sub = newSubscription(c, lq)
	}
	lq.sub.subscribe(key)
	return q
}

// join puts a waiter for want at the end of q; the first in line is told to
// try at once when tryNow is set. Called with lq.mu held.
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
func (lq *localQueues) leave(q *queue, w *waiter, l *Lock) {
	lq.mu.Lock()
	defer lq.mu.Unlock()
	i := slices.Index(q.waiters, w)
	if i < 0 {
		return // cannot happen: every path leaves once
	}
	q.waiters = slices.Delete(q.waiters, i, i+1)
	if l != nil {
		// The next in line sleeps until our key would expire or a release.
		// A wake-up pending for us now is stale: it announced a release
		// from before our SET, as nobody else can release our key.
		q.holder, q.holderExpires, q.backoff = keys.Holder(l.token), l.acquired.Add(l.ttl+expiryMargin), 0
	}
	if i == 0 && len(q.waiters) > 0 {
		next := q.waiters[0]
		// Giving up, we may have swallowed a wake-up meant for the line;
		// taking one of a semaphore's slots, we may have left others free.
		next.tryNext = next.tryNext || l == nil || slotsPer(l.c.b) > 1
		next.wake() // to arm its timer, or to try
	}
	if len(q.waiters) == 0 {
		lq.lingerOn(&q.lingerTimer, func() { lq.dropIfIdle(q) })
	}
}

// dropIfIdle deletes q once it has stayed empty for the linger time, and
// closes the shared subscription with the last queue.
func (lq *localQueues) dropIfIdle(q *queue) {
	lq.mu.Lock()
	defer lq.mu.Unlock()
	if lq.queues[q.key] != q || len(q.waiters) > 0 {
		return
	}
	delete(lq.queues, q.key)
	lq.busy.Add(-1)
	if len(lq.queues) == 0 {
		lq.sub.close()
		lq.sub = nil
		return
	}
	lq.sub.unsubscribe(q.key)
}
