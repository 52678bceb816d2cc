package supervise

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The job is the command and every process it starts. Where with-lock is a
// subreaper (job_linux.go) that is every descendant, wherever it went; elsewhere
// it is the command's process group, and with-lock waits for the command
// alone.

// Usage is what the job's processes cost, from the rusage of those reaped:
// a process's rusage covers the descendants it reaped itself.
type Usage struct {
	User, System time.Duration // CPU time of all reaped processes
	MaxRSSKB     int64         // the largest resident set of any one of them, in KiB
}

// jobUsage sums Usage as the reaper adds to it.
type jobUsage struct {
	mu sync.Mutex
	u  Usage
}

func (j *jobUsage) add(ru *syscall.Rusage) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.u.User += time.Duration(ru.Utime.Nano())
	j.u.System += time.Duration(ru.Stime.Nano())
	j.u.MaxRSSKB = max(j.u.MaxRSSKB, maxRSSKB(ru))
}

// Usage returns what the job's processes reaped so far cost; once JobDone
// is closed, the whole job's.
func (c *Child) Usage() Usage {
	c.usage.mu.Lock()
	defer c.usage.mu.Unlock()
	return c.usage.u
}

// Tracking says what with-lock follows of the job: "cgroup DIR" (every
// process, exactly), "subreaper" (every descendant) or "process group".
func (c *Child) Tracking() string { return c.tracking }

// JobDone is closed once the command has exited and no process of its job
// is left.
func (c *Child) JobDone() <-chan struct{} { return c.jobDone }

// Remaining returns the processes of the job still there besides the
// command (its left-overs once it has exited); none where only the process
// group is followed.
func (c *Child) Remaining() []int {
	var left []int
	for _, pid := range c.descendants() {
		if pid != c.cmd.Process.Pid {
			left = append(left, pid)
		}
	}
	return left
}

// Signal sends sig to the whole job: the command's process group, so a
// shell's own children get it too, and each process that left the group.
// Escapees are found by walking the job's tree, which a process that dies
// meanwhile can hide (its children move to with-lock behind the walk): so
// the walk is repeated until it finds no new one. A job that is already
// gone is not an error.
func (c *Child) Signal(sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		c.killing.Store(true) // the guard, in the group, dies too: not to be replaced
		// All of it at once, forks in flight included: the cgroup's
		// kill, or FreeBSD's reaper's. Only SIGKILL: the walk below
		// would send any other signal a second time.
		if c.cg != nil {
			_ = c.cg.kill()
		}
		_ = c.reapKill(sig)
	}
	sent := map[int]bool{}
	var err error
	for round := 0; round < signalRounds; round++ {
		found := false
		for _, pid := range c.escapees() {
			if !sent[pid] {
				sent[pid], found = true, true
				_ = syscall.Kill(pid, sig) // it may have exited meanwhile
			}
		}
		if round == 0 {
			// After the escapees, whose walk is easiest while the tree
			// still stands.
			if err = syscall.Kill(-c.pgid, sig); errors.Is(err, syscall.ESRCH) {
				err = nil
			}
		} else if !found {
			break
		}
	}
	return err
}

// signalRounds bounds Signal's walks of the job.
const signalRounds = 4

// exited records how the command ended and lets Done's waiters go. When
// alone (nothing else of the job is left) the job ends first, so that
// whoever wakes at Done finds JobDone closed too: the common short job
// then costs its waiter one wake-up, not two.
func (c *Child) exited(ws syscall.WaitStatus, alone bool) {
	c.status = ws
	c.restoreTerminal()
	if alone {
		c.jobEnded()
	}
	close(c.done)
}

// JobEnded reports, once Done is closed, whether the job ended with the
// command: nothing of it was left.
func (c *Child) JobEnded() bool {
	select {
	case <-c.jobDone:
		return true
	default:
		return false
	}
}

func (c *Child) mainDone() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// jobEnded tells the guard to stand down — nothing is left for it to kill —
// lets JobDone's waiters go, then removes the job's cgroup, empty now:
// the kernel takes longer over that than with-lock over its release,
// which goes meanwhile. Close waits for it.
func (c *Child) jobEnded() {
	close(c.censusStop)
	if c.guard != nil {
		c.guard.standDown()
	}
	close(c.jobDone)
	if c.cg != nil {
		c.cg.remove()
	}
	close(c.cleaned)
}

// Close waits, once JobDone is closed, until nothing of the job is left on
// the system: its cgroup is removed. Call it before exiting. A job that
// has not ended (processes stuck past SIGKILL, left behind) has nothing to
// wait for: its cgroup cannot go while they are in it.
func (c *Child) Close() {
	select {
	case <-c.jobDone:
		<-c.cleaned
		if c.guard != nil {
			c.guard.waitExit() // it stood down when the job ended
		}
	default:
	}
}

// guardPid is the guard process running now, or -1.
func (c *Child) guardPid() int {
	if c.guard == nil {
		return -1
	}
	return c.guard.pid()
}

// holdGuard returns the guard process running now, or -1, and keeps it
// so until unlock: a list of processes read meanwhile holds no other
// guard. Asked after such a list was read instead, it could name a
// replacement started since, and the guard that was replaced would count
// as a process of the job. A guard that died is a zombie with the pid
// returned until the reaper reaps it, and replace starts the next one.
func (c *Child) holdGuard() (pid int, unlock func()) {
	if c.guard == nil {
		return -1, func() {}
	}
	c.guard.mu.Lock()
	return c.guard.cmd.Process.Pid, c.guard.mu.Unlock
}

// guardDied replaces the guard, pid, that died while the job runs, unless
// with-lock killed it itself with the rest of the job's process group.
func (c *Child) guardDied(pid int) {
	if c.guard != nil && !c.killing.Load() {
		c.guard.replace(pid)
	}
}

// censusEvery is how often with-lock tells the guard which processes of
// the job left the command's process group, so that it can kill them too
// should with-lock be killed: one that escaped less than this before is
// missed. A census reads a few small /proc files per process of the job.
const censusEvery = 100 * time.Millisecond

// census keeps the guard's list of escapees up to date until the job ends.
func (c *Child) census() {
	t := time.NewTicker(censusEvery)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-c.censusStop:
			return
		case <-t.C:
		}
		if line := escapeesLine(c.escapees()); line != last {
			c.guard.tell(line)
			last = line
		}
	}
}

// escapeesLine is the guard's "pids" line for escapees: each pid, and the
// process group of each one that leads its own, so that what it forks
// after the census in its group is reached too. A group led by a live
// process of the job cannot be reused by a stranger.
func escapeesLine(pids []int) string {
	var b strings.Builder
	b.WriteString(guardPids)
	for _, pid := range pids {
		b.WriteString(" " + strconv.Itoa(pid))
		if pg, err := syscall.Getpgid(pid); err == nil && pg == pid {
			b.WriteString(" -" + strconv.Itoa(pid))
		}
	}
	return b.String()
}
