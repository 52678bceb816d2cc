package main

import (
	"context"
	"errors"

	withlock "github.com/with-lock/with-lock"
)

// finish ends a run: it releases the lock as releaseHeld does and, unless
// --no-record, stores the run's last-run record in the same round trip.
// Neither changes the exit code. A Redis that is down costs one warning,
// the release's; a record that alone failed is a warning that -q silences.
//
// The job has ended, and with it the command's output (output.go): its
// end goes in the record, and --output-on-failure's held output is
// printed once the lock is released.
func (r *runner) finish(lock *withlock.Lock, ka *withlock.KeepAlive, code int) {
	r.mon.lost = ka != nil && ka.Err() != nil
	r.endOutput()
	defer r.printHeldOutput(code)
	if r.cfg.NoRecord {
		r.releaseHeld(lock, ka)
		return
	}
	var lost error // why the lock was lost during the run, if it was
	if ka != nil {
		lost = ka.Err()
	}
	run := withlock.Run{ExitCode: code, Lost: lost != nil, Output: r.recordOutput(), Window: r.onceWindow,
		Extra: recordFields{CPUMs: (r.usage.User + r.usage.System).Milliseconds(), MaxRSSKB: r.usage.MaxRSSKB,
			TimedOut: r.timedOut, Tracking: r.tracking}.extra()}
	if r.timedOut {
		run.Outcome = outcomeTimedOut
	}
	err := lock.ReleaseAndRecord(context.Background(), run, r.cfg.RecordTTL)
	relErr, recErr := releaseAndRecordErrors(err)
	switch {
	case recErr == nil:
		r.released(lock, relErr, lost)
		r.log.info("recorded", fields{}, "recorded the run of %s (kept %s)", lock.Key(), r.cfg.RecordTTL)
	case relErr == nil || errors.Is(relErr, withlock.ErrLockNotHeld):
		r.released(lock, relErr, lost)
		r.log.warn("warning", fields{}, "%s", r.inUserWords(recErr))
	case lost != nil:
		r.released(lock, relErr, lost) // Redis is still silent after a loss that was said
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
