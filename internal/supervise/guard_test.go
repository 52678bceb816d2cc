package supervise

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// The test binary is its own guard too, as with-lock is (guard_self.go).
func TestMain(m *testing.M) {
	if IsGuard() {
		RunGuard()
	}
	os.Exit(m.Run())
}

// Each kind of guard says it is ready, goes by GuardName in ps, and when
// the pipe from with-lock closes without "done" kills its process group
// and the processes it was told of; told "done" it exits 0 and kills
// nothing.
func TestGuardOfEachKindKillsItsGroupAndTheEscapeesItWasToldOf(t *testing.T) {
	for _, kind := range []struct {
		name string
		kind guardKind
	}{{"shell", shellGuard}, {"with-lock itself", selfGuard}} {
		t.Run(kind.name, func(t *testing.T) {
			for _, standDown := range []bool{false, true} {
				escapee := exec.Command("sleep", "100")
				escapee.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := escapee.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = escapee.Process.Kill(); _ = escapee.Wait() })
				cmd, w, err := spawnGuard(kind.kind, 0, []string{guardPids + " " + strconv.Itoa(escapee.Process.Pid)}, true)
				if err != nil {
					t.Fatalf("spawnGuard: %v", err)
				}
				guard := cmd.Process.Pid
				if cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(guard) + "/cmdline"); !strings.HasPrefix(string(cmdline), GuardName+"\x00") {
					t.Errorf("the guard's command line is %q, want it to start with %s", cmdline, GuardName)
				}
				member := exec.Command("sleep", "100")
				member.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: guard}
				if err := member.Start(); err != nil {
					t.Fatal(err)
				}
				if standDown {
					_, _ = w.WriteString(guardDone + "\n")
				}
				w.Close()
				ws, err := cmd.Process.Wait()
				if err != nil {
					t.Fatal(err)
				}
				memberDone := make(chan error, 1)
				go func() { memberDone <- member.Wait() }()
				if standDown {
					if !ws.Success() {
						t.Errorf("told done, the guard ended %v, want exit 0", ws)
					}
					if clitest.Alive(escapee.Process.Pid) {
						_ = member.Process.Kill()
					} else {
						t.Errorf("told done, the guard killed a process it was told of")
					}
					<-memberDone
					continue
				}
				select {
				case <-memberDone:
				case <-time.After(5 * time.Second):
					t.Fatal("the guard did not kill its process group")
				}
				deadline := time.Now().Add(5 * time.Second)
				for clitest.Alive(escapee.Process.Pid) {
					if time.Now().After(deadline) {
						t.Fatal("the guard did not kill the escapee it was told of")
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
}

// A /bin/sh that does not run the script (busybox, which takes the guard's
// name for an applet's, and exits) is found out before anything counts
// on it.
func TestGuardThatExitsAtOnceIsNotReady(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "exit 127")
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	defer r.Close()
	if err := awaitReady(r); err == nil {
		t.Error("a guard that exited at once counted as ready")
	}
	_ = cmd.Wait()
}

// BenchmarkGuardStart is what a guard of each kind costs to start until it
// says it is ready, and to stand down.
func BenchmarkGuardStart(b *testing.B) {
	for _, kind := range []struct {
		name string
		kind guardKind
	}{{"shell", shellGuard}, {"self", selfGuard}} {
		b.Run(kind.name, func(b *testing.B) {
			var ready time.Duration
			defer func() { b.ReportMetric(float64(ready.Microseconds())/float64(b.N), "µs-to-ready/op") }()
			for b.Loop() {
				start := time.Now()
				cmd, w, err := spawnGuard(kind.kind, 0, nil, true)
				if err != nil {
					b.Fatal(err)
				}
				ready += time.Since(start)
				g := &guard{cmd: cmd, w: w}
				g.standDown()
				g.waitExit()
			}
		})
	}
}

// A guard that dies is replaced while the job runs, and no count of the
// job's processes ever takes the one that died, or its replacement, for a
// process of the job: a job whose command has exited, leaving one process
// in a session of its own, has that one left, however often its guard is
// killed meanwhile (as busybox's /bin/sh once ended every guard at once).
func TestRemainingNeverCountsAGuardThatIsReplaced(t *testing.T) {
	p := Prepare(Options{NoCgroup: true}, true)
	c, err := p.Start("/bin/sh", []string{"sh", "-c", "setsid sleep 30 & exit 0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.GuardErr() != nil {
		t.Fatalf("no guard: %v", c.GuardErr())
	}
	defer func() {
		_ = c.Signal(syscall.SIGKILL)
		select {
		case <-c.JobDone():
		case <-time.After(10 * time.Second):
			t.Error("the job did not end after SIGKILL")
		}
		c.Close()
	}()
	c.Wait()
	var left []int
	clitest.Eventually(t, 5*time.Second, "the job's one process outside the command", func() bool {
		left = c.Remaining()
		return len(left) == 1
	})
	escapee := left[0]

	stop := make(chan struct{})
	counted := make(chan []int, 1)
	go func() {
		defer close(counted)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if l := c.Remaining(); len(l) != 1 || l[0] != escapee {
				counted <- l
				return
			}
		}
	}()
	const replacements = 100
	for range replacements {
		guard := c.guardPid()
		_ = syscall.Kill(guard, syscall.SIGKILL)
		clitest.Eventually(t, 5*time.Second, "a new guard in place of the one killed", func() bool {
			return c.guardPid() != guard
		})
	}
	close(stop)
	if l, ok := <-counted; ok {
		t.Errorf("Remaining = %v while the guard was being replaced, want only the escapee %d", l, escapee)
	}
}
