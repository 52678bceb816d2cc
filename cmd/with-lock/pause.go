package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// Exit codes of --resume.
const (
	exitResumed   = 0
	exitNotPaused = 1
)

// pause is --pause: every run of the name, on every host, refuses from now
// (or, while a holder runs, from its release) until --resume or --for.
// The holder that runs is not stopped, and it says so.
func (r *connected) pause() int {
	p := withlock.Pause{Reason: r.cfg.PauseReason}
	if r.cfg.PauseFor > 0 {
		p.Until = time.Now().Add(r.cfg.PauseFor)
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
	defer cancel()
	holder, err := r.locker.Pause(ctx, r.cfg.Name, p)
	if err != nil {
		return r.redisFailed(err)
	}
	key := r.locker.Key(r.cfg.Name)
	until := "until --resume"
	if !p.Until.IsZero() {
		until = "until " + clock(p.Until, time.Now()) + " (--for " + r.cfg.PauseFor.String() + ")"
	}
	refuse := fmt.Sprintf("every run of it refuses with exit %d", r.cfg.ConflictExit)
	if holder == nil {
		fmt.Printf("paused %s %s: %s\n", key, until, refuse)
		return 0
	}
	fmt.Printf("paused %s %s; %s holds it and is not stopped: the pause takes effect when it releases, then %s\n",
		key, until, owner(holder.ID), refuse)
	return 0
}

// resume is --resume: the name's runs start again.
func (r *connected) resume() int {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
	defer cancel()
	ended, err := r.locker.Resume(ctx, r.cfg.Name)
	if err != nil {
		return r.redisFailed(err)
	}
	key := r.locker.Key(r.cfg.Name)
	if !ended {
		// The answer to --resume, as its exit code says: shown with -q too.
		r.log.print(levelWarn, "warning", fields{}, "%s was not paused; nothing to resume", key)
		return exitNotPaused
	}
	fmt.Printf("resumed %s: runs take it again\n", key)
	return exitResumed
}

// pausedMessage is the message of a run refused by a pause, or "" when err
// is no pause.
func pausedMessage(err error) (string, bool) {
	var refused *withlock.NotObtainedError
	if !errors.As(err, &refused) || refused.Paused == nil {
		return "", false
	}
	return refused.Error(), true
}

// pendingPause says that pause p waits for the holder that runs.
func pendingPause(p *withlock.Pause) string {
	return p.Describe(time.Now()) + ": takes effect when this holder releases"
}

// pauseJSON is a pause in --status --json and --list --json.
type pauseJSON struct {
	By      string     `json:"by"` // "<host>:<user>"
	Since   time.Time  `json:"since"`
	Until   *time.Time `json:"until,omitempty"` // absent: until --resume
	Reason  string     `json:"reason,omitempty"`
	Pending bool       `json:"pending,omitempty"` // a holder still runs; the pause takes effect at its release
}

// newPauseJSON is p as JSON, nil for none.
func newPauseJSON(p *withlock.Pause) *pauseJSON {
	if p == nil {
		return nil
	}
	out := &pauseJSON{By: p.By, Since: p.Since, Reason: p.Reason, Pending: p.Pending}
	if !p.Until.IsZero() {
		out.Until = &p.Until
	}
	return out
}

// whilePaused is --check's verdict v for a name that may be paused: at
// least WARNING while it is, so that a job paused for maintenance and
// forgotten is noticed before its records age into CRITICAL.
func whilePaused(v verdict, st *withlock.Status) verdict {
	if st.Paused == nil {
		return v
	}
	v.code = max(v.code, checkWarning)
	v.msg += "; " + st.Paused.Describe(time.Now())
	if st.Paused.Pending {
		v.msg += " (takes effect when the running holder releases)"
	}
	return v
}
