package systemd_test

import (
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
	"github.com/with-lock/with-lock/internal/clitest"
)

// A user's own crontab (crontab -e), not root's: a real user, made with
// useradd. Its runs may make no cgroup (cron.service's group is root's)
// and have no systemd manager of their own to ask for a scope (nobody
// logged in, no lingering), so the subreaper alone follows the job, and
// -v says why; the run's record says so too. --metrics-dir writes the
// file into a directory the user owns, readable by node_exporter's user;
// into a directory the user may not write to, the run still succeeds and
// one warning names the user and the directory.
func TestUsersCrontabRunsJobFollowedBySubreaperWithRecordsAndMetrics(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.MustExec("useradd", "--create-home", "alice")
	b.MustExec("install", "-d", "-o", "alice", "-m", "0755", "/var/lib/alice-metrics")
	b.MustExec("install", "-d", "-o", "root", "-m", "0755", "/var/lib/node-exporter")
	b.WriteFile("/tmp/alice.crontab", "WITH_LOCK_REDIS="+b.URL()+"\n"+
		"@reboot with-lock -v --metrics-dir /var/lib/alice-metrics user-job sh -c 'id -un > /tmp/user-job.who' 2>/tmp/user-job.err\n"+
		"@reboot with-lock --metrics-dir /var/lib/node-exporter user-job2 true 2>/tmp/user-job2.err; echo $? > /tmp/user-job2.code\n", 0o644)
	b.MustExec("crontab", "-u", "alice", "/tmp/alice.crontab")
	b.MustExec("rm", "-f", "/run/crond.reboot")
	b.MustExec("systemctl", "restart", "cron.service")

	b.waitFor("/tmp/user-job.who")
	b.waitFor("/tmp/user-job2.code")
	b.WaitFree("user-job")
	if who := strings.TrimSpace(b.ReadFile("/tmp/user-job.who")); who != "alice" {
		t.Errorf("the job ran as %q, want alice", who)
	}
	clitest.Eventually(t, wait, "with-lock -v's end", func() bool { return strings.Contains(b.ReadFile("/tmp/user-job.err"), "released") })
	if out := b.ReadFile("/tmp/user-job.err"); !strings.Contains(out, "its job followed by subreaper: no systemd manager to ask for a scope") {
		t.Errorf("with-lock -v did not say the subreaper follows the job, and why:\n%s", out)
	}
	if rec := b.Client().Get(t.Context(), "{lock:user-job}:last").Val(); !strings.Contains(rec, `"tracking":"subreaper"`) || !strings.Contains(rec, `"exit_code":0`) {
		t.Errorf("the run's record is %s, want exit 0 and the subreaper", rec)
	}
	if ls := b.MustExec("stat", "-c", "%U %a", "/var/lib/alice-metrics/with-lock-user-job.prom"); strings.TrimSpace(ls) != "alice 644" {
		t.Errorf("the metrics file is %q, want alice's, mode 644 (node_exporter reads it as another user)", ls)
	}
	if code := strings.TrimSpace(b.ReadFile("/tmp/user-job2.code")); code != "0" {
		t.Errorf("a run whose metrics directory is not writable exited %s, want the command's 0", code)
	}
	out := b.ReadFile("/tmp/user-job2.err")
	if !strings.Contains(out, "metrics of user-job2 not written") || !strings.Contains(out, "alice (uid") ||
		!strings.Contains(out, "/var/lib/node-exporter") || strings.Count(out, "\n") != 1 {
		t.Errorf("with a metrics directory alice may not write to, want one warning naming her and the directory:\n%s", out)
	}
}
