package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

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
