package supervise

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// The parent-death signal reaches only the command itself, not the
// processes it started (a shell's jobs, say): when with-lock is killed with
// SIGKILL they would go on running without the lock. A guard closes that
// gap: a tiny process that leads the process group the command then joins,
// and holds the read end of a pipe whose write end only with-lock holds.
// When with-lock dies, for whatever reason, the kernel closes the write
// end; the guard reads EOF and kills its whole process group, the command's
// tree with it. When the job ends normally with-lock tells the guard so,
// and it exits without killing.
//
// The guard exists before the command and the command is born into its
// group, so there is no moment in which the command runs unguarded: "kill
// 0" is its own group, whose id cannot be reused by strangers while it
// leads it. What leaves the group it must be told of: the job's cgroup,
// where there is one (job.go, cgroup_linux.go), or else the escapees the
// subreaper finds, every census.
//
// The guard is the fixed script below run by /bin/sh: it has to start on
// every run, and a shell starts in a fraction of the time a second Go
// runtime needs. It is not the user's command, which is never run through
// a shell, and nothing from the user reaches it.

// guardScript ignores the signals with-lock forwards to the command's group
// (they are the command's to handle), then reads lines: "done" from
// with-lock means stand down; "cgroup DIR" names the job's cgroup, and
// "pids ..." the latest list of the job's processes outside the group (and
// the groups they lead, as -PGID) where there is none; EOF means with-lock
// died: it kills the cgroup and those, removes the cgroup once empty (the
// whole job is in it: its group too), then kills its own group.
const guardScript = `trap '' INT TERM HUP QUIT PIPE
while read -r word rest; do
case $word in done) exit 0 ;; pids) p=$rest ;; cgroup) cg=$rest ;; esac
done
[ -z "$cg" ] || echo 1 > "$cg/cgroup.kill"
kill -s KILL -- $p 2>/dev/null
[ -z "$cg" ] || for i in 1 2 3 4 5 6 7 8 9 10; do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
kill -s KILL 0`

const (
	guardShell  = "/bin/sh"
	guardArgv0  = "with-lock-guard" // what ps shows
	guardDone   = "done"
	guardPids   = "pids"
	guardCgroup = "cgroup"
)

// GuardErr says why the child has no guard; nil when it has one or was
// started without asking for one.
func (c *Child) GuardErr() error { return c.guardErr }

// guard is a started guard process and the write end of its pipe.
type guard struct {
	cmd  *exec.Cmd
	mu   sync.Mutex // w, down
	w    *os.File
	down bool // told to stand down
}

func startGuard() (*guard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("guard the command: %w", err)
	}
	defer r.Close()
	g := &guard{w: w, cmd: &exec.Cmd{
		Path:  guardShell,
		Args:  []string{guardArgv0, "-c", guardScript},
		Env:   []string{"PATH=/usr/bin:/bin"},
		Stdin: r,
		// A new group, led by the guard; the command joins it.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}}
	if err := g.cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("guard the command: %w", err)
	}
	// Nobody waits for it, which would hold a thread for the run: it exits
	// on its own once told, after the job, and with-lock need not outlive
	// it. Where with-lock is a subreaper the reaper reaps it should it die
	// sooner; elsewhere it stays a zombie until with-lock exits.
	return g, nil
}

// pgid is the process group the guard leads.
func (g *guard) pgid() int { return g.cmd.Process.Pid }

// standDown tells the guard the job has ended, so it leaves without
// killing. It is called as soon as the last process of the job is reaped,
// before JobDone is closed: with-lock may exit right after, and a guard
// that then saw EOF would kill whatever now has the job's pids.
func (g *guard) standDown() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.down {
		g.down = true
		_, _ = g.w.WriteString(guardDone + "\n") // not fmt: its first use costs a short run
		g.w.Close()
	}
}

// tell gives the guard one line, unless it has stood down. A guard that is
// gone (killed with the job's group) makes it fail, harmlessly.
func (g *guard) tell(line string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.down {
		_, _ = g.w.WriteString(line + "\n")
	}
}
