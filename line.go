package withlock

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fair line: waiters in any Client, process or machine are served in
// the order they joined, on one Redis deployment (single.go).
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
// waiter at its holder's expiry when it knows it is first, by every waiter
// that has waited a poll interval, after its Client's subscription was
// restored, and when a join finds the line empty.
//
// Each Client keeps one room per key with waiters: its sharded
// subscription (a connection), its waiters in join order and the goroutines
// that receive and tend. It lingers like a queue of waitline.go.

const (
	// aliveFor is the life of a Client's liveness key, so also how long a
	// waiter whose host died (Redis keeps its connection) can still be
	// handed the lock: the documented bound on the delay a dead waiter
	// causes, beyond the holder's TTL when it does get the lock.
	aliveFor = 3 * time.Second
	// aliveEvery is how often a Client with waiters refreshes that key.
	aliveEvery = time.Second
)

// hasLine reports whether key has a line: lineBase without building it.
func hasLine(key string) bool {
	if open := strings.IndexByte(key, '{'); open >= 0 && strings.IndexByte(key[open+1:], '}') > 0 {
		return true
	}
	return !strings.Contains(key, "}")
}

// lineBase is the hash-tagged base of key's line names, in key's slot, as
// fenceKey uses; false for a key with '}' but no hash tag, which waits
// without a line (the release script makes the same choice).
func lineBase(key string) (string, bool) {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key, true
		}
	}
	if strings.Contains(key, "}") {
		return "", false
	}
	return "{" + key + "}", true
}

// queues reports whether an acquisition with opts can wait in the line:
// the hand-over is a plain SET PX, so fenced and replicated acquisitions
// wait as before (waitline.go).
func queues(opts *LockOptions) bool {
	return opts == nil || (!opts.Fence && opts.MinReplicas == 0)
}

// room is one Client's part of the line for one key. Its fields are
// guarded by the waitLine's mu, except the channels and err.
type room struct {
	key, base string
	rdb       redis.UniversalClient
	ps        *redis.PubSub
	confirmed chan struct{} // closed at the first SSUBSCRIBE confirmation, or with err set
	err       error         // the subscription was refused: wait the old way
	kick      chan struct{} // capacity 1: tend now
	done      chan struct{} // closed when the room is dropped

	waiters   []*liner // in join order
	lastAlive time.Time
	headAt    time.Time // run the check then: our first waiter's holder expires
	recover   bool      // the subscription was restored: check every waiter
	holder    string
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
}

func (r *room) queue() string             { return r.base + ":q" }
func (r *room) alive(cid string) string   { return r.base + ":c:" + cid }
func (r *room) channel(cid string) string { return r.base + ":w:" + cid }

func (r *room) tend() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// waitFair is Acquire in the line for want.key, whose names start with base.
func (ln *waitLine) waitFair(ctx, tctx context.Context, c *Client, rdb redis.UniversalClient, want *Lock, opts *LockOptions) (*Lock, error) {
	if want.ttl < time.Millisecond {
		return nil, fmt.Errorf("ttl %s is below 1ms", want.ttl)
	}
	var r *room
	if ln.busy.Load() > 0 {
		ln.mu.Lock()
		r = ln.rooms[want.key]
		ln.mu.Unlock()
	}
	if r == nil {
		// Nobody here waited for it lately: the seed's one SET NX first.
		if l, _, err := c.tryBeforeWaiting(tctx, want, opts); l != nil || err != nil {
			return l, err
		}
	}
	base, _ := lineBase(want.key)
	w := &liner{want: want, got: make(chan lineResult, 1)}
	ln.mu.Lock()
	r = ln.roomFor(rdb, want.key, base)
	w.entry = fmt.Sprintf("%s|%d|%s", ln.cid, want.ttl.Milliseconds(), want.token)
	r.waiters = append(r.waiters, w)
	if r.linger != nil {
		r.linger.Stop()
	}
	ln.mu.Unlock()

	// Join only once Redis confirmed our subscription: a release counts
	// our channel's subscribers and skips us when there are none.
	select {
	case <-r.confirmed:
	case <-ctx.Done():
		return ln.leaveLine(ctx, tctx, r, w, false)
	}
	if r.err != nil {
		ln.mu.Lock()
		ln.removeLiner(r, w)
		ln.mu.Unlock()
		return ln.waitPlain(ctx, tctx, c, want, opts)
	}
	for {
		if err := ln.join(tctx, r, w, 0); err != nil {
			// The RPUSH may have landed: take the entry out again.
			_, _ = ln.leaveLine(context.WithoutCancel(ctx), tctx, r, w, true)
			return nil, err
		}
		var res lineResult
		select {
		case res = <-w.got:
		case <-ctx.Done():
			return ln.leaveLine(ctx, tctx, r, w, true)
		}
		if res.err != nil {
			// The check failed on the wire and may yet hand us the
			// lock: leave, passing on whatever we were handed.
			_, _ = ln.leaveLine(context.WithoutCancel(ctx), tctx, r, w, true)
			return nil, res.err
		}
		l := res.l
		if time.Since(l.acquired) <= l.ttl/8 {
			return l, nil
		}
		// Handed over at an unknown moment after l.acquired, so long ago
		// that KeepAlive would have little time left: renew once, and
		// count from then.
		sent := time.Now()
		err := c.b.extend(tctx, l, l.ttl)
		switch {
		case err == nil:
			l.acquired = sent
			return l, nil
		case !errors.Is(err, ErrLockNotHeld):
			_ = c.b.release(context.WithoutCancel(tctx), l, 0)
			return nil, err
		}
		// It expired before we heard of it: queue again.
		w = &liner{want: want, entry: w.entry, got: make(chan lineResult, 1)}
		ln.mu.Lock()
		r = ln.roomFor(rdb, want.key, base)
		r.waiters = append(r.waiters, w)
		if r.linger != nil {
			r.linger.Stop()
		}
		ln.mu.Unlock()
		<-r.confirmed
		if r.err != nil {
			return nil, fmt.Errorf("acquire %s: %w", want.key, r.err)
		}
	}
}

// lineResult is what a waiter in the line is told: its lock, or the error
// that ends its wait (a check that failed, as a failed try ends a plain
// wait).
type lineResult struct {
	l   *Lock
	err error
}

// roomFor returns key's room, creating it and its subscription. Called
// with ln.mu held.
func (ln *waitLine) roomFor(rdb redis.UniversalClient, key, base string) *room {
	if r := ln.rooms[key]; r != nil {
		return r
	}
	if ln.cid == "" {
		var b [8]byte
		_, _ = crand.Read(b[:])
		ln.cid = hex.EncodeToString(b[:])
	}
	r := &room{key: key, base: base, rdb: rdb, confirmed: make(chan struct{}), kick: make(chan struct{}, 1), done: make(chan struct{})}
	if ln.rooms == nil {
		ln.rooms = make(map[string]*room)
	}
	ln.rooms[key] = r
	ln.busy.Add(1)
	r.ps = rdb.SSubscribe(context.Background(), r.channel(ln.cid))
	go ln.listen(r)
	go ln.keep(r, ln.cid, ln.pollInterval())
	return r
}

// join puts w at the tail of the line, refreshing the Client's liveness
// key in the same round trip when it is due. Alone in line, w may face a
// free key nobody will release: the check then hands it over.
func (ln *waitLine) join(ctx context.Context, r *room, w *liner, depth int) error {
	ln.mu.Lock()
	if w.pushing || w.gone || !slices.Contains(r.waiters, w) {
		ln.mu.Unlock()
		return nil // someone else is putting w in line, or it is done
	}
	w.pushing = true
	refresh := time.Since(r.lastAlive) >= aliveEvery
	now := time.Now()
	if refresh {
		r.lastAlive = now
	}
	w.proof = now
	cid := ln.cid
	ln.mu.Unlock()
	var push *redis.IntCmd
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if refresh {
			p.Set(ctx, r.alive(cid), 1, aliveFor)
		}
		push = p.RPush(ctx, r.queue(), w.entry)
		return nil
	})
	ln.mu.Lock()
	w.pushing = false
	ln.mu.Unlock()
	if err != nil {
		return fmt.Errorf("join the line for %s: %w", r.key, err)
	}
	r.tend() // to time w's check
	if push.Val() == 1 {
		return ln.check(ctx, r, []*liner{w}, depth)
	}
	return nil
}

// check runs lineCheckScript for the waiters ws of r: it hands a free key
// to the head of the line, delivers a lock already handed to one of ws
// (its message lost), notes the holder and arms the head timer, and puts
// back in line a waiter whose entry is gone (skipped as dead while its
// Client stalled, or lost in a failover).
func (ln *waitLine) check(ctx context.Context, r *room, ws []*liner, depth int) error {
	ln.mu.Lock()
	args := []any{ln.cid, aliveFor.Milliseconds()}
	for _, w := range ws {
		args = append(args, w.entry)
	}
	ln.mu.Unlock()
	sent := time.Now()
	res, err := r.rdb.Eval(ctx, lineCheckScript, []string{r.key}, args...).Slice()
	if err == nil && len(res) != 2+len(ws) {
		err = fmt.Errorf("unexpected reply %v", res)
	}
	if err != nil {
		return fmt.Errorf("check the line for %s: %w", r.key, err)
	}
	holder, _ := res[0].(string)
	pttl, _ := res[1].(int64)
	var rejoin []*liner
	ln.mu.Lock()
	r.lastAlive = sent
	r.holder, r.expires = holder, time.Time{}
	if pttl > 0 {
		r.expires = sent.Add(time.Duration(pttl)*time.Millisecond + expiryMargin)
	}
	for i, w := range ws {
		if w.gone || w.pushing || !slices.Contains(r.waiters, w) {
			continue // delivered meanwhile, gave up, or joining
		}
		pos, _ := res[2+i].(int64)
		switch {
		case holder == w.want.token:
			ln.deliver(r, w, w.proof)
		case pos >= 0:
			w.proof = sent
			if pos == 0 && pttl > 0 {
				r.headAt = r.expires
				r.tend()
			}
		case depth < 2:
			rejoin = append(rejoin, w)
		}
	}
	ln.mu.Unlock()
	for _, w := range rejoin {
		if err := ln.join(ctx, r, w, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// deliver gives w its lock, handed over no earlier than since. Called with
// ln.mu held.
func (ln *waitLine) deliver(r *room, w *liner, since time.Time) {
	ln.removeLiner(r, w)
	w.want.acquired = since
	w.got <- lineResult{l: w.want}
}

// deliverToken delivers the lock to r's waiter with token tok, if it is
// still waiting: handed over no earlier than since, or than the waiter's
// proof when since is zero. Called with ln.mu held.
func (ln *waitLine) deliverToken(r *room, tok string, since time.Time) {
	for _, w := range r.waiters {
		if w.want.token == tok {
			if since.IsZero() {
				since = w.proof
			}
			ln.deliver(r, w, since)
			return
		}
	}
}

// fail ends the waits of ws with err. Called with ln.mu held.
func (ln *waitLine) fail(r *room, ws []*liner, err error) {
	for _, w := range ws {
		if !w.gone && slices.Contains(r.waiters, w) {
			ln.removeLiner(r, w)
			w.got <- lineResult{err: err}
		}
	}
}

// removeLiner takes w out of r and lets r linger once empty. Called with
// ln.mu held.
func (ln *waitLine) removeLiner(r *room, w *liner) {
	if i := slices.Index(r.waiters, w); i >= 0 {
		r.waiters = slices.Delete(r.waiters, i, i+1)
	}
	if len(r.waiters) > 0 {
		return
	}
	if r.linger == nil {
		r.linger = time.AfterFunc(ln.lingerTime(), func() { ln.dropRoom(r) })
	} else {
		r.linger.Reset(ln.lingerTime())
	}
}

// dropRoom closes r once it has stayed empty for the linger time.
func (ln *waitLine) dropRoom(r *room) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.rooms[r.key] != r || len(r.waiters) > 0 {
		return
	}
	delete(ln.rooms, r.key)
	ln.busy.Add(-1)
	close(r.done)
	_ = r.ps.Close()
}

// leaveLine is a waiter giving up: it leaves the line at once (LREM), and
// if a hand-over beat that, releases the lock it was handed, which passes
// it on. The error names the holder, as a plain wait's does.
func (ln *waitLine) leaveLine(ctx, tctx context.Context, r *room, w *liner, joined bool) (*Lock, error) {
	ln.mu.Lock()
	select {
	case res := <-w.got:
		ln.mu.Unlock()
		if res.err == nil {
			return res.l, nil
		}
	default:
	}
	w.gone = true
	ln.removeLiner(r, w)
	ln.mu.Unlock()
	held := &NotObtainedError{Key: r.key, Holder: "unknown"}
	if joined {
		var rem *redis.IntCmd
		var get *redis.StringCmd
		var pttl *redis.DurationCmd
		_, _ = r.rdb.Pipelined(tctx, func(p redis.Pipeliner) error {
			rem = p.LRem(tctx, r.queue(), 1, w.entry)
			get = p.Get(tctx, r.key)
			pttl = p.PTTL(tctx, r.key)
			return nil
		})
		if rem.Err() != nil || (rem.Val() == 0 && get.Val() == w.want.token) {
			_ = r.rdb.Eval(context.WithoutCancel(tctx), releaseScript, []string{r.key}, w.want.token, 0).Err()
		} else if get.Err() == nil {
			held = notObtained(r.key, get.Val(), max(pttl.Val(), 0))
		}
	}
	err := context.Cause(ctx)
	if err == nil {
		err = errors.New("could not join the line")
	}
	return nil, fmt.Errorf("%w; gave up waiting: %w", held, err)
}

// listen delivers the locks published to this Client's channel and notes
// subscription confirmations, until r is dropped.
func (ln *waitLine) listen(r *room) {
	ctx := context.Background()
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
			ln.mu.Lock()
			r.recover = true
			ln.mu.Unlock()
			r.tend()
		case *redis.Message:
			ln.mu.Lock()
			ln.deliverToken(r, m.Payload, time.Time{})
			ln.mu.Unlock()
		}
	}
}

// keep refreshes the Client's liveness key while r has waiters and runs
// the check when it is due, until r is dropped.
func (ln *waitLine) keep(r *room, cid string, poll time.Duration) {
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
		ln.mu.Lock()
		headDue := !r.headAt.IsZero() && !now.Before(r.headAt)
		for _, w := range r.waiters {
			every := poll
			if w.pushing || w.proof.IsZero() {
				continue // not in line yet: its join takes care
			}
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
		refresh := len(r.waiters) > 0 && now.Sub(r.lastAlive) >= aliveEvery
		if refresh {
			r.lastAlive = now
		}
		ln.mu.Unlock()
		switch {
		case len(due) > 0:
			if err := ln.check(ctx, r, due, 0); err != nil {
				ln.mu.Lock()
				ln.fail(r, due, err)
				ln.mu.Unlock()
			}
		case refresh:
			_ = r.rdb.Set(ctx, r.alive(cid), 1, aliveFor).Err()
		}
		timer.Reset(max(time.Until(next), time.Millisecond))
	}
}

// releaseReply reads the release script's reply: the token it handed the
// lock to ("" for none), and whether the lock was ours.
func releaseReply(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case int64:
		return "", v == 1
	}
	return "", false
}
