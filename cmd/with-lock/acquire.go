package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	withlock "github.com/with-lock/with-lock"
	"golang.org/x/sys/unix"
)

// acquire takes the lock, or returns nil and the exit code to leave with.
func (r *runner) acquire() (*withlock.Lock, int) {
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
			lock, err = r.locker.Acquire(wctx, r.cfg.Name, r.cfg.TTL, r.lockOptions())
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
		return nil, code
	}
	r.warnEviction() // eviction.go
	switch {
	case err == nil:
		r.acquiredAt = time.Now()
		took := r.acquiredAt.Sub(start)
		f := fields{Fence: lock.Fence(), DurationMs: ms(took), TTLMs: r.cfg.TTL.Milliseconds()}
		if lock.Fence() > 0 {
			r.log.info("acquired", f, "acquired %s in %s, fence %d, ttl %s", lock.Key(), round(took), lock.Fence(), r.cfg.TTL)
		} else {
			r.log.info("acquired", f, "acquired %s in %s, ttl %s", lock.Key(), round(took), r.cfg.TTL)
		}
		return lock, 0
	case errors.Is(err, withlock.ErrNotObtained):
		r.mon.skipped = outcomeBusy
		if errors.Is(err, withlock.ErrPaused) {
			r.mon.skipped = outcomePaused
		}
		if code, skip := r.doneWhileBusy(); skip { // onceper.go: kept by --min-hold after a success
			return nil, code
		}
		if r.cfg.ConflictExit != 0 {
			if r.cfg.Wait > 0 && !errors.Is(err, withlock.ErrPaused) { // a pause ends the wait at once: busy.go says so
				r.gaveUp(err, time.Since(start))
			} else {
				r.busy(err) // busy.go
			}
		}
		return nil, r.cfg.ConflictExit
	default:
		code := redisExit(err)
		r.log.error("error", fields{Code: &code}, "%s%s; command not run%s", r.inUserWords(err), r.waitedLonger(err, time.Since(start)), hint(code, err))
		return nil, code
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

// logWaiting says, with -v, who holds the lock a wait begins for and
// since when. It only reads (Status): Acquire's place in the waiting line
// stays what it would be without -v. A lock that turns out free says
// nothing; Acquire then takes it at once.
func (r *runner) logWaiting(ctx context.Context) {
	if !r.log.verbose {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
	defer cancel()
	st, err := r.locker.Status(sctx, r.cfg.Name)
	if err != nil || !st.Held {
		return // Acquire will say what is wrong, or take the lock
	}
	who := st.Holder.ID
	if s := since(st.Holder.Since, time.Now()); s != "" {
		who += " " + s
	}
	r.log.info("waiting", holderFields(st.Holder),
		"waiting up to %s for %s, held by %s", r.cfg.Wait, st.Key, who)
}

// gaveUp says that a wait ran out: how long it waited, and who holds the
// lock and since when, asked of Redis now (the holder may have changed
// while we waited; renewal keeps its remaining time near the TTL, which
// says little). Hidden by -q, as the busy message.
func (r *runner) gaveUp(err error, waited time.Duration) {
	key := r.locker.Key(r.cfg.Name)
	var held *withlock.NotObtainedError
	errors.As(err, &held)
	f := fields{DurationMs: ms(waited)}
	who := ""
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
	defer cancel()
	st, serr := r.locker.Status(ctx, r.cfg.Name)
	switch {
	case serr == nil && st.Held:
		f = holderFields(st.Holder)
		f.DurationMs = ms(waited)
		who = waitedFor(st, time.Now()) // busy.go
	case serr == nil:
		who = "it was held until just now"
		if held != nil {
			who = "it was held by " + held.Holder.ID + " until just now"
		}
	case held != nil:
		f.Holder = held.Holder.ID
		who = "held by " + held.Holder.ID
	default:
		who = "held by another owner"
	}
	r.log.warn("busy", f, "gave up waiting for %s after %s (-w %s): %s; command not run", key, round(waited), r.cfg.Wait, who)
}

// round shortens d for a message: milliseconds under a minute, seconds
// above.
func round(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

// signalName is "SIGTERM" for syscall.SIGTERM.
func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok && unix.SignalName(s) != "" {
		return unix.SignalName(s)
	}
	return sig.String()
}

// lockOptions are the per-acquisition options of this run; nil when there
// are none, which keeps the acquisition a single SET.
func (r *runner) lockOptions() *withlock.LockOptions {
	if r.cfg.MinReplicas == 0 && !r.cfg.Fence && r.cfg.MinHold == 0 && !r.cfg.Replace {
		return nil
	}
	return &withlock.LockOptions{
		Replace:     r.cfg.Replace, // --replace
		Fence:       r.cfg.Fence,   // --fence
		MinHold:     r.cfg.MinHold, // --min-hold
		MinReplicas: r.cfg.MinReplicas,
		// WAIT must answer well within the client's read timeout.
		ReplicaTimeout: r.cfg.RedisTimeout / 2,
	}
}
