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

// acquire takes the lock, or returns nil and how the run ended.
func (r *runner) acquire() (*withlock.Lock, result) {
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
			r.release(lock)
		}
		code := 128 + int(sig.(syscall.Signal))
		r.log.error("interrupted", fields{Signal: signalName(sig), Code: &code}, "%v while acquiring %s; command not run", sig, r.locker.Key(r.cfg.Name))
		return nil, notRun(code, outcomeError)
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
		r.got = start.Add(took)
		return lock, result{acquired: r.got}
	case errors.Is(err, withlock.ErrNotObtained):
		if code, skip := r.doneWhileBusy(); skip { // onceper.go: kept by --min-hold after a success
			return nil, notRun(code, outcomeDone)
		}
		if errors.Is(err, withlock.ErrPaused) {
			if r.cfg.ConflictExit != 0 {
				r.busy(err) // busy.go; a pause ends a wait at once, which busy.go says
			}
			return nil, notRun(r.cfg.ConflictExit, outcomePaused)
		}
		if r.cfg.ConflictExit != 0 {
			if r.cfg.Wait > 0 {
				r.gaveUp(err, time.Since(start))
			} else {
				r.busy(err) // busy.go
			}
		}
		return nil, notRun(r.cfg.ConflictExit, outcomeBusy)
	default:
		code := redisExit(err)
		r.log.error("error", fields{Code: &code}, "%s%s; command not run%s", r.inUserWords(err), r.waitedLonger(err, time.Since(start)), r.hint(code, err))
		return nil, notRun(code, outcomeError)
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
