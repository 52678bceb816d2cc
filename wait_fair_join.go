package withlock

// A waiter entering the fair line (wait_fair.go) and leaving it: its room,
// its entry at the tail, and giving up.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// enter puts w in the room of want's key, creating the room and its
// subscription if need be, and keeps the room from lingering out. A w
// without an entry yet gets one, with the Client id the room needs.
func (f *fairRooms) enter(b fairLine, want *Lock, base string, w *liner) *room {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.roomFor(b, want.key, base)
	if w.entry == "" {
		w.entry = fmt.Sprintf("%s|%d|%s", f.cid, want.ttl.Milliseconds(), want.token)
	}
	r.waiters = append(r.waiters, w)
	if r.linger != nil {
		r.linger.Stop()
	}
	return r
}

// subscription waits until r's subscription is confirmed, or reports that
// ctx ended first. When Redis refused the subscription it takes w out of
// r and returns Redis's error.
func (f *fairRooms) subscription(ctx context.Context, r *room, w *liner) (ended bool, err error) {
	select {
	case <-r.confirmed:
	case <-ctx.Done():
		return true, nil
	}
	if r.err != nil {
		f.mu.Lock()
		f.removeLiner(r, w)
		f.mu.Unlock()
		return false, r.err
	}
	return false, nil
}

// join puts w at the tail of the line, refreshing the Client's liveness
// key and the waiting mark in the same round trip when they are due. Alone
// in line, w may face a free key nobody will release (its holder's release
// found no mark, or the holder is gone): the check then hands it over, and
// sets the mark. Behind others, the mark is there for as long as one of
// them is alive: set with their liveness keys, and again by each hand-over.
func (f *fairRooms) join(ctx context.Context, r *room, w *liner, depth int) error {
	f.mu.Lock()
	if w.pushing || w.gone || !slices.Contains(r.waiters, w) {
		f.mu.Unlock()
		return nil // someone else is putting w in line, or it is done
	}
	w.pushing = true
	replacer := w.replacer // only the first join asks the holder to stop
	w.replacer = ""
	refresh := time.Since(r.lastAlive) >= aliveEvery
	now := time.Now()
	if refresh && r.expectFar {
		r.lastAlive = now
	} else if refresh {
		r.wroteAlive(now)
	}
	// A Client whose last waiter joined far back writes the waiting mark
	// for as long as a far key lives, when its last write of the mark is
	// about to expire.
	mark := r.expectFar && r.markUntil.Sub(now) < aliveMargin
	if mark {
		r.markUntil = now.Add(farFor)
	}
	expectFar := r.expectFar
	w.proof = now
	cid := f.cid
	f.mu.Unlock()
	var push *redis.IntCmd
	var indexed func()
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		switch {
		case refresh && expectFar:
			p.Set(ctx, r.alive(cid), 1, aliveFor)
		case refresh:
			r.setAlive(ctx, p, cid)
		}
		if mark {
			p.Set(ctx, r.mark, 1, farFor)
		}
		// A hand-over takes the lock for w without a SET of w's own: its
		// name goes into the index of names with its entry (admin_index.go).
		indexed = queueIndexWrite(ctx, p, w.want, now)
		if replacer == "" {
			push = p.RPush(ctx, r.queue(), w.entry)
			return nil
		}
		// First in line before the holder is asked to stop: its release
		// hands the lock to w, and no third waiter slips in between.
		push = p.LPush(ctx, r.queue(), w.entry)
		queueReplace(ctx, p, r, replacer, w.entry)
		return nil
	})
	if indexed != nil {
		indexed()
	}
	f.mu.Lock()
	w.pushing = false
	if err == nil {
		pos := push.Val() - 1
		if replacer != "" {
			pos = 0 // LPUSH: at the head, near however long the line
		}
		f.placed(r, w, pos, now, true)
	}
	f.mu.Unlock()
	if err != nil {
		return fmt.Errorf("join the line for %s: %w", r.key, err)
	}
	r.tend() // to time w's check
	if push.Val() == 1 {
		return f.check(ctx, r, []*liner{w}, depth)
	}
	return nil
}

// leaveLine is a waiter giving up: it leaves the line at once (LREM), and
// if a hand-over beat that, releases the lock it was handed, which passes
// it on. The error names the holder, as a plain wait's does.
func (f *fairRooms) leaveLine(ctx, tctx context.Context, r *room, w *liner, joined bool) (*Lock, error) {
	f.mu.Lock()
	select {
	case res := <-w.got:
		f.mu.Unlock()
		if res.err == nil {
			return res.l, nil
		}
	default:
	}
	w.gone = true
	f.removeLiner(r, w)
	f.mu.Unlock()
	held := &NotObtainedError{Key: r.key, Holder: Holder{ID: "unknown"}}
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
		if rem.Err() != nil || (rem.Val() == 0 && r.b.mayHold(get.Val(), w.want.token)) {
			_ = r.b.release(context.WithoutCancel(tctx), w.want, 0)
		} else if get.Err() == nil {
			held = notObtained(r.key, get.Val(), pttlHolderTTL(pttl.Val()))
		}
	}
	var ended error = errors.New("could not join the line")
	if cause := context.Cause(ctx); cause != nil {
		ended = waitEnded{cause}
	}
	return nil, fmt.Errorf("%w; gave up waiting: %w", held, ended)
}

// entryToken is the token of a line entry "<client id>|<ttl ms>|<token>".
func entryToken(e string) string {
	_, rest, _ := strings.Cut(e, "|")
	_, tok, _ := strings.Cut(rest, "|")
	return tok
}
