package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// The job's guard and cgroup are set up while the lock is being taken. A
// with-lock killed with SIGKILL while it waits for a busy lock leaves
// neither behind: its guard sees the pipe close, removes the cgroup it was
// told of at once, and exits.
func TestKilledWhileWaitingLeavesNeitherGuardNorCgroup(t *testing.T) {
	srv := redistest.Start(t)
	if err := srv.Client().Set(context.Background(), "lock:waited", foreign, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	p := clitest.Start(t, redisEnv(srv), "-w", "60s", "waited", "true")
	var guard int
	clitest.Eventually(t, 10*time.Second, "with-lock's guard started", func() bool {
		guard = guardOf(p.Pid())
		return guard > 0
	})
	dir := ""
	if cgroupWritable() {
		parent := filepath.Dir(filepath.Join(cgroupMount(t), cgroupOf(t, "self"), "x"))
		dir = filepath.Join(parent, "with-lock."+strconv.Itoa(p.Pid()))
		clitest.Eventually(t, 10*time.Second, "the job's cgroup "+dir+" made", func() bool { return exists(dir) })
	}
	p.Signal(syscall.SIGKILL)
	p.Wait(10 * time.Second)
	clitest.WaitDead(t, 10*time.Second, guard)
	if dir != "" {
		clitest.Eventually(t, 10*time.Second, "the job's cgroup "+dir+" removed", func() bool { return !exists(dir) })
	}
}

// guardOf is the guard process of with-lock process pid, from /proc; 0
// when it has none yet.
func guardOf(pid int) int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(b)) {
			if cmdline, _ := os.ReadFile("/proc/" + field + "/cmdline"); strings.HasPrefix(string(cmdline), "with-lock-guard\x00") {
				n, _ := strconv.Atoi(field)
				return n
			}
		}
	}
	return 0
}

// cgroupMount is where the cgroup2 hierarchy is mounted, from mountinfo.
func cgroupMount(t *testing.T) string {
	t.Helper()
	for _, line := range strings.Split(readFile(t, "/proc/self/mountinfo"), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if f := strings.Fields(pre); ok && strings.HasPrefix(post, "cgroup2 ") && len(f) > 4 {
			return f[4]
		}
	}
	t.Fatal("no cgroup2 mount")
	return ""
}
