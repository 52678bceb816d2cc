package main_test

// With-lock killed: its guard takes the job along, the lock frees within
// the TTL, and the next run stops what is left.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
	"golang.org/x/sys/unix"
)

// with-lock killed with SIGKILL takes its whole job along: its guard sees
// it die and kills the job. The two watch each other, so that no kill of
// one of them leaves the job running unlocked, and `pkill -f with-lock`
// kills with-lock alone.

// killJob is a job whose every process runs `sleep "$0"`, so that the test
// finds them all, wherever they went: a child that left for a session of
// its own (setsid), a double-forked one (re-parented to with-lock), a
// background child in the command's group, and the command itself. It
// creates "$1" once they are started. Their output goes nowhere: a job
// left running must not keep the test waiting for with-lock's.
const killJob = `exec >/dev/null 2>&1; setsid sleep "$0" & (setsid sleep "$0" &); sleep "$0" & touch "$1"; exec sleep "$0"`

// killJobProcesses is how many processes killJob runs.
const killJobProcesses = 4

// asNobody runs with-lock as the user nobody.
var asNobody = []string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"}

// The job is stopped whole when with-lock is killed, alone or after its
// guard was (the guard that replaced it stops the job), and when an
// operator runs `pkill -9 -f with-lock` (restricted here to the run's own
// session, so that it kills no other test's with-lock): it matches
// with-lock, not its guard. As root, with the job in a cgroup where the
// machine offers one and by the subreaper alone, and as a user who may
// make no cgroup.
func TestKilledWithLockTakesItsJobWhicheverOfItAndItsGuardIsKilled(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	kills := []struct {
		name string
		kill func(t *testing.T, p *clitest.Proc, withLock int)
	}{
		{"with-lock killed", func(t *testing.T, _ *clitest.Proc, withLock int) {
			time.Sleep(500 * time.Millisecond) // for the guard to learn of the escapees (every 100ms) where there is no cgroup
			signalPid(withLock, syscall.SIGKILL)
		}},
		{"guard killed, then with-lock", func(t *testing.T, _ *clitest.Proc, withLock int) {
			guard := guardOf(withLock)
			if guard == 0 {
				t.Fatal("with-lock has no guard")
			}
			time.Sleep(500 * time.Millisecond)
			signalPid(guard, syscall.SIGKILL)
			clitest.WaitDead(t, 5*time.Second, guard)
			var next int
			clitest.Eventually(t, 5*time.Second, "a new guard in place of the one killed", func() bool {
				next = guardOf(withLock)
				return next > 0 && next != guard
			})
			t.Logf("guard %d killed, replaced by %d", guard, next)
			signalPid(withLock, syscall.SIGKILL)
		}},
		{"pkill -9 -f with-lock", func(t *testing.T, _ *clitest.Proc, withLock int) {
			time.Sleep(500 * time.Millisecond)
			out, err := exec.Command("pkill", "-9", "-e", "-f", "-s", strconv.Itoa(withLock), "with-lock").CombinedOutput()
			t.Logf("pkill: %s", out)
			if err != nil {
				t.Fatalf("pkill: %v", err)
			}
		}},
	}
	runs := []struct {
		name   string
		prefix []string
		flags  []string
	}{
		{"root, cgroup where available", []string{"setsid"}, nil},
		{"root, subreaper", []string{"setsid"}, []string{"--no-cgroup"}},
		{"nobody", append([]string{"setsid"}, asNobody...), nil},
	}
	for i, run := range runs {
		for j, kill := range kills {
			t.Run(run.name+"/"+kill.name, func(t *testing.T) {
				name := "killed-" + strconv.Itoa(i) + strconv.Itoa(j) // each run leaves its lock to expire
				sl := newSleepers(t)
				ready := filepath.Join(sharedTempDir(t), "ready")
				args := append(append([]string{"--ttl", "5s"}, run.flags...), name, "sh", "-c", killJob, sl.arg, ready)
				p := clitest.Spec{Env: redisEnv(srv), Args: args, Prefix: run.prefix}.Start(t)
				p.WaitFile(ready)
				pids := sl.running(t, killJobProcesses)
				dir := jobCgroupOf(p.Pid())
				kill.kill(t, p, p.Pid())
				killedAt := time.Now()
				deadAt := clitest.WaitDead(t, 5*time.Second, pids...)
				p.Wait(10 * time.Second)
				t.Logf("job's %d processes dead %s after with-lock was killed; its cgroup %q", len(pids), deadAt.Sub(killedAt).Round(time.Millisecond), dir)
				if took := deadAt.Sub(killedAt); took > 2*time.Second {
					t.Errorf("job dead %s after with-lock was killed, want within 2s (its TTL is 5s)", took)
				}
				if dir != "" {
					clitest.Eventually(t, 5*time.Second, "the job's cgroup "+dir+" removed", func() bool { return !exists(dir) })
				}
			})
		}
	}
}

// The guard's command line does not name with-lock: `pkill -f with-lock`
// and `pgrep -f with-lock` are how runs are found and stopped.
func TestGuardIsNotMatchedByPkillWithLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := clitest.Start(t, redisEnv(srv), "-w", "10s", "guard-name", "sleep", "100")
	var guard int
	clitest.Eventually(t, 10*time.Second, "with-lock's guard started", func() bool {
		guard = guardOf(p.Pid())
		return guard > 0
	})
	cmdline := readFile(t, "/proc/"+strconv.Itoa(guard)+"/cmdline")
	t.Logf("guard: %q", cmdline)
	if strings.Contains(cmdline, "with-lock") {
		t.Errorf("guard's command line %q names with-lock: pkill -f with-lock would kill it with with-lock", cmdline)
	}
}

// sleepers are the processes of one test's job that run `sleep ARG`, ARG
// unique to the test.
type sleepers struct{ arg string }

func newSleepers(t *testing.T) sleepers {
	return sleepers{arg: "3600." + strconv.FormatInt(time.Now().UnixNano()%1e12, 10) + strconv.Itoa(os.Getpid()%1000)}
}

// pids lists them, from /proc.
func (s sleepers) pids() []int {
	want := "sleep\x00" + s.arg + "\x00"
	var pids []int
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if b, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline"); string(b) == want {
			pids = append(pids, pid)
		}
	}
	return pids
}

// kill kills them, for a test that failed.
func (s sleepers) kill() {
	for _, pid := range s.pids() {
		signalPid(pid, syscall.SIGKILL)
	}
}

// running waits until n of them run, and returns them; a failed test
// kills them.
func (s sleepers) running(t *testing.T, n int) []int {
	t.Helper()
	t.Cleanup(func() {
		for _, pid := range s.pids() {
			signalPid(pid, syscall.SIGKILL)
		}
	})
	var pids []int
	clitest.Eventually(t, 10*time.Second, strconv.Itoa(n)+" processes of the job running", func() bool {
		pids = s.pids()
		return len(pids) == n
	})
	return pids
}

// sharedTempDir is a scratch directory other users may write to.
func sharedTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "with-lock-shared-")
	if err == nil {
		err = os.Chmod(dir, 0o1777)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// jobCgroupOf is the cgroup with-lock process pid made for its job
// (with-lock.<pid>.<random>, beside the test's own); "" when it made none.
func jobCgroupOf(pid int) string {
	parent := jobCgroupParent()
	if parent == "" {
		return ""
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, "with-lock."+strconv.Itoa(pid)+".*"))
	if len(dirs) != 1 {
		return ""
	}
	return dirs[0]
}

// cgroupOfJob is the job's cgroup that process pid of the job is in; ""
// when it is in none of with-lock's.
func cgroupOfJob(pid int) string {
	mount, _ := cgroup2Mount()
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(filepath.Base(p), "with-lock.") {
			return filepath.Join(mount, p)
		}
	}
	return ""
}

// jobCgroupParent is where with-lock started by the tests makes its jobs'
// cgroups: beside the test's own; "" without a cgroup2 mount.
func jobCgroupParent() string {
	mount, _ := cgroup2Mount()
	b, err := os.ReadFile("/proc/self/cgroup")
	if mount == "" || err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Dir(filepath.Join(mount, p, "x"))
		}
	}
	return ""
}

// cgroupHeld reports whether a live with-lock holds the job's cgroup at
// dir: it keeps a lock on the directory while it runs.
func cgroupHeld(dir string) bool {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil
}

// signalPid sends sig to process pid; never to a group, which pid 0 or
// below would name (the test's own, for 0).
func signalPid(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(pid, sig)
	}
}

// stopAndKill kills pids with SIGKILL at the same moment: stopped first,
// none of them can act on another's death.
func stopAndKill(pids ...int) {
	for _, pid := range pids {
		signalPid(pid, syscall.SIGSTOP)
	}
	for _, pid := range pids {
		signalPid(pid, syscall.SIGKILL)
	}
}

// childOf is the first child of process pid, from /proc; 0 when it has
// none yet.
func childOf(pid int) int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// No process is left to act when with-lock and its guard are killed at the
// same moment, and the job runs on without the lock. Where the job has a
// cgroup, the next with-lock to start on the host (for any lock) finds
// the group that no live run holds, kills what is in it and removes it.
func TestNextRunStopsTheJobOfAWithLockKilledWithItsGuard(t *testing.T) {
	t.Parallel()
	if !cgroupWritable() {
		t.Skip("needs a cgroup with-lock can make: root and a read-write cgroup2 mount")
	}
	srv := redistest.Start(t)
	sl := newSleepers(t)
	ready := filepath.Join(t.TempDir(), "ready")
	p := clitest.Start(t, redisEnv(srv), "--ttl", "5s", "killed-together", "sh", "-c", killJob, sl.arg, ready)
	p.WaitFile(ready)
	pids := sl.running(t, killJobProcesses)
	dir := jobCgroupOf(p.Pid())
	if dir == "" {
		t.Fatal("the job has no cgroup")
	}
	stopAndKill(p.Pid(), guardOf(p.Pid()))
	p.Wait(10 * time.Second)
	time.Sleep(100 * time.Millisecond)
	t.Logf("with-lock and its guard killed together: %d of the job's %d processes still run, its cgroup there: %v", len(sl.pids()), len(pids), exists(dir))
	next := clitest.Run(t, redisEnv(srv), "next-run", "true")
	if next.Code != 0 {
		t.Fatalf("the next run: exit %d, stderr %q", next.Code, next.Stderr)
	}
	clitest.WaitDead(t, 2*time.Second, pids...)
	clitest.Eventually(t, 2*time.Second, "the killed run's cgroup "+dir+" removed", func() bool { return !exists(dir) })
}

// Where with-lock is the first process of a PID namespace of its own
// (unshare --pid --fork, a container's entrypoint), the kernel kills every
// process in the namespace when it dies: the job stops with with-lock even
// when its guard is killed at the same moment. As root, and as a user
// through a user namespace.
func TestWithLockAsInitOfItsPidNamespaceTakesItsJobWhenKilledWithItsGuard(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for i, run := range []struct {
		name   string
		prefix []string
	}{
		{"root", []string{"unshare", "--pid", "--fork", "--mount-proc"}},
		{"nobody", append(asNobody, "unshare", "--user", "--map-current-user", "--pid", "--fork", "--mount-proc")},
	} {
		t.Run(run.name, func(t *testing.T) {
			sl := newSleepers(t)
			ready := filepath.Join(sharedTempDir(t), "ready")
			name := "pidns-" + strconv.Itoa(i)
			p := clitest.Spec{Env: redisEnv(srv), Args: []string{"--ttl", "5s", name, "sh", "-c", killJob, sl.arg, ready}, Prefix: run.prefix}.Start(t)
			p.WaitFile(ready)
			pids := sl.running(t, killJobProcesses)
			withLock := childOf(p.Pid()) // unshare's
			guard := guardOf(withLock)
			dir := cgroupOfJob(pids[0])
			if withLock == 0 || guard == 0 {
				t.Fatalf("with-lock %d, its guard %d: want both", withLock, guard)
			}
			killedAt := time.Now()
			stopAndKill(withLock, guard)
			deadAt := clitest.WaitDead(t, 5*time.Second, pids...)
			p.Wait(10 * time.Second)
			t.Logf("with-lock and its guard killed together: the job's %d processes dead after %s", len(pids), deadAt.Sub(killedAt).Round(time.Millisecond))
			if took := deadAt.Sub(killedAt); took > 2*time.Second {
				t.Errorf("job dead %s after the kill, want within 2s (its TTL is 5s)", took)
			}
			if dir != "" { // nothing was left to remove it: the next run does
				clitest.Run(t, redisEnv(srv), "pidns-next", "true")
				clitest.Eventually(t, 2*time.Second, "the killed run's cgroup "+dir+" removed", func() bool { return !exists(dir) })
			}
		})
	}
}

// with-lock is killed with SIGKILL: its command — the whole tree — is
// dead within 100ms, and the lock is free again within the TTL (each
// measured to the last moment it was seen otherwise).
//
// Not parallel: it holds a bound in time, kept clear of the parallel
// tests' load.
func TestKilledHolderTakesCommandTreeAndFreesLockWithinTTL(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	const ttl = time.Second
	p, pids := startTree(t, srv, "killed-holder", "--ttl", ttl.String())
	killedAt := time.Now()
	p.Signal(syscall.SIGKILL)
	deadAt := clitest.WaitDead(t, 5*time.Second, pids...)
	st := lookAt(rdb, "lock:killed-holder")
	heldAt := clitest.LastSeen(t, ttl+5*time.Second, func() string { return "the lock is not freed after with-lock was killed" }, func() bool {
		return rdb.Exists(context.Background(), "lock:killed-holder").Val() == 1
	})
	// Both are the last moments the tree was seen alive and the key
	// held: a breach shows however late the polls were on a busy machine.
	took, held := deadAt.Sub(killedAt), heldAt.Sub(killedAt)
	t.Logf("with-lock killed -9: command tree last seen alive after %s; key had PTTL %s then, last seen held after %s (TTL %s)",
		took, st.pttl, held.Round(time.Millisecond), ttl)
	if took > 100*time.Millisecond {
		t.Errorf("command tree alive %s after with-lock was killed, want dead within 100ms", took)
	}
	if st.pttl > ttl {
		t.Errorf("PTTL %s after the kill exceeds the TTL %s", st.pttl, ttl)
	}
	if held > ttl {
		t.Errorf("lock still held %s after the kill, want free within the TTL %s", held, ttl)
	}
}
