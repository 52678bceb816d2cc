package main

import (
	"syscall"
	"time"

	"github.com/with-lock/with-lock/internal/supervise"
)

// --stop-timeout: a job told to stop by a signal with-lock forwarded
// (systemctl stop, a pod's termination, Ctrl-C) that is still running DUR
// later is killed whole with SIGKILL, and the lock released as its last
// process ends, rather than held until systemd or the kubelet kills
// with-lock too and the key expires by itself. Without it with-lock waits
// for the job, however long it takes.

// stopTimer is the time a forwarded stop signal gives the job.
type stopTimer struct {
	r     *runner
	fired <-chan time.Time // nil until a stop signal was forwarded under --stop-timeout
	sig   syscall.Signal   // the first one forwarded
}

// forwarded notes that sig was forwarded to the job: the first SIGTERM,
// SIGINT or SIGHUP starts the timer. Others (SIGQUIT: a dump was asked
// for) and later ones leave it as it is.
func (st *stopTimer) forwarded(sig syscall.Signal) {
	d := st.r.cfg.StopTimeout
	if d <= 0 || st.fired != nil || (sig != syscall.SIGTERM && sig != syscall.SIGINT && sig != syscall.SIGHUP) {
		return
	}
	st.sig, st.fired = sig, time.After(d)
	st.r.log.info("stopping", fields{Signal: signalName(sig), DurationMs: ms(d)},
		"forwarded %s to the job; SIGKILL in %s unless it has ended (--stop-timeout)", signalName(sig), d)
}

// expired kills what is left of the job: it did not end within
// --stop-timeout of the signal.
func (st *stopTimer) expired(child *supervise.Child) {
	st.fired = nil
	d := st.r.cfg.StopTimeout
	st.r.log.warn("stop_timeout", fields{Signal: signalName(st.sig), DurationMs: ms(d)},
		"job still running --stop-timeout %s after %s; killing it (SIGKILL) to release the lock", d, signalName(st.sig))
	if err := child.Signal(syscall.SIGKILL); err != nil {
		st.r.log.warn("warning", fields{}, "kill the job: %v", err)
	}
}
