package clitest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

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
	p := &Proc{t: t, Cmd: Command(t, env, args...), done: make(chan struct{})}
	p.Cmd.Stdout, p.Cmd.Stderr = &p.stdout, &p.stderr
	// A command's orphaned children may hold the output pipes open; do
	// not let them keep Wait from returning once with-lock has exited.
	p.Cmd.WaitDelay = time.Second
	p.Started = time.Now()
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start with-lock: %v", err)
	}
	go func() {
		p.err = p.Cmd.Wait()
		p.ended = time.Now()
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

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits at most timeout for the process to exit and returns its
// result; Duration counts from Started.
func (p *Proc) Wait(timeout time.Duration) Result {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.Cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("with-lock %q did not exit within %s; stderr:\n%s", p.Cmd.Args[1:], timeout, p.stderr.String())
	}
	res := Result{Stdout: p.stdout.String(), Stderr: p.stderr.String(), Duration: p.ended.Sub(p.Started)}
	var exit *exec.ExitError
	switch {
	case p.err == nil:
	case errors.As(p.err, &exit):
		res.Code = exit.ExitCode()
	default:
		p.t.Fatalf("run with-lock: %v", p.err)
	}
	return res
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

// WaitDead polls every millisecond until none of pids is alive and returns
// when that was first seen, or fails the test after timeout.
func WaitDead(t testing.TB, timeout time.Duration, pids ...int) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		now := time.Now()
		alive := ""
		for _, pid := range pids {
			if Alive(pid) {
				alive += fmt.Sprintf(" %d", pid)
			}
		}
		if alive == "" {
			return now
		}
		if now.After(deadline) {
			t.Fatalf("after %s, processes still alive:%s", timeout, alive)
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
