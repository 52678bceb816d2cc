package supervise

import (
	"path/filepath"
	"testing"
)

// The job's cgroup goes beside with-lock's own, wherever the cgroup2
// hierarchy is mounted: found from mountinfo, never assumed.
func TestCgroupDirFindsTheCgroup2MountFromMountinfo(t *testing.T) {
	const hybrid = `25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
31 25 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 31 0:39 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
`
	const unified = "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	// A container sees its own group as the mount's root.
	const container = "600 590 0:26 /system.slice/docker-abc.scope /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n"
	const spaced = `29 23 0:26 / /mnt/cg\040two rw - cgroup2 none rw` + "\n"
	tests := []struct {
		name, cg, mi string
		want         string // "" for none
	}{
		{"hybrid mount at the root group", "4:memory:/x\n0::/\n", hybrid, "/sys/fs/cgroup/unified"},
		{"unified mount, a user's service", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/cron.service\n", unified,
			"/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/cron.service"},
		{"container whose group is the mount's root", "0::/system.slice/docker-abc.scope\n", container, "/sys/fs/cgroup"},
		{"container, below its root", "0::/system.slice/docker-abc.scope/job\n", container, "/sys/fs/cgroup/job"},
		{"group outside the mount's root", "0::/system.slice/docker-abc.scope2\n", container, ""},
		{"escaped mount point", "0::/a\n", spaced, "/mnt/cg two/a"},
		{"no cgroup2 mount (v1 only)", "0::/\n", "42 31 0:39 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", ""},
		{"no v2 line (v1 only)", "4:memory:/x\n", unified, ""},
		{"group deleted", "0::/gone (deleted)\n", unified, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := cgroupDir(tt.cg, tt.mi)
			if tt.want == "" && ok {
				t.Errorf("cgroupDir = %q, want none", got)
			}
			if tt.want != "" && (!ok || got != tt.want) {
				t.Errorf("cgroupDir = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/tab\011x`: "/tab\tx", `/bad\04`: `/bad\04`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// Each run names its job's group anew — with-lock.<pid>.<16 hex digits> —
// and only names of that form are taken for groups of runs that may be
// gone: not an earlier version's with-lock.<pid>, nor anyone else's.
func TestJobCgroupNamesAreNewEachTimeAndKnownByTheirForm(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		name := filepath.Base(newCgroupDir("/sys/fs/cgroup/x"))
		if seen[name] || !isJobCgroup(name) {
			t.Fatalf("name %q: seen before %v, known as a job's group %v", name, seen[name], isJobCgroup(name))
		}
		seen[name] = true
	}
	for _, name := range []string{"with-lock.1", "with-lock.1.abc", "with-lock.x.8000000000000001", "with-lock.1.800000000000000g",
		"other.1.8000000000000001", "with-lock.1.8000000000000001.x"} {
		if isJobCgroup(name) {
			t.Errorf("%q taken for a job's group", name)
		}
	}
}
