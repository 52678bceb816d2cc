package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/supervise"
)

// result is how a run of the command ended: with-lock's exit code, and
// what the monitoring (--metrics-dir, --metrics-push, --ping) reports.
type result struct {
	code     int
	outcome  string          // one of outcomes (outcome.go)
	acquired time.Time       // when this run got the lock (runner.got); zero when it did not
	lost     bool            // the lock was lost while the command ran
	timedOut bool            // --max-run stopped the job
	usage    supervise.Usage // what the job's processes cost, once it ended
	tracking string          // what followed the job, in one word (Child.TrackingMode)
	// forwarded is the last signal passed on to the command, which
	// with-lock may end by as the command did (signalexit.go).
	forwarded syscall.Signal
}

// notRun is the result of a run that ended with code before the command
// started.
func notRun(code int, outcome string) result { return result{code: code, outcome: outcome} }

// release gives up the lock of a run that ends after the acquire without
// its command: a signal meanwhile, --once-per's window already done, a
// command that could not start.
func (r *runner) release(lock *withlock.Lock) {
	r.sayReleased(lock, lock.Release(context.Background()), nil, supervise.Usage{})
}

// run runs the command under the lock: each step either ends the run with
// its result, or leads to the next, and hold (hold.go) ends with the
// release.
func (r *runner) run() result {
	// The job's guard, subreaper and cgroup are made while the command is
	// looked up and the lock taken; a run that does not start the command
	// undoes them.
	job := supervise.Prepare(r.jobOptions(), true)
	defer job.Discard()
	path, err := supervise.Resolve(r.cfg.Command[0])
	if err != nil {
		return notRun(r.startFailed(err), outcomeError)
	}
	// The connections are left for the exit to close: every reply the run
	// needs has arrived by then, and closing go-redis's pools costs a
	// short job a tenth of with-lock's start-up-to-exit time.
	locker, _, err := newLocker(r.cfg) // connect.go
	if err != nil {
		return notRun(r.log.failed(exitConfig, "%v", err), outcomeError)
	}
	r.locker = locker
	<-r.notified                     // from here on a signal must not leave the lock behind
	if code, ok := r.jitter(); !ok { // jitter.go: --jitter's random delay
		return notRun(code, outcomeError)
	}
	lock, res := r.acquire() // acquire.go
	if lock == nil {
		return res
	}
	window, res, skip := r.oncePer(lock) // onceper.go: --once-per's window already done?
	if skip {
		return res
	}
	r.out = r.captureOutput(job) // output.go: what the command prints, when asked for
	child, err := job.Start(path, r.cfg.Command, r.env(lock))
	r.outputStarted(err == nil)
	if err != nil {
		r.release(lock)
		return result{code: r.startFailed(err), outcome: outcomeFailed, acquired: r.got}
	}
	r.ping = r.pingStart()             // ping.go: --ping's start, sent beside the command
	return r.hold(child, lock, window) // hold.go: renew, stop the job when due, release
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
func (r *runner) env(lock *withlock.Lock) []string {
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
