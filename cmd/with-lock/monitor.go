package main

import (
	"time"

	withlock "github.com/with-lock/with-lock"
)

// How a run ended, as the metrics (with_lock_runs_total{outcome=...}) and
// the pings name it. Every run of a command has exactly one. A run that
// held the lock ends as its record says (Run.Outcome); the others are not
// recorded.
const (
	outcomeOK       = string(withlock.OutcomeOK)     // the command ran and exited 0
	outcomeFailed   = string(withlock.OutcomeFailed) // the command ran, or could not start, and exit was not 0
	outcomeLost     = string(withlock.OutcomeLost)   // the lock was lost while the command ran
	outcomeTimedOut = "timed-out"                    // --max-run stopped the job: exit 124
	outcomeBusy     = "busy"                         // not run: another owner held the lock
	outcomePaused   = "paused"                       // not run: --pause paused the name
	outcomeDone     = "done"                         // not run: --once-per's window already had its success
	outcomeError    = "error"                        // not run: command not found, Redis unreachable or refusing, with-lock interrupted
)

// outcomes lists every outcome, in the order the metrics show them.
var outcomes = []string{outcomeOK, outcomeFailed, outcomeLost, outcomeTimedOut, outcomeBusy, outcomePaused, outcomeDone, outcomeError}

// monitor is what a run learns for the monitoring outputs (--metrics-dir,
// --ping) beyond its exit code. The code that decides sets it:
//   - acquire sets skipped to outcomeBusy when the lock was held elsewhere;
//     --once-per sets it to outcomeDone when the window had its success;
//   - finish sets lost when the lock was lost while the command ran.
type monitor struct {
	begun   time.Time // when with-lock began the run, before acquiring
	skipped string    // outcomeBusy, outcomePaused or outcomeDone: the lock said not to run
	lost    bool
	ping    *pinger // --ping: set once the start ping is on its way (ping.go)
}

// monitored runs run, a run of with-lock, and then reports its end to the
// monitoring, once the lock is released. Actions (--status, --list,
// --check) report nothing. Nothing here changes the exit code.
func (r *runner) monitored(run func() int) int {
	r.mon.begun = time.Now()
	code := run()
	if len(r.cfg.Command) == 0 {
		return code
	}
	end := time.Now()
	outcome := r.outcome(code)
	if r.cfg.MetricsDir != "" {
		r.writeMetrics(outcome, code, end) // metrics.go
	}
	if r.cfg.MetricsPush != "" {
		r.pushMetrics(outcome, code, end) // metrics_push.go
	}
	if r.cfg.PingURL != "" {
		r.pingEnd(outcome, code) // ping.go
	}
	return code
}

// outcome says how the run that exited with code ended.
func (r *runner) outcome(code int) string {
	switch {
	case r.mon.skipped != "":
		return r.mon.skipped
	case r.acquiredAt.IsZero():
		return outcomeError
	case r.mon.lost:
		return outcomeLost
	case r.timedOut: // jobstop.go
		return outcomeTimedOut
	case code == 0:
		return outcomeOK
	}
	return outcomeFailed
}
