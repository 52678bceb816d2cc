package supervise

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"
)

// A run that does not get the lock discards its prepared job: the guard,
// started while the lock was being taken, stands down and exits by itself
// (0, not killed), and the job's cgroup, where one was made, is removed.
func TestDiscardedJobLeavesNoGuardAndNoCgroup(t *testing.T) {
	for _, opts := range []Options{{}, {NoCgroup: true}} {
		p := Prepare(opts, true)
		p.ready.Wait()
		if p.guard == nil {
			t.Fatalf("no guard: %v", p.guardErr)
		}
		if opts.NoCgroup && p.cg != nil {
			t.Errorf("--no-cgroup made cgroup %s", p.cg.dir)
		}
		pid, dir := p.guard.pgid(), ""
		if p.cg != nil {
			dir = p.cg.dir
		}
		p.Discard()
		p.Discard() // a second time does nothing
		ws := waitExited(t, pid, 10*time.Second)
		if !ws.Exited() || ws.ExitStatus() != 0 {
			t.Errorf("guard ended with %v, want exit 0 after standing down", ws)
		}
		if dir != "" {
			if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("cgroup %s still there after Discard (%v)", dir, err)
			}
		}
	}
}

// A prepared job that was started is the Child's: Discard leaves it be.
// Once the job has ended, Close returns when its cgroup is gone.
func TestDiscardAfterStartLeavesTheJobAlone(t *testing.T) {
	p := Prepare(Options{}, true)
	c, err := p.Start("/bin/sh", []string{"sh", "-c", "exit 7"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := ""
	if c.cg != nil {
		dir = c.cg.dir
	}
	p.Discard()
	select {
	case <-c.JobDone():
	case <-time.After(10 * time.Second):
		t.Fatal("job did not end")
	}
	if code := c.Wait(); code != 7 {
		t.Errorf("exit %d, want the command's 7", code)
	}
	if c.GuardErr() != nil {
		t.Errorf("GuardErr = %v", c.GuardErr())
	}
	c.Close()
	if dir != "" {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("cgroup %s still there after Close (%v)", dir, err)
		}
	}
}

// waitExited reaps pid, a child of this process, within timeout.
func waitExited(t *testing.T, pid int, timeout time.Duration) syscall.WaitStatus {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		switch {
		case err != nil:
			t.Fatalf("wait for %d: %v", pid, err)
		case got == pid:
			return ws
		case time.Now().After(deadline):
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still running after %s", pid, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
