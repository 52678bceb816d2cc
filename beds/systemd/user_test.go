package systemd_test

import (
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
	"github.com/with-lock/with-lock/internal/clitest"
)

// A user's own crontab (crontab -e), not root's: a real user, made with
// useradd. Its runs may make no cgroup (cron.service's group is root's)
// and get no scope (see the next test), so the subreaper alone follows
// the job, and -v says why; the run's record says so too. --metrics-dir writes the
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
	if out := b.ReadFile("/tmp/user-job.err"); !strings.Contains(out, "its job followed by subreaper: a user's job gets a scope of its own only under its own systemd manager") {
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

// A user whose systemd manager runs (lingering: loginctl enable-linger,
// or logged in) gets the job's scope from that manager, in its own tree
// (user@<uid>.service, delegated to the user), where with-lock runs under
// that manager: a user's timer or service. From the user's crontab
// (cron.service's group) the kernel lets no user move a process into its
// manager's tree, so the subreaper follows the job there, and -v says why.
func TestUsersOwnManagerGivesTheJobAScopeWhereWithLockRunsUnderIt(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.MustExec("useradd", "--create-home", "bob")
	uid := strings.TrimSpace(b.MustExec("id", "-u", "bob"))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("user@%s.service: %s\n%s", uid, b.state("user@"+uid+".service"), b.Journal("user@"+uid+".service"))
		}
	})
	b.MustExec("loginctl", "enable-linger", "bob")
	clitest.Eventually(t, wait, "bob's manager, user@"+uid+".service, running", func() bool {
		_, err := b.Exec(wait, "test", "-S", "/run/user/"+uid+"/systemd/private")
		return err == nil
	})
	job := func(name string) string {
		return "with-lock -v " + name + " sh -c 'cat /proc/self/cgroup > /tmp/" + name + ".cgroup' 2>/tmp/" + name + ".err"
	}
	b.WriteFile("/home/bob/.config/systemd/user/bob-service.service", "[Service]\nType=oneshot\n"+
		"Environment=WITH_LOCK_REDIS="+b.URL()+"\nExecStart=/bin/sh -c \""+strings.ReplaceAll(job("bob-service"), "'", "'\\''")+"\"\n", 0o644)
	b.MustExec("chown", "-R", "bob:bob", "/home/bob/.config")
	b.MustExec("runuser", "-u", "bob", "--", "env", "XDG_RUNTIME_DIR=/run/user/"+uid, "systemctl", "--user", "start", "bob-service.service")
	b.WriteFile("/tmp/bob.crontab", "WITH_LOCK_REDIS="+b.URL()+"\n@reboot "+job("bob-cron")+"\n", 0o644)
	b.MustExec("crontab", "-u", "bob", "/tmp/bob.crontab")
	b.MustExec("rm", "-f", "/run/crond.reboot")
	b.MustExec("systemctl", "restart", "cron.service")

	for _, tc := range []struct{ name, cgroup, verbose string }{
		{"bob-service", "0::/user.slice/user-" + uid + ".slice/user@" + uid + ".service/app.slice/with-lock-bob-service-",
			"its job followed by cgroup /sys/fs/cgroup/user.slice/user-" + uid + ".slice/user@" + uid + ".service/app.slice/with-lock-bob-service-"},
		{"bob-cron", "0::/system.slice/cron.service\n", "its job followed by subreaper: a user's job gets a scope of its own only under its own systemd manager"},
	} {
		b.waitFor("/tmp/" + tc.name + ".cgroup")
		b.WaitFree(tc.name)
		if cg := b.ReadFile("/tmp/" + tc.name + ".cgroup"); !strings.Contains(cg, tc.cgroup) {
			t.Errorf("%s: the job ran in %q, want %q", tc.name, cg, tc.cgroup)
		}
		clitest.Eventually(t, wait, tc.name+": with-lock -v's end", func() bool {
			return strings.Contains(b.ReadFile("/tmp/"+tc.name+".err"), "released")
		})
		if out := b.ReadFile("/tmp/" + tc.name + ".err"); !strings.Contains(out, tc.verbose) {
			t.Errorf("%s: with-lock -v does not say %q:\n%s", tc.name, tc.verbose, out)
		}
	}
}
