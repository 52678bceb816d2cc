package withlock

// What a KeepAlive does when its lock may be gone. When a renewal finds
// its key gone: tell whether Client.Break removed it (admin_break.go), and
// with KeepAliveOptions.Reacquire take it back when nobody broke or took it
// (retake). When a failover promotes a master: read the lock there at once
// (KeepAliveOptions.Recheck, below).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// retake takes l again with its own token after its key vanished: the
// acquiring command of a fresh acquisition (SET NX PX, or with fencing the
// script that draws a new number), so it fails when anyone else holds the
// key. It returns the new fencing number (0 unfenced, or when the key
// turned out to hold l's token still: a failover's READONLY, then the new
// master had it), ErrNotObtained when the key is someone else's, or why
// Redis could not tell. Only a plain lock on one deployment can: see
// KeepAliveOptions.Reacquire.
func (s *single) retake(ctx context.Context, l *Lock) (int64, error) {
	// A fresh Lock for the command, so that the one the caller reads is
	// never written here: the new number reaches it through l.refence.
	fenced := l.Fence() != 0
	again := &Lock{c: l.c, name: l.name, key: l.key, token: l.token, ttl: l.ttl}
	ok, err := s.set(ctx, s.rdb, again, fenced)
	switch {
	case err != nil:
		return 0, err
	case ok:
		return again.fence, nil
	}
	holder, ttl, err := inspect(ctx, s.rdb, l.key)
	switch {
	case err != nil:
		return 0, err
	case holder == l.token:
		return 0, nil
	}
	return 0, notObtained(l.key, holder, ttl)
}

// afterLoss is what the renewal goroutine does once Extend said l is not
// ours (r.err matches ErrLockNotHeld), before lossAt: read the break
// marker, and with reacquire take the lock back if nobody broke it. It
// returns the renewal to report: r with the breaker in brokenBy, or a
// successful reacquisition (reacquired, sent and took of the acquiring
// command), or a failed attempt to be retried (another error),
// or r when the lock is someone else's.
func (k *KeepAlive) afterLoss(ctx context.Context, r renewal, lossAt time.Time) renewal {
	l := k.lock
	if bt, ok := l.c.b.(breakTeller); ok {
		// Bounded by the local deadline: a loss already known must not
		// turn into a presumed one while Redis is slow to say who broke it.
		rctx, cancel := context.WithDeadline(ctx, lossAt)
		r.brokenBy, _ = bt.brokenBy(rctx, l)
		cancel()
	}
	s, ok := l.c.b.(*single)
	if !k.reacquire || !ok || r.brokenBy != "" || ctx.Err() != nil {
		return r
	}
	sent := time.Now() // before sending: the new key lives at least until sent+TTL
	fence, err := s.retake(ctx, l)
	took := time.Since(sent)
	switch {
	case err == nil:
		if fence != 0 {
			l.refence.Store(fence)
		}
		l.indexed.Store(false) // admin_index.go: a Redis that lost the key lost its index too
		return renewal{sent: sent, took: took, reacquired: true}
	case errors.Is(err, ErrNotObtained):
		r.err = fmt.Errorf("%w: its key vanished and %w", ErrLockNotHeld, err)
		return r
	}
	// Redis refused or did not answer (still loading after a restart,
	// say): retried as a failed renewal is, until the deadline.
	return renewal{sent: sent, took: took, err: fmt.Errorf("take back %s after its key vanished: %w", l.key, err)}
}

// Recheck: the lock read at once on a server that has just become the
// master, outside the renewal schedule, so that a failover to a replica
// that lacked the key stops the work before another owner can start.

// recheckEvery is how often a server given to KeepAliveOptions.Recheck is
// asked again while it does not answer.
const recheckEvery = 50 * time.Millisecond

// rechecks reads the lock on each server that comes on ch until ctx is done
// or the lock is lost. A server that does not answer is asked again every
// recheckEvery until the local deadline, unless another comes meanwhile:
// the later announcement names the newer master.
func (k *KeepAlive) rechecks(ctx context.Context, ch <-chan redis.UniversalClient) {
	defer k.rechecking.Done()
	var rdb redis.UniversalClient // asked again at retry, while it does not answer
	retry := time.NewTimer(0)
	<-retry.C
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case rdb = <-ch:
		case <-retry.C:
		}
		if rdb == nil {
			continue
		}
		switch answered, lost := k.recheck(ctx, rdb); {
		case lost:
			return
		case answered || !time.Now().Before(k.Deadline()):
			rdb = nil // the deadline speaks for a server that never answered
		default:
			retry.Reset(recheckEvery)
		}
	}
}

// recheck reads the lock's key on rdb once. It loses the lock when rdb
// holds another token or none (unless Reacquire, whose next renewal takes
// a vanished key back), and reports whether rdb answered and whether the
// lock was lost.
func (k *KeepAlive) recheck(ctx context.Context, rdb redis.UniversalClient) (answered, lost bool) {
	l := k.lock
	if _, ok := l.c.b.(*single); !ok {
		return true, false // a quorum's or a semaphore's lock is not on one server
	}
	actx, cancel := context.WithDeadline(ctx, k.Deadline())
	holder, _, err := inspect(actx, rdb, l.key)
	cancel()
	switch {
	case err != nil || ctx.Err() != nil:
		return false, false
	case holder == l.token || holder == "" && k.reacquire:
		return true, false
	}
	k.stop() // before the loss is told: no renewal after it
	k.loseTo(&LostError{Key: l.key, Err: ErrLockNotHeld, Promoted: addrOf(rdb)})
	return true, true
}

// addrOf is the address of a client of one server, or "".
func addrOf(rdb redis.UniversalClient) string {
	if c, ok := rdb.(*redis.Client); ok {
		return c.Options().Addr
	}
	return ""
}
