package withlock

// What a KeepAlive does when a renewal finds its key gone: tell whether
// Client.Break removed it (admin_list.go), and with KeepAliveOptions.Reacquire
// take it back when nobody broke or took it (retake).

import (
	"context"
	"errors"
	"fmt"
	"time"
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
