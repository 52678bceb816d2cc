package container_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
)

// with-lock killed with SIGKILL takes its whole job with it where /bin/sh
// is busybox, as in Alpine and other busybox-based images: the guard, which
// kills the job when with-lock dies, must run under every /bin/sh a job's
// image may have. With this machine's dash as /bin/sh instead, the same
// container shows the test passing where the guard runs. with-lock runs
// below an init here, so that it can be killed without taking the
// container with it.
func TestGuardKillsJobWhenWithLockIsKilledUnderBusyboxShell(t *testing.T) {
	const script = `with-lock guarded sh -c 'sleep 1000 & echo $! > /tmp/bg; wait' & wl=$!
while [ ! -s /tmp/bg ]; do sleep 0.05; done
kill -9 $wl
for i in $(seq 50); do kill -0 $(cat /tmp/bg) 2>/dev/null || break; sleep 0.1; done
if kill -0 $(cat /tmp/bg) 2>/dev/null; then echo "the job's background sleep survived"; ps -o pid,pgid,args; fi`
	for _, tc := range []struct {
		name   string
		flags  []string
		script string
	}{
		{"busybox as /bin/sh", nil, script},
		{"dash as /bin/sh", dashMounts(t), "ln -sf /opt/dash /bin/sh\n" + script},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			res := b.Start(testbed.RunSpec{Image: b.JobImage(), Init: true,
				Flags: append([]string{"--env", "WITH_LOCK_REDIS=" + b.URL(), "--entrypoint", "/bin/sh"}, tc.flags...),
				Args:  []string{"-c", tc.script}}).Wait(wait)
			if res.Code != 0 || strings.Contains(res.Stdout, "survived") {
				t.Errorf("exit %d; after kill -9 of with-lock:\n%s%s", res.Code, res.Stdout, res.Stderr)
			}
		})
	}
}

// dashMounts are podman flags that put this machine's dash at /opt/dash
// in a container, with the libraries it loads at their paths.
func dashMounts(t *testing.T) []string {
	t.Helper()
	dash, err := exec.LookPath("dash")
	if err != nil {
		t.Fatalf("dash, Debian's /bin/sh: %v", err)
	}
	out, err := exec.Command("ldd", dash).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", dash, err)
	}
	flags := []string{"--volume", dash + ":/opt/dash:ro"}
	for _, f := range strings.Fields(string(out)) {
		if !strings.HasPrefix(f, "/") {
			continue
		}
		real, err := filepath.EvalSymlinks(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(real); err == nil {
			flags = append(flags, "--volume", real+":"+f+":ro")
		}
	}
	return flags
}
