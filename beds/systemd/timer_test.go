package systemd_test

import (
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
)

// The shipped timer and service, installed as the README says (copied
// under the job's name, ExecStart= and WITH_LOCK_REDIS edited, then
// systemctl enable --now NAME.timer), are accepted by systemd, schedule
// the job at 02:00, and run it when the timer fires: the job runs, the lock
// stays for --min-hold, and the unit ends inactive. A start while the lock
// is held exits 75, which SuccessExitStatus=75 keeps from failing the unit,
// and the journal says what keeps the lock.
func TestShippedTimerRunsJobOnceAndBusyLockDoesNotFailUnit(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.WriteFile("/opt/jobs/report.sh", "#!/bin/sh\necho ran >> /tmp/report.runs\n", 0o755)
	b.installShippedUnits("nightly-report", "/usr/bin/with-lock --min-hold 10m nightly-report /opt/jobs/report.sh")
	if out, err := b.Exec(wait, "systemd-analyze", "verify", "--man=no", "nightly-report.service", "nightly-report.timer"); err != nil {
		t.Errorf("systemd-analyze verify of the shipped units: %v\n%s", err, out)
	}
	b.MustExec("systemctl", "enable", "--now", "nightly-report.timer")
	if next := b.MustExec("systemctl", "list-timers", "--all", "nightly-report.timer"); !strings.Contains(next, " 02:00:00 ") {
		t.Errorf("the shipped timer, want its next run at 02:00:00:\n%s", next)
	}

	// Let it fire now instead of at 02:00: a drop-in, as a user testing
	// the timer would add, keeps every shipped setting.
	b.WriteFile("/etc/systemd/system/nightly-report.timer.d/now.conf", "[Timer]\nOnActiveSec=1s\n", 0o644)
	b.MustExec("systemctl", "daemon-reload")
	b.MustExec("systemctl", "restart", "nightly-report.timer")
	b.waitFor("/tmp/report.runs")
	b.waitInactive("nightly-report.service")
	if got := b.state("nightly-report.service"); got != "inactive (result success, status 0)" {
		t.Errorf("after the timer's run the service is %s, want inactive (result success, status 0)", got)
	}
	if ttl := b.Client().TTL(t.Context(), "lock:nightly-report").Val(); ttl.Minutes() < 9 {
		t.Errorf("after the run the lock's TTL is %s, want about --min-hold's 10m", ttl)
	}

	b.MustExec("systemctl", "start", "nightly-report.service") // oneshot: returns when it has ended
	if got := b.state("nightly-report.service"); got != "inactive (result success, status 75)" {
		t.Errorf("a start while the lock is held left the service %s, want inactive (result success, status 75)", got)
	}
	if j := b.Journal("nightly-report.service"); !strings.Contains(j, "lock:nightly-report is kept by --min-hold") {
		t.Errorf("the journal does not say what keeps the lock:\n%s", j)
	}
	if runs := b.ReadFile("/tmp/report.runs"); runs != "ran\n" {
		t.Errorf("the job ran %d times, want once", strings.Count(runs, "ran"))
	}
}
