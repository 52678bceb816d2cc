package systemd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/beds/testbed"
	"github.com/with-lock/with-lock/internal/clitest"
)

// The README's cron recipe under Debian's cron.service: with MAILTO and
// --output-on-failure, a job that succeeds mails nothing, and one that
// fails mails what it printed, stdout and stderr in the order written.
// cron's mailer is a stub that files each mail in /tmp/mail.
func TestCronMailsOnlyTheFailedRunsOutput(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.WriteFile("/usr/sbin/sendmail", "#!/bin/sh\nmkdir -p /tmp/mail\ncat > \"$(mktemp /tmp/mail/XXXXXX)\"\n", 0o755)
	b.WriteFile("/etc/cron.d/with-lock-output", "WITH_LOCK_REDIS="+b.URL()+"\nMAILTO=ops@example.com\n"+
		"@reboot root with-lock --output-on-failure good-job sh -c 'echo all good; echo fine >&2; echo done > /tmp/good.done'\n"+
		"@reboot root with-lock --output-on-failure bad-job sh -c 'echo exported 1200 rows; echo disk full >&2; exit 3'\n", 0o644)
	b.MustExec("rm", "-f", "/run/crond.reboot")
	b.MustExec("systemctl", "restart", "cron.service")

	defer func() {
		if t.Failed() {
			t.Logf("cron's journal:\n%s\nmails: %q", b.Journal("cron.service"), b.mails())
		}
	}()
	b.waitFor("/tmp/good.done")
	b.WaitFree("good-job")
	var mails []string
	clitest.Eventually(t, wait, "the failed run was not mailed", func() bool {
		mails = b.mails()
		return len(mails) > 0
	})
	// What must not come can only be waited for: the good job's end was
	// seen before the bad job's mail, and cron mails as soon as a job's
	// output ends.
	time.Sleep(2 * time.Second)
	mails = b.mails()
	if len(mails) != 1 || !strings.Contains(mails[0], "\n\nexported 1200 rows\ndisk full\n") {
		t.Errorf("mails %q: want one, of the failed run, with its output in order", mails)
	}
	for _, m := range mails {
		if strings.Contains(m, "all good") {
			t.Errorf("the run that succeeded was mailed: %q", m)
		}
	}
}

// mails are the mails cron's stub mailer filed, headers and body.
func (b *bed) mails() []string {
	entries, _ := os.ReadDir(b.Path("/tmp/mail"))
	var mails []string
	for _, e := range entries {
		m, err := os.ReadFile(filepath.Join(b.Path("/tmp/mail"), e.Name()))
		if err == nil && len(m) > 0 {
			mails = append(mails, string(m))
		}
	}
	return mails
}
