package main

import (
	"context"
	"errors"
	"strings"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// window is --once-per's window, with its offset.
func (r *runner) window() withlock.Window {
	return withlock.Window{Every: r.cfg.OncePer, Offset: r.cfg.OncePerOffset}
}

// oncePer runs, with --once-per, right after the lock was acquired and
// before the command starts. It returns the current window, by Redis's
// clock (Lock.OncePer), which the run's record marks done when the run
// succeeds; nil without --once-per. When a run already succeeded in the
// window it says so with -v and returns the result of a done run
// (--done-exit-code) and true, the lock released at once. Checking while holding the lock is what makes two servers
// arriving together run the command once: the winner's success is marked
// before its release. An error reading the marker releases the lock and
// runs nothing.
func (r *connected) oncePer(lock taken) (window *withlock.Span, res result, skip bool) {
	res.acquired = lock.at
	if r.cfg.OncePer == 0 {
		return nil, res, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.cfg.RedisTimeout)
	defer cancel()
	span, err := lock.OncePer(ctx, r.window())
	switch {
	case err == nil:
		return &span, res, false
	case errors.Is(err, withlock.ErrDone):
		r.doneSkip(span)
		if j, ok := err.(interface{ Unwrap() []error }); ok && !errors.Is(err, withlock.ErrLockNotHeld) {
			// OncePer joined the release's error to ErrDone's.
			for _, e := range j.Unwrap() {
				if !errors.Is(e, withlock.ErrDone) {
					r.log.warn("warning", fields{}, "%s; the lock will expire by itself", r.inUserWords(e))
				}
			}
		}
		res.code, res.outcome = r.cfg.DoneExit, outcomeDone
		return nil, res, true
	}
	r.release(lock)
	res.code, res.outcome = redisExit(err), outcomeError
	r.log.error("error", fields{}, "%s; command not run%s", r.inUserWords(err), r.hint(res.code, err))
	return nil, res, true
}

// doneWhileBusy tells, with --once-per, a busy lock held only by
// --min-hold after a success in the current window from one held by a
// run: the first is a done skip (true, with --done-exit-code), the second
// stays busy. It reads the marker, and the window from Redis's clock, only
// on this busy path.
func (r *connected) doneWhileBusy() (code int, skip bool) {
	if r.cfg.OncePer == 0 {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
	defer cancel()
	span, done, err := r.locker.WindowDone(ctx, r.cfg.Name, r.window())
	if err != nil || !done {
		return 0, false
	}
	r.doneSkip(span)
	return r.cfg.DoneExit, true
}

// doneSkip says, with -v only, that the command did not run because its
// window is done: a skip cron should not mail about.
func (r *connected) doneSkip(w withlock.Span) {
	r.log.info("done", fields{}, "%s already succeeded in the window starting %s (--once-per %s); command not run",
		r.locker.Key(r.cfg.Name), utc(w.Start), short(r.cfg.OncePer))
}

// short writes d as a person would: 1h, not 1h0m0s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// utc shows a window's bound: windows are defined in UTC.
func utc(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
