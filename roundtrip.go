package withlock

// Round trips shared between the concurrent acquisitions and releases of
// one Client: a group commit on its go-redis client.

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Sharing round trips.
//
// A service that takes many locks at once sends many small commands at
// once, each in a round trip of its own: a write and a read system call in
// the process and in redis-server for every SET and every release. So the
// acquiring command of an acquisition (with what goes with it, sendWith)
// and the release script of a release share round trips between the
// callers of one Client:
//
//   - a command that finds fewer than maxTrips (two) round trips of the
//     Client in flight is sent at once, by its caller, exactly as it would
//     be alone: one goroutine waits for nobody;
//   - commands that arrive while maxTrips are in flight wait; when one is
//     answered, the first of them sends them all in one go-redis pipeline,
//     on one connection, and hands each its own reply or error;
//   - a caller whose context ends while its command waits to be sent takes
//     it back: nothing was sent. One whose context ends after its command
//     went out stops waiting and returns an error matching ctx.Err();
//     whoever reads that round trip's reply then cleans up an acquiring
//     command that may have landed, as abandon does for a reply that never
//     came: it deletes the token, if it is ours, once Redis has answered
//     the SET, or queues the deletion when it has not (cleanup.go). An
//     acquisition that sends more than its SET (the index's write, the
//     waiting mark, INFO) waits for its replies once sent, as a lone
//     command does.
//
// The first waiting caller sends the next round trip; when its own context
// can end, a goroutine sends it instead, so that the caller can stop
// waiting as the others can. A shared round trip is sent without its
// sender's cancellation (it carries the others' commands too), so it is
// bounded by the Redis client's timeouts, as a lone command is. Only a
// plain *redis.Client shares (a Sentinel failover client is one): a
// Cluster's pipelines split by node and a quorum's members race their own
// calls, so their commands go alone as before.

// roundTrips shares the round trips of one Client's go-redis client.
type roundTrips struct {
	rdb *redis.Client // nil: nothing is shared
	max int           // round trips in flight at once: maxTrips

	calls sync.Pool // *sharedCall, answered and free

	mu       sync.Mutex
	inFlight int           // round trips in flight, or handed over to a waiting caller
	leading  bool          // a waiting caller is told to send the next one
	pending  []*sharedCall // waiting for the next round trip, in arrival order
	spare    []*sharedCall // a batch's slice, empty, for the next pending
}

// maxTrips is how many round trips of one Client may be in flight at once.
// One gives the largest pipelines, but leaves the connection idle while a
// batch's replies travel back: where a round trip is slow (the bench,
// bench/ -only uncontended, on a 2-core VM at 130 µs a pair), two sent
// 1.06× rueidislock's pairs at 16 goroutines where one sent 0.87–0.91×,
// at less CPU per pair than rueidislock's either way.
const maxTrips = 2

// newRoundTrips shares the round trips of rdb where it is a plain client.
func newRoundTrips(rdb redis.UniversalClient) roundTrips {
	c, _ := rdb.(*redis.Client)
	return roundTrips{rdb: c, max: maxTrips}
}

// What a waiting command is doing (sharedCall.state).
const (
	callQueued    = iota // in pending, unsent: its caller may take it back
	callLeads            // first in pending when a round trip ended: it sends the next
	callSent             // in a round trip in flight
	callDone             // answered: its replies (or errors) are in its commands
	callAbandoned        // sent, and its caller stopped waiting
)

// sharedCall is one caller's commands waiting for a shared round trip.
// A call answered to its caller is used again (roundTrips.calls); one whose
// caller stopped waiting belongs to its round trip and is dropped after.
type sharedCall struct {
	pipe  redis.Pipeliner // what the caller's commands are queued on
	cmds  []redis.Cmder   // its commands
	state int             // guarded by roundTrips.mu
	wake  chan struct{}   // one signal: it leads, or it is done
	// lock is the Lock an acquiring call takes, whose token its round
	// trip deletes if its caller stopped waiting (orphan); nil for a
	// release. ctx is the caller's, for that clean-up.
	lock *Lock
	ctx  context.Context
	stay bool // once sent, its caller waits for the replies (share)
}

// alone claims a round trip for a command when fewer than max are in flight: its
// caller then sends it at once and calls done after.
func (rt *roundTrips) alone() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.inFlight >= rt.max {
		return false
	}
	rt.inFlight++
	return true
}

// done ends a round trip: the first waiting command, if any, is woken to
// send the next one.
func (rt *roundTrips) done() {
	rt.mu.Lock()
	next := rt.handOn()
	rt.mu.Unlock()
	if next != nil {
		next.wake <- struct{}{}
	}
}

// handOn, with mu held, makes the first waiting command the next round
// trip's sender and returns it, or marks no round trip in flight.
func (rt *roundTrips) handOn() *sharedCall {
	if len(rt.pending) == 0 || rt.leading {
		rt.inFlight--
		return nil
	}
	next := rt.pending[0]
	next.state = callLeads
	rt.leading = true
	return next
}

// share sends the commands that queue puts on a pipeline in a shared round
// trip, and waits for their replies until ctx ends. When it ends first, the
// commands queue put carry the error (a *stoppedWaitingError): unsent, they
// are the caller's again; sent, they belong to the round trip, which cleans
// up after an acquisition of l (nil: a release) once answered (orphan),
// and queue runs once more for commands of the caller's own to carry the
// error. So queue must queue the same commands every time; with stay the
// caller instead waits for the replies of commands once sent, as a lone
// caller does, and queue runs once.
func (rt *roundTrips) share(ctx context.Context, queue func(redis.Pipeliner), l *Lock, stay bool) {
	c, _ := rt.calls.Get().(*sharedCall)
	if c == nil {
		c = &sharedCall{pipe: rt.rdb.Pipeline(), wake: make(chan struct{}, 1)}
	}
	queue(c.pipe)
	c.cmds, c.lock, c.ctx, c.stay = c.pipe.Cmds(), l, ctx, stay
	err := rt.wait(ctx, c)
	var gone *stoppedWaitingError
	if errors.As(err, &gone) && gone.sent {
		gave := rt.rdb.Pipeline()
		queue(gave)
		for _, cmd := range gave.Cmds() {
			cmd.SetErr(err)
		}
		return // c belongs to its round trip
	}
	for _, cmd := range c.cmds {
		if err != nil { // taken back unsent: the commands are the caller's
			cmd.SetErr(err)
		}
	}
	// Nobody else holds c now, and its wake signal was taken.
	c.pipe.Discard()
	c.cmds, c.lock, c.ctx = nil, nil, nil
	rt.calls.Put(c)
}

// wait sends c's commands, alone when fewer than max round trips are in flight, else in
// the next shared one, and waits for their replies. It returns a
// *stoppedWaitingError when ctx ended first.
func (rt *roundTrips) wait(ctx context.Context, c *sharedCall) error {
	rt.mu.Lock()
	if rt.inFlight < rt.max {
		rt.inFlight++
		c.state = callSent
		rt.mu.Unlock()
		rt.send(ctx, []*sharedCall{c}, c)
		return nil
	}
	c.state = callQueued
	rt.pending = append(rt.pending, c)
	rt.mu.Unlock()
	if err := rt.await(ctx, c); err != nil || c.state != callLeads {
		return err
	}
	if ctx.Done() == nil { // nothing can end its wait: it sends them itself
		rt.lead(ctx, c)
		return nil
	}
	// Its wait may end while the round trip is in flight: a goroutine of
	// its own sends it, and c waits for its replies as the others do.
	rt.mu.Lock()
	c.state = callSent
	rt.mu.Unlock()
	go rt.lead(context.WithoutCancel(ctx), nil)
	return rt.await(ctx, c)
}

// await waits for c's signal until ctx ends. After the signal c leads, or
// it is answered.
func (rt *roundTrips) await(ctx context.Context, c *sharedCall) error {
	select {
	case <-c.wake:
		return nil
	case <-ctx.Done():
		if err := rt.leave(ctx, c); err != nil {
			return err
		}
		<-c.wake // it leads, or is answered: the signal is on its way
		return nil
	}
}

// leave takes c back when ctx ended while it waits: out of pending when it
// was not sent, abandoned to its round trip when it was. It returns nil when
// c leads or is answered already, or was sent and stays: it must go on.
func (rt *roundTrips) leave(ctx context.Context, c *sharedCall) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	switch c.state {
	case callQueued:
		for i, q := range rt.pending {
			if q == c {
				rt.pending = append(rt.pending[:i], rt.pending[i+1:]...)
				break
			}
		}
		return &stoppedWaitingError{err: context.Cause(ctx)}
	case callSent:
		if c.stay {
			return nil
		}
		c.state = callAbandoned
		return &stoppedWaitingError{err: context.Cause(ctx), sent: true}
	}
	return nil
}

// lead sends every waiting command in one round trip, c's among them
// when c, sending it, is not waiting for it (see wait).
func (rt *roundTrips) lead(ctx context.Context, c *sharedCall) {
	rt.mu.Lock()
	batch := rt.pending
	rt.pending, rt.spare = rt.spare, nil
	rt.leading = false
	for _, b := range batch {
		if b.state != callAbandoned { // a sender's caller may have left already
			b.state = callSent
		}
	}
	rt.mu.Unlock()
	rt.send(ctx, batch, c)
}

// send runs batch in one pipeline, sent by c's caller (nil: by a goroutine
// of its own): with its context when c is alone in it, else without its
// cancellation, since the others' commands ride on it. It then hands each its replies, the round trip to the
// next waiting command, and the abandoned ones to their clean-up.
func (rt *roundTrips) send(ctx context.Context, batch []*sharedCall, c *sharedCall) {
	defer rt.answer(batch, c) // also when a hook panics: nobody may wait for ever
	if len(batch) > 1 {
		ctx = context.WithoutCancel(ctx)
	}
	p := rt.rdb.Pipeline()
	for _, b := range batch {
		_ = p.BatchProcess(ctx, b.cmds...)
	}
	_, _ = p.Exec(ctx) // each command has its own reply or error
}

// answer ends batch's round trip, sent by c's caller (see send), or by a
// goroutine of its own for nil.
func (rt *roundTrips) answer(batch []*sharedCall, c *sharedCall) {
	var orphans []*sharedCall
	rt.mu.Lock()
	if c != nil {
		c.state = callDone
	}
	woken := batch[:0:0]
	for _, b := range batch {
		switch b.state {
		case callSent:
			if b != c {
				b.state = callDone
				woken = append(woken, b)
			}
		case callAbandoned:
			if b.lock != nil {
				orphans = append(orphans, b)
			}
		}
	}
	next := rt.handOn()
	if rt.spare == nil && len(batch) > 1 {
		rt.spare = batch[:0]
	}
	rt.mu.Unlock()
	if next != nil {
		next.wake <- struct{}{}
	}
	for _, b := range woken {
		b.wake <- struct{}{}
	}
	for _, b := range orphans {
		go rt.orphan(b)
	}
}

// orphan cleans up after an acquisition whose caller stopped waiting: its
// token, if it landed, is deleted as abandon deletes it, once Redis has
// answered every command of its round trip; else the deletion is queued.
func (rt *roundTrips) orphan(c *sharedCall) {
	answered := true
	for _, cmd := range c.cmds {
		if err := cmd.Err(); err != nil && !isRedisReply(err) {
			answered = false
		}
	}
	abandonOn(c.ctx, rt.rdb, c.lock, answered)
}

// stoppedWaitingError is what a command gets whose caller's context ended
// while it waited for a shared round trip. Nothing needs cleaning up by
// the caller (mayHaveLanded): unsent, it never left; sent, its round trip
// cleans up.
type stoppedWaitingError struct {
	err  error // the context's cause
	sent bool
}

func (e *stoppedWaitingError) Error() string {
	if e.sent {
		return "stopped waiting for the reply: " + e.err.Error()
	}
	return "not sent: " + e.err.Error()
}

func (e *stoppedWaitingError) Unwrap() error { return e.err }

// stoppedWaiting reports whether err is a *stoppedWaitingError.
func stoppedWaiting(err error) bool {
	var e *stoppedWaitingError
	return errors.As(err, &e)
}
