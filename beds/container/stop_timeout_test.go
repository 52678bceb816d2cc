package container_test

import (
	"strings"
	"testing"
	"time"
)

// With --stop-timeout below the grace podman stop gives (as a pod's
// terminationGracePeriodSeconds would be), a job that ignores SIGTERM is
// killed by with-lock itself, which releases the lock before the
// container's end: the lock is free at once, not after its TTL (a minute
// here), and podman's own SIGKILL never comes.
func TestPodmanStopWithStopTimeoutReleasesTheLockBeforeTheGraceEnds(t *testing.T) {
	const grace = 20 // seconds, podman stop --time
	for _, tc := range pid1 {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			c := b.job(tc.init, "--ttl", "1m", "--stop-timeout", "1s", "stubborn", "sh", "-c", "trap '' TERM; sleep 1000")
			b.WaitHeld("stubborn")
			start := time.Now()
			c.Stop(grace)
			took := time.Since(start)
			if got := b.Holder("stubborn"); got != "" {
				t.Errorf("right after podman stop the lock is held by %q, want it released by with-lock", got)
			}
			res := c.Wait(wait)
			if took >= grace*time.Second || !strings.Contains(res.Stderr, "--stop-timeout 1s after SIGTERM; killing it (SIGKILL)") {
				t.Errorf("podman stop took %s (grace %ds); stderr %q: want with-lock to kill the job after 1s", took, grace, res.Stderr)
			}
			t.Logf("podman stop took %s; the container exited %d", took.Round(time.Millisecond), res.Code)
		})
	}
}
