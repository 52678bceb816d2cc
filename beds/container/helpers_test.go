// Package container_test runs with-lock in podman containers, from the
// image `make image` builds, as a container runtime or a Kubernetes node
// runs it: as PID 1 and under an init, stopped by podman stop, with a
// read-only /sys/fs/cgroup, with busybox as the jobs' /bin/sh.
package container_test

import (
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
)

const wait = testbed.Wait

// bed is the test's Redis, on the loopback the containers share (podman
// run --network host), and podman.
type bed struct {
	*testbed.Redis
	*testbed.Podman
	t *testing.T
}

func setup(t *testing.T) *bed {
	t.Helper()
	r := testbed.StartRedis(t) // first: stopped after the containers
	return &bed{Redis: r, Podman: testbed.NewPodman(t), t: t}
}

// job starts the job image with with-lock as its entrypoint, pointed at
// the test's Redis, with args.
func (b *bed) job(init bool, args ...string) *testbed.Container {
	b.t.Helper()
	return b.Start(testbed.RunSpec{Image: b.JobImage(), Init: init,
		Flags: []string{"--env", "WITH_LOCK_REDIS=" + b.URL()}, Args: args})
}

// pid1 is the two ways a container runs with-lock: as its PID 1, and as
// the child of an init (podman --init: catatonit).
var pid1 = []struct {
	name string
	init bool
}{{"with-lock as PID 1", false}, {"under podman --init", true}}
