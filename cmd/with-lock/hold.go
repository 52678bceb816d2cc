package main

import (
	"sync/atomic"
	"syscall"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/supervise"
)

// The hold: from the command's start to the lock's release. The lock is
// renewed (unless --no-renew); the signals with-lock receives go to the
// command; the job is stopped when the lock is lost (--on-lost term),
// when --max-run runs out, or, once the command exited, what it left
// (--leftovers kill); and the lock is held until the job's last process
// has ended; finish (finish.go) then releases it with the run's record.
// What hold says is in hold_messages.go.

// stopCause is why the job is being stopped, if it is; it decides the exit
// code.
type stopCause int

const (
	notStopping       stopCause = iota // the job runs as it will
	stoppingLeftovers                  // --leftovers kill: exit as the command did
	stoppingMaxRun                     // --max-run ran out: exit 124
	stoppingLost                       // the lock was lost: exit 125
)

// killPoll is how often a job that was sent SIGKILL is sent it again, for
// processes forked while the last one was on its way.
const killPoll = 10 * time.Millisecond

// killGrace is how long after SIGKILL hold waits for the job before it
// gives up on a process that cannot die (stuck in the kernel) and ends.
const killGrace = time.Second

// settleTime is how long after the command's exit what is left of its job
// counts as left over.
const settleTime = 100 * time.Millisecond

// holding is the state of one hold; only hold's loop changes it.
type holding struct {
	r     *connected
	child *supervise.Child
	lock  taken
	out   *output             // the command's output, when captured (output.go)
	ka    *withlock.KeepAlive // nil with --no-renew
	renew *renewals           // what KeepAlive reported (renewals.go)
	// unwatch stops watching the sentinels for a failover (failover.go).
	unwatch func()
	// window is --once-per's window of this run (Lock.OncePer), which the
	// record (Run.Window) marks done when the run succeeds; nil without.
	window *withlock.Span

	commandDone <-chan struct{} // the command exited; nil once handled
	jobDone     <-chan struct{} // no process of the job is left; nil until the command exited
	lost        <-chan struct{} // the lock is lost; nil without renewal, or once handled
	alarms      alarms          // the times hold acts at

	stopping  stopCause
	timedOut  bool           // --max-run began stopping the job (a loss after it still exits 125)
	killing   bool           // SIGKILL was sent, and is sent again until the job is gone
	forwarded syscall.Signal // the last signal passed on to the command
	stopSig   syscall.Signal // the stop signal --stop-timeout counts from

	code   int       // the command's exit code, once it exited
	exited time.Time // when the command exited
	warned bool      // the leftovers warning was given
	noting atomic.Bool
}

// hold supervises the started command while it holds lock, renewed from
// kept on when --lock-delay began the renewal (lockDelay), and returns,
// once the job has ended, how the run ended and the hold, whose lock
// finish releases.
func (r *connected) hold(child *supervise.Child, lock taken, window *withlock.Span, kept *keptAlive, out *output) (result, *holding) {
	h := r.newHolding(child, lock, kept, out)
	h.window = window
	for {
		select {
		case <-h.commandDone:
			h.commandExited()
		case <-h.jobDone:
			return h.end(), h
		case sig := <-r.sigs:
			h.forward(sig.(syscall.Signal))
		case <-h.lost:
			h.lockLost()
		case <-h.alarms.C():
			h.alarmsDue()
		}
	}
}

// newHolding begins the hold: the lock's renewal, and --max-run's clock,
// which counts from the command's start.
func (r *connected) newHolding(child *supervise.Child, lock taken, kept *keptAlive, out *output) *holding {
	// The guard kills the command's whole process group if with-lock is
	// killed. Without it only the parent-death signal, on Linux, stops the
	// command, and not its children.
	if err := child.GuardErr(); err != nil {
		r.log.warn("warning", fields{}, "%v; if with-lock is killed, the command's children may outlive it", err)
	}
	h := &holding{r: r, child: child, lock: lock, out: out, commandDone: child.Done(),
		renew: &renewals{r: r.runner, key: lock.Key(), lock: lock.Lock, lastOK: lock.Acquired()}}
	if !r.cfg.NoRenew {
		k := kept // renewing since --lock-delay's wait began
		if k == nil {
			k = r.keepAlive(lock.Lock)
		}
		h.ka, h.renew, h.unwatch = k.ka, k.renew, k.unwatch
		h.lost = h.ka.Lost()
	}
	if d := r.cfg.MaxRun; d > 0 {
		h.alarms.set(alarmMaxRun, d-time.Since(child.Started()))
	}
	return h
}

// commandExited reads the command's exit code. What it left running holds
// the lock until it ends (--leftovers wait), said once it is still there
// settleTime later, or is stopped (--leftovers kill).
func (h *holding) commandExited() {
	r, child := h.r, h.child
	h.commandDone, h.jobDone = nil, child.JobDone()
	h.code = child.Wait()
	h.exited = time.Now()
	h.sayExited(h.code)
	if h.stopping != notStopping || child.JobEnded() {
		return
	}
	left := child.Remaining()
	switch {
	case len(left) == 0:
	case r.cfg.Leftovers == config.LeftoversKill:
		h.sayStoppingLeftovers(h.code, left)
		h.stop(stoppingLeftovers)
	default:
		h.alarms.set(alarmLeftovers, settleTime)
	}
}

// forward passes sig on to the command. Under --stop-timeout the first
// SIGTERM, SIGINT or SIGHUP starts the time the job has to end; others
// (SIGQUIT asks for a dump) and later ones leave it as it is.
func (h *holding) forward(sig syscall.Signal) {
	r := h.r
	h.forwarded = sig
	if err := h.child.Signal(sig); err != nil {
		r.log.warn("warning", fields{}, "forward %v to the command: %v", sig, err)
	}
	if r.cfg.StopTimeout <= 0 || h.alarms.pending(alarmStopTimeout) ||
		(sig != syscall.SIGTERM && sig != syscall.SIGINT && sig != syscall.SIGHUP) {
		return
	}
	h.stopSig = sig
	h.alarms.set(alarmStopTimeout, r.cfg.StopTimeout)
	h.sayStopTimeoutBegins(sig)
}

// lockLost stops the job (unless --on-lost ignore), then says why the lock
// was lost: finding out who took it may cost a round trip the command must
// not run on for.
func (h *holding) lockLost() {
	r := h.r
	h.lost = nil
	if r.cfg.OnLost != config.OnLostIgnore {
		h.stop(stoppingLost)
	}
	h.sayLost()
}

// alarmsDue acts on every alarm whose time has come.
func (h *holding) alarmsDue() {
	for _, a := range h.alarms.due() {
		switch a {
		case alarmMaxRun:
			if h.stopping == notStopping {
				h.timedOut = true
				h.sayTimedOut()
				h.stop(stoppingMaxRun)
			}
		case alarmKill:
			h.kill()
		case alarmStopTimeout:
			h.sayStopTimeoutRanOut(h.stopSig)
			h.kill()
		case alarmKillAgain:
			_ = h.child.Signal(syscall.SIGKILL)
			h.alarms.set(alarmKillAgain, killPoll)
		case alarmGiveUp:
			// A process SIGKILL did not end within killGrace cannot die:
			// the hold ends without it.
			h.sayAbandoned(h.child.Remaining())
			done := make(chan struct{})
			close(done)
			h.commandDone, h.jobDone = nil, done
		case alarmLeftovers:
			h.leftOver()
		}
	}
}

// stop begins stopping the whole job for cause: --stop-signal now, SIGKILL
// --kill-after later. A loss stops it again, whatever stop went before.
func (h *holding) stop(cause stopCause) {
	h.stopping = cause
	if err := h.child.Signal(h.r.cfg.StopWith()); err != nil {
		h.r.log.warn("warning", fields{}, "stop the job: %v", err)
	}
	h.alarms.set(alarmKill, h.r.cfg.KillAfter)
}

// kill sends the job SIGKILL, and again every killPoll until it is gone,
// for at most killGrace.
func (h *holding) kill() {
	if err := h.child.Signal(syscall.SIGKILL); err != nil {
		h.r.log.warn("warning", fields{}, "kill the job: %v", err)
	}
	if !h.killing {
		h.killing = true
		h.alarms.set(alarmKillAgain, killPoll)
		h.alarms.set(alarmGiveUp, killGrace)
	}
}

// leftOver says, while the job still runs after the command exited, that
// the lock is held until its last process ends (once), and notes it beside
// the lock for --status, again every noteEvery while it lasts.
func (h *holding) leftOver() {
	left := h.child.Remaining()
	if len(left) == 0 {
		return
	}
	h.noteLeftovers(len(left)) // leftovers.go
	h.alarms.set(alarmLeftovers, h.noteEvery())
	if !h.warned {
		h.warned = true
		h.sayLeftovers(h.code, left)
	}
}

// end ends the hold once the job has ended: the renewal stopped, and the
// run's exit code and what the monitoring is told of it.
func (h *holding) end() result {
	h.alarms.stop()
	if h.ka != nil {
		h.ka.Stop()
		h.unwatch()
	}
	res := result{code: h.code, acquired: h.lock.at, lost: h.ka != nil && h.ka.Err() != nil,
		timedOut: h.timedOut, usage: h.child.Usage(), tracking: h.child.TrackingMode(), forwarded: h.forwarded}
	switch h.stopping {
	case stoppingLost:
		res.code = exitLockLost
	case stoppingMaxRun:
		res.code = exitTimedOut
	}
	return res
}
