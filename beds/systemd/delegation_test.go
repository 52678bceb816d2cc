package systemd_test

import (
	"path"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
)

// systemd owns the cgroup tree: a program may create groups only below a
// unit that delegated its subtree (Delegate=yes; systemd's
// docs/CGROUP_DELEGATION.md). Elsewhere a group of with-lock's own turns
// the unit's group into an inner node with processes, which a later
// controller change (MemoryMax= on cron.service, say) fails on with EBUSY.
// So with-lock's job runs in a group below the unit only where the unit
// delegated; elsewhere in a unit of its own (a scope) or in the unit's own
// group, followed by the subreaper.
func TestJobCgroupIsNeverBelowAUnitThatDidNotDelegate(t *testing.T) {
	for _, p := range placements {
		t.Run(p.name, func(t *testing.T) {
			b := boot(t, testbed.BootOptions{})
			cgroup, cgls := b.jobCgroup(p)
			props := b.Show(p.unit, "ControlGroup", "Delegate")
			unitGroup, delegated := props["ControlGroup"], props["Delegate"] == "yes"
			if strings.HasPrefix(cgroup, unitGroup+"/") && !delegated {
				t.Errorf("the job runs in %s, a group below %s, which did not delegate (Delegate=no)\n%s",
					cgroup, p.unit, cgls)
			}
			if cgroup != unitGroup && !strings.HasPrefix(cgroup, unitGroup+"/") && !strings.HasSuffix(path.Base(cgroup), ".scope") {
				t.Errorf("the job runs in %s, neither %s's group nor a scope", cgroup, p.unit)
			}
			b.WriteFile("/tmp/go", "go", 0o644)
			b.WaitFree("placed")
		})
	}
}
