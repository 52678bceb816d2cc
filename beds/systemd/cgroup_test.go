package systemd_test

import (
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
)

// placement is one way with-lock is started under systemd, and the unit
// whose process it then is.
type placement struct {
	name  string
	unit  string
	start func(b *bed) // starts with-lock -v running /opt/jobs/until-go.sh, its stderr to /tmp/with-lock.err
}

var placements = []placement{
	{"transient service", "placed.service", func(b *bed) {
		b.MustExec("systemd-run", "--unit", "placed", "--setenv=WITH_LOCK_REDIS="+b.URL(),
			"--property=StandardError=file:/tmp/with-lock.err", "/usr/bin/with-lock", "-v", "placed", "/opt/jobs/until-go.sh")
	}},
	{"cron.service", "cron.service", func(b *bed) {
		b.runFromCron("placed", "with-lock -v placed /opt/jobs/until-go.sh 2>/tmp/with-lock.err")
	}},
	{"service with Delegate=yes", "placed.service", func(b *bed) {
		b.MustExec("systemd-run", "--unit", "placed", "--property=Delegate=yes", "--setenv=WITH_LOCK_REDIS="+b.URL(),
			"--property=StandardError=file:/tmp/with-lock.err", "/usr/bin/with-lock", "-v", "placed", "/opt/jobs/until-go.sh")
	}},
}

// jobCgroup starts with-lock the placement's way and returns the cgroup
// its job runs in and systemd-cgls's view of the unit, while the job runs.
func (b *bed) jobCgroup(p placement) (cgroup, cgls string) {
	b.t.Helper()
	b.WriteFile("/opt/jobs/until-go.sh", untilGo, 0o755)
	p.start(b)
	b.waitFor("/tmp/job.pid")
	cgroup = b.Cgroup(b.pidIn("/tmp/job.pid"))
	cgls, _ = b.Exec(wait, "systemd-cgls", "--no-pager", "--unit", p.unit)
	return cgroup, cgls
}

// Where -v says the job is followed, the kernel has it: the cgroup -v names
// is the one /proc/<pid>/cgroup shows the job in, under each way a server
// starts with-lock.
func TestVerboseNamesTheJobsCgroupUnderSystemd(t *testing.T) {
	for _, p := range placements {
		t.Run(p.name, func(t *testing.T) {
			b := boot(t, testbed.BootOptions{})
			cgroup, cgls := b.jobCgroup(p)
			t.Logf("the job's cgroup: %s\n%s", cgroup, cgls)
			b.WriteFile("/tmp/go", "go", 0o644)
			b.WaitFree("placed")
			out := b.ReadFile("/tmp/with-lock.err")
			if !strings.Contains(out, "its job followed by cgroup /sys/fs/cgroup"+cgroup+")") {
				t.Errorf("the job ran in %s; with-lock -v said:\n%s", cgroup, out)
			}
		})
	}
}
