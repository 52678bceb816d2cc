package systemd_test

import (
	"testing"
	"time"

	"github.com/with-lock/with-lock/beds/testbed"
)

// With --stop-timeout, as the shipped unit's ExecStart has it, a job that
// ignores SIGTERM is killed by with-lock itself, well before the unit's
// TimeoutStopSec: systemctl stop returns, every process of the job is
// gone, and the lock was released, not left to expire (its TTL here is a
// minute, and it is free at once).
func TestSystemctlStopWithStopTimeoutReleasesTheLockBeforeSystemdKills(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.WriteFile("/opt/jobs/stubborn.sh", "#!/bin/sh\ntrap '' TERM\n"+longJob[len("#!/bin/sh\n"):], 0o755)
	b.installShippedUnits("stubborn", "/usr/bin/with-lock --ttl 1m --stop-timeout 2s stubborn /opt/jobs/stubborn.sh /tmp/job")
	b.MustExec("systemctl", "start", "--no-block", "stubborn.service")
	pids := b.jobPids("/tmp/job")
	b.WaitHeld("stubborn")

	start := time.Now()
	b.MustExec("systemctl", "stop", "stubborn.service")
	took := time.Since(start)
	if got := b.Holder("stubborn"); got != "" {
		t.Errorf("right after systemctl stop the lock is held by %q, want it released by with-lock", got)
	}
	b.allGone(pids)
	if r := b.Show("stubborn.service", "Result")["Result"]; r == "timeout" {
		t.Error("the unit's result is timeout: systemd killed it before --stop-timeout did")
	}
	if took < 2*time.Second {
		t.Errorf("systemctl stop took %s, less than --stop-timeout: the job ignoring SIGTERM was not given its time", took)
	}
	t.Logf("systemctl stop took %s; the unit ended %s", took.Round(time.Millisecond), b.state("stubborn.service"))
}
