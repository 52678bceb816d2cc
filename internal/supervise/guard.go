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

// IsGuard reports whether this process was started by Child.Guard; the
// program's main must then call RunGuard and nothing else.
func IsGuard() bool {
	return len(os.Args) == 1 && os.Args[0] == guardArgv0 && os.Getenv("WITH_LOCK_GUARD") == "1"
}

// Guard starts a guard that kills the child's process group with SIGKILL
// if this process dies before the child has exited. It needs this program
// to call RunGuard when IsGuard is true. The guard is told to exit, without
// killing, once the child has exited and been reaped.
func (c *Child) Guard() error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("guard the command: %w", err)
	}
	defer r.Close()
	g := &exec.Cmd{
		Path:  "/proc/self/exe", // this very binary, even if replaced on disk since
		Args:  []string{guardArgv0},
		Env:   []string{guardEnv},
		Stdin: r,
		// Its own group, so signals meant for with-lock's group (a
		// terminal's, a supervisor's) leave it alone.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := g.Start(); err != nil {
		w.Close()
		return fmt.Errorf("guard the command: %w", err)
	}
	if _, err := fmt.Fprintf(w, "%d\n", c.pgid); err != nil {
		w.Close()
		_ = g.Process.Kill()
		_ = g.Wait()
		return fmt.Errorf("guard the command: %w", err)
	}
	go func() {
		<-c.done
		// Tell it at once: the leader was just reaped, so once the rest of
		// its group is gone its id may be reused by strangers.
		fmt.Fprintln(w, guardDone)
		w.Close()
		_ = g.Wait()
	}()
	return nil
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
