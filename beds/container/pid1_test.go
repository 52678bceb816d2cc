package container_test

import (
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
)

// A job's orphans come back to with-lock — PID 1 of the container, or the
// subreaper below an init — which reaps them: no zombie is left while the
// job runs on.
func TestWithLockReapsOrphansOfTheJobInContainer(t *testing.T) {
	// The inner shell leaves a sleep behind, orphaned, which ends a moment
	// later; the job then lists the zombies of the container.
	const job = `sh -c 'sleep 0.2 & exit 0'; sleep 1
for s in /proc/[0-9]*/stat; do
	read -r line 2>/dev/null < "$s" || continue # gone since the glob: not a zombie
	case "$line" in *") Z "*) echo "zombie: $line" ;; esac
done
exit 0`
	for _, tc := range pid1 {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			res := b.job(tc.init, "reaper", "sh", "-c", job).Wait(wait)
			if res.Code != 0 || strings.Contains(res.Stdout, "zombie") {
				t.Errorf("exit %d, want 0 and no zombie:\n%s%s", res.Code, res.Stdout, res.Stderr)
			}
		})
	}
}

// podman stop sends SIGTERM to the container's PID 1; with-lock (PID 1, or
// the child of an init that passes it on) forwards it to the job, which
// exits, releases the lock and exits with the job's code, 143, before
// podman's SIGKILL would come.
func TestPodmanStopOfJobThatExitsOnSIGTERMReleasesLock(t *testing.T) {
	for _, tc := range pid1 {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			c := b.job(tc.init, "stopped", "sleep", "1000")
			b.WaitHeld("stopped")
			c.Stop(30)
			res := c.Wait(wait)
			if res.Code != 143 {
				t.Errorf("the container exited %d, want 143 (the job's SIGTERM), not 137 (podman's SIGKILL)\n%s", res.Code, res.Stderr)
			}
			if b.Holder("stopped") != "" {
				t.Errorf("the lock is still held after podman stop")
			}
		})
	}
}

// A job that ignores SIGTERM keeps with-lock waiting until podman stop's
// timeout, when podman kills the container with SIGKILL: nothing releases
// the lock, which expires by its TTL.
func TestPodmanStopOfJobIgnoringSIGTERMLeavesLockToItsTTL(t *testing.T) {
	for _, tc := range pid1 {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			c := b.job(tc.init, "--ttl", "3s", "stubborn", "sh", "-c", "trap '' TERM; sleep 1000")
			token := b.WaitHeld("stubborn")
			c.Stop(1)
			res := c.Wait(wait)
			if res.Code != 137 {
				t.Errorf("the container exited %d, want 137 (podman's SIGKILL)\n%s", res.Code, res.Stderr)
			}
			if got := b.Holder("stubborn"); got != token {
				t.Errorf("right after podman stop the lock is %q, want still the killed run's", got)
			}
			b.WaitFree("stubborn") // its TTL
		})
	}
}

// As PID 1, with-lock's default --leftovers wait holds the lock, and the
// container, for as long as a process the job left behind runs: with-lock
// exiting would have the kernel SIGKILL the leftovers, still running, and
// the lock must cover them until they end. The container outlives the
// command and says why; podman stop ends both and releases the lock. A
// CronJob's pod that must end with its command uses --leftovers kill
// (docs/kubernetes.md).
func TestWithLockAsPID1WaitsForJobsLeftoversByDefault(t *testing.T) {
	b := setup(t)
	c := b.job(false, "--ttl", "1s", "leftover", "sh", "-c", "sleep 1000 & exit 0")
	clitest.Eventually(t, wait, "with-lock did not say why the container goes on", func() bool {
		return strings.Contains(c.Stderr(), "holding lock:leftover until its 1 remaining process ends") &&
			strings.Contains(c.Stderr(), "as PID 1 it keeps the container running until then")
	})
	b.Renewed("leftover", 2)
	if !c.Running() {
		t.Fatalf("the container ended with its command:\n%s", c.Stderr())
	}
	c.Stop(30)
	res := c.Wait(wait)
	if b.Holder("leftover") != "" {
		t.Errorf("the lock is still held after podman stop")
	}
	t.Logf("after podman stop the container exited %d", res.Code)
}
