package withlock

// A waiter's announcement: the key "{K}:w" beside a lock key K that tells
// the release script someone may be waiting for the release message, so
// that a release nobody waits for publishes nothing.

import (
	"context"
	"time"
)

// The release script deletes "{K}:w" together with K, in the one DEL it
// needs anyway, and publishes the release only when that DEL removed two
// keys (lua/release.lua). So a waiter that listens for release messages
// (wait.go: quorum Clients, fenced and replicated acquisitions, keys without
// a line) announces itself before every try, and a release that finds the
// announcement wakes everyone and removes it: each woken waiter announces
// itself again with its next try. Nothing is lost in between, as a try
// always follows its announcement: a release either finds the
// announcement, or comes before the try, which then finds the key free.
//
//   - A waiter tries at least every poll, so its announcement lives
//     announceFor, well over the longest sleep (poll plus jitter).
//   - A waiter that took the lock with others of its Client behind it
//     announces again (announceForNext): a release between its
//     announcement and its SET may have removed it.
//   - A local hand-off (handOver) announces before its release, whose
//     message the in-process queue counts on, and again after it, for the
//     waiters still behind.
//
// The fair line is not concerned: the release script serves it from the
// line itself. A key with '}' but no hash tag has no announcement: its
// release always publishes. Waiters of with-lock versions before the
// announcement are woken by their poll instead.
const announceFor = 10 * time.Second

// announcer is a backend whose release script publishes only when a waiter
// has announced itself.
type announcer interface {
	announce(ctx context.Context, key string, d time.Duration) error
}

// waitingKey is the announcement's key for lock key key, false for a key
// without a line base.
func waitingKey(key string) (string, bool) {
	base, ok := lineBase(key)
	return base + ":w", ok
}

func (s *single) announce(ctx context.Context, key string, d time.Duration) error {
	if w, ok := waitingKey(key); ok {
		return s.rdb.Set(ctx, w, 1, d).Err()
	}
	return nil
}

// announce on a quorum: waiters listen on its first node (quorum.subscribe),
// so that is where its release must find the announcement.
func (q *quorum) announce(ctx context.Context, key string, d time.Duration) error {
	if w, ok := waitingKey(key); ok {
		return q.nodes[0].Set(ctx, w, 1, d).Err()
	}
	return nil
}

// announce announces w's Client as waiting for w's key before a try. A
// failure is left to the try, which meets the same server.
func (ln *waitLine) announce(ctx context.Context, w *waiter) {
	if a, ok := w.want.c.b.(announcer); ok {
		_ = a.announce(ctx, w.want.key, max(announceFor, 2*ln.pollInterval()))
	}
}

// announceForNext announces again after w took the lock while others of
// its Client still wait behind it: a release between w's announcement and
// its SET may have removed the announcement, and the next in line sleeps
// until our release's message.
func (ln *waitLine) announceForNext(ctx context.Context, q *queue, w *waiter) {
	ln.local.mu.Lock()
	more := len(q.waiters) > 0
	ln.local.mu.Unlock()
	if more {
		ln.announce(ctx, w)
	}
}
