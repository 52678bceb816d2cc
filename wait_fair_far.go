package withlock

// Far waiters: the fair line's upkeep (wait_fair.go) done only near its
// head, so that what a hand-over costs Redis does not grow with the line.

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
)

// A waiter proves it is alive (its Client's liveness key, every second)
// and checks the line (every poll) only so that a release can skip it if
// it froze, and so that a lock freed without a release reaches the head
// of the line. Both matter near the head. With every waiter doing both,
// a line of N waiters costs Redis N refreshes and N checks (each LPOS
// reading up to N entries) a second, whatever its pace.
//
// So a waiter of a plain lock that knows it is nearLine or more from the
// head is far: it does neither. Its Client keeps instead a far key
// "{K}:f:<id>" (farFor, refreshed every farEvery while it has far waiters
// only), and the waiter checks the line only when, at the pace the line
// has kept, it should be near the head, and at least every farEvery. A
// release that reaches an entry whose Client has no liveness key:
//
//   - skips it when its Client has no far key either, as it skips any
//     entry of a dead Client: the waiter died or froze while near the head;
//   - hands it the lock for aliveFor only, published with a "~" before the
//     token, when its Client has a far key: it was alive a while ago. A
//     live waiter renews the lock at once, to its TTL; a frozen one's
//     expires within aliveFor, and the next check serves the line.
//
// A far waiter's join still writes its liveness key when due, which lives
// aliveFor: when the line moves fast, the waiter is served within that
// life and its hand-over is a plain one, at no cost beyond the join's; its
// Client writes the far key only when the liveness key is about to expire
// (farDue).
// A semaphore's line (slots_line_check.lua, slots_release.lua) has no far
// waiters: all its waiters keep the upkeep.
const (
	// nearLine is how close to the head a waiter keeps the line's upkeep.
	nearLine = 8
	// farFor is the life of a Client's far key.
	farFor = 90 * time.Second
	// farEvery is how often a Client whose waiters are all far refreshes
	// its far key and the waiting mark, and the longest a far waiter goes
	// without a check.
	farEvery = 30 * time.Second
	// farCheckFloor is the soonest a far waiter checks again.
	farCheckFloor = 50 * time.Millisecond
	// aliveMargin is how long before its liveness key expires a far
	// waiter stops counting on it for its turn.
	aliveMargin = 500 * time.Millisecond
)

// place is where a waiter is in line, as far as its Client knows.
type place struct {
	pos       int64     // entries ahead when last seen (its join's RPUSH, a check)
	posAt     time.Time // when
	joinPos   int64     // entries ahead at its join
	joinedAt  time.Time
	far       bool      // nearLine or more ahead: quiet until nextCheck
	nextCheck time.Time // when a far waiter checks the line
}

// farState is a room's part in far waiting. Guarded by fairRooms.mu.
type farState struct {
	farOK     bool      // the line has far waiters (farWaiting)
	expectFar bool      // this Client's last join was far back
	rate      float64   // entries served per second ahead of our waiters; 0: unknown
	lastFar   time.Time // when the far key and the mark were last written
	farSet    bool      // the far key may exist: written and not deleted since
	markUntil time.Time // when this Client's last write of the mark expires
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// farWaiting reports whether waiters of b's line may be far: a plain
// lock's. A semaphore's release and check (slots_*.lua) know no far key.
func farWaiting(b fairLine) bool {
	_, ok := b.(*single)
	return ok
}

func (r *room) farKey(cid string) string { return keys.Far(r.base, cid) }

// farDue is when the far key and the mark are due for a write, for a
// Client whose waiters are all far: a while before its liveness key
// expires, so that one whose turn comes later is handed the lock as a far
// waiter, not skipped; then every farEvery. A waiter served before that
// costs no write of it.
func (r *room) farDue() time.Time {
	if !r.farSet {
		return r.lastAlive.Add(aliveFor - aliveMargin)
	}
	return r.lastFar.Add(farEvery)
}

// wroteFar notes that the far key and the mark are being written.
func (r *room) wroteFar(now time.Time) {
	r.lastFar, r.farSet = now, true
	r.markUntil = later(r.markUntil, now.Add(farFor))
}

// wroteAlive notes that the liveness key and the mark are being written.
func (r *room) wroteAlive(now time.Time) {
	r.lastAlive = now
	r.markUntil = later(r.markUntil, now.Add(aliveFor))
}

// setFar queues the write of the Client's far key and of the key's waiting
// mark on p, both for farFor: the mark outlives every far waiter.
func (r *room) setFar(ctx context.Context, p redis.Pipeliner, cid string) {
	p.Set(ctx, r.farKey(cid), 1, farFor)
	p.Set(ctx, r.mark, 1, farFor)
}

// placed notes that w was seen pos entries from the head at at (its join
// when joined), learns the line's pace from how far it moved, and decides
// whether w is far, and if so when it checks. Called with f.mu held.
func (f *fairRooms) placed(r *room, w *liner, pos int64, at time.Time, joined bool) {
	if !joined && !w.posAt.IsZero() && pos <= w.pos && at.Sub(w.posAt) >= farCheckFloor {
		// A line that stood still halves the pace: a far waiter's checks
		// space out while a long job holds the lock.
		r.observe(float64(w.pos-pos) / at.Sub(w.posAt).Seconds())
	}
	w.pos, w.posAt = pos, at
	if joined {
		w.joinPos, w.joinedAt = pos, at
	}
	w.far = r.farOK && pos >= nearLine
	if joined {
		r.expectFar = w.far
	}
	w.nextCheck = time.Time{}
	if w.far {
		w.nextCheck = at.Add(r.farCheckIn(pos, at.Sub(w.joinedAt), at, f.pollInterval()))
	}
}

// served learns the line's pace from w's wait, at its hand-over. Called
// with f.mu held.
func (r *room) served(w *liner, at time.Time) {
	if w.joinPos > 0 && at.After(w.joinedAt) {
		r.observe(float64(w.joinPos) / at.Sub(w.joinedAt).Seconds())
	}
}

// observe adds one measure of the line's pace, in entries a second.
func (r *room) observe(rate float64) {
	if r.rate == 0 {
		r.rate = rate
		return
	}
	r.rate = (r.rate + rate) / 2
}

// farCheckIn is when a far waiter pos entries from the head, seen at at
// after waiting waited, checks the line next: when, at the line's pace, it
// is about to be near (a little early: the check makes it near); or, if
// its turn comes while its liveness key (written at its join) still lives,
// only once that turn is well overdue. Without a pace yet, after a poll,
// which measures it, then after as long as it has waited: a line that
// does not move is checked ever less often, up to every farEvery.
func (r *room) farCheckIn(pos int64, waited time.Duration, at time.Time, poll time.Duration) time.Duration {
	if r.rate <= 0 {
		return min(max(waited, poll), farEvery)
	}
	seconds := func(n int64) time.Duration { return time.Duration(float64(n) / r.rate * float64(time.Second)) }
	if turn, left := seconds(pos), r.lastAlive.Add(aliveFor-aliveMargin).Sub(at); turn <= left {
		return min(max(2*turn, poll), farEvery)
	}
	return min(max(seconds(pos-nearLine+1)*4/5, farCheckFloor), farEvery)
}

// upNext is the notice "?<token>" that a release or check publishes to the
// head of the line when it handed the lock to a far waiter for aliveFor:
// if that waiter is frozen, the lock frees by expiry and no release serves
// the line. The waiter with token is near from now on and checks when that
// lock expires at the latest, as a head that knows its holder's expiry.
// Called with f.mu held.
func (f *fairRooms) upNext(r *room, tok string) {
	for _, w := range r.waiters {
		if w.want.token == tok {
			w.far, w.nextCheck = false, time.Time{}
			if at := time.Now().Add(aliveFor + expiryMargin); r.headAt.IsZero() || at.Before(r.headAt) {
				r.headAt = at
			}
			r.tend()
			return
		}
	}
}
