package main

import "time"

// alarm is a time at which hold acts.
type alarm int

const (
	alarmMaxRun      alarm = iota // --max-run is up: stop the whole job
	alarmKill                     // --kill-after since a stop began: SIGKILL the job
	alarmStopTimeout              // --stop-timeout since a forwarded stop signal: SIGKILL the job
	alarmKillAgain                // SIGKILL again, for processes forked meanwhile
	alarmGiveUp                   // killGrace since the first SIGKILL: leave what cannot die
	alarmLeftovers                // say and note what the command left running
	alarmCount
)

// alarms are hold's pending alarms, on one timer set for the earliest, so
// that hold's loop waits on one channel for all of them.
type alarms struct {
	at    [alarmCount]time.Time // when each is due, on the monotonic clock; zero: not set
	timer *time.Timer           // nil until an alarm is first set
}

// set makes which due after d, whether it was set or not.
func (a *alarms) set(which alarm, d time.Duration) {
	a.at[which] = time.Now().Add(d)
	a.arm()
}

// pending reports whether which is set and not yet due.
func (a *alarms) pending(which alarm) bool { return !a.at[which].IsZero() }

// C delivers when the earliest alarm is due: then call due. Nil until an
// alarm was set.
func (a *alarms) C() <-chan time.Time {
	if a.timer == nil {
		return nil
	}
	return a.timer.C
}

// due unsets and returns the alarms whose time has come, in the order
// declared, and sets the timer for the next one.
func (a *alarms) due() []alarm {
	now := time.Now()
	var due []alarm
	for which, at := range a.at {
		if !at.IsZero() && !at.After(now) {
			due = append(due, alarm(which))
			a.at[which] = time.Time{}
		}
	}
	a.arm()
	return due
}

// stop unsets every alarm.
func (a *alarms) stop() {
	a.at = [alarmCount]time.Time{}
	a.arm()
}

// arm sets the timer for the earliest alarm, or stops it when none is set.
// Since Go 1.23 a Reset or Stop timer delivers no stale time.
func (a *alarms) arm() {
	var next time.Time
	for _, at := range a.at {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	switch {
	case next.IsZero():
		if a.timer != nil {
			a.timer.Stop()
		}
	case a.timer == nil:
		a.timer = time.NewTimer(time.Until(next))
	default:
		a.timer.Reset(time.Until(next))
	}
}
