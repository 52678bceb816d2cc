// Package supervise runs with-lock's command as a child process: in its own
// process group so the whole tree can be signalled, as a subreaper on Linux
// so that every process the command starts stays with-lock's to wait for
// and to stop (job.go), killed if with-lock dies (by a guard process
// everywhere, and by the kernel's parent-death signal on Linux), and in the
// terminal's foreground when run interactively.
package supervise

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Exit codes of a command that could not be started, as a shell reports them.
const (
	ExitNotExecutable = 126
	ExitNotFound      = 127
)

// StartError is a command that could not be started; Code is 126 or 127.
type StartError struct {
	Code int   // ExitNotExecutable or ExitNotFound
	Err  error // what exec said, naming the command
}

// Error is the cause, naming the command.
func (e *StartError) Error() string { return e.Err.Error() }

// Unwrap gives errors.Is and errors.As the cause.
func (e *StartError) Unwrap() error { return e.Err }

// Resolve finds argv0 as the shell would (PATH unless it has a slash) and
// checks it can be executed, before anything is locked: a script whose
// #! line names an interpreter that does not exist is refused here too.
func Resolve(argv0 string) (string, error) {
	path, err := exec.LookPath(argv0)
	if err != nil {
		return "", startError(argv0, path, err)
	}
	if interp, ok := missingInterpreter(path); ok {
		return "", badInterpreter(argv0, interp)
	}
	return path, nil
}

// startError is the StartError for exec's err on argv0, found at path. The
// kernel says ENOENT both for a missing file and for a script whose
// interpreter is missing; the second is named as such.
func startError(argv0, path string, err error) *StartError {
	if errors.Is(err, fs.ErrNotExist) && path != "" {
		if interp, ok := missingInterpreter(path); ok {
			return badInterpreter(argv0, interp)
		}
	}
	var code int
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		code = ExitNotFound
	default: // permission, a directory, a bad executable format
		code = ExitNotExecutable
	}
	var eerr *exec.Error
	if errors.As(err, &eerr) {
		err = eerr.Err
	}
	return &StartError{Code: code, Err: fmt.Errorf("%s: %w", argv0, err)}
}

// badInterpreter is the StartError for a script whose #! line names the
// missing interpreter interp: 127, as for a command not found.
func badInterpreter(argv0, interp string) *StartError {
	return &StartError{Code: ExitNotFound, Err: fmt.Errorf("%s: interpreter %s not found (named on its #! line): %w", argv0, interp, fs.ErrNotExist)}
}

// missingInterpreter reports the interpreter named on the #! line of the
// file at path when that interpreter does not exist. A file that cannot be
// read, or has no #! line, has none.
func missingInterpreter(path string) (string, bool) {
	// Plain system calls: os.Open would first offer a regular file to the
	// network poller, three more calls on every run.
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer syscall.Close(fd)
	var head [256]byte // Linux reads at most this much of a #! line
	n, err := syscall.Read(fd, head[:])
	if err != nil || n < 2 {
		return "", false
	}
	line, ok := bytes.CutPrefix(head[:n], []byte("#!"))
	if !ok {
		return "", false
	}
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return "", false
	}
	if _, err := os.Stat(fields[0]); !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	return fields[0], true
}

// Child is a running command and its job.
type Child struct {
	cmd        *exec.Cmd
	pgid       int // its process group: its own, or its guard's
	foreground int // the terminal fd whose foreground we took, or -1
	done       chan struct{}
	jobDone    chan struct{} // see JobDone
	censusStop chan struct{} // closed when the job ends
	cleaned    chan struct{} // see Close
	status     syscall.WaitStatus
	usage      jobUsage
	started    time.Time   // just before the command was started
	guard      *guard      // nil when unguarded
	guardErr   error       // see GuardErr
	tracking   string      // see Tracking
	mode       string      // see TrackingMode
	reaperTid  int         // the thread that started the command and reaps (Linux)
	cg         *cgroup     // the job's cgroup, or nil (cgroup_linux.go)
	killing    atomic.Bool // the job was sent SIGKILL (see guardDied)
}

// Options are how the job is followed.
type Options struct {
	// Tracking is TrackingAuto (or ""), TrackingScope, TrackingCgroup or
	// TrackingSubreaper.
	Tracking string
	// NoCgroup is TrackingSubreaper (--no-cgroup).
	NoCgroup bool
	// Name is the lock's name, and Description what the job is: for its
	// scope's name and description under systemd.
	Name, Description string
	// Limits are the job's resource limits; a job whose limits cannot be
	// applied is not started (ErrNoLimits).
	Limits Limits
}

// start is Start in the job p prepared (prepare.go).
func start(path string, argv, env []string, p *Prepared) (*Child, error) {
	g := p.guard
	c := &Child{done: make(chan struct{}), jobDone: make(chan struct{}), censusStop: make(chan struct{}),
		cleaned: make(chan struct{}), foreground: -1, guard: g, guardErr: p.guardErr, tracking: "process group", mode: "process group"}
	if err := p.place.err; err != nil {
		return nil, err
	}
	if p.reaper {
		c.tracking, c.mode = tracking, tracking
		if p.place.mode == TrackingScope {
			if p.cg = p.startScope(); p.place.err != nil { // scope_linux.go
				return nil, p.place.err
			}
		}
		if c.cg = p.cg; c.cg != nil {
			c.tracking, c.mode = "cgroup "+c.cg.dir, p.place.mode // the guard knows it (Prepare, startScope)
		} else if p.place.why != "" {
			c.tracking += ": " + p.place.why
		}
	}
	if err := p.limit(); err != nil { // limits_linux.go
		if c.cg != nil {
			c.cg.remove()
		}
		return nil, err
	}
	stdout, stderr := p.out.files()
	newCmd := func() *exec.Cmd {
		cmd := &exec.Cmd{
			Path:        path,
			Args:        argv,
			Env:         env,
			Stdin:       os.Stdin,
			Stdout:      stdout,
			Stderr:      stderr,
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		}
		setParentDeathSignal(cmd.SysProcAttr) // Linux only: pdeathsig_*.go
		if g != nil {
			cmd.SysProcAttr.Pgid = g.pgid() // born into the guard's group
		}
		if c.cg != nil {
			c.cg.startIn(cmd.SysProcAttr) // and into the job's cgroup
		}
		if fd := int(os.Stdin.Fd()); ownsTerminal(fd) {
			cmd.SysProcAttr.Foreground = true
			cmd.SysProcAttr.Ctty = fd
			c.foreground = fd
		}
		return cmd
	}
	c.started = time.Now()
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the forking thread exits, not
		// the process: keep this goroutine on its thread until the child
		// has been reaped. Returning while still locked then ends the
		// thread, harmlessly.
		runtime.LockOSThread()
		c.cmd = newCmd()
		err := c.cmd.Start()
		if err != nil && c.cg != nil && !p.opts.Limits.set() && p.opts.Tracking == TrackingAuto {
			// The kernel refused the cgroup (clone3 missing, or a group
			// we may create but not enter): the subreaper alone, then.
			c.cg.remove()
			c.tracking, c.mode = tracking+": the kernel refused to start the command in "+c.cg.dir, tracking
			c.cg = nil
			if g != nil {
				g.tell(guardCgroup) // none after all
			}
			c.cmd = newCmd()
			err = c.cmd.Start()
		}
		if err != nil {
			started <- err
			return
		}
		c.pgid = c.cmd.SysProcAttr.Pgid
		if c.pgid == 0 {
			c.pgid = c.cmd.Process.Pid // it leads a group of its own
		}
		started <- nil
		c.reap() // job_*.go: until the job has ended
	}()
	if err := <-started; err != nil {
		if c.cg != nil {
			c.cg.remove()
		}
		return nil, startError(argv[0], path, err)
	}
	if g != nil && c.cg == nil && c.mode == tracking {
		go c.census() // with a cgroup the guard needs no list: it kills the group
	}
	return c, nil
}

// stdio is the command's stdout and stderr when they are not with-lock's.
type stdio struct{ stdout, stderr *os.File }

// files are the command's stdout and stderr: with-lock's own unless
// Output gave others.
func (s stdio) files() (stdout, stderr *os.File) {
	if s.stdout == nil {
		return os.Stdout, os.Stderr
	}
	return s.stdout, s.stderr
}

// Output gives the command stdout and stderr in place of with-lock's
// own, for a run that captures what it prints. Call it before Start.
func (p *Prepared) Output(stdout, stderr *os.File) { p.out = stdio{stdout, stderr} }

// ownsTerminal reports whether fd is a terminal whose foreground process
// group is ours.
func ownsTerminal(fd int) bool {
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// restoreTerminal gives the terminal's foreground back to with-lock's group.
// From a background group tcsetpgrp raises SIGTTOU, which stops the process
// unless ignored, so it is ignored for good: with-lock never reads the tty.
func (c *Child) restoreTerminal() {
	if c.foreground < 0 {
		return
	}
	signal.Ignore(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(c.foreground, unix.TIOCSPGRP, unix.Getpgrp())
}

// Started returns when the child was started.
func (c *Child) Started() time.Time { return c.started }

// KilledBy returns the signal that killed the child, once it has exited,
// and false when it exited by itself.
func (c *Child) KilledBy() (syscall.Signal, bool) {
	<-c.done
	if c.status.Signaled() {
		return c.status.Signal(), true
	}
	return 0, false
}

// Done is closed once the child has exited and been reaped; processes of
// its job may remain (see JobDone).
func (c *Child) Done() <-chan struct{} { return c.done }

// Wait waits for the child and returns its exit code as a shell reports it:
// its own code, or 128+N when signal N killed it.
func (c *Child) Wait() int {
	<-c.done
	if c.status.Signaled() {
		return 128 + int(c.status.Signal())
	}
	return c.status.ExitStatus()
}
