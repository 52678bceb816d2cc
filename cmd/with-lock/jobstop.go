package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/supervise"
)

// The job is done when its last process is done: hold keeps the lock until
// then, unless --leftovers kill stops what the command left, or --max-run
// stops the whole job. jobStop is that part of hold's loop: its channels
// are hold's cases, and its methods say what each means.

// killPoll is how often a job that was sent SIGKILL is sent it again, for
// processes forked while the last one was on its way.
const killPoll = 10 * time.Millisecond

// killGrace is how long after SIGKILL hold waits for the job before it
// gives up on a process that cannot die (stuck in the kernel) and ends.
const killGrace = time.Second

type jobStop struct {
	r     *runner
	child *supervise.Child
	key   string         // the lock's, for messages
	lock  *withlock.Lock // for the leftovers note (leftnote.go)

	mainDone <-chan struct{}  // the command exited; nil once handled
	jobDone  <-chan struct{}  // no process of the job is left; nil until the command exited
	maxRun   <-chan time.Time // --max-run is up; nil without one, or once handled
	rekill   <-chan time.Time // SIGKILL again; nil until the job was killed
	settled  <-chan time.Time // time to say what is left of the job; nil when not due
	giveUp   <-chan time.Time // stop waiting for a killed job

	ticker  *time.Ticker // rekill's
	code    int          // the command's exit code, once it exited
	stopped bool         // --max-run or --leftovers kill began stopping the job
	exited  time.Time    // when the command exited
	warned  bool         // the leftovers warning was given
	noting  atomic.Bool  // a leftovers note is on its way (leftnote.go)
}

func (r *runner) newJobStop(child *supervise.Child, lock *withlock.Lock) *jobStop {
	js := &jobStop{r: r, child: child, key: lock.Key(), lock: lock, mainDone: child.Done()}
	if d := r.cfg.MaxRun; d > 0 {
		js.maxRun = time.After(d - time.Since(child.Started()))
	}
	return js
}

// commandExited handles the command's exit and returns its code, and
// whether a stop of what it left has begun, for hold to SIGKILL it
// --kill-after later. stopping says the job is being stopped already.
func (js *jobStop) commandExited(stopping bool) (code int, stop bool) {
	r, child := js.r, js.child
	js.mainDone, js.jobDone = nil, child.JobDone()
	code = child.Wait()
	js.exited = time.Now()
	r.logExit(child, code)
	if stopping || js.stopped || child.JobEnded() {
		return code, false
	}
	left := child.Remaining()
	if len(left) == 0 {
		return code, false
	}
	if r.cfg.Leftovers == config.LeftoversKill {
		n, pids := processes(left)
		r.log.info("leftovers", fields{Code: &code}, "command exited %d; stopping its %s (%s; %s, SIGKILL after %s: --leftovers kill)",
			code, n, pids, signalName(r.cfg.StopWith()), r.cfg.KillAfter)
		js.stop()
		return code, true
	}
	// Say so once they are still there a moment later: a child on its
	// way out, or one that got the signal that ended the command, is no
	// news.
	js.code = code
	js.settled = time.After(settleTime)
	return code, false
}

// settleTime is how long after the command's exit what is left of its job
// counts as left over.
const settleTime = 100 * time.Millisecond

// leftOver says, if the job is still running settleTime after the command
// exited, that the lock is held until its last process ends, and notes it
// beside the lock for --status, again every noteEvery while it lasts.
func (js *jobStop) leftOver() {
	js.settled = nil
	left := js.child.Remaining()
	if len(left) == 0 {
		return
	}
	js.noteLeftovers(len(left))
	js.settled = time.After(js.noteEvery())
	if js.warned {
		return
	}
	js.warned = true
	n, pids := processes(left)
	js.r.log.warn("leftovers", fields{Code: &js.code}, "command exited %d; holding %s until its %s %s (%s; --leftovers kill would stop %s)%s",
		js.code, js.key, n, plural(len(left), "ends", "end"), pids, plural(len(left), "it", "them"), pid1Note())
}

// timeUp handles --max-run's end: the whole job is stopped, unless it is
// being stopped already. It reports whether a stop began.
func (js *jobStop) timeUp(stopping bool) bool {
	js.maxRun = nil
	if stopping || js.stopped {
		return false
	}
	js.r.timedOut = true
	js.r.log.error("timed_out", fields{DurationMs: ms(js.r.cfg.MaxRun)}, "job still running after --max-run %s; stopping it (%s, SIGKILL after %s), exit %d",
		js.r.cfg.MaxRun, signalName(js.r.cfg.StopWith()), js.r.cfg.KillAfter, exitTimedOut)
	js.stop()
	return true
}

// stop sends the whole job --stop-signal.
func (js *jobStop) stop() {
	js.stopped = true
	if err := js.child.Signal(js.r.cfg.StopWith()); err != nil {
		js.r.log.warn("warning", fields{}, "stop the job: %v", err)
	}
}

// killed follows hold's SIGKILL of the job: send it again until the job is
// gone, for at most killGrace.
func (js *jobStop) killed() {
	if js.ticker == nil {
		js.ticker = time.NewTicker(killPoll)
		js.rekill = js.ticker.C
		js.giveUp = time.After(killGrace)
	}
}

// abandon ends the wait for a job that SIGKILL did not end in killGrace.
func (js *jobStop) abandon() {
	js.giveUp = nil
	left := js.child.Remaining()
	n, pids := processes(left)
	js.r.log.warn("warning", fields{}, "%s of the job still there %s after SIGKILL (%s); leaving them", n, killGrace, pids)
	done := make(chan struct{})
	close(done)
	js.mainDone, js.jobDone = nil, done
}

// exitCode is with-lock's exit code once the job has ended: 125 when the
// lock was lost, 124 when --max-run stopped it, else the command's code.
func (js *jobStop) exitCode(code int, lost bool) int {
	if js.ticker != nil {
		js.ticker.Stop()
	}
	switch {
	case lost:
		return exitLockLost
	case js.r.timedOut:
		return exitTimedOut
	}
	return code
}

// processes says how many processes pids are, "2 remaining processes",
// and lists them, "pids 4711, 4712", at most a few.
func processes(pids []int) (count, list string) {
	const show = 5
	var b strings.Builder
	for i, pid := range pids[:min(len(pids), show)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(pid))
	}
	if len(pids) > show {
		b.WriteString(", …")
	}
	if len(pids) == 1 {
		return "1 remaining process", "pid " + b.String()
	}
	return fmt.Sprintf("%d remaining processes", len(pids)), "pids " + b.String()
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// jobCost adds what the job cost to f, the released event's fields, and
// says it for the text line: " (job: 12ms CPU, 3.1 MiB peak)"; nothing
// when no process was reaped.
func (r *runner) jobCost(f fields) (fields, string) {
	u := r.usage
	if u.MaxRSSKB == 0 {
		return f, ""
	}
	cpu := (u.User + u.System).Milliseconds()
	f.CPUMs, f.MaxRSSKB = &cpu, u.MaxRSSKB
	return f, fmt.Sprintf(" (job: %s CPU, %.1f MiB peak)", round(u.User+u.System), float64(u.MaxRSSKB)/1024)
}

// pid1Note adds, where with-lock is PID 1 (a container's entrypoint), that
// the container waits too: it ends with its PID 1, whose exit would have
// the kernel SIGKILL what is left, still running, before the lock is
// released.
func pid1Note() string {
	if os.Getpid() != 1 {
		return ""
	}
	return "; as PID 1 it keeps the container running until then"
}
