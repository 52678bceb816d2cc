package systemd_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
	"github.com/with-lock/with-lock/internal/clitest"
)

// mainPid is the main process of unit, as systemd knows it.
func (b *bed) mainPid(unit string) int {
	b.t.Helper()
	pid, _ := strconv.Atoi(b.Show(unit, "MainPID")["MainPID"])
	if pid == 0 {
		b.t.Fatalf("%s has no main process", unit)
	}
	return pid
}

// guardIn is the job's guard among the processes of the cgroup at path
// (as /proc/<pid>/cgroup names it); 0 without one.
func (b *bed) guardIn(path string) int {
	b.t.Helper()
	// Read in the machine: cgroup.procs numbers processes as its reader's
	// PID namespace does.
	for _, f := range strings.Fields(b.MustExec("cat", "/sys/fs/cgroup"+path+"/cgroup.procs")) {
		if strings.HasPrefix(b.ReadFile("/proc/"+f+"/cmdline"), "job-guard\x00") {
			pid, _ := strconv.Atoi(f)
			return pid
		}
	}
	return 0
}

// Under systemd the job is a unit of its own: a transient scope named
// with-lock-<name>-<pid>.scope in the calling unit's slice, which holds
// every process of the job (the child that left for a session of its own
// too), which systemctl shows and systemd-cgls lists, and which systemctl
// stop stops: the job ends, with-lock releases the lock, and the run's
// record says the job was followed by a scope.
func TestJobScopeIsAUnitSystemdShowsAndStops(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.WriteFile("/opt/jobs/long.sh", longJob, 0o755)
	b.MustExec("systemd-run", "--unit", "scoped", "--setenv=WITH_LOCK_REDIS="+b.URL(),
		"/usr/bin/with-lock", "scoped", "/opt/jobs/long.sh", "/tmp/job")
	pids := b.jobPids("/tmp/job")
	b.WaitHeld("scoped")
	scope := "with-lock-scoped-" + strconv.Itoa(b.mainPid("scoped.service")) + ".scope"
	props := b.Show(scope, "ActiveState", "ControlGroup", "Slice", "Delegate")
	if props["ActiveState"] != "active" || props["Slice"] != "system.slice" || props["ControlGroup"] != "/system.slice/"+scope {
		t.Errorf("systemd shows %s as %v, want active, in system.slice, its group /system.slice/%s", scope, props, scope)
	}
	for name, pid := range pids {
		if cg := b.Cgroup(pid); cg != props["ControlGroup"] {
			t.Errorf("the job's %s runs in %s, not in its scope", name, cg)
		}
	}
	if cgls := b.MustExec("systemd-cgls", "--no-pager", "--unit", scope); !strings.Contains(cgls, "/opt/jobs/long.sh") {
		t.Errorf("systemd-cgls --unit %s does not list the job:\n%s", scope, cgls)
	}

	b.MustExec("systemctl", "stop", scope)
	b.allGone(pids)
	b.WaitFree("scoped")
	clitest.Eventually(t, wait, "the run's record", func() bool {
		return strings.Contains(b.Client().Get(t.Context(), "{lock:scoped}:last").Val(), `"tracking":"scope"`)
	})
}

// with-lock and its guard killed at the same moment leave the job running
// in its scope without the lock; the next run in the slice, for any lock,
// finds the scope that no live run holds and kills what is in it, and
// systemd stops the scope, empty.
func TestNextRunStopsTheScopeOfAWithLockKilledWithItsGuard(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.WriteFile("/opt/jobs/long.sh", longJob, 0o755)
	b.MustExec("systemd-run", "--unit", "killed", "--property=KillMode=process", "--setenv=WITH_LOCK_REDIS="+b.URL(),
		"/usr/bin/with-lock", "--ttl", "2s", "killed", "/opt/jobs/long.sh", "/tmp/job")
	pids := b.jobPids("/tmp/job")
	withLock := b.mainPid("killed.service")
	scope := "/system.slice/with-lock-killed-" + strconv.Itoa(withLock) + ".scope"
	guard := b.guardIn(scope)
	if guard == 0 {
		t.Fatalf("no guard in %s", scope)
	}
	both := strconv.Itoa(withLock) + " " + strconv.Itoa(guard)
	b.MustExec("sh", "-c", "kill -STOP "+both+"; kill -KILL "+both)
	b.WaitFree("killed") // by its TTL: the job runs on unlocked
	// The script itself dies of its parent-death signal; its children do not.
	for _, name := range []string{"bg", "escapee"} {
		if !b.Alive(pids[name]) {
			t.Fatalf("the job's %s died with with-lock and its guard: nothing should have been left to kill it", name)
		}
	}
	clitest.Eventually(t, 2*wait, "the next runs left the killed run's job running", func() bool {
		_, _ = b.Exec(wait, "systemd-run", "--wait", "--quiet", "--collect", "--setenv=WITH_LOCK_REDIS="+b.URL(),
			"/usr/bin/with-lock", "next", "true")
		for _, pid := range pids {
			if b.Alive(pid) {
				return false
			}
		}
		return true
	})
	clitest.Eventually(t, wait, "systemd did not stop the emptied scope", func() bool {
		return b.Show(strings.TrimPrefix(scope, "/system.slice/"), "ActiveState")["ActiveState"] != "active"
	})
}

// --memory-max and --cpu-quota are the scope's MemoryMax= and CPUQuota=,
// which need the hierarchy's memory and cpu controllers; this machine
// boots with none (the host binds them to cgroup v1), so a run asking for
// them is refused, exit 78, with the reason in the journal, and the
// command never runs.
func TestLimitsUnderSystemdAreRefusedWithoutTheirControllers(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	if c := strings.Fields(b.MustExec("cat", "/sys/fs/cgroup/cgroup.controllers")); len(c) > 0 {
		t.Logf("controllers here: %v", c)
	}
	for _, flag := range []string{"--memory-max=64M", "--cpu-quota=50%"} {
		out, err := b.Exec(wait, "systemd-run", "--wait", "--unit", "limited", "--setenv=WITH_LOCK_REDIS="+b.URL(),
			"/usr/bin/with-lock", flag, "limited", "touch", "/tmp/ran")
		journal := b.Journal("limited.service")
		if !strings.Contains(out, "status=78") || !strings.Contains(journal, "controller") || b.ReadFile("/tmp/ran") != "" {
			t.Errorf("%s: want exit 78, the missing controller named, the command not run: %v\n%s\n%s", flag, err, out, journal)
		}
		b.MustExec("systemctl", "reset-failed", "limited.service")
	}
}

// In its scope the whole job is still with-lock's to stop: --max-run
// stops every process of it, the child in a session of its own too, and
// with-lock exits 124 with the lock released.
func TestMaxRunStopsTheWholeJobInItsScope(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.WriteFile("/opt/jobs/long.sh", longJob, 0o755)
	b.MustExec("systemd-run", "--unit", "maxrun", "--setenv=WITH_LOCK_REDIS="+b.URL(),
		"/usr/bin/with-lock", "--max-run", "2s", "--kill-after", "1s", "maxrun", "/opt/jobs/long.sh", "/tmp/job")
	pids := b.jobPids("/tmp/job")
	if cg := b.Cgroup(pids["escapee"]); !strings.HasPrefix(cg, "/system.slice/with-lock-maxrun-") {
		t.Errorf("the job runs in %s, not in a scope of its own", cg)
	}
	b.allGone(pids)
	b.WaitFree("maxrun")
	clitest.Eventually(t, wait, "the run's record", func() bool {
		rec := b.Client().Get(t.Context(), "{lock:maxrun}:last").Val()
		return strings.Contains(rec, `"exit_code":124`) && strings.Contains(rec, `"tracking":"scope"`)
	})
}
