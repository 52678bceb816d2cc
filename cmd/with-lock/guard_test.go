package main_test

// The guard and the job's cgroup, made while the lock is taken, and gone
// when a run ends before its command.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
	"github.com/with-lock/with-lock/internal/supervise"
)

// The job's guard and cgroup are set up while the lock is being taken. A
// with-lock killed with SIGKILL while it waits for a busy lock leaves
// neither behind: its guard sees the pipe close, removes the cgroup it was
// told of at once, and exits.
func TestKilledWhileWaitingLeavesNeitherGuardNorCgroup(t *testing.T) {
	t.Parallel()
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
		clitest.Eventually(t, 10*time.Second, "the job's cgroup made", func() bool {
			dir = jobCgroupOf(p.Pid())
			return dir != ""
		})
	}
	p.Signal(syscall.SIGKILL)
	p.Wait(10 * time.Second)
	clitest.WaitDead(t, 10*time.Second, guard)
	if dir != "" {
		clitest.Eventually(t, 10*time.Second, "the job's cgroup "+dir+" removed", func() bool { return !exists(dir) })
	}
}

// Signals are asked for at start-up, before the arguments say what to do;
// --status and the other paths that run no command give them back their
// default, so Ctrl-C stops one that waits on a stalled Redis at once,
// rather than after --redis-timeout.
func TestCtrlCStopsAdminPathsAtOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	srv.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { srv.Signal(syscall.SIGCONT) })
	for _, args := range [][]string{{"--status", "x"}, {"--list"}, {"--break", "x"}, {"--history", "x"}, {"--check", "x"}} {
		t.Run(args[0], func(t *testing.T) {
			p := clitest.Start(t, redisEnv(srv), append([]string{"--redis-timeout", "60s"}, args...)...)
			// Once it waits on Redis, its signals are set up.
			clitest.Eventually(t, 10*time.Second, "with-lock connected to Redis", func() bool { return connectedTo(p.Pid(), srv.Port) })
			p.Signal(syscall.SIGINT)
			res := p.Wait(10 * time.Second)
			if res.Signal != syscall.SIGINT {
				t.Errorf("%v ended with exit %d, signal %v after %s; want killed by SIGINT", args, res.Code, res.Signal, res.Duration)
			}
		})
	}
}

// guardOf is the guard process of with-lock process pid, from /proc; 0
// when it has none yet.
func guardOf(pid int) int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(b)) {
			if cmdline, _ := os.ReadFile("/proc/" + field + "/cmdline"); strings.HasPrefix(string(cmdline), supervise.GuardName+"\x00") {
				n, _ := strconv.Atoi(field)
				return n
			}
		}
	}
	return 0
}

// jobCgroups lists the jobs' cgroups beside this process's own: where
// with-lock, started by the tests, makes them.
func jobCgroups() map[string]bool {
	b, err := os.ReadFile("/proc/self/cgroup")
	mount, _ := cgroup2Mount()
	if err != nil || mount == "" {
		return nil
	}
	own := ""
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	found := map[string]bool{}
	dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Join(mount, own, "x")), "with-lock.*"))
	for _, d := range dirs {
		found[d] = true
	}
	return found
}

// leftCgroups are the jobs' cgroups made since before that are still
// there a few seconds on (a guard may remove one just after its with-lock
// was killed), of with-lock processes that have exited: no run holds
// them (see cgroupHeld); with-lock.<pid> of earlier versions, whose pid
// is gone.
func leftCgroups(before map[string]bool) []string {
	var left []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		left = left[:0]
		for d := range jobCgroups() {
			pid, _ := strconv.Atoi(strings.TrimPrefix(filepath.Ext(d), "."))
			if !before[d] && (pid > 0 && !clitest.Alive(pid) || pid == 0 && !cgroupHeld(d)) {
				left = append(left, d)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cgroup2Mount is where the cgroup2 hierarchy is mounted, from mountinfo,
// and whether read-write; "" without one.
func cgroup2Mount() (mount string, rw bool) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if f := strings.Fields(pre); ok && strings.HasPrefix(post, "cgroup2 ") && len(f) > 5 {
			return f[4], strings.HasPrefix(f[5], "rw")
		}
	}
	return "", false
}

// connectedTo reports whether process pid has a TCP connection to port on
// this host: a socket of its descriptors in /proc/net/tcp with that remote
// port.
func connectedTo(pid, port int) bool {
	fds, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/fd/*")
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	remote := fmt.Sprintf(":%04X", port)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(table)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if f := strings.Fields(line); len(f) > 9 && strings.HasSuffix(f[2], remote) && inodes[f[9]] {
				return true
			}
		}
	}
	return false
}

// The guard does not depend on /bin/sh: where /bin/sh cannot be started
// (an image without a shell) or starts and exits without running the
// guard's script (busybox, which takes the guard's name for an applet's),
// with-lock runs itself as the guard, says nothing of it, and kill -9 of
// with-lock still takes the job's leftovers along. /bin/sh is replaced
// for with-lock alone, in a mount namespace of its own.
func TestGuardIsWithLockItselfWhereBinShDoesNotRunIt(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("replacing /bin/sh in a mount namespace needs root")
	}
	srv := redistest.Start(t)
	dir := t.TempDir()
	notExecutable := filepath.Join(dir, "sh-not-executable")
	exitsAtOnce := filepath.Join(dir, "sh-exits-at-once")
	writeFile(t, notExecutable, nil, 0o644)
	writeFile(t, exitsAtOnce, []byte("#!/bin/false\n"), 0o755)
	for i, tc := range []struct{ name, sh string }{
		{"no shell to start", notExecutable},
		{"a shell that exits at once", exitsAtOnce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sl := newSleepers(t)
			name := "no-shell-" + strconv.Itoa(i) // each leaves its lock to expire
			p := clitest.Spec{Env: redisEnv(srv), Args: []string{"-v", "--ttl", "5s", name, "setsid", "-f", "sleep", sl.arg},
				Prefix: []string{"unshare", "--mount", "--propagation", "private", "sh", "-c",
					`mount --bind "$0" /bin/sh && exec "$@"`, tc.sh}}.Start(t)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("with-lock's stderr:\n%s", p.Stderr())
				}
			})
			pids := sl.running(t, 1)
			withLock := p.Pid() // the shell exec'd it
			var guard int
			clitest.Eventually(t, 10*time.Second, "with-lock's guard running", func() bool {
				guard = guardOf(withLock)
				return guard > 0
			})
			exe, _ := os.Readlink("/proc/" + strconv.Itoa(guard) + "/exe")
			self, _ := os.Readlink("/proc/" + strconv.Itoa(withLock) + "/exe")
			if exe != self {
				t.Errorf("the guard runs %s, want with-lock itself (%s)", exe, self)
			}
			p.WaitStderr("holding lock:" + name)
			signalPid(withLock, syscall.SIGKILL)
			clitest.WaitDead(t, 5*time.Second, pids...)
			res := p.Wait(10 * time.Second)
			if strings.Contains(res.Stderr, "guard") {
				t.Errorf("with-lock spoke of its guard:\n%s", res.Stderr)
			}
		})
	}
}
