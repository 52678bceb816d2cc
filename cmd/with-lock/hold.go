package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/supervise"
)

// hold supervises the command while it holds lock: it renews the lock
// (unless --no-renew), passes on the signals with-lock receives, stops the
// command when the lock is lost (--on-lost term), and releases the lock at
// the end. It returns with-lock's exit code.
func (r *runner) hold(child *supervise.Child, lock *withlock.Lock) int {
	// The guard kills the command's whole process group if with-lock is
	// killed. Without it only the parent-death signal, on Linux, stops the
	// command, and not its children.
	if err := child.GuardErr(); err != nil {
		r.log.warn("warning", fields{}, "%v; if with-lock is killed, the command's children may outlive it", err)
	}
	var ka *withlock.KeepAlive
	var lost <-chan struct{}
	rn := &renewals{r: r, key: lock.Key(), lock: lock, lastOK: lock.Acquired()}
	if !r.cfg.NoRenew {
		ka = lock.KeepAlive(context.Background(), &withlock.KeepAliveOptions{
			OnRenew: rn.report, OnReacquire: rn.reacquired, Reacquire: r.cfg.OnLost == config.OnLostReacquire}) // reacquire.go
		lost = ka.Lost()
		rn.mu.Lock()
		rn.ka = ka
		rn.mu.Unlock()
	}
	var killAt time.Time // set once the command is being stopped
	var kill <-chan time.Time
	js := r.newJobStop(child, lock) // jobstop.go: --max-run, --leftovers, the end of the job
	stop := &stopTimer{r: r}        // stopping.go: --stop-timeout
	code := 0
	for {
		select {
		case <-js.mainDone:
			var stop bool
			if code, stop = js.commandExited(!killAt.IsZero()); stop {
				kill = time.After(r.cfg.KillAfter)
			}
		case <-js.jobDone:
			if ka != nil {
				ka.Stop()
			}
			code = js.exitCode(code, !killAt.IsZero())
			r.usage, r.tracking = child.Usage(), child.TrackingMode()
			r.finish(lock, ka, code) // record.go: release, and record the run
			child.Close()            // its cgroup went meanwhile
			return code
		case sig := <-r.sigs:
			r.forwarded = sig.(syscall.Signal)
			if err := child.Signal(sig.(syscall.Signal)); err != nil {
				r.log.warn("warning", fields{}, "forward %v to the command: %v", sig, err)
			}
			stop.forwarded(sig.(syscall.Signal))
		case <-stop.fired:
			stop.expired(child)
			js.killed()
		case <-lost:
			lost = nil
			why, f := r.lostReason(lock, ka.Err(), rn)
			why += r.notReacquired(ka.Err()) // reacquire.go
			if r.cfg.OnLost == config.OnLostIgnore {
				r.log.error("lost", f, "%s; --on-lost ignore: the command goes on without the lock", why)
				continue
			}
			// Stop first, explain after: finding out who took the lock
			// costs a round trip the command must not run on for.
			killAt = time.Now().Add(r.cfg.KillAfter)
			if err := child.Signal(r.cfg.StopWith()); err != nil {
				r.log.warn("warning", fields{}, "stop the command: %v", err)
			}
			kill = time.After(r.cfg.KillAfter)
			r.log.error("lost", f, "%s; stopping the command (%s, SIGKILL after %s), exit %d",
				why, signalName(r.cfg.StopWith()), r.cfg.KillAfter, exitLockLost)
		case <-kill:
			kill = nil
			if err := child.Signal(syscall.SIGKILL); err != nil {
				r.log.warn("warning", fields{}, "kill the command: %v", err)
			}
			js.killed()
		case <-js.maxRun:
			if js.timeUp(!killAt.IsZero()) {
				kill = time.After(r.cfg.KillAfter)
			}
		case <-js.rekill:
			_ = child.Signal(syscall.SIGKILL)
		case <-js.giveUp:
			js.abandon()
		case <-js.settled:
			js.leftOver()
		}
	}
}

// logExit says, with -v, how the command ended and after how long, and
// what follows the rest of its job.
func (r *runner) logExit(child *supervise.Child, code int) {
	took := time.Since(child.Started())
	f := fields{Code: &code, DurationMs: ms(took), Tracking: child.Tracking()}
	if sig, ok := child.KilledBy(); ok {
		f.Signal = signalName(sig)
		r.log.info("exited", f, "command killed by %s after %s (exit %d; its job followed by %s)", f.Signal, round(took), code, f.Tracking)
		return
	}
	r.log.info("exited", f, "command exited with code %d after %s (its job followed by %s)", code, round(took), f.Tracking)
}

// releaseHeld releases the lock unless its loss already showed it is not
// ours. After a presumed loss (Redis silent until the deadline) it may
// still be ours, so it tries.
func (r *runner) releaseHeld(lock *withlock.Lock, ka *withlock.KeepAlive) {
	var lost error
	if ka != nil {
		lost = ka.Err()
	}
	if errors.Is(lost, withlock.ErrLockNotHeld) {
		return
	}
	r.released(lock, lock.Release(context.Background()), lost)
}

// release gives the lock up.
func (r *runner) release(lock *withlock.Lock) {
	r.released(lock, lock.Release(context.Background()), nil)
}

// released says how a release went: with -v when it worked, a warning when
// it did not, as failing to release does not change the exit code (the
// command did run, and the key expires anyway). After a loss that was
// already said (lost), Redis saying the lock is not ours, or still not
// answering, is no news except with -v.
func (r *runner) released(lock *withlock.Lock, err, lost error) {
	switch {
	case err == nil && !r.log.verbose:
		// Said with -v only: a quiet run need not format it, which costs
		// fmt's first use.
	case err == nil:
		held := time.Since(r.acquiredAt)
		f, cost := r.jobCost(fields{DurationMs: ms(held)})                 // jobstop.go
		if left := r.cfg.MinHold - time.Since(lock.Acquired()); left > 0 { // as the library counts it
			r.log.info("released", f, "released %s after %s%s; its key stays %s more (--min-hold %s)",
				lock.Key(), round(held), cost, round(left), r.cfg.MinHold)
			return
		}
		r.log.info("released", f, "released %s after %s%s", lock.Key(), round(held), cost)
	case lost != nil && errors.Is(err, withlock.ErrLockNotHeld):
	case lost != nil:
		r.log.event(levelWarn, "warning", fields{}, "%s; the lock will expire by itself", r.inUserWords(err))
	case errors.Is(err, withlock.ErrLockNotHeld):
		r.log.warn("warning", fields{}, "lock %s was no longer ours at release (it expired or was taken over); left it alone", lock.Key())
	default:
		r.log.warn("warning", fields{}, "%s; the lock will expire by itself", r.inUserWords(err))
	}
}

// renewals is what hold learns from KeepAlive's reports (OnRenew): it says
// with -v when a renewal was slow or failed, and keeps when the last one
// succeeded, to tell a key that expired from one that vanished.
type renewals struct {
	r    *runner
	key  string
	lock *withlock.Lock // for its fencing number after a reacquisition

	mu       sync.Mutex
	ka       *withlock.KeepAlive // its Deadline; set once it runs, before any report
	lastOK   time.Time           // when the last successful renewal, or the acquisition, was sent
	lastSent time.Time           // when the last renewal that got an outcome was sent
	failed   int                 // attempts failed since lastOK
}

// slowRenewal is a renewal that took more than half of the renewal
// interval (a third of the TTL, KeepAlive's default): two such in a row
// leave no room for a retry before the lock is in danger.
func (r *runner) slowRenewal() time.Duration { return r.cfg.TTL / 6 }

// report is KeepAliveOptions.OnRenew.
func (rn *renewals) report(took time.Duration, err error) {
	now := time.Now()
	sent := now.Add(-took)
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.lastSent = sent
	log, slow := rn.r.log, rn.r.slowRenewal()
	switch {
	case err == nil:
		f := fields{DurationMs: ms(took), TTLMs: rn.r.cfg.TTL.Milliseconds()}
		switch {
		case rn.failed > 0:
			log.event(levelWarn, "renewed", f, "renewed %s after %d failed attempts, %s since the last success",
				rn.key, rn.failed, round(sent.Sub(rn.lastOK)))
		case took > slow:
			log.event(levelWarn, "renewed", f, "renewed %s slowly: took %s (slow: more than %s, half the renewal interval)",
				rn.key, round(took), round(slow))
		}
		rn.lastOK, rn.failed = sent, 0
	case errors.Is(err, withlock.ErrLockNotHeld):
		// The loss: hold says why.
	default:
		rn.failed++
		left := rn.ka.Deadline().Sub(now)
		words := rn.r.inUserWords(err)
		log.event(levelWarn, "renew_failed", fields{DurationMs: ms(took), Error: words},
			"renewing %s failed (attempt %d): %s; retrying, %s left before it is presumed lost", rn.key, rn.failed, words, round(max(left, 0)))
	}
}

// snapshot returns lastOK and lastSent, and KeepAlive's margin: how long
// before the key could expire after lastOK it presumes the lock lost.
func (rn *renewals) snapshot() (lastOK, lastSent time.Time, margin time.Duration) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.ka != nil {
		margin = rn.lastOK.Add(rn.r.cfg.TTL).Sub(rn.ka.Deadline())
	}
	return rn.lastOK, rn.lastSent, margin
}

// lostReason says exactly why the lock was lost, and the fields of the
// "lost" event, judged by this host's clock:
//   - Redis did not answer renewals until the key could have expired:
//     "Redis unreachable for longer than the TTL allows";
//   - --break removed it (the marker it leaves names the breaker):
//     "broken by host:pid with --break";
//   - --replace asked it to stop: "replaced by host:pid with --replace";
//   - no renewal was even tried in time (with-lock was paused or starved):
//     taken over by host:pid if Redis says so, else "it expired";
//   - Redis said the lock is no longer ours: taken over by host:pid if
//     another owner holds it; else the key is gone, and it "expired" only
//     when the renewal that found it gone came within twice the margin of
//     the TTL (a clock running faster on Redis could then explain it);
//     earlier, the key "vanished": a restart without persistence, a
//     FLUSHALL, a DEL or --break, a failover to a replica that lacked it.
func (r *runner) lostReason(lock *withlock.Lock, err error, rn *renewals) (string, fields) {
	ttl := r.cfg.TTL
	lastOK, lastSent, margin := rn.snapshot()
	var lerr *withlock.LostError
	if errors.As(err, &lerr) && lerr.ReplacedBy != "" {
		return replacedReason(lock, lerr.ReplacedBy) // replace.go
	}
	if errors.As(err, &lerr) && lerr.Err != nil && !errors.Is(err, withlock.ErrLockNotHeld) {
		// Stop first, explain after has already happened; asking Redis
		// now would only wait out another timeout.
		return fmt.Sprintf("lock %s presumed lost: Redis unreachable for longer than the TTL allows: no renewal succeeded for %s of its %s TTL (last attempt: %s)",
			lock.Key(), round(time.Since(lastOK)), ttl, r.inUserWords(lerr.Err)), fields{}
	}
	if errors.As(err, &lerr) && lerr.BrokenBy != "" {
		return brokenReason(lock, lerr.BrokenBy, r.cfg.OnLost) // reacquire.go
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
	defer cancel()
	st, serr := r.locker.Status(ctx, r.cfg.Name)
	if serr == nil && st.Held {
		who := st.Holder.ID
		if s := since(st.Holder.Since, time.Now()); s != "" {
			who += " " + s
		}
		return fmt.Sprintf("lock %s lost: taken over by %s", lock.Key(), who), fields{Holder: st.Holder.ID, Since: rfc3339(st.Holder.Since)}
	}
	if !errors.Is(err, withlock.ErrLockNotHeld) {
		return fmt.Sprintf("lock %s lost: it expired: not renewed for %s of its %s TTL (was with-lock paused or starved of CPU?)",
			lock.Key(), round(time.Since(lastOK)), ttl), fields{}
	}
	if serr != nil {
		return fmt.Sprintf("lock %s lost: it expired or was taken over (asking Redis which failed: %s)", lock.Key(), r.inUserWords(serr)), fields{}
	}
	if lastSent.Sub(lastOK) >= ttl-2*margin {
		return fmt.Sprintf("lock %s lost: it expired: the renewal that found it gone came %s after the last success (TTL %s)",
			lock.Key(), round(lastSent.Sub(lastOK)), ttl), fields{}
	}
	early := round(max(lastOK.Add(ttl).Sub(lastSent), 0))
	return fmt.Sprintf("lock %s lost: the key vanished %s before it was due to expire (Redis restarted or flushed, or the key deleted?)",
		lock.Key(), early), fields{}
}
