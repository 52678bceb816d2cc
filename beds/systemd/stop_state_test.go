package systemd_test

import (
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
)

// An operator's systemctl stop of the shipped unit while its job runs is
// not a failure of the job: the unit ends "inactive", not "failed", so it
// shows in neither systemctl --failed nor OnFailure= alerts.
func TestSystemctlStopLeavesShippedUnitInactive(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.WriteFile("/opt/jobs/long.sh", longJob, 0o755)
	b.installShippedUnits("stopped", "/usr/bin/with-lock stop-me /opt/jobs/long.sh /tmp/job")
	b.MustExec("systemctl", "start", "--no-block", "stopped.service")
	pids := b.jobPids("/tmp/job")
	b.WaitHeld("stop-me")

	b.MustExec("systemctl", "stop", "stopped.service")
	b.allGone(pids)
	b.WaitFree("stop-me")
	if got := b.Show("stopped.service", "ActiveState")["ActiveState"]; got != "inactive" {
		t.Errorf("after systemctl stop the shipped unit is %s, want inactive", b.state("stopped.service"))
	}
}
