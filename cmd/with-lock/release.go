package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/supervise"
)

// The lock's release, and what it says: with the run's record once the
// command ran (finish, finish.go, calls it), alone when the run ends
// after the acquire without its command.

// release gives up the lock of a run that ends after the acquire without
// its command: a signal meanwhile, --once-per's window already done, a
// command that could not start.
func (r *runner) release(lock taken) {
	r.sayReleased(lock, lock.Release(context.Background()), nil, supervise.Usage{})
}

// releaseAndRecord ends a run whose command ran: it releases the lock
// unless its loss showed it is not ours and, unless --no-record, stores
// the run's last-run record in the same round trip. Neither changes the
// exit code. A Redis that is down costs one warning, the release's; a
// record that alone failed is a warning that -q silences.
//
// The job has ended, and with it the command's output: its end (output)
// goes in the record.
func (h *holding) releaseAndRecord(res result, output string) {
	r, lock, ka := h.r, h.lock, h.ka
	var lost error // why the lock was lost during the run, if it was
	if ka != nil {
		lost = ka.Err()
	}
	if r.cfg.NoRecord {
		// After a presumed loss (Redis silent until the deadline) the
		// lock may still be ours, so it is released.
		if !errors.Is(lost, withlock.ErrLockNotHeld) {
			r.sayReleased(lock, lock.Release(context.Background()), lost, res.usage)
		}
		return
	}
	// The record names the outcome the exit code and the monitoring
	// give: a loss while --max-run stopped the job is "lost", as it exits 125.
	run := withlock.Run{Started: lock.at, ExitCode: res.code, Outcome: withlock.Outcome(res.outcome), Lost: lost != nil,
		Output: output, Window: h.window,
		Extra: recordFields{CPUMs: (res.usage.User + res.usage.System).Milliseconds(), MaxRSSKB: res.usage.MaxRSSKB,
			TimedOut: res.timedOut, Tracking: res.tracking}.extra()}
	relErr, recErr := releaseAndRecordErrors(lock.ReleaseAndRecord(context.Background(), run, r.cfg.RecordTTL))
	switch {
	case recErr == nil:
		r.sayReleased(lock, relErr, lost, res.usage)
		r.log.info("recorded", fields{}, "recorded the run of %s (kept %s)", lock.Key(), r.cfg.RecordTTL)
	case relErr == nil || errors.Is(relErr, withlock.ErrLockNotHeld):
		r.sayReleased(lock, relErr, lost, res.usage)
		r.log.warn("warning", fields{}, "%s", r.inUserWords(recErr))
	case lost != nil:
		r.sayReleased(lock, relErr, lost, res.usage) // Redis is still silent after a loss that was said
	default:
		// Redis did not answer: one warning says both.
		r.log.warn("warning", fields{}, "%s; the lock will expire by itself; the run was not recorded", r.inUserWords(relErr))
	}
}

// releaseAndRecordErrors splits ReleaseAndRecord's error into its parts:
// the release's (ErrLockNotHeld, or ErrNotReleased's) and the record's
// (ErrNotRecorded's), each nil when that part succeeded.
func releaseAndRecordErrors(err error) (released, recorded error) {
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	for _, e := range parts {
		switch {
		case errors.Is(e, withlock.ErrNotRecorded):
			recorded = e
		case e != nil:
			released = e
		}
	}
	return released, recorded
}

// sayReleased says how a release went: with -v when it worked, a warning
// when it did not, as failing to release does not change the exit code
// (the command did run, and the key expires anyway). After a loss that was
// already said (lost), Redis saying the lock is not ours, or still not
// answering, is no news except with -v. usage is what the job cost.
func (r *runner) sayReleased(lock taken, err, lost error, usage supervise.Usage) {
	switch {
	case err == nil && !r.log.verbose:
		// Said with -v only: a quiet run need not format it, which costs
		// fmt's first use.
	case err == nil:
		held := time.Since(lock.at)
		f, cost := jobCost(fields{DurationMs: ms(held)}, usage)
		if left := r.cfg.MinHold - time.Since(lock.Acquired()); left > 0 { // counted as the library keeps it
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

// jobCost adds what the job cost (u) to f, the released event's fields,
// and says it for the message: " (job: 12ms CPU, 3.1 MiB peak)"; nothing
// when no process was reaped.
func jobCost(f fields, u supervise.Usage) (fields, string) {
	if u.MaxRSSKB == 0 {
		return f, ""
	}
	cpu := (u.User + u.System).Milliseconds()
	f.CPUMs, f.MaxRSSKB = &cpu, u.MaxRSSKB
	return f, fmt.Sprintf(" (job: %s CPU, %.1f MiB peak)", round(u.User+u.System), float64(u.MaxRSSKB)/1024)
}
