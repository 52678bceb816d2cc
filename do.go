package withlock

// Client.Do: acquire, keep alive, run a function, release.

import (
	"context"
	"errors"
	"time"
)

// DoOptions configure Do. A nil *DoOptions means the defaults: fail at once
// when the lock is busy, no fencing, no min-hold, default renewal.
type DoOptions struct {
	// LockOptions are the acquisition's fencing, min-hold and replicas.
	LockOptions
	// Wait makes Do wait for a busy lock until ctx is done, as Acquire
	// does, instead of failing at once with ErrNotObtained.
	Wait bool
	// KeepAlive tunes renewal while fn runs.
	KeepAlive KeepAliveOptions
}

// Do runs fn while holding the lock called name: it acquires the lock for
// ttl, renews it in the background while fn runs, and releases it when fn
// returns. fn's context is cancelled when the lock is lost, with a
// *LostError as its context.Cause; fn should then stop touching what the
// lock protects. l gives fn the lock's fencing number and token.
//
// Do returns the acquisition's error (matching ErrNotObtained when the lock
// is busy) without calling fn. Otherwise it returns fn's error joined with
// any loss (matching ErrLockLost, also when the lock turned out to be gone
// only at release) and any release error. The release runs even when ctx
// is already cancelled; it is bounded by the Redis client's timeouts.
//
// If fn panics (or calls runtime.Goexit), Do stops the renewal and releases
// the lock before the panic goes on up the stack, so a caller that recovers
// (as net/http does for every handler) does not keep the lock for ever.
func (c *Client) Do(ctx context.Context, name string, ttl time.Duration, opts *DoOptions, fn func(ctx context.Context, l *Lock) error) error {
	if opts == nil {
		opts = &DoOptions{}
	}
	acquire := c.TryAcquire
	if opts.Wait {
		acquire = c.Acquire
	}
	l, err := acquire(ctx, name, ttl, &opts.LockOptions)
	if err != nil {
		return err
	}
	ka := l.KeepAlive(ctx, &opts.KeepAlive)
	returned := false
	defer func() {
		if !returned {
			// fn panicked: renewing would keep the lock as long as the
			// process lives. The panic continues after this.
			ka.Stop()
			if !errors.Is(ka.Err(), ErrLockNotHeld) {
				_ = l.Release(context.WithoutCancel(ctx))
			}
		}
	}()
	fnErr := fn(ka.Context(), l)
	returned = true
	ka.Stop()

	lost := ka.Err()
	if errors.Is(fnErr, ErrLockLost) {
		lost = nil // fn returned the cause itself; say it once
	}
	if errors.Is(ka.Err(), ErrLockNotHeld) {
		return errors.Join(fnErr, lost) // the key is someone else's or gone
	}
	relErr := l.Release(context.WithoutCancel(ctx))
	if errors.Is(relErr, ErrLockNotHeld) {
		relErr = nil
		if ka.Err() == nil {
			// Lost between the last renewal and the release.
			lost = &LostError{Key: l.key, Err: ErrLockNotHeld}
		}
	}
	return errors.Join(fnErr, lost, relErr)
}
