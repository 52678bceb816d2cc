package main_test

import (
	"math/rand/v2"
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
)

// A job's cgroup is named with-lock.<pid>.<random>: names never collide,
// not even between runs that are each pid 1 of a PID namespace, and a
// group left behind by a run that is gone neither stops a later run from
// having one nor stays: the next run kills what is in it and removes it.
func TestJobCgroupNamesNeverCollideAcrossPidNamespaces(t *testing.T) {
	t.Parallel()
	if !cgroupWritable() {
		t.Skip("needs a cgroup with-lock can make: root and a read-write cgroup2 mount")
	}
	srv := redistest.Start(t)
	parent := jobCgroupParent()
	// Left by runs that were pid 1 as well: one of an earlier version,
	// named by the pid alone, not this version's to judge; and one of
	// this version whose run is gone, a process still in it.
	old := filepath.Join(parent, "with-lock.1")
	if err := os.Mkdir(old, 0o755); err == nil {
		t.Cleanup(func() { _ = syscall.Rmdir(old) })
	}
	stale := filepath.Join(parent, "with-lock.1.8000000000000001")
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Rmdir(stale) })
	leftover := exec.Command("sleep", "100")
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leftover.Process.Kill(); _ = leftover.Wait() })
	writeFile(t, filepath.Join(stale, "cgroup.procs"), []byte(strconv.Itoa(leftover.Process.Pid)), 0)
	leftoverDone := make(chan struct{})
	go func() { _ = leftover.Wait(); close(leftoverDone) }()

	// Two runs at once, each pid 1 of its own namespace: each command
	// writes its cgroup, then waits for the other's.
	dir := t.TempDir()
	const script = `grep '^0::' /proc/self/cgroup > "$0/$1.tmp" && mv "$0/$1.tmp" "$0/$1"; while [ "$(ls "$0" | wc -l)" -lt 2 ]; do sleep 0.01; done`
	var runs []*clitest.Proc
	for _, name := range []string{"ns-a", "ns-b"} {
		runs = append(runs, clitest.Spec{Env: redisEnv(srv), Args: []string{"-v", name, "sh", "-c", script, dir, name},
			Prefix: []string{"unshare", "--pid", "--fork", "--mount-proc"}}.Start(t))
	}
	seen := map[string]string{}
	for i, name := range []string{"ns-a", "ns-b"} {
		res := runs[i].Wait(clitest.RunTimeout)
		in := filepath.Join(clitestMount(t), strings.TrimPrefix(strings.TrimSpace(readFile(t, filepath.Join(dir, name))), "0::"))
		t.Logf("%s: exit %d, its job in %s; stderr %q", name, res.Code, in, res.Stderr)
		if res.Code != 0 || !hasLine(res.Stderr, "its job followed by cgroup "+in+")") {
			t.Errorf("%s: exit %d, stderr %q: want 0 and its job followed by the cgroup it ran in, %s", name, res.Code, res.Stderr, in)
		}
		if filepath.Dir(in) != parent || !strings.HasPrefix(filepath.Base(in), "with-lock.1.") {
			t.Errorf("%s ran in cgroup %s, want with-lock.1.<random> in %s", name, in, parent)
		}
		if other, ok := seen[in]; ok {
			t.Errorf("%s and %s both ran in cgroup %s", other, name, in)
		}
		seen[in] = name
	}
	select {
	case <-leftoverDone:
	case <-time.After(5 * time.Second):
		t.Error("the process left in a gone run's cgroup still runs")
	}
	clitest.Eventually(t, 5*time.Second, "the gone run's cgroup "+stale+" removed", func() bool { return !exists(stale) })
	if !exists(old) {
		t.Errorf("an earlier version's cgroup %s was removed: it may be running", old)
	}
}

// clitestMount is where the cgroup2 hierarchy is mounted.
func clitestMount(t *testing.T) string {
	mount, _ := cgroup2Mount()
	if mount == "" {
		t.Fatal("no cgroup2 mount")
	}
	return mount
}

// churnRuns is how many runs TestKilledRunsLeaveNoCgroupBehind makes;
// `make churn` asks for 1,000.
func churnRuns() int {
	if n, err := strconv.Atoi(os.Getenv("WITH_LOCK_CHURN_RUNS")); err == nil && n > 0 {
		return n
	}
	return 8
}

// Runs ended in turn by a forwarded SIGTERM, with-lock killed, its guard
// killed (then SIGTERM), and both killed at once, each at a random moment
// from start-up to the job's run: the job of each is stopped at once (at
// a later run's start when both were killed together), and once one more
// run has started no cgroup is left behind.
func TestKilledRunsLeaveNoCgroupBehind(t *testing.T) {
	t.Parallel()
	if !cgroupWritable() {
		t.Skip("needs a cgroup with-lock can make: root and a read-write cgroup2 mount")
	}
	srv := redistest.Start(t)
	parent := jobCgroupParent()
	// The runs' own groups, with-lock.<pid>.<random>: the parent may be
	// shared with other tests' runs, which come and go meanwhile.
	ours := map[string]bool{}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d, %d runs", seed, churnRuns())
	const (
		stopped = iota
		withLockKilled
		guardKilled
		bothKilled
	)
	var jobs []sleepers
	counts := map[int]int{}
	for i := range churnRuns() {
		sl := newSleepers(t)
		sl.arg += strconv.Itoa(i)
		jobs = append(jobs, sl)
		t.Cleanup(func() { sl.kill() })
		ready := filepath.Join(t.TempDir(), "ready")
		p := clitest.Start(t, redisEnv(srv), "--ttl", "5s", "churn-"+strconv.Itoa(i), "sh", "-c", killJob, sl.arg, ready)
		if rng.IntN(4) > 0 { // else during start-up: the guard, the cgroup, the acquire
			clitest.Eventually(t, 10*time.Second, "the job started", func() bool { return exists(ready) || p.Exited() })
		}
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		how := i % 4
		counts[how]++
		withLock, guard := p.Pid(), guardOf(p.Pid())
		ours[strconv.Itoa(withLock)] = true
		switch how {
		case stopped:
			signalPid(withLock, syscall.SIGTERM)
		case withLockKilled:
			signalPid(withLock, syscall.SIGKILL)
		case guardKilled:
			if guard > 0 {
				signalPid(guard, syscall.SIGKILL)
			}
			time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
			signalPid(withLock, syscall.SIGTERM)
		case bothKilled:
			stopAndKill(withLock, guard)
		}
		p.Wait(clitest.RunTimeout)
		if how != bothKilled {
			clitest.WaitDead(t, 2*time.Second, sl.pids()...)
		}
	}
	clitest.Run(t, redisEnv(srv), "churn-last", "true")
	t.Logf("stopped %d, with-lock killed %d, guard killed %d, both killed %d", counts[stopped], counts[withLockKilled], counts[guardKilled], counts[bothKilled])
	for _, sl := range jobs {
		clitest.WaitDead(t, 2*time.Second, sl.pids()...)
	}
	ourGroups := func() (left []string) {
		for _, d := range newJobCgroups(parent) {
			if pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), "with-lock."), "."); ours[pid] {
				left = append(left, d)
			}
		}
		return left
	}
	deadline := time.Now().Add(5 * time.Second)
	for left := ourGroups(); len(left) > 0; left = ourGroups() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s, the runs' cgroups are still there: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// newJobCgroups lists the jobs' cgroups in parent named as this version
// names them.
func newJobCgroups(parent string) []string {
	dirs, _ := filepath.Glob(filepath.Join(parent, "with-lock.*.*"))
	return dirs
}
