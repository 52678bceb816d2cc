package container_test

import (
	"os"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
)

// hostCgroup2 is where this machine mounts its cgroup2 hierarchy, "" when
// it has none.
func hostCgroup2(t *testing.T) string {
	t.Helper()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if f := strings.Fields(pre); ok && strings.HasPrefix(post, "cgroup2 ") && len(f) > 4 {
			return f[4]
		}
	}
	return ""
}

// In a container /sys/fs/cgroup is read-only: with-lock can make no group
// for the job and follows it by the subreaper, which still holds the lock
// until a child that left for a session of its own has ended. Both ways a
// runtime hides the hierarchy: podman's default on a host with cgroup v1
// controllers (a read-only tmpfs of v1 hierarchies, no cgroup2), and the
// host's cgroup2 mounted read-only, as on a cgroup2-only host.
func TestReadOnlyCgroupInContainerFallsBackToSubreaper(t *testing.T) {
	cases := []struct {
		name  string
		flags []string
	}{{"podman's default", nil}}
	if cg2 := hostCgroup2(t); cg2 != "" {
		cases = append(cases, struct {
			name  string
			flags []string
		}{"cgroup2 read-only", []string{"--volume", cg2 + ":/sys/fs/cgroup:ro"}})
	} else {
		t.Log("this machine has no cgroup2 hierarchy: only podman's default is tried")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			c := b.Start(testbed.RunSpec{Image: b.JobImage(),
				Flags: append([]string{"--env", "WITH_LOCK_REDIS=" + b.URL()}, tc.flags...),
				Args: []string{"-v", "ro-cgroup", "sh", "-c",
					"grep ' /sys/fs/cgroup' /proc/self/mountinfo >&2; setsid sleep 2 & exit 0"}})
			res := c.Wait(wait)
			if res.Code != 0 || !strings.Contains(res.Stderr, "its job followed by subreaper") {
				t.Errorf("exit %d, want 0 and -v saying the subreaper follows the job:\n%s", res.Code, res.Stderr)
			}
			if !strings.Contains(res.Stderr, "holding lock:ro-cgroup until its 1 remaining process ends") {
				t.Errorf("with-lock did not wait for the child that left the job's session:\n%s", res.Stderr)
			}
			if b.Holder("ro-cgroup") != "" {
				t.Errorf("the lock is still held after the container ended")
			}
		})
	}
}
