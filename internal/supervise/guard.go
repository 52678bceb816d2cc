package supervise

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
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
// The two watch each other. A guard that dies while the job runs (killed
// on its own) is replaced at once by one that joins the command's process
// group and is told again what the last one knew (job_reap.go reaps it).
// Its name does not contain "with-lock", so that `pkill -f with-lock`, the
// usual way to stop runs, kills with-lock alone and leaves its guard to
// stop the job. What no process can cover is both killed at the same
// moment: docs/reliability.md says what is left then.
//
// The guard is the fixed script below run by /bin/sh where that shell runs
// it: a shell starts in a fraction of the time a second Go runtime needs.
// It is not the user's command, which is never run through a shell, and
// nothing from the user reaches it. Its argv0 is GuardName, which busybox
// (Alpine's /bin/sh, and that of other small images) takes for the name of
// one of its applets and refuses: so every guard says it is ready on a
// pipe before anything counts on it, and where /bin/sh is busybox, is
// missing (an image of with-lock alone) or says nothing, with-lock runs
// itself as the guard (guard_self.go), from /proc/self/exe, under the same
// name and doing the same.

// guardScript ignores the signals with-lock forwards to the command's group
// (they are the command's to handle), says it is ready and closes its
// stdout, then reads lines: "done" from
// with-lock means stand down; "cgroup DIR" names the job's cgroup, and
// "pids ..." the latest list of the job's processes outside the group (and
// the groups they lead, as -PGID) where there is none; EOF means with-lock
// died: it kills the cgroup and those, removes the cgroup once empty (the
// whole job is in it: its group too), with the groups of runs nested in
// the job (*.*.*: the script names no "with-lock"), then kills its own
// group. A guard inside the job's cgroup (a systemd scope, scope_linux.go)
// dies at the first step, with everything else of the job: systemd
// removes the scope.
const guardScript = `trap '' INT TERM HUP QUIT PIPE
echo ` + guardReady + `
exec >&-
while read -r word rest; do
case $word in done) exit 0 ;; pids) p=$rest ;; cgroup) cg=$rest ;; esac
done
[ -z "$cg" ] || echo 1 > "$cg/cgroup.kill"
kill -s KILL -- $p 2>/dev/null
[ -z "$cg" ] || for i in 1 2 3 4 5 6 7 8 9 10; do rmdir "$cg"/*.*.* "$cg" 2>/dev/null; [ -d "$cg" ] || break; sleep 0.1; done
kill -s KILL 0`

// GuardName is the guard's name, as ps shows it: its argv0.
const GuardName = "job-guard"

const (
	guardShell  = "/bin/sh"
	guardReady  = "ready"
	guardDone   = "done"
	guardPids   = "pids"
	guardCgroup = "cgroup"
)

// guardReadyWait bounds the wait for a new guard to say it is ready: a
// shell takes a millisecond, a loaded machine longer.
const guardReadyWait = 3 * time.Second

// guardKind is how a guard runs: the script under /bin/sh, or with-lock
// itself.
type guardKind int

const (
	shellGuard guardKind = iota
	selfGuard
)

// GuardErr says why the child has no guard; nil when it has one or was
// started without asking for one.
func (c *Child) GuardErr() error { return c.guardErr }

// guard is the job's guard: the process running now and the write end of
// its pipe, and what it was told, for a replacement.
type guard struct {
	leader int       // the first guard's pid: the process group the command joins
	kind   guardKind // how the first one ran, which its replacements follow

	mu     sync.Mutex // all below
	cmd    *exec.Cmd
	w      *os.File
	down   bool             // told to stand down
	cgroup string           // the last "cgroup" line
	pids   string           // the last "pids" line
	exited *os.ProcessState // how it ended, once waitExit reaped it
}

// startGuard starts the job's first guard: the shell's, unless /bin/sh is
// busybox or missing, else with-lock itself; each must say it is ready.
func startGuard() (*guard, error) {
	var errs []error
	for _, kind := range guardKinds() {
		cmd, w, err := spawnGuard(kind, 0, nil, true)
		if err == nil {
			return &guard{leader: cmd.Process.Pid, kind: kind, cmd: cmd, w: w}, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("guard the command: %w", errors.Join(errs...))
}

// guardKinds are the guards to try, in order: the shell's first where
// /bin/sh is a shell that runs it.
func guardKinds() []guardKind {
	if target, err := os.Readlink(guardShell); err == nil && filepath.Base(target) == "busybox" {
		return []guardKind{selfGuard}
	}
	if _, err := os.Stat(guardShell); err != nil {
		return []guardKind{selfGuard}
	}
	return []guardKind{shellGuard, selfGuard}
}

// spawnGuard starts a guard process of kind in process group pgid, or
// leading a group of its own when pgid is 0 or that group is gone, and
// returns it with the write end of its pipe. The lines are in the pipe
// before it starts: with-lock killed at any moment after leaves it knowing
// them. With ready, it returns once the guard said it is ready, and fails
// if it did not.
func spawnGuard(kind guardKind, pgid int, lines []string, ready bool) (*exec.Cmd, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	for _, line := range lines {
		if line != "" {
			_, _ = w.WriteString(line + "\n") // a pipe holds far more than these
		}
	}
	var readyR, readyW *os.File
	if ready {
		if readyR, readyW, err = os.Pipe(); err != nil {
			w.Close()
			return nil, nil, err
		}
		defer readyR.Close()
	}
	newCmd := func(pgid int) *exec.Cmd {
		cmd := &exec.Cmd{
			Stdin:       r,
			Stdout:      readyW, // nil: /dev/null
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pgid: pgid},
		}
		switch kind {
		case shellGuard:
			cmd.Path, cmd.Args, cmd.Env = guardShell, []string{GuardName, "-c", guardScript}, []string{"PATH=/usr/bin:/bin"}
		case selfGuard:
			cmd.Path, cmd.Args, cmd.Env = selfPath(), []string{GuardName}, []string{guardEnv}
		}
		return cmd
	}
	cmd := newCmd(pgid)
	err = cmd.Start()
	if err != nil && pgid != 0 {
		// The group emptied meanwhile: nothing of it is left to kill.
		cmd = newCmd(0)
		err = cmd.Start()
	}
	if readyW != nil {
		readyW.Close() // the guard's now
	}
	if err == nil && ready {
		if err = awaitReady(readyR); err != nil {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
			err = fmt.Errorf("%s: %w", cmd.Path, err)
		}
	}
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	// Nobody waits for it while the job runs, which would hold a thread:
	// it exits on its own once told, after the job, and Close and Discard
	// reap it. Where with-lock is a subreaper the reaper reaps it should
	// it die sooner; elsewhere it stays a zombie until then.
	return cmd, w, nil
}

// awaitReady reads the guard's "ready" line from r, within guardReadyWait.
func awaitReady(r *os.File) error {
	_ = r.SetReadDeadline(time.Now().Add(guardReadyWait))
	var buf [len(guardReady) + 1]byte
	n, err := io.ReadFull(r, buf[:])
	switch {
	case string(buf[:n]) == guardReady+"\n":
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("not ready after %s", guardReadyWait)
	default:
		return errors.New("exited before saying it was ready")
	}
}

// pgid is the process group the first guard leads and the command joins.
func (g *guard) pgid() int { return g.leader }

// pid is the guard process running now.
func (g *guard) pid() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cmd.Process.Pid
}

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

// tell gives the guard one line, unless it has stood down, and keeps it
// for a replacement. A guard that is gone (killed with the job's group)
// makes it fail, harmlessly.
func (g *guard) tell(line string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch word, _, _ := strings.Cut(line, " "); word {
	case guardCgroup:
		g.cgroup = line
	case guardPids:
		g.pids = line
	}
	if !g.down {
		_, _ = g.w.WriteString(line + "\n")
	}
}

// replace starts a new guard in place of the one that died, pid, in the
// command's process group while that has members, and tells it what the
// last one was told. It does nothing once the guard stood down, and
// reports whether it replaced it.
func (g *guard) replace(pid int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down || g.cmd.Process.Pid != pid {
		return false
	}
	cmd, w, err := spawnGuard(g.kind, g.leader, []string{g.cgroup, g.pids}, false)
	if err != nil {
		return false // as when none could be started: the parent-death signal is left
	}
	g.w.Close()
	g.cmd, g.w = cmd, w
	return true
}

// exitWait bounds how long a run's end waits for a guard that stood down
// to exit: it reads "done" and exits at once.
const exitWait = time.Second

// waitExit waits, once the guard stood down, until it has exited, at most
// exitWait, and reaps it: with-lock exiting first would leave it to be
// killed by whatever cleans up after with-lock (systemd's "Killing process
// ... (sh)" after a refused run). A guard the reaper reaped already is
// not waited for again.
func (g *guard) waitExit() {
	g.mu.Lock()
	cmd := g.cmd
	g.mu.Unlock()
	done := make(chan struct{})
	go func() {
		if st, err := cmd.Process.Wait(); err == nil {
			g.mu.Lock()
			g.exited = st
			g.mu.Unlock()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(exitWait):
	}
}
