package systemd_test

import (
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
	"github.com/with-lock/with-lock/internal/clitest"
)

// runFromCron installs line as a cron entry in /etc/cron.d and has
// cron.service run it now. A real schedule would wait up to a minute for
// its time; an @reboot entry is run by the same code (cron forks, runs it
// through /bin/sh with the crontab's environment, under PAM's cron
// session) when cron starts and Debian's /run/crond.reboot is absent.
func (b *bed) runFromCron(name, line string) {
	b.t.Helper()
	b.WriteFile("/etc/cron.d/"+name, "WITH_LOCK_REDIS="+b.URL()+"\n@reboot root "+line+"\n", 0o644)
	b.MustExec("rm", "-f", "/run/crond.reboot")
	b.MustExec("systemctl", "restart", "cron.service")
}

// A crontab line running with-lock, started by Debian's cron.service with
// cron's own environment (PATH=/usr/bin:/bin, which finds the .deb's
// /usr/bin/with-lock), runs the job and releases the lock.
func TestCronEntryRunsJobAndReleasesLock(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.runFromCron("with-lock-job", `with-lock -v cron-job sh -c 'env > /tmp/job.env' 2>/tmp/with-lock.err`)
	b.waitFor("/tmp/job.env")
	b.WaitFree("cron-job")
	env := b.ReadFile("/tmp/job.env")
	if !strings.Contains(env, "WITH_LOCK_NAME=cron-job") {
		t.Errorf("the job's environment lacks WITH_LOCK_NAME=cron-job:\n%s", env)
	}
	clitest.Eventually(t, wait, "with-lock -v from cron did not say it released the lock", func() bool {
		return strings.Contains(b.ReadFile("/tmp/with-lock.err"), "released lock:cron-job")
	})
}

// Debian's cron.service has KillMode=process: systemctl restart cron stops
// the cron daemon alone and leaves running jobs be. A with-lock job
// started by cron goes on running through the restart and keeps its lock,
// renewed past its TTL, until it ends.
func TestCronRestartKeepsRunningJobAndItsLock(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.WriteFile("/opt/jobs/until-go.sh", untilGo, 0o755)
	b.runFromCron("with-lock-job", `with-lock --ttl 2s cron-long /opt/jobs/until-go.sh`)
	b.waitFor("/tmp/job.pid")
	job := b.pidIn("/tmp/job.pid")
	token := b.WaitHeld("cron-long")

	b.MustExec("systemctl", "restart", "cron.service")
	b.Renewed("cron-long", 3) // past its 2 s TTL
	if !b.Alive(job) {
		t.Fatalf("the job did not survive systemctl restart cron")
	}
	if got := b.Holder("cron-long"); got != token {
		t.Fatalf("after systemctl restart cron and three renewals the lock is %q, want still %q", got, token)
	}
	b.WriteFile("/tmp/go", "go", 0o644)
	b.WaitFree("cron-long")
}
