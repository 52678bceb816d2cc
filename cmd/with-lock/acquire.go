package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/lapse"
)

// taken is the lock this run got, and when it got it (at): the start of
// its record and of the time it held the lock. Lock.Acquired is earlier
// for a run that waited (the command that won the lock was sent while
// another held it), and is kept for what the key's expiry needs.
type taken struct {
	*withlock.Lock
	at time.Time
}

// acquire takes the lock, or returns false and how the run ended.
func (r *connected) acquire() (taken, result, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var lock *withlock.Lock
	var err error
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if r.cfg.Wait > 0 {
			r.logWaiting(ctx)
			wctx, wcancel := context.WithTimeout(ctx, r.cfg.Wait-time.Since(start))
			defer wcancel()
			lock, err = r.acquireWaiting(wctx) // failover.go
			return
		}
		// One deadline for the whole try (a new connection's handshake,
		// the SET, reading a busy lock's holder), so that a stalled Redis
		// costs --redis-timeout, as the message says, not one per round
		// trip.
		tctx, tcancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
		defer tcancel()
		lock, err = r.locker.TryAcquire(tctx, r.cfg.Name, r.cfg.TTL, r.lockOptions())
	}()
	select {
	case <-done:
	case sig := <-r.sigs:
		cancel()
		<-done
		if lock != nil {
			// Not noted as got, the run ends here; held since its acquire
			// returned, which -v's "released after" counts from.
			r.release(taken{lock, lock.Acquired()})
		}
		code := 128 + int(sig.(syscall.Signal))
		r.log.error("interrupted", fields{Signal: signalName(sig), Code: &code}, "%v while acquiring %s; command not run", sig, r.locker.Key(r.cfg.Name))
		return taken{}, notRun(code, outcomeError), false
	}
	r.warnEviction() // eviction.go
	switch {
	case err == nil:
		took := time.Since(start)
		f := fields{Fence: lock.Fence(), DurationMs: ms(took), TTLMs: r.cfg.TTL.Milliseconds()}
		if lock.Fence() > 0 {
			r.log.info("acquired", f, "acquired %s in %s, fence %d, ttl %s", lock.Key(), round(took), lock.Fence(), r.cfg.TTL)
		} else {
			r.log.info("acquired", f, "acquired %s in %s, ttl %s", lock.Key(), round(took), r.cfg.TTL)
		}
		got := taken{lock, start.Add(took)}
		return got, result{acquired: got.at}, true
	case errors.Is(err, withlock.ErrNotObtained):
		if code, skip := r.doneWhileBusy(); skip { // onceper.go: kept by --min-hold after a success
			return taken{}, notRun(code, outcomeDone), false
		}
		if errors.Is(err, withlock.ErrPaused) {
			if r.cfg.ConflictExit != 0 {
				r.busy(err) // busy.go; a pause ends a wait at once, which busy.go says
			}
			return taken{}, notRun(r.cfg.ConflictExit, outcomePaused), false
		}
		if r.cfg.ConflictExit != 0 {
			if r.cfg.Wait > 0 {
				r.gaveUp(err, time.Since(start))
			} else {
				r.busy(err) // busy.go
			}
		}
		return taken{}, notRun(r.cfg.ConflictExit, outcomeBusy), false
	default:
		code := redisExit(err)
		r.log.error("error", fields{Code: &code}, "%s%s; command not run%s", r.inUserWords(err), r.waitedLonger(err, time.Since(start)), r.hint(code, err))
		return taken{}, notRun(code, outcomeError), false
	}
}

// waitedLonger says how long a try that timed out took when that is
// noticeably more than --redis-timeout: the rest was the clean-up of its
// token, which over TLS cannot be queued without waiting (docs/reliability.md).
// "" otherwise: the message's timeout is then the wait.
func (r *runner) waitedLonger(err error, took time.Duration) string {
	if r.cfg.Wait > 0 || len(timeouts(err, nil)) == 0 || took < r.cfg.RedisTimeout+r.cfg.RedisTimeout/5 {
		return ""
	}
	return fmt.Sprintf(", %s in all with the clean-up of its token", round(took))
}

// lockOptions are the per-acquisition options of this run; nil when there
// are none, which keeps the acquisition a single SET.
func (r *runner) lockOptions() *withlock.LockOptions {
	if r.cfg.MinReplicas == 0 && !r.cfg.Fence && r.cfg.MinHold == 0 && !r.cfg.Replace && r.cfg.LockDelay == 0 {
		return nil
	}
	opts := &withlock.LockOptions{
		Replace:     r.cfg.Replace, // --replace
		Fence:       r.cfg.Fence,   // --fence
		MinHold:     r.cfg.MinHold, // --min-hold
		MinReplicas: r.cfg.MinReplicas,
		// WAIT must answer well within the client's read timeout.
		ReplicaTimeout: r.cfg.RedisTimeout / 2,
	}
	if r.cfg.LockDelay > 0 {
		lapse.Detect(opts) // --lock-delay (lockdelay.go)
	}
	return opts
}
