//go:build linux || (freebsd && (amd64 || arm64 || riscv64))

package supervise

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// reap reaps every child of this process — the command, and every orphan
// of the job re-parented to it (job_linux.go, job_freebsd.go) — until the
// command has exited and nothing of its job is left, then closes jobDone.
// It runs on the thread that started the command (see start). Nobody else
// waits for children, so it reaps the guard too should it die first; the
// guard is not the job.
func (c *Child) reap() {
	c.reaperTid = reaperThread()
	for {
		var ws syscall.WaitStatus
		var ru syscall.Rusage
		pid, err := syscall.Wait4(-1, &ws, 0, &ru)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // ECHILD: no child at all is left, not even the guard
			break
		}
		if pid == c.guardPid() {
			c.guardDied(pid) // guard.go: a new one, at once
			continue
		}
		c.usage.add(&ru)
		if pid == c.cmd.Process.Pid {
			alone := !c.hasJobChildren()
			c.exited(ws, alone)
			if alone {
				return
			}
			continue
		}
		if c.mainDone() && !c.hasJobChildren() {
			break
		}
	}
	c.jobEnded()
}

// escapees returns the processes of the job outside the command's process
// group (setsid, setpgid): signals to the group miss them.
func (c *Child) escapees() []int {
	var out []int
	for _, pid := range c.descendants() {
		if pg, err := unix.Getpgid(pid); err == nil && pg != c.pgid {
			out = append(out, pid)
		}
	}
	return out
}
