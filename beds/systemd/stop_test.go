package systemd_test

import (
	"testing"
	"time"

	"github.com/with-lock/with-lock/beds/testbed"
)

// systemctl stop of a unit whose job is running ends the whole job — the
// script, its background child and a child that left for a session of its
// own — and with-lock releases the lock: in the shipped unit (KillMode=
// mixed: SIGTERM to with-lock alone, which forwards it), in a transient
// service (systemd's default KillMode=control-group: SIGTERM to every
// process of the unit), and in the shipped unit under cgroup v1, where
// with-lock follows the job by the subreaper. How the unit ends is logged;
// the shipped unit's end state has its own test.
func TestSystemctlStopEndsWholeJobAndReleasesLock(t *testing.T) {
	shipped := func(b *bed) {
		b.installShippedUnits("stopped", "/usr/bin/with-lock stop-me /opt/jobs/long.sh /tmp/job")
		b.MustExec("systemctl", "start", "--no-block", "stopped.service")
	}
	for _, tc := range []struct {
		name  string
		boot  testbed.BootOptions
		start func(b *bed)
	}{
		{"shipped unit", testbed.BootOptions{}, shipped},
		{"transient service", testbed.BootOptions{}, func(b *bed) {
			b.MustExec("systemd-run", "--unit", "stopped", "--setenv=WITH_LOCK_REDIS="+b.URL(),
				"/usr/bin/with-lock", "stop-me", "/opt/jobs/long.sh", "/tmp/job")
		}},
		{"shipped unit, cgroup v1", testbed.BootOptions{CgroupV1: true}, shipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := boot(t, tc.boot)
			b.WriteFile("/opt/jobs/long.sh", longJob, 0o755)
			tc.start(b)
			pids := b.jobPids("/tmp/job")
			b.WaitHeld("stop-me")

			start := time.Now()
			b.MustExec("systemctl", "stop", "stopped.service")
			took := time.Since(start)
			b.allGone(pids)
			b.WaitFree("stop-me")
			t.Logf("systemctl stop took %s; the unit ended %s", took.Round(time.Millisecond), b.state("stopped.service"))
		})
	}
}

// A job that ignores SIGTERM keeps with-lock waiting, and the lock held,
// until the shipped unit's TimeoutStopSec; systemd then kills every
// process of the unit, and the lock, no longer renewed, expires by its TTL
// (what the README and the unit's comments say).
func TestSystemctlStopOfJobIgnoringSIGTERMKillsUnitAndLockExpires(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.WriteFile("/opt/jobs/stubborn.sh", "#!/bin/sh\ntrap '' TERM\n"+longJob[len("#!/bin/sh\n"):], 0o755)
	b.installShippedUnits("stubborn", "/usr/bin/with-lock --ttl 3s stubborn /opt/jobs/stubborn.sh /tmp/job")
	// The shipped 90 s, shortened for the test by a drop-in, as a user would.
	b.WriteFile("/etc/systemd/system/stubborn.service.d/stop.conf", "[Service]\nTimeoutStopSec=2s\n", 0o644)
	b.MustExec("systemctl", "daemon-reload")
	b.MustExec("systemctl", "start", "--no-block", "stubborn.service")
	pids := b.jobPids("/tmp/job")
	token := b.WaitHeld("stubborn")

	b.MustExec("systemctl", "stop", "stubborn.service")
	b.allGone(pids)
	if got := b.Holder("stubborn"); got != token {
		t.Errorf("right after the stop the lock is %q, want still the killed run's (nobody released it)", got)
	}
	if r := b.Show("stubborn.service", "Result")["Result"]; r != "timeout" {
		t.Errorf("the unit's result is %q, want timeout", r)
	}
	b.WaitFree("stubborn") // its TTL, 3 s
}
