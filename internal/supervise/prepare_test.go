package supervise

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"testing"
	"time"
)

// A run that does not get the lock discards its prepared job: the guard,
// started while the lock was being taken, stands down and has exited by
// itself (0, not killed) when Discard returns, so that nothing of the run
// outlives with-lock; and the job's cgroup, where one was made, is removed.
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
		g := p.guard
		p.Discard()
		p.Discard() // a second time does nothing
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Errorf("guard %d still there when Discard returned", pid)
		}
		if g.exited == nil || g.exited.ExitCode() != 0 {
			t.Errorf("guard ended with %v, want exit 0 after standing down", g.exited)
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
