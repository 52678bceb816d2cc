package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// The end of a run, in the order it happens: the run's outcome; for a
// command that ran, the lock released with the run's record, the output
// --output-on-failure held back, the job's cgroup closed; then the
// metrics file (--metrics-dir), the Pushgateway (--metrics-push), the end
// ping (--ping); and the exit: with the run's code, or dying of the
// signal that the command, which it was passed on to, died of. How each
// is done is in its own file (release.go, metrics.go, metrics_push.go,
// ping.go); what is done, and when, is here. Nothing after the release changes the
// exit code.

// finishing is what a run hands finish: how it ended, and what its steps
// made that the end needs.
type finishing struct {
	result
	begun  time.Time        // when the run began: the metrics' start
	locker *withlock.Client // nil when the run ended before it connected
	held   *holding         // the hold of the command that ran, its lock not yet released; nil when none ran
	out    *output          // the command's output, when captured
	ping   *pinger          // --ping's, once the start ping went
}

// ended is e ending with res, before the command ran: any lock the run
// took is released already.
func (e finishing) ended(res result) finishing {
	e.result = res
	return e
}

// finish ends the run e and returns its exit code, unless it dies of the
// command's signal.
func (r *runner) finish(e finishing) int {
	res := e.result
	if h := e.held; h != nil {
		res.outcome = endedAs(res)
		recorded := e.out.end()           // output.go: the job is gone; the rest of its output comes in
		h.releaseAndRecord(res, recorded) // release.go: the release and the record, one round trip
		e.out.printHeld(res.outcome)
		h.child.Close() // its cgroup went meanwhile
	}
	end := time.Now()
	var prior durationRange // of the successes before this one, for the metrics
	if r.cfg.MetricsDir != "" || r.cfg.MetricsPush != "" {
		prior = r.priorForMetrics(res, e.locker) // metrics.go
	}
	if r.cfg.MetricsDir != "" {
		r.writeMetrics(res, e.begun, end, prior) // metrics.go
	}
	if r.cfg.MetricsPush != "" {
		r.pushMetrics(res, e.begun, end, prior) // metrics_push.go
	}
	if r.cfg.PingURL != "" {
		r.pingEnd(res, e.ping, e.out) // which end ping is below; how it is sent, in ping.go
	}
	return exitAsTheCommand(res)
}

// pingEnd sends, after the lock's release, the exit code of a run that held
// the lock, or with --ping-skips a log entry for a run refused as busy or
// done. The exit waits at most --ping-timeout for it, a start ping still
// under way included: the end must not reach the server before the start.
// p is the run's pinger, once its start ping went; out, its command's
// output, when captured.
func (r *runner) pingEnd(res result, p *pinger, out *output) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.PingTimeout)
	defer cancel()
	code, outcome := res.code, res.outcome
	switch {
	case p != nil:
		select {
		case <-p.started:
		case <-ctx.Done():
		}
		if body, ok := out.forPing(); ok { // output.go
			p.send(ctx, http.MethodPost, strconv.Itoa(code), body)
			return
		}
		p.send(ctx, http.MethodGet, strconv.Itoa(code), "")
	case !res.acquired.IsZero(): // held the lock, but the command did not start
		r.newPinger().send(ctx, http.MethodGet, strconv.Itoa(code), "")
	case r.cfg.PingSkips && skipped(outcome):
		host, _ := os.Hostname()
		why := map[string]string{outcomeBusy: "the lock is busy", outcomePaused: "it is paused (--pause)", outcomeDone: "already done in this window"}[outcome]
		r.newPinger().send(ctx, http.MethodPost, "log", fmt.Sprintf("with-lock: %s not run on %s: %s (exit %d)\n", r.cfg.Name, host, why, code))
	}
}

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

// endedAs is the outcome of a run whose command ran (outcomes lists
// them all).
func endedAs(res result) string {
	switch {
	case res.lost:
		return outcomeLost
	case res.timedOut:
		return outcomeTimedOut
	case res.code == 0:
		return outcomeOK
	}
	return outcomeFailed
}

// A run stopped by a signal it passed on ends as the command did: killed
// by that signal, not exiting 128+N. That is what a shell does after
// Ctrl-C, and what tells a supervisor the stop it asked for happened:
// systemd counts a main process killed by SIGTERM, SIGINT or SIGHUP after
// `systemctl stop` as a clean end, and the unit ends "inactive", where an
// exit status of 143 would leave it "failed". The shell that started
// with-lock still reports 128+N. As PID 1 of a PID namespace (a
// container's entrypoint) a signal cannot kill with-lock, which exits
// 128+N instead, as container runtimes report it anyway.

// endsBySignal are the forwarded signals with-lock dies of again. Not
// SIGQUIT, whose default action dumps with-lock's core.
var endsBySignal = []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}

// exitAsTheCommand returns the run's exit code, unless the command died of
// a signal that was passed on to it: then with-lock kills itself with the
// same signal.
func exitAsTheCommand(res result) int {
	sig, code := res.forwarded, res.code
	if sig == 0 || code != 128+int(sig) || os.Getpid() == 1 {
		return code
	}
	for _, s := range endsBySignal {
		if s == sig {
			signal.Reset(sig) // the runtime then dies of it
			_ = syscall.Kill(os.Getpid(), sig)
			time.Sleep(time.Second) // delivery is asynchronous; it comes at once
		}
	}
	return code
}
