package main

import (
	"context"
	"errors"
	"syscall"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/lapse"
)

// --lock-delay: a lease that expired without a release (its holder
// crashed, was stopped, lost Redis or could not renew) may leave a job
// running somewhere, which the holder stops only once it notices. A run
// that takes such a lock (internal/lapse) holds it, renewed, for DUR before
// its command starts; after a release it starts at once.

// lockDelay waits --lock-delay when the lease before this run's lapsed,
// renewing the lock, and returns that renewal, which goes on into the hold;
// nil when there was no wait. It returns false with the run's result when
// the run ends here, the command not run: a signal (128+n, the lock
// released) or the lock lost meanwhile (125).
func (r *connected) lockDelay(lock taken) (*keptAlive, result, bool) {
	d := r.cfg.LockDelay
	if d <= 0 || !lapse.Lapsed(lock.Lock) {
		return nil, result{}, true
	}
	r.log.warn("lock_delay", fields{DurationMs: ms(d)},
		"the last lease of %s expired without a release (its holder crashed or stalled; its job may still run): holding the lock %s (--lock-delay) before the command starts",
		lock.Key(), round(d))
	k := r.keepAlive(lock.Lock)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return k, result{}, true
	case sig := <-r.sigs:
		k.stop()
		r.release(lock)
		code := 128 + int(sig.(syscall.Signal))
		r.log.error("interrupted", fields{Signal: signalName(sig), Code: &code}, "%v during --lock-delay on %s; command not run", sig, lock.Key())
		return nil, notRun(code, outcomeError), false
	case <-k.ka.Lost():
		k.stop()
		lost := k.ka.Err()
		if !errors.Is(lost, withlock.ErrLockNotHeld) {
			_ = lock.Release(context.Background()) // presumed lost: it may still be ours
		}
		code := exitLockLost
		r.log.error("lost", fields{Code: &code}, "%s during --lock-delay; command not run", r.inUserWords(lost))
		return nil, result{code: code, outcome: outcomeLost, acquired: lock.Acquired(), lost: true}, false
	}
}
