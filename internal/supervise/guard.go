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
// gap: a tiny process, in its own process group, that holds the read end of
// a pipe whose write end only with-lock holds. When with-lock dies, for
// whatever reason, the kernel closes the write end; the guard reads EOF and
// kills the command's whole process group. When the command ends normally
// with-lock tells the guard so, and it exits without killing.
//
// The guard is the fixed script below run by /bin/sh: it has to start on
// every run, and a shell starts in a fraction of the time a second Go
// runtime needs. It is not the user's command, which is never run through
// a shell, and nothing from the user reaches it: it reads only the process
// group id that with-lock writes to the pipe.

// guardScript ignores the signals meant for with-lock's group (a
// terminal's, a supervisor's), reads the group to watch, then a second
// line: "done" from with-lock means stand down; EOF means with-lock died.
const guardScript = `trap '' INT TERM HUP QUIT PIPE
read -r pgid || exit 0
case $pgid in ''|*[!0-9]*|0|1) exit 1;; esac
read -r word
[ "$word" = done ] || kill -s KILL -- "-$pgid"`

const (
	guardShell = "/bin/sh"
	guardArgv0 = "with-lock-guard" // what ps shows
	guardDone  = "done"
)

// StartGuarded is Start with a guard that kills the child's process group
// with SIGKILL if this process dies before the child has exited. The guard
// is started first and told the group right after the fork, so there is
// no time in which the command runs unguarded and could start children.
// If the guard cannot be started the child runs anyway: see GuardErr.
func StartGuarded(path string, argv, env []string) (*Child, error) {
	g, gerr := startGuard()
	c, err := start(path, argv, env, g)
	if err != nil {
		if g != nil {
			g.standDown() // before it knows a group: it exits without killing
		}
		return nil, err
	}
	if gerr == nil {
		gerr = g.arm(c.pgid)
	}
	c.guardErr = gerr
	return c, nil
}

// GuardErr says why the child has no guard; nil when it has one or was
// started without asking for one.
func (c *Child) GuardErr() error { return c.guardErr }

// guard is a started guard process and the write end of its pipe.
type guard struct {
	cmd *exec.Cmd

	mu     sync.Mutex // orders arm and standDown, which race when the child exits at once
	w      *os.File
	armed  bool // the group was written
	closed bool // w was closed
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
		// Its own group, so signals meant for with-lock's group (a
		// terminal's, a supervisor's) leave it alone.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}}
	if err := g.cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("guard the command: %w", err)
	}
	// Nobody waits for it: it exits on its own once told, and with-lock
	// need not outlive it. Reap it if we are still here.
	go func() { _ = g.cmd.Wait() }()
	return g, nil
}

// arm tells the guard the child's process group. If the child has already
// exited and the guard stood down, there is nothing left to guard.
func (g *guard) arm(pgid int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	if _, err := fmt.Fprintf(g.w, "%d\n", pgid); err != nil {
		g.w.Close()
		g.closed = true
		return fmt.Errorf("guard the command: %w", err)
	}
	g.armed = true
	return nil
}

// standDown tells the guard the child has exited, so it leaves without
// killing. It is called as soon as the child is reaped, before Done is
// closed: with-lock may exit right after Done, and a guard that then saw
// EOF would kill what the command left running in its group; and once that
// group is gone its id may be reused by strangers.
func (g *guard) standDown() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	if g.armed {
		fmt.Fprintln(g.w, guardDone)
	}
	g.w.Close()
	g.closed = true
}
