package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
)

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
func (r *connected) keepAlive(lock *withlock.Lock) *keptAlive {
	renew := &renewals{r: r.runner, key: lock.Key(), lock: lock, lastOK: lock.Acquired()}
	masters, unwatch := r.watchFailover() // failover.go
	ka := lock.KeepAlive(context.Background(), &withlock.KeepAliveOptions{
		OnRenew: renew.report, OnReacquire: renew.reacquired, OnServerClock: renew.serverClock,
		Reacquire: r.cfg.OnLost == config.OnLostReacquire, Recheck: masters})
	renew.started(ka)
	return &keptAlive{ka: ka, renew: renew, unwatch: unwatch}
}

// renewals is what hold learns from KeepAlive's reports (OnRenew,
// OnReacquire), which come on KeepAlive's goroutine: it says with -v when a renewal was slow
// or failed, warns when --on-lost reacquire took the lock again, and keeps
// when the last renewal succeeded, to tell a key that expired from one
// that vanished (lostReason).
type renewals struct {
	r    *runner
	key  string
	lock *withlock.Lock // for its fencing number after a reacquisition

	mu       sync.Mutex
	ka       *withlock.KeepAlive // its Deadline; set once it runs, before any report
	lastOK   time.Time           // when the last successful renewal, or the acquisition, was sent
	lastSent time.Time           // when the last renewal that got an outcome was sent
	failed   int                 // attempts failed since lastOK
	jumped   time.Duration       // how far Redis's clock last stepped ahead of ours (serverClock), 0 if it has not
}

// started notes the KeepAlive that reports.
func (rn *renewals) started(ka *withlock.KeepAlive) {
	rn.mu.Lock()
	rn.ka = ka
	rn.mu.Unlock()
}

// slow is a renewal that took more than half of the renewal interval (a
// third of the TTL, KeepAlive's default): two such in a row leave no room
// for a retry before the lock is in danger.
func (rn *renewals) slow() time.Duration { return rn.r.cfg.TTL / 6 }

// report is KeepAliveOptions.OnRenew.
func (rn *renewals) report(took time.Duration, err error) {
	now := time.Now()
	sent := now.Add(-took)
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.lastSent = sent
	log, slow := rn.r.log, rn.slow()
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

// reacquired is KeepAliveOptions.OnReacquire: a renewal found the key gone
// and took the lock again (--on-lost reacquire), the acquiring command
// answered in took. It is a warning, not an event: the lock was not held
// for a while, and another run may have come and gone in that gap.
func (rn *renewals) reacquired(took time.Duration) {
	sent := time.Now().Add(-took)
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.lastSent = sent
	gap := round(sent.Sub(rn.lastOK))
	rn.lastOK, rn.failed = sent, 0
	msg := fmt.Sprintf("%s vanished (Redis restarted or failed over?); took it again (--on-lost reacquire), %s after the last renewal: another run may have held it in between",
		rn.key, gap)
	f := fields{Fence: rn.lock.Fence()}
	if f.Fence > 0 {
		msg += fmt.Sprintf("; new fence %d (the command keeps the number it was given)", f.Fence)
	}
	rn.r.log.warn("reacquired", f, "%s", msg)
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

// serverClock is KeepAliveOptions.OnServerClock: between two renewals
// Redis's clock moved by moved more than this host's. Said at every such
// renewal, as a warning: the lock's expiry moved with it.
func (rn *renewals) serverClock(moved time.Duration) {
	rn.mu.Lock()
	rn.jumped = max(moved, 0)
	rn.mu.Unlock()
	what := "jumped " + round(moved).String() + " ahead"
	effect := "a step forward expires every lock early"
	if moved < 0 {
		what = "went " + round(-moved).String() + " back"
		effect = "a step back keeps a crashed holder's lock longer"
	}
	rn.r.log.warn("server_clock", fields{DurationMs: ms(moved)},
		"Redis's clock %s of this host's between two renewals of %s: Redis expires keys by its own clock, and %s", what, rn.key, effect)
}

// jump is how far Redis's clock last stepped ahead of this host's, 0 when
// it has not: the loss that follows such a step is its doing.
func (rn *renewals) jump() time.Duration {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.jumped
}
