package main_test

import (
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

// The guard does not depend on /bin/sh: where /bin/sh cannot be started
// (an image without a shell) or starts and exits without running the
// guard's script (busybox, which takes the guard's name for an applet's),
// with-lock runs itself as the guard, says nothing of it, and kill -9 of
// with-lock still takes the job's leftovers along. /bin/sh is replaced
// for with-lock alone, in a mount namespace of its own.
func TestGuardIsWithLockItselfWhereBinShDoesNotRunIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("replacing /bin/sh in a mount namespace needs root")
	}
	srv := redistest.Start(t)
	dir := t.TempDir()
	notExecutable := filepath.Join(dir, "sh-not-executable")
	exitsAtOnce := filepath.Join(dir, "sh-exits-at-once")
	if err := os.WriteFile(notExecutable, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exitsAtOnce, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
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
