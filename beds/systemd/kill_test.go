package systemd_test

import (
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
)

// with-lock killed with SIGKILL inside a service takes its whole job with
// it (the guard), the child that left for a session of its own included,
// and the lock, never released, expires by its TTL: with cgroup v2, where
// the job runs in a scope of its own (with-lock-<name>-<pid>.scope, beside
// the service, which systemd does not stop with it), and with cgroup v1
// only (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=0), where with-lock follows the
// job by the subreaper. KillMode=process keeps systemd from cleaning up
// after with-lock, so what is stopped is the guard's doing.
func TestKillingWithLockInServiceStopsWholeJob(t *testing.T) {
	for _, tc := range []struct {
		name   string
		boot   testbed.BootOptions
		cgroup string // the job's: a group of its own, or the unit's
	}{
		{"cgroup v2", testbed.BootOptions{}, "/system.slice/with-lock-killed-"},
		{"cgroup v1", testbed.BootOptions{CgroupV1: true}, "/system.slice/killed.service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := boot(t, tc.boot)
			b.WriteFile("/opt/jobs/long.sh", longJob, 0o755)
			b.MustExec("systemd-run", "--unit", "killed", "--property=KillMode=process",
				"--setenv=WITH_LOCK_REDIS="+b.URL(),
				"/usr/bin/with-lock", "--ttl", "2s", "killed", "/opt/jobs/long.sh", "/tmp/job")
			pids := b.jobPids("/tmp/job")
			b.Renewed("killed", 1) // a census has told the guard of the escapee since
			if cg := b.Cgroup(pids["escapee"]); !strings.HasPrefix(cg, tc.cgroup) {
				t.Errorf("the job runs in cgroup %s, want %s", cg, tc.cgroup)
			}

			b.MustExec("systemctl", "kill", "--kill-whom=main", "--signal=SIGKILL", "killed.service")
			b.allGone(pids)
			b.WaitFree("killed") // by its TTL
		})
	}
}
