package clitest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Spec is a run of the binary with more than an environment and
// arguments. Start and Run are its usual shorthands.
type Spec struct {
	Env   []string  // added to the environment, "K=V"
	Args  []string  // with-lock's arguments
	Stdin io.Reader // nil: /dev/null
	// Stdout and Stderr, when set, are the run's own (a file, /dev/null)
	// in place of the pipes the Proc reads: its Stdout or Stderr then
	// stays empty.
	Stdout, Stderr *os.File
	// Terminal, from OpenPTY, is the run's stdin, stdout and stderr, in a
	// session of its own with it as controlling terminal, as a login shell
	// runs a command. What the terminal shows is the Proc's stdout.
	Terminal *PTY
	// Prefix is a command that runs with-lock, as "setpriv --reuid=nobody"
	// or "unshare --pid --fork" would: the Proc is then that command's
	// process.
	Prefix []string
	// Program, when set, runs in place of the binary: a script that runs
	// with-lock itself, found on the PATH that Env sets.
	Program string
}

// Proc is a with-lock run in the background, for tests that act on it while
// it runs (signals, faults).
type Proc struct {
	t       testing.TB
	Cmd     *exec.Cmd
	Started time.Time // just before the process was started
	stdout  syncBuffer
	stderr  syncBuffer
	done    chan struct{}
	err     error
	ended   time.Time
}

// Start runs the binary in the background with args and env ("K=V"). The
// process is killed when the test ends if it is still running.
func Start(t testing.TB, env []string, args ...string) *Proc {
	t.Helper()
	return Spec{Env: env, Args: args}.Start(t)
}

// Start runs the binary as s says, in the background.
func (s Spec) Start(t testing.TB) *Proc {
	t.Helper()
	p := &Proc{t: t, Cmd: command(t, s.Env, s.Args...), done: make(chan struct{})}
	if len(s.Prefix) > 0 {
		p.Cmd.Args = append(append(s.Prefix[:len(s.Prefix):len(s.Prefix)], p.Cmd.Path), s.Args...)
		p.Cmd.Path, p.Cmd.Err = exec.LookPath(s.Prefix[0])
	}
	if s.Program != "" {
		p.Cmd.Path, p.Cmd.Args = s.Program, append([]string{s.Program}, s.Args...)
	}
	p.Cmd.Stdin, p.Cmd.Stdout, p.Cmd.Stderr = s.Stdin, &p.stdout, &p.stderr
	if s.Stdout != nil {
		p.Cmd.Stdout = s.Stdout
	}
	if s.Stderr != nil {
		p.Cmd.Stderr = s.Stderr
	}
	if s.Terminal != nil {
		p.Cmd.Stdin, p.Cmd.Stdout, p.Cmd.Stderr = s.Terminal.tty, s.Terminal.tty, s.Terminal.tty
		p.Cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	// A command's orphaned children may hold the output pipes open; do
	// not let them keep Wait from returning once with-lock has exited.
	p.Cmd.WaitDelay = time.Second
	p.Started = time.Now()
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start with-lock: %v", err)
	}
	var shown <-chan struct{} // closed at once without a terminal
	if s.Terminal != nil {
		shown = s.Terminal.handOver(&p.stdout)
	} else {
		c := make(chan struct{})
		close(c)
		shown = c
	}
	go func() {
		p.err = p.Cmd.Wait()
		p.ended = time.Now()
		// What the terminal showed is read by a goroutine of its own:
		// Stdout is whole once it has read the end, which comes when
		// the last process with the terminal open has closed it (an
		// orphan may hold it, as it may hold a pipe: WaitDelay).
		select {
		case <-shown:
		case <-time.After(p.Cmd.WaitDelay):
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.Cmd.Process.Kill()
		<-p.done
	})
	return p
}

// Pid is the with-lock process's id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Signal sends sig to the with-lock process only.
func (p *Proc) Signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal with-lock: %v", err)
	}
}

// Stderr is what the process has written to stderr so far.
func (p *Proc) Stderr() string { return p.stderr.String() }

// Stdout is what the process (or its terminal) has shown so far.
func (p *Proc) Stdout() string { return p.stdout.String() }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// WaitTimeout bounds WaitFile, WaitStdout and WaitStderr: far more than any
// step of a test takes, even on a loaded machine.
const WaitTimeout = 30 * time.Second

// WaitFile waits until path exists, as a command under with-lock creates it
// once it runs. It fails the test if with-lock exits first.
func (p *Proc) WaitFile(path string) {
	p.t.Helper()
	p.waitUntil("file "+path+" exists", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// WaitStdout waits until stdout shows s; it fails the test if with-lock
// exits first.
func (p *Proc) WaitStdout(s string) {
	p.t.Helper()
	p.waitUntil("stdout shows "+strconv.Quote(s), func() bool { return strings.Contains(p.Stdout(), s) })
}

// WaitStderr waits until stderr shows s; it fails the test if with-lock
// exits first.
func (p *Proc) WaitStderr(s string) {
	p.t.Helper()
	p.waitUntil("stderr shows "+strconv.Quote(s), func() bool { return strings.Contains(p.Stderr(), s) })
}

func (p *Proc) waitUntil(what string, cond func() bool) {
	p.t.Helper()
	Eventually(p.t, WaitTimeout, what, func() bool {
		if cond() {
			return true
		}
		if p.Exited() && !cond() {
			p.t.Fatalf("with-lock exited before %s: %+v", what, p.result())
		}
		return false
	})
}

// Wait waits at most timeout for the process to exit and returns its
// result; Duration counts from Started.
func (p *Proc) Wait(timeout time.Duration) Result {
	p.t.Helper()
	if p.Exited() {
		return p.result()
	}
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.Cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("with-lock %q did not exit within %s; stdout:\n%s\nstderr:\n%s", p.Cmd.Args[1:], timeout, p.stdout.String(), p.stderr.String())
	}
	return p.result()
}

// result is the finished process's; it fails the test if the process
// could not be waited for.
func (p *Proc) result() Result {
	p.t.Helper()
	res := Result{Stdout: p.stdout.String(), Stderr: p.stderr.String(), Duration: p.ended.Sub(p.Started)}
	var exit *exec.ExitError
	if p.err != nil && !errors.As(p.err, &exit) && !errors.Is(p.err, exec.ErrWaitDelay) {
		p.t.Fatalf("run with-lock: %v", p.err)
	}
	res.Code, res.Signal = exitStatus(p.Cmd.ProcessState)
	return res
}

// exitStatus is a finished process's exit code, or 128+N as a shell
// reports it and the signal N that killed it.
func exitStatus(st *os.ProcessState) (int, syscall.Signal) {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal()
	}
	return st.ExitCode(), 0
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Alive reports whether process pid is running: it exists and is neither a
// zombie nor dead. An exited process whose parent has not reaped it yet
// (an orphan waiting for init) counts as dead.
func Alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	switch s[i+2] {
	case 'Z', 'X', 'x':
		return false
	}
	return true
}

// WaitDead polls every millisecond until none of pids is alive, or fails
// the test after timeout. It returns the start of the last poll that still
// found one alive (of the first poll, if none did): the processes died
// after it, so a bound on how soon they die is breached if that time is
// past it, however late this poller itself was scheduled (LastSeen).
func WaitDead(t testing.TB, timeout time.Duration, pids ...int) time.Time {
	t.Helper()
	alive := ""
	return LastSeen(t, timeout, func() string { return "processes still alive:" + alive }, func() bool {
		alive = ""
		for _, pid := range pids {
			if Alive(pid) {
				alive += fmt.Sprintf(" %d", pid)
			}
		}
		return alive != ""
	})
}

// LastSeen polls still every millisecond until it is false, or fails the
// test after timeout with what() said. It returns the start of the last
// poll at which still was true (of the first poll, if none was): the state
// ended after that moment. A test that bounds how soon a state ends (a
// process dead, a key gone) compares that moment with the bound: a breach
// fails it, and the poller's own lateness on a loaded machine, which only
// delays the poll that sees the state ended, does not.
func LastSeen(t testing.TB, timeout time.Duration, what func() string, still func() bool) time.Time {
	t.Helper()
	first := time.Now()
	deadline := first.Add(timeout)
	last := first
	for {
		at := time.Now()
		if !still() {
			return last
		}
		last = at
		if at.After(deadline) {
			t.Fatalf("after %s, %s", timeout, what())
		}
		time.Sleep(time.Millisecond)
	}
}

// ReadPids waits up to timeout until file holds n process ids, one a line
// (written by the command under test, e.g. `echo $$ > file`), and returns
// them.
func ReadPids(t testing.TB, timeout time.Duration, file string, n int) []int {
	t.Helper()
	var pids []int
	Eventually(t, timeout, fmt.Sprintf("%d pids in %s", n, file), func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				return false
			}
			pids = append(pids, pid)
		}
		return len(pids) >= n && strings.HasSuffix(string(b), "\n")
	})
	return pids[:n]
}
