package main

import (
	"context"
	"errors"
	"syscall"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/lapse"
)

// --lock-delay: a lease that expired without a release (its holder
// crashed, was stopped, lost Redis or could not renew) may leave a job
// running somewhere, which the holder stops only once it notices. A run
// that takes such a lock (internal/lapse) holds it, renewed, for DUR before
// its command starts; after a release it starts at once.

// keptAlive is a lock's renewal and what hold learns from it.
type keptAlive struct {
	ka    *withlock.KeepAlive
	renew *renewals
	// unwatch stops watching the sentinels for a failover (failover.go),
	// once ka has stopped.
	unwatch func()
}

// stop stops the renewal and the watch of the sentinels.
func (k *keptAlive) stop() {
	k.ka.Stop()
	k.unwatch()
}

// keepAlive starts renewing lock for the rest of the run, and under
// Sentinel reading it at once on a master a failover promotes.
func (r *runner) keepAlive(lock *withlock.Lock) *keptAlive {
	renew := &renewals{r: r, key: lock.Key(), lock: lock, lastOK: lock.Acquired()}
	masters, unwatch := r.watchFailover() // failover.go
	ka := lock.KeepAlive(context.Background(), &withlock.KeepAliveOptions{
		OnRenew: renew.report, OnReacquire: renew.reacquired, OnServerClock: renew.serverClock,
		Reacquire: r.cfg.OnLost == config.OnLostReacquire, Recheck: masters})
	renew.started(ka)
	return &keptAlive{ka: ka, renew: renew, unwatch: unwatch}
}

// lockDelay waits --lock-delay when the lease before this run's lapsed,
// renewing the lock, whose renewal goes on into the hold (r.kept). It
// returns false with the run's result when the run ends here, the command
// not run: a signal (128+n, the lock released) or the lock lost meanwhile
// (125).
func (r *runner) lockDelay(lock *withlock.Lock) (result, bool) {
	d := r.cfg.LockDelay
	if d <= 0 || !lapse.Lapsed(lock) {
		return result{}, true
	}
	r.log.warn("lock_delay", fields{DurationMs: ms(d)},
		"the last lease of %s expired without a release (its holder crashed or stalled; its job may still run): holding the lock %s (--lock-delay) before the command starts",
		lock.Key(), round(d))
	k := r.keepAlive(lock)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		r.kept = k
		return result{}, true
	case sig := <-r.sigs:
		k.stop()
		r.release(lock)
		code := 128 + int(sig.(syscall.Signal))
		r.log.error("interrupted", fields{Signal: signalName(sig), Code: &code}, "%v during --lock-delay on %s; command not run", sig, lock.Key())
		return notRun(code, outcomeError), false
	case <-k.ka.Lost():
		k.stop()
		lost := k.ka.Err()
		if !errors.Is(lost, withlock.ErrLockNotHeld) {
			_ = lock.Release(context.Background()) // presumed lost: it may still be ours
		}
		code := exitLockLost
		r.log.error("lost", fields{Code: &code}, "%s during --lock-delay; command not run", r.inUserWords(lost))
		return result{code: code, outcome: outcomeLost, acquired: lock.Acquired(), lost: true}, false
	}
}
