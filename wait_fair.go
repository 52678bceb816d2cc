package withlock

// fairRooms owns a Client's part of the fair line kept in Redis (its rooms,
// id and mutex): joining, waiting, leaving, and a Release's hand-off.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
)

// The fair line: waiters in any Client, process or machine are served in
// the order they joined, on one Redis deployment (backend_single.go).
//
// Each lock key K has a list "{K}:q" (K itself when it has a hash tag, so
// that everything lies in K's Cluster slot) of entries
// "<client id>|<ttl ms>|<token>". A waiting Acquire joins with one RPUSH
// and sleeps. The release script (releaseScript) pops the head and, if its
// Client is alive, sets K to the head's token itself and publishes that
// token on the Client's sharded channel "{K}:w:<id>": the waiter has the
// lock the moment the message arrives, and no other waiter is woken. A
// Client is alive when its key "{K}:c:<id>" exists (refreshed every second
// while it waits, it lives aliveFor) and its channel has a subscriber (a
// killed process's connection is closed by its kernel, so Redis counts
// none). Dead entries are popped and skipped inside the same release.
//
// What can leave K free while live waiters are queued (a crashed holder's
// expiry, a min-hold that ran out, an operator's DEL) is repaired by the
// check (lineCheckScript), which hands K to the head: run by the head
// waiter at its holder's expiry when it knows it is first, by every near
// waiter that has waited a poll interval, after its Client's subscription
// was restored, and when a join finds the line empty.
//
// Only the waiters near the head do that upkeep: a waiter further back
// than nearLine is far (wait_fair_far.go) and stays quiet, so that the
// line's cost per hand-over does not grow with its length.
//
// Each Client keeps one room per key with waiters: its sharded
// subscription (a connection), its waiters in join order and the goroutines
// that receive and tend. It lingers like a queue of wait_local_queue.go.

const (
	// aliveFor is the life of a Client's liveness key, so also how long a
	// waiter whose host died (Redis keeps its connection) can still be
	// handed the lock: the documented bound on the delay a dead waiter
	// causes, beyond the holder's TTL when it does get the lock.
	aliveFor = 3 * time.Second
	// aliveEvery is how often a Client with waiters refreshes that key.
	aliveEvery = time.Second
)

// fairRooms is this Client's part of the fair line: its rooms by lock key,
// and its id in the line, drawn with the first room. Its mu guards them and
// every room's and liner's fields; no Redis command is sent under it.
type fairRooms struct {
	busy atomic.Int32 // len(rooms), read without mu so the uncontended path takes no mutex
	waitTimings

	mu    sync.Mutex
	rooms map[string]*room
	cid   string
}

// handOff is Release when l's key has a room here: the release script
// hands the lock to the head of the line and names the token when it is
// one of ours, which is delivered at once. It returns false, having sent
// nothing, when the key has no room, or only one whose subscription Redis
// refused: its waiters wait in localQueues, whose hand-off serves them.
func (f *fairRooms) handOff(ctx context.Context, l *Lock) (bool, error) {
	f.mu.Lock()
	r := f.rooms[l.key]
	cid := f.cid
	f.mu.Unlock()
	if r == nil || r.refused() {
		return false, nil
	}
	sent := time.Now() // the hand-over's SET runs after this
	to, err := r.b.releaseTo(ctx, l, 0, cid)
	if to != "" {
		f.mu.Lock()
		f.deliverToken(r, to, sent)
		f.mu.Unlock()
	}
	return true, err
}

// queues reports whether an acquisition with opts can wait in the line:
// the hand-over is a plain SET PX, which draws no fencing number and
// waits for no replica, so fenced and replicated acquisitions wait in the
// local queues instead (wait_local.go).
func queues(opts *LockOptions) bool {
	return opts == nil || (!opts.Fence && opts.MinReplicas == 0)
}

// room is one Client's part of the line for one key. Its fields are
// guarded by fairRooms.mu, except the channels and err.
type room struct {
	key, base string
	mark      string   // the key's waiting mark (keys.Mark)
	b         fairLine // the line's protocol: lineCheck, handed, mayHold
	rdb       redis.UniversalClient
	ps        *redis.PubSub
	confirmed chan struct{} // closed at the first SSUBSCRIBE confirmation, or with err set
	err       error         // the subscription was refused: wait in the local queues
	kick      chan struct{} // capacity 1: tend now
	done      chan struct{} // closed when the room is dropped

	waiters   []*liner // in join order
	lastAlive time.Time
	farState            // its far waiters' upkeep: wait_fair_far.go
	headAt    time.Time // run the check then: our first waiter's holder expires
	recover   bool      // the subscription was restored: check every waiter
	expires   time.Time
	linger    *time.Timer
}

// liner is one waiting Acquire in a room.
type liner struct {
	want    *Lock
	entry   string
	proof   time.Time       // when a command was sent that found (or put) the entry queued
	pushing bool            // its RPUSH is in flight: a check cannot tell where it is
	got     chan lineResult // capacity 1
	gone    bool            // gave up: a hand-over to it is for leaveLine to pass on
	// replacer, for LockOptions.Replace, is who replaces the holder: its
	// first join goes to the head of the line and marks the holder.
	replacer string
	place    // where it is in line, and whether far back: wait_fair_far.go
}

func (r *room) queue() string             { return keys.Line(r.base) }
func (r *room) alive(cid string) string   { return keys.Alive(r.base, cid) }
func (r *room) channel(cid string) string { return keys.Channel(r.base, cid) }

// refused reports whether Redis refused r's subscription (listen).
func (r *room) refused() bool {
	select {
	case <-r.confirmed:
		return r.err != nil
	default:
		return false
	}
}

func (r *room) tend() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// errLineRefused is fairRooms.wait's answer when Redis refused the line's
// subscription (before 7.0, or an ACL without SSUBSCRIBE) before the waiter
// joined: waitLine then has it wait without the line. Never wrapped.
var errLineRefused = errors.New("the fair line's subscription was refused")

// wait is Acquire in the line for want.key.
func (f *fairRooms) wait(ctx, tctx context.Context, c *Client, b fairLine, want *Lock, opts *LockOptions) (*Lock, error) {
	var r *room
	if f.busy.Load() > 0 {
		f.mu.Lock()
		r = f.rooms[want.key]
		f.mu.Unlock()
	}
	if r == nil {
		// Nobody here waited for it lately: the seed's one SET NX first.
		if l, _, err := c.tryBeforeWaiting(tctx, want, opts); l != nil || err != nil {
			return l, err
		}
	}
	base, _ := keys.LineBase(want.key)
	w := &liner{want: want, got: make(chan lineResult, 1)}
	if opts != nil && opts.Replace {
		w.replacer = c.breaker() // replace.go: first in line, and the holder asked to stop
	}
	r = f.enter(b, want, base, w)

	// Join only once Redis confirmed our subscription: a release counts
	// our channel's subscribers and skips us when there are none.
	if ended, err := f.subscription(ctx, r, w); ended {
		return f.leaveLine(ctx, tctx, r, w, false)
	} else if err != nil {
		return nil, errLineRefused
	}
	for {
		if err := f.join(tctx, r, w, 0); err != nil {
			// The RPUSH may have landed: take the entry out again.
			_, _ = f.leaveLine(context.WithoutCancel(ctx), tctx, r, w, true)
			return nil, err
		}
		var res lineResult
		select {
		case res = <-w.got:
		case <-ctx.Done():
			return f.leaveLine(ctx, tctx, r, w, true)
		}
		if res.err != nil {
			// The check failed on the wire and may yet hand us the
			// lock: leave, passing on whatever we were handed.
			_, _ = f.leaveLine(context.WithoutCancel(ctx), tctx, r, w, true)
			return nil, res.err
		}
		l := res.l
		if !res.provisional && time.Since(l.acquired) <= l.ttl/8 {
			return l, nil
		}
		// Handed over at an unknown moment after l.acquired, so long ago
		// that KeepAlive would have little time left, or for aliveFor only
		// (a far waiter, until it confirms): renew once, and count from
		// then.
		sent := time.Now()
		err := c.b.renew(tctx, l, l.ttl)
		switch {
		case err == nil, errors.Is(err, ErrReplaced):
			// Replaced already: KeepAlive's first renewal says so.
			l.acquired = sent
			return l, nil
		case !errors.Is(err, ErrLockNotHeld):
			_ = c.b.release(context.WithoutCancel(tctx), l, 0)
			return nil, err
		}
		// It expired before we heard of it: queue again.
		want.slot = 0
		w = &liner{want: want, entry: w.entry, got: make(chan lineResult, 1)}
		r = f.enter(b, want, base, w)
		// A new room waits for its subscription, as at the first join; if
		// Redis stalls now, ctx still ends the wait.
		if ended, err := f.subscription(ctx, r, w); ended {
			return f.leaveLine(ctx, tctx, r, w, false)
		} else if err != nil {
			return nil, fmt.Errorf("acquire %s: %w", want.key, err)
		}
	}
}

// lineSeen is what the line's check saw of one waiter's entry.
type lineSeen struct {
	pos    int64 // its place in line, 0 for the head; -1 when absent
	handed bool  // absent because the lock was handed to it
	slot   int   // the semaphore slot it was handed; 0 for a plain lock
	// provisional: handed for aliveFor only, as to a far waiter not seen
	// alive lately, until it renews the lock.
	provisional bool
}

// lineResult is what a waiter in the line is told: its lock, or the error
// that ends its wait (a check that failed, as a failed try ends a plain
// wait).
type lineResult struct {
	l           *Lock
	err         error
	provisional bool // handed for aliveFor only: renew before using it
}

// releaseReply reads the release script's reply: the token it handed the
// lock to ("" for none), and whether the lock was ours (1, or 2 when
// nobody was waiting and nothing was published).
func releaseReply(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case int64:
		return "", v == 1 || v == releasedUnwatched
	}
	return "", false
}

// releasedUnwatched is the release script's reply when the lock was ours
// and its waiting mark was absent: it published no release message.
const releasedUnwatched = 2

// ownWaitersOutsideTheLine is the release script's last argument, in place
// of a Client id, from a Client handing its lock to a waiter of its own
// outside the fair line (wait_local.go): the release keeps the
// key's waiting mark for the waiters behind that one, who are not marking
// it themselves, and always publishes. No Client id is "*".
const ownWaitersOutsideTheLine = "*"
