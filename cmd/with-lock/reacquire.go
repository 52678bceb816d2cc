package main

import (
	"errors"
	"fmt"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
)

// --on-lost reacquire (withlock.KeepAliveOptions.Reacquire) and --break's
// word to its victim: what hold says about them.

// reacquired is KeepAliveOptions.OnReacquire: a renewal found the key gone
// and took the lock again, the acquiring command answered in took. It is
// a warning, not an event: the lock was not held for a while, and another
// run may have come and gone in that gap.
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

// brokenReason is lostReason for a lock that --break (Client.Break) removed:
// the breaker's host:pid, from the marker Break leaves. Breaking is an
// operator's decision, so --on-lost reacquire does not undo it.
func brokenReason(lock *withlock.Lock, by, onLost string) (string, fields) {
	why := fmt.Sprintf("lock %s lost: broken by %s with --break", lock.Key(), by)
	if onLost == config.OnLostReacquire {
		why += " (a broken lock is not taken again)"
	}
	return why, fields{}
}

// notReacquired says, with --on-lost reacquire, why a lock that Redis said
// is no longer ours was not taken again: someone held its key. It is ""
// otherwise, and after a break, which brokenReason explains.
func (r *runner) notReacquired(err error) string {
	var lerr *withlock.LostError
	if r.cfg.OnLost != config.OnLostReacquire || !errors.As(err, &lerr) ||
		lerr.BrokenBy != "" || !errors.Is(err, withlock.ErrLockNotHeld) {
		return ""
	}
	return " (--on-lost reacquire takes back only a key nobody holds)"
}
