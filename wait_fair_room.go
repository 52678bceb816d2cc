package withlock

// fairRooms' rooms (wait_fair.go): one Client's subscription, liveness key
// and check for one lock's line, kept under fairRooms.mu.

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/with-lock/with-lock/internal/keys"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The upkeep of a Client's rooms in the fair line: creating and dropping
// them, delivering hand-overs, the periodic check, the sharded
// subscription and the liveness key.

// roomFor returns key's room, creating it and its subscription. Called
// with f.mu held, so it sends nothing: go-redis dials the subscription's
// connection at the first SSUBSCRIBE, which listen sends, and a slow dial
// under f.mu would hold up every Release and waiter of the Client.
// Waiters still join only once listen saw the confirmation.
func (f *fairRooms) roomFor(b fairLine, key, base string) *room {
	if r := f.rooms[key]; r != nil {
		return r
	}
	if f.cid == "" {
		var b [8]byte
		_, _ = crand.Read(b[:])
		f.cid = hex.EncodeToString(b[:])
	}
	rdb := b.lineStore()
	r := &room{key: key, base: base, mark: keys.Mark(key), b: b, rdb: rdb, confirmed: make(chan struct{}), kick: make(chan struct{}, 1), done: make(chan struct{})}
	r.farOK = farWaiting(b)
	if f.rooms == nil {
		f.rooms = make(map[string]*room)
	}
	f.rooms[key] = r
	f.busy.Add(1)
	r.ps = rdb.SSubscribe(context.Background()) // no channel: nothing sent yet
	go f.listen(r, r.channel(f.cid))
	go f.keep(r, f.cid, f.pollInterval())
	return r
}

// check runs lineCheckScript for the waiters ws of r: it hands a free key
// to the head of the line, delivers a lock already handed to one of ws
// (its message lost), notes the holder and arms the head timer, and puts
// back in line a waiter whose entry is gone (skipped as dead while its
// Client stalled, or lost in a failover).
func (f *fairRooms) check(ctx context.Context, r *room, ws []*liner, depth int) error {
	f.mu.Lock()
	cid := f.cid
	entries := make([]string, len(ws))
	for i, w := range ws {
		entries[i] = w.entry
	}
	// With all our waiters far back, the check writes the far key.
	far := r.farOK && !slices.ContainsFunc(r.waiters, func(w *liner) bool { return !w.far })
	f.mu.Unlock()
	sent := time.Now()
	pttl, seen, err := r.b.lineCheck(ctx, r.key, cid, far, entries)
	if err == nil && len(seen) != len(ws) {
		err = fmt.Errorf("unexpected reply %v", seen)
	}
	if err != nil {
		return fmt.Errorf("check the line for %s: %w", r.key, err)
	}
	var rejoin []*liner
	f.mu.Lock()
	if far {
		r.wroteFar(sent)
	} else {
		r.wroteAlive(sent)
	}
	r.expires = time.Time{}
	if pttl > 0 {
		r.expires = sent.Add(time.Duration(pttl)*time.Millisecond + expiryMargin)
	}
	for i, w := range ws {
		if w.gone || w.pushing || !slices.Contains(r.waiters, w) {
			continue // delivered meanwhile, gave up, or joining
		}
		switch pos := seen[i].pos; {
		case seen[i].handed:
			w.want.slot = seen[i].slot
			f.deliver(r, w, w.proof, seen[i].provisional)
		case pos >= 0:
			w.proof = sent
			f.placed(r, w, pos, sent, false)
			if pos == 0 && pttl > 0 {
				r.headAt = r.expires
				r.tend()
			}
		case depth < 2:
			rejoin = append(rejoin, w)
		}
	}
	f.mu.Unlock()
	for _, w := range rejoin {
		if err := f.join(ctx, r, w, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// deliver gives w its lock, handed over no earlier than since, for
// aliveFor only when provisional. Called with f.mu held.
func (f *fairRooms) deliver(r *room, w *liner, since time.Time, provisional bool) {
	f.removeLiner(r, w)
	r.served(w, time.Now())
	w.want.acquired = since
	w.got <- lineResult{l: w.want, provisional: provisional}
}

// deliverToken delivers the lock to r's waiter it was handed to (v, as
// backend.handed reads it, or "~" and that when handed as to a far waiter,
// for aliveFor), if it is still waiting: handed over no earlier than
// since, or than the waiter's proof when since is zero. Called with f.mu
// held.
func (f *fairRooms) deliverToken(r *room, v string, since time.Time) {
	tok, slot := r.b.handed(v)
	provisional := false
	if !slices.ContainsFunc(r.waiters, func(w *liner) bool { return w.want.token == tok }) && strings.HasPrefix(v, "~") {
		tok, slot = r.b.handed(v[1:])
		provisional = true
	}
	for _, w := range r.waiters {
		if w.want.token == tok {
			w.want.slot = slot
			if since.IsZero() {
				since = w.proof
			}
			f.deliver(r, w, since, provisional)
			return
		}
	}
}

// fail ends the waits of ws with err. Called with f.mu held.
func (f *fairRooms) fail(r *room, ws []*liner, err error) {
	for _, w := range ws {
		if !w.gone && slices.Contains(r.waiters, w) {
			f.removeLiner(r, w)
			w.got <- lineResult{err: err}
		}
	}
}

// removeLiner takes w out of r and lets r linger once empty. Called with
// f.mu held.
func (f *fairRooms) removeLiner(r *room, w *liner) {
	if i := slices.Index(r.waiters, w); i >= 0 {
		r.waiters = slices.Delete(r.waiters, i, i+1)
	}
	if len(r.waiters) > 0 {
		return
	}
	f.lingerOn(&r.linger, func() { f.dropRoom(r) })
}

// dropRoom closes r once it has stayed empty for the linger time.
func (f *fairRooms) dropRoom(r *room) {
	f.mu.Lock()
	if f.rooms[r.key] != r || len(r.waiters) > 0 {
		f.mu.Unlock()
		return
	}
	delete(f.rooms, r.key)
	f.busy.Add(-1)
	close(r.done)
	farKey := ""
	if r.farSet {
		farKey = r.farKey(f.cid)
	}
	f.mu.Unlock()
	// Outside f.mu: Close waits for an SSUBSCRIBE of listen still dialling.
	_ = r.ps.Close()
	if farKey != "" { // it would outlive the room by up to farFor
		ctx, cancel := context.WithTimeout(context.Background(), aliveFor)
		defer cancel()
		_ = r.rdb.Del(ctx, farKey).Err()
	}
}

// listen subscribes to this Client's channel, then delivers the locks
// published to it and notes subscription confirmations, until r is
// dropped. The SSUBSCRIBE's error needs no handling here: go-redis keeps
// the channel and subscribes again at the next Receive, whose error listen
// reads: a refusal from Redis before the first confirmation sets r.err, and
// the room's waiters wait in the local queues.
func (f *fairRooms) listen(r *room, channel string) {
	ctx := context.Background()
	_ = r.ps.SSubscribe(ctx, channel)
	first, failures := true, 0
	for {
		msg, err := r.ps.Receive(ctx)
		select {
		case <-r.done:
			return
		default:
		}
		if err != nil {
			if first && isRedisReply(err) { // no SSUBSCRIBE here (Redis < 7, an ACL)
				r.err = err
				close(r.confirmed)
				return
			}
			failures++
			time.Sleep(min(time.Duration(failures)*50*time.Millisecond, time.Second))
			continue
		}
		failures = 0
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "ssubscribe" {
				continue
			}
			if first {
				first = false
				close(r.confirmed)
				continue
			}
			// Restored after a lost connection: messages may be lost and
			// releases may have skipped us as dead.
			f.mu.Lock()
			r.recover = true
			f.mu.Unlock()
			r.tend()
		case *redis.Message:
			f.mu.Lock()
			if tok, ok := strings.CutPrefix(m.Payload, "?"); ok {
				f.upNext(r, tok)
			} else {
				f.deliverToken(r, m.Payload, time.Time{})
			}
			f.mu.Unlock()
		}
	}
}

// setAlive queues the refresh of the Client's liveness key and of the
// key's waiting mark (keys.Mark) on p: both live aliveFor, so the mark
// outlives every live entry in line, and a release that finds it absent
// may skip the line.
func (r *room) setAlive(ctx context.Context, p redis.Pipeliner, cid string) {
	p.Set(ctx, r.alive(cid), 1, aliveFor)
	p.Set(ctx, r.mark, 1, aliveFor)
}

// keep refreshes the Client's liveness key while r has waiters and runs
// the check when it is due, until r is dropped.
func (f *fairRooms) keep(r *room, cid string, poll time.Duration) {
	timer := time.NewTimer(aliveEvery)
	defer timer.Stop()
	ctx := context.Background()
	for {
		select {
		case <-r.done:
			return
		case <-r.kick:
		case <-timer.C:
		}
		now := time.Now()
		next := now.Add(aliveEvery)
		var due []*liner
		near, far := false, false // the room has near, far waiters in line
		f.mu.Lock()
		headDue := !r.headAt.IsZero() && !now.Before(r.headAt)
		for _, w := range r.waiters {
			every := poll
			if w.pushing || w.proof.IsZero() {
				continue // not in line yet: its join takes care
			}
			if w.far { // quiet until its check: wait_fair_far.go
				far = true
				if r.recover || !now.Before(w.nextCheck) {
					due = append(due, w)
				} else if w.nextCheck.Before(next) {
					next = w.nextCheck
				}
				continue
			}
			near = true
			if r.recover || headDue || now.Sub(w.proof) >= every {
				due = append(due, w)
			} else if at := w.proof.Add(every + rand.N(every/4+1)); at.Before(next) {
				next = at
			}
		}
		if headDue {
			r.headAt = time.Time{}
		} else if !r.headAt.IsZero() && r.headAt.Before(next) {
			next = r.headAt
		}
		r.recover = false
		// Near waiters keep the liveness key, and the far key goes: a
		// release must skip this Client if it freezes now. Far ones only
		// keep the far key.
		refresh := near && now.Sub(r.lastAlive) >= aliveEvery
		dropFar := refresh && r.farSet
		farRefresh := !near && far && !now.Before(r.farDue())
		if !near && far && !farRefresh && r.farDue().Before(next) {
			next = r.farDue()
		}
		// A check writes one of the two keys itself (check).
		if len(due) > 0 {
			refresh, farRefresh = false, false
		}
		if refresh {
			r.wroteAlive(now)
		}
		if dropFar {
			r.farSet = false
		}
		if farRefresh {
			r.wroteFar(now)
		}
		f.mu.Unlock()
		if refresh || dropFar || farRefresh {
			_, _ = r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				if refresh {
					r.setAlive(ctx, p, cid)
				}
				if dropFar {
					p.Del(ctx, r.farKey(cid))
				}
				if farRefresh {
					r.setFar(ctx, p, cid)
				}
				return nil
			})
		}
		if len(due) > 0 {
			if err := f.check(ctx, r, due, 0); err != nil {
				f.mu.Lock()
				f.fail(r, due, err)
				f.mu.Unlock()
			}
		}
		timer.Reset(max(time.Until(next), time.Millisecond))
	}
}
