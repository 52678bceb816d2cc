package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/supervise"
)

// result is how a run of the command ended: with-lock's exit code, and
// what the monitoring (--metrics-dir, --metrics-push, --ping) reports.
type result struct {
	code     int
	outcome  string          // one of outcomes (finish.go)
	acquired time.Time       // when this run got the lock (taken.at); zero when it did not
	lost     bool            // the lock was lost while the command ran
	timedOut bool            // --max-run stopped the job
	usage    supervise.Usage // what the job's processes cost, once it ended
	tracking string          // what followed the job, in one word (Child.TrackingMode)
	// forwarded is the last signal passed on to the command, which
	// with-lock may end by as the command did (exitAsTheCommand, finish.go).
	forwarded syscall.Signal
}

// notRun is the result of a run that ended with code before the command
// started.
func notRun(code int, outcome string) result { return result{code: code, outcome: outcome} }

// run runs the command under the lock, one step after another: each step
// hands the steps after it what it made (the Client, the lock, the
// renewal --lock-delay began, the output's capture, the job, the pinger),
// or ends the run. Either way run hands finish (finish.go) how the run
// ended and what the end needs.
func (r *runner) run() finishing {
	e := finishing{begun: time.Now()}
	// The job's guard, subreaper and cgroup are made while the command is
	// looked up and the lock taken; a run that does not start the command
	// undoes them.
	job := supervise.Prepare(r.jobOptions(), true)
	defer job.Discard()
	path, err := supervise.Resolve(r.cfg.Command[0])
	if err != nil {
		return e.ended(notRun(r.startFailed(err), outcomeError))
	}
	// The connections are left for the exit to close: every reply the run
	// needs has arrived by then, and closing go-redis's pools costs a
	// short job a tenth of with-lock's start-up-to-exit time.
	c, _, err := r.connect() // connect.go
	if err != nil {
		return e.ended(notRun(r.log.failed(exitConfig, "%v", err), outcomeError))
	}
	e.locker = c.locker
	<-r.notified                     // from here on a signal must not leave the lock behind
	if code, ok := c.jitter(); !ok { // jitter.go: --jitter's random delay
		return e.ended(notRun(code, outcomeError))
	}
	lock, res, ok := c.acquire() // acquire.go
	if !ok {
		return e.ended(res)
	}
	window, res, skip := c.oncePer(lock) // onceper.go: --once-per's window already done?
	if skip {
		return e.ended(res)
	}
	kept, res, ok := c.lockDelay(lock) // lockdelay.go: after a lapsed lease, --lock-delay
	if !ok {
		return e.ended(res)
	}
	out := r.captureOutput(job) // output.go: what the command prints, when asked for
	child, err := job.Start(path, r.cfg.Command, r.env(lock))
	out = out.started(err == nil)
	if err != nil {
		r.release(lock)
		return e.ended(result{code: r.startFailed(err), outcome: outcomeFailed, acquired: lock.at})
	}
	e.ping, e.out = r.pingStart(), out                        // ping.go: --ping's start, sent beside the command
	e.result, e.held = c.hold(child, lock, window, kept, out) // hold.go: renew, stop the job when due, until it ends
	return e
}

// jobOptions are how the job is followed (--tracking) and limited.
func (r *runner) jobOptions() supervise.Options {
	return supervise.Options{Tracking: r.cfg.Tracking, Name: r.cfg.Name,
		Description: "with-lock " + r.cfg.Name + ": " + strings.Join(r.cfg.Command, " "),
		Limits:      supervise.Limits{MemoryMax: r.cfg.MemoryMaxBytes, CPUQuotaPercent: r.cfg.CPUQuotaPercent}}
}

// env is the command's environment: ours, without secrets and without
// another lock's WITH_LOCK_* (see config.CommandEnviron), plus what names
// its own lock.
func (r *runner) env(lock taken) []string {
	env := append(config.CommandEnviron(os.Environ()),
		config.EnvLockName+"="+r.cfg.Name,
		config.EnvLockKey+"="+lock.Key(),
		config.EnvLockToken+"="+lock.Token(),
	)
	if f := lock.Fence(); f > 0 {
		env = append(env, config.EnvLockFence+"="+strconv.FormatInt(f, 10))
	}
	if s := lock.Slot(); s > 0 {
		env = append(env, config.EnvLockSlot+"="+strconv.Itoa(s))
	}
	return env
}
