package main

import (
	"time"

	withlock "github.com/with-lock/with-lock"
)

// How a run ended, as the metrics (with_lock_runs_total{outcome=...}) and
// the pings name it. Every run of a command has exactly one, in its
// result (run.go). A run whose command ran ends as its record says
// (Run.Outcome); the others are not recorded.
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

// skipped reports whether a run of outcome skipped the job without a
// fault: the lock busy, the name paused, the window done.
func skipped(outcome string) bool {
	return outcome == outcomeBusy || outcome == outcomePaused || outcome == outcomeDone
}

// report tells the monitoring how the run that began at begun ended
// (res), once the lock is released. Nothing here changes the exit code.
func (r *runner) report(res result, begun time.Time) {
	end := time.Now()
	var prior durationRange // of the successes before this one, for the metrics
	if r.cfg.MetricsDir != "" || r.cfg.MetricsPush != "" {
		prior = r.priorForMetrics(res) // metrics.go
	}
	if r.cfg.MetricsDir != "" {
		r.writeMetrics(res, begun, end, prior) // metrics.go
	}
	if r.cfg.MetricsPush != "" {
		r.pushMetrics(res, begun, end, prior) // metrics_push.go
	}
	if r.cfg.PingURL != "" {
		r.pingEnd(res) // ping.go
	}
}
