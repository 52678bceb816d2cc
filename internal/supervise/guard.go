package supervise

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// The parent-death signal reaches only the command itself, not the
// processes it started (a shell's jobs, say): when with-lock is killed with
// SIGKILL they would go on running without the lock. A guard closes that
// gap: a tiny copy of with-lock, in its own process group, that holds the
// read end of a pipe whose write end only with-lock holds. When with-lock
// dies, for whatever reason, the kernel closes the write end; the guard
// reads EOF and kills the command's whole process group. When the command
// ends normally with-lock tells the guard so, and it exits without killing.

const (
	guardArgv0 = "with-lock-guard"
	guardEnv   = "WITH_LOCK_GUARD=1"
	guardDone  = "done"
)

// IsGuard reports whether this process was started as a guard; the
// program's main must then call RunGuard and nothing else.
func IsGuard() bool {
	return len(os.Args) == 1 && os.Args[0] == guardArgv0 && os.Getenv("WITH_LOCK_GUARD") == "1"
}

// StartGuarded is Start with a guard that kills the child's process group
// with SIGKILL if this process dies before the child has exited. The guard
// is started first and told the group right after the fork, so there is
// no time in which the command runs unguarded and could start children.
// It needs this program's main to call RunGuard when IsGuard is true. If
// the guard cannot be started the child runs anyway: see GuardErr.
func StartGuarded(path string, argv, env []string) (*Child, error) {
	g, gerr := startGuard()
	c, err := Start(path, argv, env)
	if err != nil {
		if g != nil {
			g.abort()
		}
		return nil, err
	}
	if gerr == nil {
		gerr = g.arm(c)
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
	w   *os.File
}

func startGuard() (*guard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("guard the command: %w", err)
	}
	defer r.Close()
	g := &guard{w: w, cmd: &exec.Cmd{
		Path:  "/proc/self/exe", // this very binary, even if replaced on disk since
		Args:  []string{guardArgv0},
		Env:   []string{guardEnv},
		Stdin: r,
		// Its own group, so signals meant for with-lock's group (a
		// terminal's, a supervisor's) leave it alone.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}}
	if err := g.cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("guard the command: %w", err)
	}
	return g, nil
}

// arm tells the guard the child's group, and to stand down once the child
// has exited.
func (g *guard) arm(c *Child) error {
	if _, err := fmt.Fprintf(g.w, "%d\n", c.pgid); err != nil {
		g.abort()
		return fmt.Errorf("guard the command: %w", err)
	}
	go func() {
		<-c.done
		// Tell it at once: the leader was just reaped, so once the rest of
		// its group is gone its id may be reused by strangers.
		fmt.Fprintln(g.w, guardDone)
		g.w.Close()
		_ = g.cmd.Wait()
	}()
	return nil
}

// abort ends a guard that has not been told a group: EOF before a group
// makes it exit without killing anything.
func (g *guard) abort() {
	g.w.Close()
	_ = g.cmd.Wait()
}

// RunGuard is the guard's whole life: read the process group to watch from
// stdin, then wait. "done" means with-lock saw the command exit: leave.
// EOF first means with-lock died: kill the group. It returns the exit code.
func RunGuard() int {
	// Only with-lock's death or word ends it; the terminal's or a
	// supervisor's signals to with-lock's group do not.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return 0
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(in.Text()))
	if err != nil || pgid <= 1 {
		return 1
	}
	if in.Scan() && in.Text() == guardDone {
		return 0
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return 0
}
